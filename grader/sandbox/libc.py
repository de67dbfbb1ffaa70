"""The C library as the walls reach it through ctypes: its handle, ``prctl``, the last error as
text, and the ``prctl`` option both Landlock and seccomp need first.

One handle for every wall (``LIBC``; None where there is no C library to load), read at each
call, so a machine without ``prctl`` & co. can be played by replacing it. Only the standard
library is imported here: the sandbox server imports this module.
"""

from __future__ import annotations

import ctypes
import errno
import os

PR_SET_NO_NEW_PRIVS = 38


def _load():
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.syscall.restype = ctypes.c_long
    except (OSError, AttributeError):
        return None
    # Looked up now, in the server: a child's first use of a name not yet looked up searches
    # every loaded library's symbols, touching (and so copying) their pages in each child.
    for name in ("prctl", "unshare"):
        try:
            getattr(libc, name)
        except AttributeError:             # (not Linux: the walls that need it say so)
            pass
    return libc


LIBC = _load()


def errno_text() -> str:
    """The last C error, named and explained ("EPERM (Operation not permitted)")."""
    code = ctypes.get_errno()
    return f"{errno.errorcode.get(code, code)} ({os.strerror(code)})"


def prctl(option: int, arg2: int, arg3: int = 0) -> int:
    """prctl(2); AttributeError where the C library has none (not Linux)."""
    return LIBC.prctl(ctypes.c_int(option), ctypes.c_ulong(arg2), ctypes.c_ulong(arg3),
                      ctypes.c_ulong(0), ctypes.c_ulong(0))
