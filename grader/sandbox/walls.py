"""The walls around one student's code: applied in the forked child, before that code runs.

Each wall stops something the others may not, and each can be missing on some machine
(not root, an old kernel, not x86_64), so each reports ``{"name", "active", "detail"}`` and the
grader says which ones held; none is allowed to stop grading by being absent. In the order the
child applies them:

- ``session``: a new session and process group, so the server can kill everything the child
  started with one ``killpg``.
- ``network`` (root): an empty network namespace (no interface but a down loopback) and an
  IPC namespace, the server's own: it enters them once (``enter_namespaces``), each of its
  children in turn runs in them, no other process does. Not one per child: making and tearing
  down two namespaces per job costs the machine CPU (the unshare in the child, then the
  kernel's workers freeing them), a real share of a sandbox run. Nothing a child could leave
  there outlives it: it can make no socket and no System V or POSIX IPC object (seccomp), its
  uid has no capability to raise an interface, and what it has open dies with its process
  group. Where seccomp is missing, each child still enters an IPC namespace of its own.
- ``landlock``: no file may be written or created anywhere, files may be read only under the
  Python installation; TCP bind/connect denied (Landlock ABI ≥ 4); signals and abstract Unix
  sockets confined to the child (ABI ≥ 6). Works without root.
- ``fds``: stdio points at /dev/null and every descriptor but the result pipe (moved to fd 3)
  and the job pipe's read end (fd 4: the child reads each hidden case there when it reaches it)
  is closed, so nothing else the server or the grader holds open is reachable.
- ``rlimits``: CPU seconds, address space (the child's size at fork + a margin, so a memory bomb
  ends in MemoryError), file size, open files, and processes (only where the kernel applies it:
  not to root).
- ``uid`` (root): an unused uid/gid per server, no supplementary groups: 0600 files, the
  grader's ``/proc/<pid>/mem`` and every other user's processes are out of reach.
- ``seccomp`` (x86_64): a small BPF filter makes fork/clone/exec, sockets, kill, ptrace,
  cross-process memory access, namespaces, mounts and io_uring fail with EPERM.

Whether the filesystem is walled off at all — Landlock or the uid drop — is ``protected()``:
without either, student code reads whatever the grader can, so grading should refuse to run
(unless the instructor insists: ``--insecure``). Off Linux (macOS) only ``session``, ``fds`` and
most ``rlimits`` hold; the others report why not, and the child still runs.

Anything the code imports after the uid drop must be readable by that uid: an interpreter under
root's home (pyenv) is not, so the server imports what students commonly use *before* forking
(``preimport``). The walls are built in the long-lived server once (``Walls``) — the Landlock
ruleset and the BPF program are inherited by every fork — so a job pays only the system calls
that switch them on. Only the standard library is imported here: the sandbox server imports
this module and must not pull in anything else of the project.
"""

from __future__ import annotations

import ctypes
import errno
import fcntl
import importlib
import os
import platform
import resource
import signal
import site
import struct
import sys

MIB = 2**20
RESULT_FD = 3       # where the child's result pipe lives once the other descriptors are closed
JOB_FD = 4          # and the job pipe, on which the grader sends each hidden case when it is asked

# What students commonly import, imported by the server before it forks: after the uid drop
# an interpreter under /root can no longer be read, so a first import there would fail.
# (Not numpy.testing: it drags in unittest and subprocess, and every megabyte the server
# holds makes each fork slower: the child gets a copy of the server's page tables.)
PREIMPORTS = (
    "abc", "array", "bisect", "cmath", "collections", "collections.abc", "contextlib", "copy",
    "dataclasses", "datetime", "decimal", "enum", "fractions", "functools", "heapq", "io",
    "itertools", "json", "keyword", "linecache", "math", "numbers", "operator", "pprint",
    "random", "re", "statistics", "string", "struct", "textwrap", "time", "tokenize",
    "traceback", "types", "typing", "unicodedata", "warnings", "weakref",
    "numpy", "numpy.linalg", "numpy.random", "numpy.fft", "numpy.polynomial",
)


def preimport() -> list[str]:
    """Import PREIMPORTS (those that exist here); returns the ones that could not be."""
    failed = []
    for name in PREIMPORTS:
        try:
            importlib.import_module(name)
        except ImportError:
            failed.append(name)
    return failed


def wall(name: str, active: bool, detail: str) -> dict:
    """What a wall reports of itself (the ``ready`` event carries one per wall)."""
    return {"name": name, "active": bool(active), "detail": detail}


def _libc():
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.syscall.restype = ctypes.c_long
        return libc
    except (OSError, AttributeError):
        return None


_LIBC = _libc()


def _errno_text() -> str:
    code = ctypes.get_errno()
    return f"{errno.errorcode.get(code, code)} ({os.strerror(code)})"


def _prctl(option: int, arg2: int, arg3: int = 0) -> int:
    """prctl(2); AttributeError where the C library has none (not Linux)."""
    return _LIBC.prctl(ctypes.c_int(option), ctypes.c_ulong(arg2), ctypes.c_ulong(arg3),
                       ctypes.c_ulong(0), ctypes.c_ulong(0))


PR_SET_NO_NEW_PRIVS = 38
PR_SET_PDEATHSIG = 1
PR_SET_SECCOMP = 22
SECCOMP_MODE_FILTER = 2
CLONE_NEWNET = 0x40000000
CLONE_NEWIPC = 0x08000000
_X86_64 = platform.machine() in ("x86_64", "AMD64") and sys.platform.startswith("linux")


# --- Landlock -----------------------------------------------------------------------------

_SYS_LANDLOCK_CREATE_RULESET = 444     # the same number on every architecture
_SYS_LANDLOCK_ADD_RULE = 445
_SYS_LANDLOCK_RESTRICT_SELF = 446
_LANDLOCK_CREATE_RULESET_VERSION = 1
_LANDLOCK_RULE_PATH_BENEATH = 1
_FS_READ_FILE, _FS_READ_DIR = 1 << 2, 1 << 3
_FS_ABI1 = (1 << 13) - 1               # execute … make_sym: everything ABI 1 knows
_FS_REFER, _FS_TRUNCATE, _FS_IOCTL_DEV = 1 << 13, 1 << 14, 1 << 15
_NET_BIND_TCP, _NET_CONNECT_TCP = 1 << 0, 1 << 1
_SCOPE_ABSTRACT_UNIX_SOCKET, _SCOPE_SIGNAL = 1 << 0, 1 << 1


class _RulesetAttr(ctypes.Structure):
    _fields_ = [("handled_access_fs", ctypes.c_uint64), ("handled_access_net", ctypes.c_uint64),
                ("scoped", ctypes.c_uint64)]


def landlock_abi() -> tuple[int, str]:
    """(ABI version, "") or (0, why Landlock is unavailable)."""
    if _LIBC is None or not sys.platform.startswith("linux"):
        return 0, f"not Linux ({sys.platform})"
    abi = _LIBC.syscall(ctypes.c_long(_SYS_LANDLOCK_CREATE_RULESET), None, ctypes.c_size_t(0),
                        ctypes.c_uint32(_LANDLOCK_CREATE_RULESET_VERSION))
    if abi < 0:
        code = ctypes.get_errno()
        why = {errno.ENOSYS: "the kernel has no Landlock (needs Linux ≥ 5.13)",
               errno.EOPNOTSUPP: "Landlock is disabled at boot (lsm= parameter)"}
        return 0, why.get(code, f"Landlock unavailable: {_errno_text()}")
    return int(abi), ""


def readable_roots() -> list[str]:
    """The only directories the child may read: the Python installation and its packages."""
    candidates = [sys.prefix, sys.exec_prefix, sys.base_prefix, sys.base_exec_prefix,
                  os.path.dirname(os.__file__), *site.getsitepackages()]
    roots = sorted({os.path.realpath(path) for path in candidates if os.path.isdir(path)})
    # a root inside another root adds nothing
    return [r for r in roots if not any(r != o and r.startswith(o.rstrip("/") + "/") for o in roots)]


class _Landlock:
    """A ruleset built once in the server; each child only restricts itself with it."""

    def __init__(self):
        self.fd, self.abi = -1, 0
        self.abi, why = landlock_abi()
        if not self.abi:
            self.detail = why
            return
        fs = _FS_ABI1 | (_FS_REFER if self.abi >= 2 else 0) | (_FS_TRUNCATE if self.abi >= 3 else 0) \
            | (_FS_IOCTL_DEV if self.abi >= 5 else 0)
        net = _NET_BIND_TCP | _NET_CONNECT_TCP if self.abi >= 4 else 0
        scoped = _SCOPE_ABSTRACT_UNIX_SOCKET | _SCOPE_SIGNAL if self.abi >= 6 else 0
        attr = _RulesetAttr(fs, net, scoped)
        size = 24 if self.abi >= 6 else 16 if self.abi >= 4 else 8
        fd = _LIBC.syscall(ctypes.c_long(_SYS_LANDLOCK_CREATE_RULESET), ctypes.byref(attr),
                           ctypes.c_size_t(size), ctypes.c_uint32(0))
        if fd < 0:
            self.abi, self.detail = 0, f"creating the ruleset failed: {_errno_text()}"
            return
        self.roots = readable_roots()
        for root in self.roots:
            path_fd = os.open(root, os.O_PATH | os.O_CLOEXEC)
            try:
                # struct landlock_path_beneath_attr is packed: u64 allowed_access, s32 parent_fd
                rule = ctypes.create_string_buffer(struct.pack("=Qi", _FS_READ_FILE | _FS_READ_DIR, path_fd), 12)
                if _LIBC.syscall(ctypes.c_long(_SYS_LANDLOCK_ADD_RULE), ctypes.c_int(fd),
                                 ctypes.c_int(_LANDLOCK_RULE_PATH_BENEATH), rule, ctypes.c_uint32(0)) < 0:
                    os.close(fd)
                    self.abi, self.detail = 0, f"adding a rule for {root} failed: {_errno_text()}"
                    return
            finally:
                os.close(path_fd)
        self.fd = fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 10)     # clear of fds 0–3, which the child reuses
        os.close(fd)
        parts = [f"ABI {self.abi}: no file written or created anywhere; reads only under "
                 + ", ".join(self.roots)]
        parts.append("TCP bind/connect denied" if net else "TCP not covered (ABI < 4)")
        parts.append("signals and abstract Unix sockets confined to the child" if scoped
                     else "signals not scoped (ABI < 6)")
        self.detail = "; ".join(parts)

    def apply(self) -> dict:
        if self.fd < 0:
            return wall("landlock", False, self.detail)
        if _prctl(PR_SET_NO_NEW_PRIVS, 1) != 0:
            return wall("landlock", False, f"PR_SET_NO_NEW_PRIVS failed: {_errno_text()}")
        if _LIBC.syscall(ctypes.c_long(_SYS_LANDLOCK_RESTRICT_SELF), ctypes.c_int(self.fd),
                         ctypes.c_uint32(0)) < 0:
            return wall("landlock", False, f"landlock_restrict_self failed: {_errno_text()}")
        return wall("landlock", True, self.detail)


# --- seccomp ------------------------------------------------------------------------------

# x86_64 system call numbers (asm/unistd_64.h) that student code has no use for.
DENIED_SYSCALLS = {
    "socket": 41, "connect": 42, "accept": 43, "bind": 49, "listen": 50, "socketpair": 53,
    "clone": 56, "fork": 57, "vfork": 58, "execve": 59, "kill": 62, "ptrace": 101,
    "rt_sigqueueinfo": 129, "mknod": 133, "pivot_root": 155, "chroot": 161, "mount": 165,
    "umount2": 166, "tkill": 200, "tgkill": 234, "add_key": 248, "request_key": 249,
    "keyctl": 250, "mknodat": 259, "unshare": 272, "accept4": 288, "rt_tgsigqueueinfo": 297,
    "perf_event_open": 298, "name_to_handle_at": 303, "open_by_handle_at": 304, "setns": 308,
    "process_vm_readv": 310, "process_vm_writev": 311, "kcmp": 312, "bpf": 321,
    "execveat": 322, "userfaultfd": 323, "pidfd_send_signal": 424, "io_uring_setup": 425,
    "io_uring_enter": 426, "io_uring_register": 427, "open_tree": 428, "move_mount": 429,
    "fsopen": 430, "fsmount": 432, "pidfd_open": 434, "clone3": 435, "pidfd_getfd": 438,
    # System V and POSIX IPC: memory that outlives the child (and a channel between jobs)
    "shmget": 29, "shmat": 30, "shmctl": 31, "semget": 64, "msgget": 68, "mq_open": 240,
}
# Calls denied only for some commands (their second argument): what a child could do to the
# result pipe it shares with later children — make it non-blocking, shrink it, or have the
# kernel signal a process of its choice when the grader reads it (F_SETOWN + F_SETSIG).
FCNTL, IOCTL = 72, 16
DENIED_FCNTL = {"F_SETFL": 4, "F_SETOWN": 8, "F_SETSIG": 10, "F_SETOWN_EX": 15, "F_SETLEASE": 1024,
                "F_NOTIFY": 1026, "F_SETPIPE_SZ": 1031}
DENIED_IOCTL = {"TIOCSTI": 0x5412, "FIONBIO": 0x5421, "FIOASYNC": 0x5452, "FIOSETOWN": 0x8901,
                "SIOCSPGRP": 0x8902}
_AUDIT_ARCH_X86_64 = 0xC000003E
_X32_SYSCALL_BIT = 0x40000000
_BPF_LD_W_ABS, _BPF_JEQ_K, _BPF_JGE_K, _BPF_RET_K = 0x20, 0x15, 0x35, 0x06
_RET_ALLOW, _RET_KILL_PROCESS = 0x7FFF0000, 0x80000000
_RET_EPERM = 0x00050000 | errno.EPERM


class _SockFilter(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint16), ("jt", ctypes.c_uint8), ("jf", ctypes.c_uint8),
                ("k", ctypes.c_uint32)]


class _SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.POINTER(_SockFilter))]


def seccomp_program() -> list[tuple[int, int, int, int]]:
    """The BPF program: wrong architecture → kill; x32 numbers, a denied call, or fcntl/ioctl
    with a denied command → EPERM; else allow. (seccomp_data: nr at offset 0, arch at 4, the
    low 32 bits of the second argument at 24.) Jumps go forward only, to labels resolved below."""
    program: list = [(_BPF_LD_W_ABS, 0, 0, 4),
                     (_BPF_JEQ_K, 1, 0, _AUDIT_ARCH_X86_64),
                     (_BPF_RET_K, 0, 0, _RET_KILL_PROCESS),
                     (_BPF_LD_W_ABS, 0, 0, 0),
                     (_BPF_JGE_K, "deny", 0, _X32_SYSCALL_BIT)]
    program += [(_BPF_JEQ_K, "deny", 0, nr) for nr in sorted(DENIED_SYSCALLS.values())]
    program += [(_BPF_JEQ_K, "fcntl", 0, FCNTL), (_BPF_JEQ_K, "ioctl", 0, IOCTL),
                (_BPF_RET_K, 0, 0, _RET_ALLOW)]
    labels = {}
    for label, commands in (("fcntl", DENIED_FCNTL), ("ioctl", DENIED_IOCTL)):
        labels[label] = len(program)
        program += [(_BPF_LD_W_ABS, 0, 0, 24)]
        program += [(_BPF_JEQ_K, "deny", 0, cmd) for cmd in sorted(commands.values())]
        program += [(_BPF_RET_K, 0, 0, _RET_ALLOW)]
    labels["deny"] = len(program)
    program.append((_BPF_RET_K, 0, 0, _RET_EPERM))
    return [(code, labels[jt] - pc - 1 if isinstance(jt, str) else jt, jf, k)
            for pc, (code, jt, jf, k) in enumerate(program)]


class _Seccomp:
    def __init__(self):
        self.fprog = None
        if not _X86_64 or _LIBC is None:
            self.detail = f"the filter is written for x86_64 Linux (this is {platform.machine()} {sys.platform})"
            return
        program = seccomp_program()
        self.filters = (_SockFilter * len(program))(*[_SockFilter(*p) for p in program])
        self.fprog = _SockFprog(len(program), self.filters)
        self.detail = ("EPERM for " + ", ".join(sorted(DENIED_SYSCALLS, key=DENIED_SYSCALLS.get))
                       + ", fcntl " + "/".join(DENIED_FCNTL) + ", ioctl " + "/".join(DENIED_IOCTL)
                       + f" ({len(DENIED_SYSCALLS)} calls and {len(DENIED_FCNTL) + len(DENIED_IOCTL)} "
                       "commands); other architectures killed")

    def apply(self) -> dict:
        if self.fprog is None:
            return wall("seccomp", False, self.detail)
        if _prctl(PR_SET_NO_NEW_PRIVS, 1) != 0:
            return wall("seccomp", False, f"PR_SET_NO_NEW_PRIVS failed: {_errno_text()}")
        if _prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, ctypes.addressof(self.fprog)) != 0:
            return wall("seccomp", False, f"installing the filter failed: {_errno_text()}")
        return wall("seccomp", True, self.detail)


# --- uid ----------------------------------------------------------------------------------

UID_BASE = 61000


def unused_id(slot: int) -> int:
    """An id from UID_BASE + slot that names no user and no group on this machine."""
    import grp
    import pwd
    candidate = UID_BASE + slot
    while True:
        try:
            pwd.getpwuid(candidate)
        except KeyError:
            try:
                grp.getgrgid(candidate)
            except KeyError:
                return candidate
        candidate += 1000


# --- the whole set ------------------------------------------------------------------------

def _empty_directory() -> int | None:
    """An open descriptor of an empty directory that is already removed (nothing can be
    created in it, and nothing is left behind in /tmp when a server is killed)."""
    import tempfile

    try:
        path = tempfile.mkdtemp(prefix="attnkit-empty-")
        os.chmod(path, 0o111)             # searchable by the child's uid, nothing to list
        fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
        os.rmdir(path)
    except OSError:
        return None
    return fd


def _vm_size() -> int:
    """This process's virtual size in bytes (what RLIMIT_AS counts); OSError without /proc."""
    with open("/proc/self/statm", "rb") as f:
        return int(f.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")


def _vm_size_or_none() -> int | None:
    try:
        return _vm_size()
    except (OSError, ValueError, IndexError):
        return None


def _set_limit(which: int, soft: int, hard: int | None = None) -> None:
    hard = soft if hard is None else hard
    _, current_hard = resource.getrlimit(which)
    if current_hard != resource.RLIM_INFINITY:      # an unprivileged process cannot raise it
        soft, hard = min(soft, current_hard), min(hard, current_hard)
    resource.setrlimit(which, (soft, hard))


class Walls:
    """Everything the walls need, prepared once in the server; ``apply`` in each child."""

    def __init__(self, slot: int = 0):
        self.root = hasattr(os, "geteuid") and os.geteuid() == 0
        self.uid = unused_id(slot) if self.root else None
        self.landlock_missing = None                      # set below, once Landlock is known
        self.landlock = _Landlock()
        self.seccomp = _Seccomp()
        # Landlock already hides every file but Python's; where it is missing, root can give the
        # child an empty root directory instead (it would only break imports where Landlock holds).
        self.jail = _empty_directory() if self.root and self.landlock.fd < 0 else None
        # What enter_namespaces did (the server's, inherited by each child); None: not asked.
        self.namespaces: str | None = None

    def enter_namespaces(self) -> bool:
        """Put this process (the server, once, before any fork) in an empty network namespace
        and an IPC namespace of its own, which every child it forks inherits. Root only; says
        why not in the ``network`` wall of each child."""
        if not self.root:
            self.namespaces = "a network namespace needs root"
        elif (_LIBC is None or not hasattr(_LIBC, "unshare")
                or _LIBC.unshare(ctypes.c_int(CLONE_NEWNET | CLONE_NEWIPC)) != 0):
            self.namespaces = f"unshare(CLONE_NEWNET | CLONE_NEWIPC) failed: {_errno_text()}"
        else:
            self.namespaces = ""
        return self.namespaces == ""

    def apply(self, result_fd: int, limits: dict, job_fd: int | None = None) -> list[dict]:
        """Put this (freshly forked) process inside the walls. Afterwards its result pipe is
        RESULT_FD, its job pipe (if given) JOB_FD, and stdio is /dev/null. Never raises: a wall
        that fails says so. Returns each wall's report, in the order they were applied."""
        reports = []

        def attempt(name, action):
            try:
                reports.append(action())
            except Exception as error:                    # a wall must not stop the others
                reports.append(wall(name, False, f"{type(error).__name__}: {error}"))

        parent = os.getppid()
        vm_size = _vm_size_or_none()                      # /proc is unreadable once Landlock is on
        null = os.open(os.devnull, os.O_RDWR)
        attempt("session", self._session)
        attempt("network", self._network)
        attempt("landlock", self.landlock.apply)
        attempt("chroot", self._chroot)                   # (before fds: it closes the jail's)
        attempt("fds", lambda: self._fds(result_fd, job_fd, null))
        attempt("rlimits", lambda: self._rlimits(limits, vm_size))
        attempt("uid", self._drop_uid)
        try:
            self._die_with(parent, reports[0])
        except Exception:                                 # no prctl (not Linux): nothing to arm
            pass
        attempt("seccomp", self.seccomp.apply)
        return reports

    @staticmethod
    def _die_with(parent: int, session: dict) -> None:
        """SIGKILL when the server dies, so no child outlives it (a server killed in the middle
        of a job cannot kill its child's group any more). Set after the uid drop, which clears it."""
        if _LIBC is None or not hasattr(_LIBC, "prctl") or _prctl(PR_SET_PDEATHSIG, signal.SIGKILL) != 0:
            return
        if os.getppid() != parent:        # the server died before the signal was armed
            os._exit(1)
        session["detail"] += "; killed if the server dies"

    def _session(self) -> dict:
        os.setsid()
        return wall("session", True, f"own session and process group {os.getpid()}")

    def _network(self) -> dict:
        if not self.root:
            return wall("network", False, "a network namespace needs root (seccomp still denies sockets, "
                                           "Landlock TCP where its ABI allows)")
        if self.namespaces != "":
            why = self.namespaces or "its server entered no network namespace"
            return wall("network", False, f"{why} (seccomp still denies sockets, Landlock TCP where its ABI allows)")
        detail = ("its server's empty network namespace (no interface up, not even loopback) and IPC "
                  "namespace, which no other process shares")
        if self.seccomp.fprog is None:           # IPC objects are not denied: none may reach the next child
            if _LIBC.unshare(ctypes.c_int(CLONE_NEWIPC)) != 0:
                return wall("network", False, f"unshare(CLONE_NEWIPC) failed: {_errno_text()}")
            detail += "; an IPC namespace of its own"
        return wall("network", True, detail)

    @staticmethod
    def _fds(result_fd: int, job_fd: int | None, null: int) -> dict:
        # both out of the way first: either may sit on a number the other (or stdio) takes
        high = [fcntl.fcntl(fd, fcntl.F_DUPFD, 10) for fd in (result_fd, job_fd) if fd is not None]
        for fd in (0, 1, 2):
            os.dup2(null, fd)
        for fd, place in zip(high, (RESULT_FD, JOB_FD)):
            os.dup2(fd, place)                 # (dup2 clears close-on-exec: no exec happens anyway)
        kept = RESULT_FD + len(high)
        soft = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
        # (an unlimited soft limit, possible on macOS, would make closerange count to 2**63)
        os.closerange(kept, soft if 1024 <= soft <= 2**20 else 1024 if soft < 1024 else 2**20)
        pipes = f"the result pipe (fd {RESULT_FD})" + (f" and the job pipe (fd {JOB_FD}, read end)"
                                                       if job_fd is not None else "")
        return wall("fds", True, f"stdin/stdout/stderr are /dev/null; every other descriptor closed but {pipes}")

    def _rlimits(self, limits: dict, vm_size: int | None) -> dict:
        cpu = max(1, int(limits.get("cpu_seconds", 10)))
        file_size = int(limits.get("file_size_mb", 1)) * MIB
        open_files = int(limits.get("open_files", 64))
        _set_limit(resource.RLIMIT_CPU, cpu, cpu + 1)      # SIGXCPU, then SIGKILL a second later
        parts = [f"cpu {cpu} s"]
        if vm_size is None:                                # no /proc: the margin has no base
            parts.append("address space not limited (this process's size is unknown without /proc)")
        else:
            address_space = vm_size + int(limits.get("memory_mb", 1024)) * MIB
            _set_limit(resource.RLIMIT_AS, address_space)
            parts.append(f"address space {address_space // MIB} MiB "
                         f"(size at fork {vm_size // MIB} MiB + {limits.get('memory_mb', 1024)})")
        _set_limit(resource.RLIMIT_FSIZE, file_size)
        _set_limit(resource.RLIMIT_NOFILE, open_files)
        _set_limit(resource.RLIMIT_CORE, 0)                # a segfault leaves no core file to write
        parts += [f"file size {file_size // MIB} MiB", f"{open_files} open files", "no core dumps"]
        if not self.root or self.uid is not None:
            _set_limit(resource.RLIMIT_NPROC, 1)           # counted per real uid: no new process
            parts.append("no new processes (nproc 1)")
        else:
            parts.append("nproc not set (the kernel ignores it for root)")
        return wall("rlimits", True, ", ".join(parts))

    def _chroot(self) -> dict:
        """An empty directory as the root, where Landlock is missing: without it, a uid-dropped
        child could still read every world-readable file (other students' submissions, the
        project's solutions/). Everything the child needs was imported before."""
        if self.jail is None:
            return wall("chroot", False, "not needed: Landlock hides the files" if self.landlock.fd >= 0
                         else "changing the root directory needs root")
        os.fchdir(self.jail)
        os.chroot(".")
        os.chdir("/")
        return wall("chroot", True, "an empty directory as its root: no file of the machine is visible")

    def _drop_uid(self) -> dict:
        if self.uid is None:
            return wall("uid", False, f"not root: runs as uid {os.getuid()}, the grader's own user")
        os.setgroups([])
        os.setresgid(self.uid, self.uid, self.uid)
        os.setresuid(self.uid, self.uid, self.uid)
        if os.getresuid() != (self.uid,) * 3 or os.getresgid() != (self.uid,) * 3:
            return wall("uid", False, "the uid did not change")
        return wall("uid", True, f"uid/gid {self.uid}, no supplementary groups")

    def describe(self) -> list[dict]:
        """What ``apply`` would do on this machine, without doing it."""
        root = self.root
        return [
            wall("session", hasattr(os, "setsid"), "own session and process group"),
            wall("network", root and _LIBC is not None,
                  "an empty network namespace per server, its children in it one at a time" if root else
                  "a network namespace needs root (seccomp still denies sockets, Landlock TCP where its ABI allows)"),
            wall("landlock", self.landlock.fd >= 0, self.landlock.detail),
            wall("chroot", self.jail is not None, "an empty directory as the root" if self.jail is not None
                  else "not needed: Landlock hides the files" if self.landlock.fd >= 0
                  else "changing the root directory needs root"),
            wall("fds", True, "stdio to /dev/null, every other descriptor closed but the result pipe "
                               "and the job pipe's read end"),
            wall("rlimits", True, "cpu, address space, file size, open files"
                  + (", processes" if not root or self.uid is not None else "")),
            wall("uid", self.uid is not None, f"uid/gid {self.uid} per server" if self.uid is not None
                  else "not root: runs as the grader's own user"),
            wall("seccomp", self.seccomp.fprog is not None, self.seccomp.detail),
        ]


FILESYSTEM_WALLS = ("landlock", "uid")


def protected(walls: list[dict] | None = None) -> bool:
    """Is the filesystem walled off from student code? True when Landlock holds (nothing
    outside the Python installation can be read) or the uid drop holds (nothing that is not
    world-readable can be: the answer key is 0600). ``walls`` is what a live child reported
    (``RunResult.walls``, ``client.explain()``); without it, this machine's static check.

    Without either, a student's code runs as the grader's own user and can read every file
    the grader can, the answer key included: the grader refuses to grade then unless told
    ``--insecure``. (The uid drop alone leaves world-readable files readable, e.g. a checkout
    of the project's ``solutions/``: keep those out of the grading machine, or out of reach.)"""
    if walls is None:
        walls = explain()
    return any(isinstance(x, dict) and x.get("name") in FILESYSTEM_WALLS and x.get("active") is True
               for x in walls)


def explain(slot: int = 0) -> list[dict]:
    """The walls this machine supports (a static check; ``client.explain`` asks a live child)."""
    built = Walls(slot)
    try:
        return built.describe()
    finally:
        if built.landlock.fd >= 0:
            os.close(built.landlock.fd)
