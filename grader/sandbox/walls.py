"""The walls around one student's code: prepared once in the server, applied in the forked
child before that code runs, and the report of which ones held.

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
- ``landlock`` (``grader.sandbox.landlock``): no file may be written or created anywhere, files
  may be read only under the Python installation; TCP bind/connect denied (Landlock ABI ≥ 4);
  signals and abstract Unix sockets confined to the child (ABI ≥ 6). Works without root.
- ``chroot`` (root): an empty root directory, only where Landlock is missing.
- ``fds``: stdio points at /dev/null and every descriptor but the result pipe (moved to fd 3)
  and the job pipe's read end (fd 4: the child reads each hidden case there when it reaches it)
  is closed, so nothing else the server or the grader holds open is reachable.
- ``rlimits`` (``grader.sandbox.rlimits``): CPU seconds, address space (the child's size at
  fork + a margin, so a memory bomb ends in MemoryError), file size, open files, and processes
  (only where the kernel applies it: not to root).
- ``uid`` (root): an unused uid/gid per server, no supplementary groups: 0600 files, the
  grader's ``/proc/<pid>/mem`` and every other user's processes are out of reach.
- ``seccomp`` (x86_64, ``grader.sandbox.seccomp``): a small BPF filter makes fork/clone/exec,
  sockets, kill, ptrace, cross-process memory access, namespaces, mounts and io_uring fail with
  EPERM.

Whether the filesystem is walled off at all — Landlock or the uid drop — is ``protected()``:
without either, student code reads whatever the grader can, so grading should refuse to run
(unless the instructor insists: ``--insecure``). Off Linux (macOS) only ``session``, ``fds`` and
most ``rlimits`` hold; the others report why not, and the child still runs.

Anything the code imports after the uid drop must be readable by that uid: an interpreter under
root's home (pyenv) is not, so the server imports what students commonly use *before* forking
(``preimport``). The walls are built in the long-lived server once (``Walls``) — the Landlock
ruleset and the BPF program are inherited by every fork — so a job pays only the system calls
that switch them on. Only the standard library is imported here (and the walls' own modules):
the sandbox server imports this module and must not pull in anything else of the project.
"""

from __future__ import annotations

import ctypes
import fcntl
import importlib
import os
import resource
import signal

from . import libc, rlimits
from .landlock import Landlock
from .seccomp import Seccomp

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


PR_SET_PDEATHSIG = 1
CLONE_NEWNET = 0x40000000
CLONE_NEWIPC = 0x08000000


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


class Walls:
    """Everything the walls need, prepared once in the server; ``apply`` in each child."""

    def __init__(self, slot: int = 0):
        self.root = hasattr(os, "geteuid") and os.geteuid() == 0
        self.uid = unused_id(slot) if self.root else None
        self.landlock_missing = None                      # set below, once Landlock is known
        self.landlock = Landlock()
        self.seccomp = Seccomp()
        # Landlock already hides every file but Python's; where it is missing, root can give the
        # child an empty root directory instead (it would only break imports where Landlock holds).
        self.jail = _empty_directory() if self.root and self.landlock.fd < 0 else None
        # What enter_namespaces did (the server's, inherited by each child); None: not asked.
        self.namespaces: str | None = None
        # The server's virtual size, read just before it forks (``note_size``): the child's at
        # fork, which its address-space limit builds on. Read in the server, where opening
        # /proc costs little; a fresh child would pay copy-on-write faults for it.
        self.size_at_fork: int | None = None

    def note_size(self) -> None:
        """Read this process's virtual size now, for the child about to be forked."""
        self.size_at_fork = rlimits.vm_size_or_none()

    def enter_namespaces(self) -> bool:
        """Put this process (the server, once, before any fork) in an empty network namespace
        and an IPC namespace of its own, which every child it forks inherits. Root only; says
        why not in the ``network`` wall of each child."""
        if not self.root:
            self.namespaces = "a network namespace needs root"
        elif (libc.LIBC is None or not hasattr(libc.LIBC, "unshare")
                or libc.LIBC.unshare(ctypes.c_int(CLONE_NEWNET | CLONE_NEWIPC)) != 0):
            self.namespaces = f"unshare(CLONE_NEWNET | CLONE_NEWIPC) failed: {libc.errno_text()}"
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
        vm_size = self.size_at_fork                       # (read by the server before the fork)
        if vm_size is None:
            vm_size = rlimits.vm_size_or_none()           # /proc is unreadable once Landlock is on
        null = os.open(os.devnull, os.O_RDWR)
        attempt("session", self._session)
        attempt("network", self._network)
        attempt("landlock", lambda: wall("landlock", *self.landlock.restrict()))
        attempt("chroot", self._chroot)                   # (before fds: it closes the jail's)
        attempt("fds", lambda: self._fds(result_fd, job_fd, null))
        attempt("rlimits", lambda: self._rlimits(limits, vm_size))
        attempt("uid", self._drop_uid)
        try:
            self._die_with(parent, reports[0])
        except Exception:                                 # no prctl (not Linux): nothing to arm
            pass
        attempt("seccomp", lambda: wall("seccomp", *self.seccomp.install()))
        return reports

    @staticmethod
    def _die_with(parent: int, session: dict) -> None:
        """SIGKILL when the server dies, so no child outlives it (a server killed in the middle
        of a job cannot kill its child's group any more). Set after the uid drop, which clears it."""
        if libc.LIBC is None or not hasattr(libc.LIBC, "prctl") or libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL) != 0:
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
            if libc.LIBC.unshare(ctypes.c_int(CLONE_NEWIPC)) != 0:
                return wall("network", False, f"unshare(CLONE_NEWIPC) failed: {libc.errno_text()}")
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
        one_process = not self.root or self.uid is not None    # nproc is not applied to root
        return wall("rlimits", True, rlimits.set_limits(limits, vm_size, one_process))

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
            wall("network", root and libc.LIBC is not None,
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
