"""The ``seccomp`` wall (x86_64): a small BPF filter, built once in the server, that makes
fork/clone/exec, sockets, kill, ptrace, cross-process memory access, System V and POSIX IPC,
namespaces, mounts, keyrings, io_uring and a few ``fcntl``/``ioctl`` commands fail with EPERM,
and kills other architectures' system calls. Only the standard library is imported here: the
sandbox server imports this module.
"""

from __future__ import annotations

import ctypes
import errno
import platform
import sys

from . import libc

PR_SET_SECCOMP = 22
SECCOMP_MODE_FILTER = 2
_X86_64 = platform.machine() in ("x86_64", "AMD64") and sys.platform.startswith("linux")

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


class Seccomp:
    """The filter, ready to install (``fprog``; None where it cannot be, and ``detail`` says why)."""

    def __init__(self):
        self.fprog = None
        if not _X86_64 or libc.LIBC is None:
            self.detail = f"the filter is written for x86_64 Linux (this is {platform.machine()} {sys.platform})"
            return
        program = seccomp_program()
        self.filters = (_SockFilter * len(program))(*[_SockFilter(*p) for p in program])
        self.fprog = _SockFprog(len(program), self.filters)
        self.detail = ("EPERM for " + ", ".join(sorted(DENIED_SYSCALLS, key=DENIED_SYSCALLS.get))
                       + ", fcntl " + "/".join(DENIED_FCNTL) + ", ioctl " + "/".join(DENIED_IOCTL)
                       + f" ({len(DENIED_SYSCALLS)} calls and {len(DENIED_FCNTL) + len(DENIED_IOCTL)} "
                       "commands); other architectures killed")

    def install(self) -> tuple[bool, str]:
        """Install the filter on this (freshly forked) process: (whether it holds, what the
        ``seccomp`` wall reports)."""
        if self.fprog is None:
            return False, self.detail
        if libc.prctl(libc.PR_SET_NO_NEW_PRIVS, 1) != 0:
            return False, f"PR_SET_NO_NEW_PRIVS failed: {libc.errno_text()}"
        if libc.prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, ctypes.addressof(self.fprog)) != 0:
            return False, f"installing the filter failed: {libc.errno_text()}"
        return True, self.detail
