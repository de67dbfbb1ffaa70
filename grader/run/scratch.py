"""Scratch folders of a grading run, and the ones a killed run left behind.

A run works in a private temporary folder (pytest's manifest and ini file; a cluster
shard's copies of the students' notebooks) that it removes when it ends. A run killed with
SIGKILL, or by the kernel when memory runs out, cannot remove it: on a Dask worker that
would leave copies of students' notebooks behind, one folder for each killed shard.

So a run holds a lock on a file in its folder (``flock``, which the kernel releases when
the process dies, however it dies), and making a folder first removes the folders of the
same kind whose lock can be taken: their run is gone. The lock file gets its name only once
it is locked, so a run that is just starting is never taken for one that died. The lock
decides, not the pid in the name (kept there for people): a pid means nothing in another pid
namespace (containers sharing a /tmp). Only folders named ``attnkit-<kind>-<pid>-<random>``,
owned by this user and holding a lock file, are ever removed.
"""

from __future__ import annotations

import fcntl
import os
import re
import shutil
import tempfile
from contextlib import contextmanager
from pathlib import Path

LOCK = ".attnkit-running"


def _abandoned(folder: Path) -> bool:
    """Is ``folder``'s lock free (its run is gone)? False if it cannot be told."""
    try:
        fd = os.open(folder / LOCK, os.O_RDONLY | os.O_NOFOLLOW)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return True
    except OSError:           # EWOULDBLOCK: its run holds it
        return False
    finally:
        os.close(fd)          # (releases the lock, if it was taken)


def sweep(kind: str, root: Path | None = None) -> list[Path]:
    """Remove the ``kind`` scratch folders in ``root`` (default: the temporary directory)
    whose run is gone; returns them."""
    root = Path(root or tempfile.gettempdir())
    pattern = re.compile(rf"attnkit-{re.escape(kind)}-\d+-[A-Za-z0-9_]+")
    removed = []
    try:
        names = os.listdir(root)
    except OSError:
        return removed
    for name in sorted(names):
        if pattern.fullmatch(name) is None:
            continue
        path = root / name
        try:
            status = path.lstat()
        except OSError:
            continue
        if not path.is_dir() or path.is_symlink() or status.st_uid != os.getuid():
            continue
        if _abandoned(path):
            shutil.rmtree(path, ignore_errors=True)
            removed.append(path)
    return removed


@contextmanager
def scratch(kind: str):
    """A private temporary folder for this run (mode 0700), locked while the block runs and
    removed when it ends; the folders killed runs of this ``kind`` left are removed first."""
    sweep(kind)
    with tempfile.TemporaryDirectory(prefix=f"attnkit-{kind}-{os.getpid()}-") as folder:
        # locked before it takes its name: a sweep never sees this lock file free
        fd = os.open(Path(folder) / (LOCK + ".new"), os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            os.rename(Path(folder) / (LOCK + ".new"), Path(folder) / LOCK)
            yield folder
        finally:
            os.close(fd)
