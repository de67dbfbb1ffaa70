"""A batch cut into shards for a Dask cluster (``grader.run.cluster``): how many submissions
each shard takes, in the order they are sent (small first ones, so every worker starts soon,
and shrinking last ones, so the workers run out of work together), and what a shard carries
to a worker: the key's head, its students' entries (verified at the client: of a sharded
key, only these students' stored entries; of a one-file key, their canonical
text) and their notebooks' bytes."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from formats.answer_key import canonical
from formats.key_shape import entry_for

from grader.intake.reading import notebook_bytes
from grader.intake.records import Found

SHARD_SIZE = 100
SERVERS_PER_WORKER = 1
IN_FLIGHT = 2                  # shards out per worker: one running, one on its way
FIRST = 4                      # a worker's first shard is SHARD_SIZE / FIRST …
LAST = 10                      # … and the last ones shrink to SHARD_SIZE / LAST


@dataclass(frozen=True)
class Shard:
    """What travels to a worker: the key's head, this shard's entries and notebooks."""
    head: dict
    # a sharded key's Portion (the stored entries of these students, verified at the client),
    # or, from a one-file key, student → their entry's canonical text (verified at the client)
    entries: Mapping
    notebooks: dict                    # student → (Found as the client found it, the file's bytes)
    kit_version: str
    cpu_seconds: float
    wall_seconds: float
    servers: int = SERVERS_PER_WORKER

    @property
    def students(self) -> list[str]:
        return sorted(self.notebooks)


def shard_sizes(total: int, size: int = SHARD_SIZE, workers: int = 1):
    """How many submissions each shard takes, in the order they are sent: ``size`` each, but
    the first shard of each worker holds size / FIRST (a worker starts grading as soon as a
    small shard has travelled, not after a full one has), and near the end each shard takes
    an equal share of what is left for every shard that can be out at once (IN_FLIGHT per
    worker), down to size / LAST: the workers then run out of work together, instead of one
    waiting while the other grades a whole last shard."""
    first, least = max(1, size // FIRST), max(1, size // LAST)
    left, sent = total, 0
    while left > 0:
        share = -(-left // (IN_FLIGHT * max(1, workers)))
        n = first if sent < workers else max(least, min(size, share))
        n = min(n, left)
        yield n
        left -= n
        sent += 1


def shards_of(key: dict, submissions: list[Found], *, kit_version: str, cpu_seconds: float,
              wall_seconds: float, size: int = SHARD_SIZE, workers: int = 1,
              unread: list | None = None):
    """The shards (sized by ``shard_sizes``), one at a time (each read when it is about to be
    sent, so the client holds only the shards in flight); the notebooks that cannot be read
    go to ``unread`` (graded at the client: no code of theirs runs)."""
    head, current = key["assignment"], {}
    sizes = shard_sizes(len(submissions), size, workers)
    wanted = next(sizes, size)
    for found in sorted(submissions, key=lambda f: f.student):
        data = notebook_bytes(found)
        if data is None:
            if unread is not None:
                unread.append(found)
            continue
        current[found.student] = (found, data[0])
        if len(current) == wanted:
            yield _shard(key, head, current, kit_version, cpu_seconds, wall_seconds)
            current, wanted = {}, next(sizes, size)
    if current:
        yield _shard(key, head, current, kit_version, cpu_seconds, wall_seconds)


def _entry_text(key: dict, student: str) -> bytes:
    """The entry's canonical text: as the verified key file holds it, or written out."""
    students = key["students"]
    if hasattr(students, "text"):
        return students.text(student)
    return canonical(entry_for(key, student)).encode("utf-8")


def _shard(key, head, notebooks, kit_version, cpu_seconds, wall_seconds) -> Shard:
    students = key["students"]
    entries = (students.portion(sorted(notebooks)) if hasattr(students, "portion")
               else {s: _entry_text(key, s) for s in notebooks})
    return Shard(head, entries, dict(notebooks), kit_version, cpu_seconds, wall_seconds)


def only(entries: Mapping, student: str) -> Mapping:
    """``entries`` of one student: a shard split to be sent again one submission at a time."""
    return entries.only(student) if hasattr(entries, "only") else {student: entries[student]}
