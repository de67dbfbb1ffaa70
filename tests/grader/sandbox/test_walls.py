"""The walls: the seccomp program as data, the walls this machine supports, and what a
student's code can and cannot do inside a live sandbox child. A test of a wall this machine
lacks is skipped with the reason; what the walls report is checked either way."""

import errno
import os
import socket
import sys
from pathlib import Path

import pytest

from grader.sandbox import landlock, libc, rlimits, seccomp, walls
from grader.sandbox.client import Limits, Sandbox

STATIC = {wall["name"]: wall for wall in walls.explain()}
ROOT = os.geteuid() == 0


def active(name):
    return STATIC[name]["active"]


needs_root = pytest.mark.skipif(not ROOT, reason="the uid drop and the network namespace need root")
needs_landlock = pytest.mark.skipif(not active("landlock"), reason=STATIC["landlock"]["detail"])


# --- the seccomp filter, run on a tiny BPF interpreter ------------------------------------

def run_bpf(program, nr: int, arch: int, arg1: int = 0) -> int:
    """Classic BPF as the kernel runs a seccomp filter: seccomp_data has nr at 0, arch at 4,
    the second argument's low half at 24."""
    accumulator, pc = 0, 0
    while True:
        code, jt, jf, k = program[pc]
        if code == 0x20:                                   # ld [k]
            accumulator = {0: nr, 4: arch, 24: arg1}[k]
        elif code in (0x15, 0x35):                         # jeq / jge #k
            taken = accumulator == k if code == 0x15 else accumulator >= k
            pc += jt if taken else jf
        elif code == 0x06:                                 # ret #k
            return k
        else:
            raise AssertionError(f"unexpected instruction {code:#x}")
        pc += 1


X86_64 = 0xC000003E
ALLOW, EPERM, KILL = 0x7FFF0000, 0x00050000 | errno.EPERM, 0x80000000


def test_the_seccomp_program_denies_exactly_its_list():
    program = seccomp.seccomp_program()
    assert program[-1][0] == 0x06                           # it cannot run off its end
    assert all(pc + 1 + max(jt, jf) < len(program) for pc, (code, jt, jf, _) in enumerate(program)
               if code in (0x15, 0x35))
    denied = set(seccomp.DENIED_SYSCALLS.values())
    for nr in range(0, 460):
        assert run_bpf(program, nr, X86_64) == (EPERM if nr in denied else ALLOW), nr
    for name in ("shmget", "shmat", "shmctl", "semget", "msgget", "mq_open"):
        assert run_bpf(program, seccomp.DENIED_SYSCALLS[name], X86_64) == EPERM
    for name in ("fork", "vfork", "clone", "clone3", "execve", "execveat", "socket", "connect",
                 "kill", "tkill", "tgkill", "ptrace", "process_vm_readv", "process_vm_writev"):
        assert run_bpf(program, seccomp.DENIED_SYSCALLS[name], X86_64) == EPERM
    assert run_bpf(program, 0x40000000 + 57, X86_64) == EPERM      # the x32 ABI's fork
    assert run_bpf(program, 0, 0x40000003) == KILL                  # i386 syscalls: another table


def test_only_the_python_installation_is_readable():
    roots = landlock.readable_roots()
    assert os.path.realpath(sys.base_prefix) in roots or any(
        os.path.realpath(sys.base_prefix).startswith(r + "/") for r in roots)
    project = Path(walls.__file__).resolve().parents[2]
    for package in ("exercises", "solutions", "grader"):
        assert not any(str(project / package).startswith(r.rstrip("/") + "/") for r in roots)


def test_explain_says_why_a_wall_is_missing():
    assert list(STATIC) == ["session", "network", "landlock", "chroot", "fds", "rlimits", "uid", "seccomp"]
    for wall in STATIC.values():
        assert isinstance(wall["active"], bool) and wall["detail"]
    assert active("uid") == active("network") == ROOT
    assert active("landlock") == (landlock.landlock_abi()[0] > 0)
    assert active("seccomp") == (os.uname().machine == "x86_64")


# --- inside a live child -------------------------------------------------------------------

@pytest.fixture(scope="module")
def sandbox():
    with Sandbox(1, Limits(wall_seconds=2.0, memory_mb=256)) as box:
        yield box


PROBE = """
import os
def probe(action):
    try:
        action()
        return "allowed"
    except BaseException as error:
        return f"{type(error).__name__} {getattr(error, 'errno', '')}".strip()
"""


def attempt(sandbox, source: str):
    """Run ``outcome = probe(lambda: ...)`` style code in a child; returns ``outcome``."""
    result = sandbox.run([{"op": "exec", "label": "probe", "source": PROBE},
                          {"op": "exec", "label": "try", "source": source},
                          {"op": "send", "problem": "p", "names": ["outcome"]}])
    assert result.errors == [] and result.crashes == [], (result.errors, result.crashes)
    return result.values["p"]["outcome"]


def test_only_the_result_pipe_and_the_job_pipe_stay_open(sandbox):
    """fd 4 is kept for the hidden cases the child asks for (the grader writes each one there):
    the read end of the job pipe, readable through Landlock and seccomp, never writable."""
    outcome = attempt(sandbox, "import select, stat\n"
                               "open_fds = [fd for fd in range(256) if probe(lambda fd=fd: os.fstat(fd)) == 'allowed']\n"
                               "poller = select.poll()\npoller.register(4, select.POLLIN)\n"
                               "outcome = [open_fds, stat.S_ISFIFO(os.fstat(4).st_mode), probe(lambda: os.write(4, b'x')),\n"
                               "           poller.poll(0)]")
    assert outcome == [[0, 1, 2, 3, 4], True, f"OSError {errno.EBADF}", []]     # nothing waiting in it


def test_the_live_child_reports_what_explain_predicts(sandbox):
    held = {wall["name"]: wall["active"] for wall in sandbox.run([]).walls}
    assert held == {name: wall["active"] for name, wall in STATIC.items()}


def test_a_0600_file_of_the_grader_cannot_be_read(sandbox, tmp_path):
    secret = tmp_path / "secret.txt"
    secret.write_text("the answer key")
    secret.chmod(0o600)
    outcome = attempt(sandbox, f"outcome = probe(lambda: open({str(secret)!r}).read())")
    if active("uid") or active("landlock"):
        # Landlock or the uid drop refuse it; under the chroot the file is not even there.
        assert outcome.startswith(("PermissionError", "FileNotFoundError"))
    else:
        pytest.skip("neither the uid drop nor Landlock is available: the child is the grader's user")


@needs_root
def test_the_child_runs_as_an_unused_uid(sandbox):
    uid = attempt(sandbox, "outcome = os.getresuid() + os.getresgid() + tuple(os.getgroups())")
    assert len(set(uid)) == 1 and uid[0] >= walls.UID_BASE and uid[0] != os.getuid()


CONNECT = """
import ctypes
libc = ctypes.CDLL(None, use_errno=True)      # the system calls themselves, not the socket module
fd = libc.socket(2, 1, 0)                     # AF_INET, SOCK_STREAM
if fd < 0:
    outcome = ["socket", ctypes.get_errno()]
else:
    address = (2).to_bytes(2, "little") + ({port}).to_bytes(2, "big") + bytes([127, 0, 0, 1]) + bytes(8)
    outcome = ["connect", libc.connect(fd, address, 16), ctypes.get_errno()]
"""


@pytest.mark.skipif(not (active("network") or active("seccomp") or active("landlock")),
                    reason="no wall here stops the network")
def test_no_connection_even_to_localhost(sandbox):
    with socket.create_server(("127.0.0.1", 0)) as listener:
        port = listener.getsockname()[1]
        outcome = attempt(sandbox, CONNECT.format(port=port))
    if active("seccomp"):
        assert outcome == ["socket", errno.EPERM]
    else:                                  # Landlock: EACCES; an empty namespace: unreachable
        assert outcome[:2] == ["connect", -1] and outcome[2] in (errno.EACCES, errno.ENETUNREACH)


NAMESPACES = "outcome = [os.readlink('/proc/self/ns/net'), os.readlink('/proc/self/ns/ipc')]"


@needs_root
def test_a_servers_children_run_in_its_own_namespaces_one_at_a_time(sandbox):
    """The server enters an empty network namespace and an IPC namespace once; each child runs
    in them (no other process does: not the grader, not another server's children)."""
    first, second = attempt(sandbox, NAMESPACES), attempt(sandbox, NAMESPACES)
    assert first == second
    grader = [os.readlink("/proc/self/ns/net"), os.readlink("/proc/self/ns/ipc")]
    assert first[0] != grader[0] and first[1] != grader[1]
    with Sandbox(1, Limits(wall_seconds=2.0, memory_mb=256)) as other:
        theirs = attempt(other, NAMESPACES)
        held = {wall["name"]: wall for wall in other.run([]).walls}
    assert theirs[0] != first[0] and theirs[1] != first[1]
    assert held["network"]["active"] and "its server's empty network namespace" in held["network"]["detail"]


@pytest.mark.skipif(not (active("seccomp") or "nproc 1" in STATIC["rlimits"]["detail"] or not ROOT),
                    reason="neither seccomp nor RLIMIT_NPROC applies here")
def test_no_new_process(sandbox):
    outcome = attempt(sandbox, "outcome = [probe(os.fork), probe(lambda: os.posix_spawn('/bin/true', ['true'], {}))]")
    assert all(o in ("PermissionError 1", f"BlockingIOError {errno.EAGAIN}") for o in outcome), outcome


def test_no_file_can_be_written(sandbox, tmp_path):
    tmp_path.chmod(0o777)                  # so only the sandbox, not the directory, can refuse
    target = tmp_path / "out.bin"
    outcome = attempt(sandbox, f"outcome = probe(lambda: open({str(target)!r}, 'wb').write(b'x' * 2**21))")
    # Landlock, EFBIG from RLIMIT_FSIZE, or no such folder under the chroot
    assert outcome.startswith(("PermissionError", "OSError 27", "FileNotFoundError"))
    assert not target.exists() or target.stat().st_size <= 2**20


@needs_landlock
def test_landlock_hides_everything_but_python(sandbox):
    outcome = attempt(sandbox, "outcome = [probe(lambda: open('/etc/hostname').read()),\n"
                               "           probe(lambda: __import__('solutions')),\n"
                               "           probe(lambda: open(os.__file__).read(10))]")
    assert outcome[0] in ("PermissionError 13", "FileNotFoundError 2")      # chroot: not there
    assert outcome[1].startswith(("PermissionError", "ModuleNotFoundError", "ImportError"))
    if not ROOT:                           # as root the dropped uid cannot read /root/.pyenv anyway
        assert outcome[2] == "allowed"


def test_the_grader_cannot_be_signalled_or_inspected(sandbox):
    outcome = attempt(sandbox, "outcome = [probe(lambda: os.kill(os.getppid(), 0)),\n"
                               "           probe(lambda: open(f'/proc/{os.getppid()}/mem', 'rb').read(1))]")
    if active("seccomp") or active("uid") or active("landlock"):
        assert all(o != "allowed" for o in outcome), outcome


@needs_root
def test_without_root_the_walls_that_need_it_say_so_and_the_rest_hold():
    """Root is dropped first in a forked helper (no student code: this only plays an
    unprivileged grader), which then builds and applies the walls as such a grader would."""
    import json
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            os.setgroups([])
            os.setresgid(walls.UID_BASE + 999, walls.UID_BASE + 999, walls.UID_BASE + 999)
            os.setresuid(walls.UID_BASE + 999, walls.UID_BASE + 999, walls.UID_BASE + 999)
            held = walls.Walls(0).apply(write_end, {"memory_mb": 256})
            try:
                os.fork()
                forked = "allowed"
            except OSError as error:
                forked = error.errno
            os.write(walls.RESULT_FD, json.dumps({"layers": held, "fork": forked}).encode())
        finally:
            os._exit(0)
    os.close(write_end)
    with os.fdopen(read_end, "rb") as pipe:
        report = json.loads(pipe.read())
    os.waitpid(pid, 0)
    held = {wall["name"]: wall for wall in report["layers"]}
    assert not held["network"]["active"] and "needs root" in held["network"]["detail"]
    assert not held["uid"]["active"] and "not root" in held["uid"]["detail"]
    assert "nproc 1" in held["rlimits"]["detail"]
    assert all(held[name]["active"] for name in ("session", "fds", "rlimits"))
    assert held["landlock"]["active"] == active("landlock") and held["seccomp"]["active"] == active("seccomp")
    assert report["fork"] in (errno.EPERM, errno.EAGAIN)


# --- off Linux -------------------------------------------------------------------------------

def run_in_forked_walls(prepare, job: dict) -> tuple[list[dict], int]:
    """(events, wait status) of ``job`` run by child.run_child in a forked helper whose walls
    ``prepare(walls)`` adjusts first (to play a machine without some wall; no student code)."""
    from grader.sandbox import child, frames

    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:
        status = 1
        try:
            os.close(read_end)
            built = walls.Walls(7)
            prepare(built)
            status = child.run_child(job, built, write_end)
        finally:
            os._exit(status)
    os.close(write_end)
    events = []
    try:
        while (event := frames.read_frame(read_end)) is not None:
            events.append(event)
    finally:
        os.close(read_end)
        _, status = os.waitpid(pid, 0)
    return events, status


def test_a_child_without_proc_or_prctl_reports_those_walls_off_and_still_runs():
    """macOS has neither /proc nor prctl: the walls must say which of them are missing and let
    the job run, not kill every child before it is ready. Played in a forked helper (no
    student code): the C library loses prctl, unshare and syscall, /proc/self/statm is gone,
    and Landlock and seccomp are unavailable, as there."""
    import types

    def like_macos(built):
        built.landlock.fd, built.landlock.detail = -1, "not Linux (darwin)"
        built.seccomp.fprog, built.seccomp.detail = None, "the filter is written for x86_64 Linux"

        def no_proc():
            raise FileNotFoundError(2, "No such file or directory", "/proc/self/statm")

        rlimits._vm_size = no_proc
        libc.LIBC = types.SimpleNamespace()          # a C library without prctl & co.

    events, status = run_in_forked_walls(like_macos, {
        "steps": [{"op": "exec", "label": "a", "source": "x = 6 * 7"},
                  {"op": "send", "problem": "p", "names": ["x"]}],
        "limits": {"memory_mb": 256, "wall_seconds": 5}})
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0
    held = {wall["name"]: wall for wall in events[0]["layers"]}
    assert events[0]["event"] == "ready" and list(held) == list(STATIC)
    assert not held["landlock"]["active"] and not held["seccomp"]["active"]
    assert all(held[name]["active"] for name in ("session", "fds", "rlimits"))
    assert "address space not limited" in held["rlimits"]["detail"]
    assert "killed if the server dies" not in held["session"]["detail"]
    if ROOT:
        assert not held["network"]["active"]
    assert {"event": "values", "problem": "p", "values": {"x": 42}, "missing": []} in events
    assert events[-1] == {"event": "done"}


def named(*active):
    return [walls.wall(name, name in active, "") for name in STATIC]


def test_protected_means_landlock_or_the_uid_drop_holds():
    assert walls.protected(named("landlock")) and walls.protected(named("uid"))
    assert walls.protected(named("landlock", "uid", "seccomp"))
    assert not walls.protected(named("session", "fds", "rlimits", "seccomp", "network"))
    assert not walls.protected([])
    assert not walls.protected([{"name": "landlock", "active": "yes"}, "uid"])
    assert walls.protected() == (active("landlock") or active("uid"))


def test_protected_agrees_with_a_live_child(sandbox):
    held = sandbox.run([]).walls
    assert walls.protected(held) == (active("landlock") or active("uid"))


def test_the_walls_explained_by_running_servers_are_a_fresh_servers(sandbox):
    # (a cluster's worker asks its own servers: grader.run.cluster.walls_here)
    from grader.sandbox.client import explain
    given = explain(sandbox=sandbox)
    assert [(w["name"], w["active"]) for w in given] == [(w["name"], w["active"]) for w in explain()]
    assert not any("static check" in w["detail"] for w in given)


@needs_root
def test_without_landlock_no_file_of_the_machine_is_visible(tmp_path):
    """Where Landlock is missing, root gives the child an empty root directory: even a
    world-readable file (another student's notebook, the project's solutions/) is not there.
    Played in a forked helper (no student code) with Landlock switched off, as on an old kernel."""
    import tempfile

    folder = Path(tempfile.mkdtemp(dir="/tmp"))       # world-searchable: only the chroot hides it
    folder.chmod(0o755)
    other = folder / "another_students_notebook.ipynb"
    other.write_text("{}")
    other.chmod(0o644)

    def without_landlock(built):
        built.landlock.fd, built.landlock.detail = -1, "Linux older than 5.13"
        built.jail = walls._empty_directory()

    try:
        events, _ = run_in_forked_walls(without_landlock, {
            "steps": [{"op": "exec", "label": "a", "source": (
                          "try:\n    open(%r).read()\n    outcome = 'read'\n"
                          "except OSError as e:\n    outcome = type(e).__name__\n" % str(other))},
                      {"op": "send", "problem": "p", "names": ["outcome"]}],
            "limits": {"wall_seconds": 5}})
    finally:
        other.unlink()
        folder.rmdir()
    held = {wall["name"]: wall for wall in events[0]["layers"]}
    assert held["chroot"]["active"] and not held["landlock"]["active"]
    assert {"event": "values", "problem": "p", "values": {"outcome": "FileNotFoundError"},
            "missing": []} in events


def test_the_seccomp_filter_denies_what_a_child_could_do_to_the_shared_pipe():
    program = seccomp.seccomp_program()
    for cmd in seccomp.DENIED_FCNTL.values():
        assert run_bpf(program, seccomp.FCNTL, X86_64, cmd) == EPERM
    for cmd in (0, 1, 2, 3, 1030):            # F_DUPFD, F_GETFD, F_SETFD, F_GETFL, F_DUPFD_CLOEXEC
        assert run_bpf(program, seccomp.FCNTL, X86_64, cmd) == ALLOW
    for request in seccomp.DENIED_IOCTL.values():
        assert run_bpf(program, seccomp.IOCTL, X86_64, request) == EPERM
    assert run_bpf(program, seccomp.IOCTL, X86_64, 0x5401) == ALLOW      # TCGETS (isatty)


def test_a_child_cannot_change_the_pipe_it_shares_with_later_children(sandbox):
    """Non-blocking, shrunk or signal-raising: any of these on fd 3 would have cost the next
    students their values. The first job tries them all; the second sends a large value."""
    if not active("seccomp"):
        pytest.skip("seccomp is not available here")
    outcome = attempt(sandbox, "import fcntl, os\n"
                               "outcome = [probe(lambda: fcntl.fcntl(3, fcntl.F_SETFL, os.O_NONBLOCK)),\n"
                               "           probe(lambda: fcntl.fcntl(3, 1031, 4096)),\n"
                               "           probe(lambda: fcntl.fcntl(3, fcntl.F_SETOWN, os.getppid()))]")
    assert all(o.startswith("PermissionError") for o in outcome), outcome
    result = sandbox.run([{"op": "exec", "label": "big", "source": "import numpy as np\nx = np.ones(500_000)"},
                          {"op": "send", "problem": "p", "names": ["x"]}])
    assert result.crashes == [] and result.values["p"]["x"].shape == (500_000,)


@needs_root
def test_without_seccomp_each_child_still_enters_an_ipc_namespace_of_its_own():
    """Where seccomp cannot deny System V IPC, an object one child made could wait in the
    server's IPC namespace for the next: each child then enters one of its own (played in a
    forked helper that enters the server's namespaces first; no student code)."""
    job = {"steps": [{"op": "exec", "label": "a", "source": "import os\n" + NAMESPACES},
                     {"op": "send", "problem": "p", "names": ["outcome", "server"]}],
           "limits": {"memory_mb": 256, "wall_seconds": 5}}

    def no_seccomp(built):
        assert built.enter_namespaces()
        built.seccomp.fprog, built.seccomp.detail = None, "played: not x86_64"
        job["steps"].insert(0, {"op": "set", "values": {
            "server": [os.readlink("/proc/self/ns/net"), os.readlink("/proc/self/ns/ipc")]}})

    events, status = run_in_forked_walls(no_seccomp, job)
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0
    held = {wall["name"]: wall for wall in events[0]["layers"]}
    assert held["network"]["active"] and "an IPC namespace of its own" in held["network"]["detail"]
    values = next(e["values"] for e in events if e.get("event") == "values")
    assert values["outcome"][0] == values["server"][0]        # the server's network namespace
    assert values["outcome"][1] != values["server"][1]        # but not its IPC namespace
