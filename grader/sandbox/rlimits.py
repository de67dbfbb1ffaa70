"""The ``rlimits`` wall: the resource limits a child sets on itself — CPU seconds, address
space (its size at fork plus a margin, so a memory bomb ends in MemoryError), file size, open
files, no core dumps, and no new processes where the kernel applies that (not to root). Only the
standard library is imported here: the sandbox server imports this module.
"""

from __future__ import annotations

import os
import resource

MIB = 2**20


def _vm_size() -> int:
    """This process's virtual size in bytes (what RLIMIT_AS counts); OSError without /proc."""
    with open("/proc/self/statm", "rb") as f:
        return int(f.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")


def vm_size_or_none() -> int | None:
    """This process's virtual size in bytes, or None where it cannot be read (no /proc)."""
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


def set_limits(limits: dict, vm_size: int | None, one_process: bool) -> str:
    """Set the job's ``limits`` on this process (the address space on top of ``vm_size``, its
    size at fork; ``one_process``: also nproc 1, where the kernel applies it); what the
    ``rlimits`` wall reports."""
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
    if one_process:
        _set_limit(resource.RLIMIT_NPROC, 1)           # counted per real uid: no new process
        parts.append("no new processes (nproc 1)")
    else:
        parts.append("nproc not set (the kernel ignores it for root)")
    return ", ".join(parts)
