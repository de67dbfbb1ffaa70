"""A class's worth of records kept on disk and read back one at a time: ``Spilled``.

The class pass (``class_grades``, ``summary_json``) makes one record per student and reads
them several times (the table, the item analysis, every export). Held as Python objects a
student's grades cost tens of kilobytes, so a course of 100,000 would need gigabytes; spilled,
the process holds only the offsets and what one read is looking at, whatever the class size.

The file is an unnamed temporary file (``tempfile.TemporaryFile``: unlinked as it is made,
mode 0600), written and read by this process alone, so the pickles in it are the kit's own.
A small class never reaches the disk: records stay in one in-memory buffer until it passes
``in_memory`` bytes.
"""

from __future__ import annotations

import os
import pickle
import tempfile
from array import array
from collections.abc import Iterable, Iterator, Sequence

IN_MEMORY = 8 << 20          # bytes kept in memory before the records go to disk
_READ = 1 << 20              # bytes read from the disk at a time when iterating


class Spilled(Sequence):
    """An append-only sequence of picklable records, on disk once it outgrows ``in_memory``
    bytes. Iterating reads the file in blocks; indexing reads one record."""

    def __init__(self, items: Iterable = (), in_memory: int = IN_MEMORY):
        self._in_memory = in_memory
        self._offsets = array("q", [0])      # record i is bytes [offsets[i], offsets[i + 1])
        self._buffer = bytearray()           # records not yet on disk (all of them while small)
        self._file = None                    # the temporary file, once there is one
        self._on_disk = 0                    # bytes written to it
        self.extend(items)

    def append(self, item) -> None:
        data = pickle.dumps(item, protocol=pickle.HIGHEST_PROTOCOL)
        self._buffer += data
        self._offsets.append(self._offsets[-1] + len(data))
        if (self._file is not None and len(self._buffer) >= _READ) or len(self._buffer) > self._in_memory:
            self._flush()

    def extend(self, items: Iterable) -> None:
        for item in items:
            self.append(item)

    def _flush(self) -> None:
        if self._file is None:
            self._file = tempfile.TemporaryFile(prefix="attnkit-class-")
        fd = self._file.fileno()
        view = memoryview(self._buffer)
        while view:
            view = view[os.pwrite(fd, view, self._on_disk + len(self._buffer) - len(view)):]
        self._on_disk += len(self._buffer)
        self._buffer = bytearray()

    def _bytes(self, start: int, end: int) -> bytes:
        """Bytes [start, end) of the records, from the disk or the buffer."""
        if start >= self._on_disk:
            return bytes(self._buffer[start - self._on_disk:end - self._on_disk])
        out = bytearray()
        fd = self._file.fileno()
        while start + len(out) < min(end, self._on_disk):
            chunk = os.pread(fd, min(end, self._on_disk) - start - len(out), start + len(out))
            if not chunk:
                raise OSError(f"the class's temporary file ended at byte {start + len(out)}")
            out += chunk
        if end > self._on_disk:
            out += self._buffer[:end - self._on_disk]
        return bytes(out)

    def __len__(self) -> int:
        return len(self._offsets) - 1

    def __getitem__(self, i):
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(len(self)))]
        n = len(self)
        if i < 0:
            i += n
        if not 0 <= i < n:
            raise IndexError("Spilled index out of range")
        return pickle.loads(self._bytes(self._offsets[i], self._offsets[i + 1]))

    def __iter__(self) -> Iterator:
        n, i = len(self), 0
        while i < n:
            # a block of whole records (at least one, however large)
            j = i + 1
            while j < n and self._offsets[j + 1] - self._offsets[i] <= _READ:
                j += 1
            block = memoryview(self._bytes(self._offsets[i], self._offsets[j]))
            base = self._offsets[i]
            for k in range(i, j):
                yield pickle.loads(block[self._offsets[k] - base:self._offsets[k + 1] - base])
            i = j

    def __repr__(self) -> str:
        return f"<Spilled: {len(self)} records, {self._offsets[-1]} bytes>"

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
