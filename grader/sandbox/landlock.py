"""The ``landlock`` wall: a Landlock ruleset built once in the server, with which each child
restricts itself — no file written or created anywhere, files read only under the Python
installation; TCP bind/connect denied (ABI ≥ 4); signals and abstract Unix sockets confined to
the child (ABI ≥ 6). Works without root. Only the standard library is imported here: the
sandbox server imports this module.
"""

from __future__ import annotations

import ctypes
import errno
import fcntl
import os
import site
import struct
import sys

from . import libc

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
    if libc.LIBC is None or not sys.platform.startswith("linux"):
        return 0, f"not Linux ({sys.platform})"
    abi = libc.LIBC.syscall(ctypes.c_long(_SYS_LANDLOCK_CREATE_RULESET), None, ctypes.c_size_t(0),
                            ctypes.c_uint32(_LANDLOCK_CREATE_RULESET_VERSION))
    if abi < 0:
        code = ctypes.get_errno()
        why = {errno.ENOSYS: "the kernel has no Landlock (needs Linux ≥ 5.13)",
               errno.EOPNOTSUPP: "Landlock is disabled at boot (lsm= parameter)"}
        return 0, why.get(code, f"Landlock unavailable: {libc.errno_text()}")
    return int(abi), ""


def readable_roots() -> list[str]:
    """The only directories the child may read: the Python installation and its packages."""
    candidates = [sys.prefix, sys.exec_prefix, sys.base_prefix, sys.base_exec_prefix,
                  os.path.dirname(os.__file__), *site.getsitepackages()]
    roots = sorted({os.path.realpath(path) for path in candidates if os.path.isdir(path)})
    # a root inside another root adds nothing
    return [r for r in roots if not any(r != o and r.startswith(o.rstrip("/") + "/") for o in roots)]


class Landlock:
    """A ruleset built once in the server; each child only restricts itself with it
    (``restrict``). ``fd`` is -1 where there is none, and ``detail`` says why."""

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
        fd = libc.LIBC.syscall(ctypes.c_long(_SYS_LANDLOCK_CREATE_RULESET), ctypes.byref(attr),
                               ctypes.c_size_t(size), ctypes.c_uint32(0))
        if fd < 0:
            self.abi, self.detail = 0, f"creating the ruleset failed: {libc.errno_text()}"
            return
        self.roots = readable_roots()
        failure = self._allow_reading(fd)
        if failure:
            os.close(fd)
            self.abi, self.detail = 0, failure
            return
        self.fd = fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 10)     # clear of fds 0–3, which the child reuses
        os.close(fd)
        self.detail = self._describe(net, scoped)

    def _allow_reading(self, fd: int) -> str:
        """Add a read-only rule for each of ``self.roots`` to the ruleset ``fd``: "" when every
        rule is in, else what failed."""
        for root in self.roots:
            path_fd = os.open(root, os.O_PATH | os.O_CLOEXEC)
            try:
                # struct landlock_path_beneath_attr is packed: u64 allowed_access, s32 parent_fd
                rule = ctypes.create_string_buffer(struct.pack("=Qi", _FS_READ_FILE | _FS_READ_DIR, path_fd), 12)
                if libc.LIBC.syscall(ctypes.c_long(_SYS_LANDLOCK_ADD_RULE), ctypes.c_int(fd),
                                     ctypes.c_int(_LANDLOCK_RULE_PATH_BENEATH), rule, ctypes.c_uint32(0)) < 0:
                    return f"adding a rule for {root} failed: {libc.errno_text()}"
            finally:
                os.close(path_fd)
        return ""

    def _describe(self, net: int, scoped: int) -> str:
        parts = [f"ABI {self.abi}: no file written or created anywhere; reads only under "
                 + ", ".join(self.roots)]
        parts.append("TCP bind/connect denied" if net else "TCP not covered (ABI < 4)")
        parts.append("signals and abstract Unix sockets confined to the child" if scoped
                     else "signals not scoped (ABI < 6)")
        return "; ".join(parts)

    def restrict(self) -> tuple[bool, str]:
        """Restrict this (freshly forked) process with the ruleset: (whether it holds, what
        the ``landlock`` wall reports)."""
        if self.fd < 0:
            return False, self.detail
        if libc.prctl(libc.PR_SET_NO_NEW_PRIVS, 1) != 0:
            return False, f"PR_SET_NO_NEW_PRIVS failed: {libc.errno_text()}"
        if libc.LIBC.syscall(ctypes.c_long(_SYS_LANDLOCK_RESTRICT_SELF), ctypes.c_int(self.fd),
                             ctypes.c_uint32(0)) < 0:
            return False, f"landlock_restrict_self failed: {libc.errno_text()}"
        return True, self.detail
