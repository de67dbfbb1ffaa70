"""One part's values of the whole class, as answer forensics (``copied_numbers``) searches
them: which owners' values does this value match within the part's tolerance?

Values are added one at a time (their owner is the order they were added in: 0, 1, …),
equal values stored once as they come; ``freeze`` turns each shape's values into one matrix,
sorted by a weighted sum of their entries (fixed weights in [1, 2), not the plain sum, which
is the same for every softmax matrix). A value is then compared in full only with the rows
whose weighted sum lies within what the tolerance allows (a binary search), all at once. The
index holds the distinct values' numbers (8 bytes each) and 8 bytes an owner, not an object
a value: a part's listed mistakes are up to 11 values a student in the example assignment.

More than ``CROWD`` distinct values near one weighted sum are no evidence (answers built to
share a projection, or a region too dense for a match to prove anything): a query costs at
most that many comparisons, whatever the class handed in.
"""

from __future__ import annotations

import tempfile
from array import array

import numpy as np

CROWD = 256              # distinct values near one projection beyond which a value is no evidence
_BATCH_BYTES = 1 << 20   # values written to disk, and read back, in blocks of this many bytes


def as_floats(value) -> np.ndarray | None:
    """``value`` as a float array, or None when it is not all finite real numbers."""
    try:
        a = np.asarray(value, dtype=float)
    except (TypeError, ValueError):
        return None
    return a if np.isfinite(a).all() else None


def _size(shape: tuple) -> int:
    return int(np.prod(shape, dtype=np.int64))


def _weights(size: int) -> np.ndarray:
    """Fixed weights in [1, 2) for the index's projection (the golden-ratio sequence): a
    plain sum would put every softmax matrix at its row count, the whole class in one place."""
    return 1 + np.mod(np.arange(1, size + 1) * 0.6180339887498949, 1.0)


def _project(rows: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """Each row's weighted sum (k × size → k), summed the same way for values and queries."""
    return (rows * weights).sum(axis=1)


def _window(keys: np.ndarray, x: float, bound: float) -> tuple[int, int]:
    """The sorted ``keys`` within ``bound`` of ``x``: [lo, hi)."""
    return (int(np.searchsorted(keys, x - bound, side="left")),
            int(np.searchsorted(keys, x + bound, side="right")))


def _matches(a: np.ndarray, rows: np.ndarray, rtol: float, atol: float) -> np.ndarray:
    """Which ``rows`` (k × a.size) ``a`` matches: |a − b| ≤ atol + rtol·|b| entrywise
    (``formats.compare.within`` on finite floats), for each row b."""
    return np.all(np.abs(a.ravel() - rows) <= atol + rtol * np.abs(rows), axis=1)


class _Adding:
    """One shape's values while they are added: the kept ones with their owners, equal
    values stored once (``rows``: a value's bytes → its row, in the order they came). An
    index that keeps only what its queries may match first writes every value to a
    temporary file (``spill``, with ``spilled`` their owners) and keeps the weighted sum and
    a hash of each, to count a crowd; ``freeze`` then reads them back and keeps some."""

    def __init__(self, number: int, shape: tuple):
        self.number, self.shape, self.size = number, shape, _size(shape)
        self.weights = _weights(self.size)
        self.rows: dict[bytes, int] = {}
        self.owners, self.owner_rows = array("q"), array("q")
        self.sums, self.hashes = array("d"), array("q")
        self.pending, self.spilled, self.spill = bytearray(), array("q"), None

    def write_pending(self) -> None:
        k, step = len(self.spilled) - len(self.sums), 8 * self.size
        values = np.frombuffer(self.pending, dtype=np.float64).reshape(k, self.size)
        self.sums.extend(_project(values, self.weights).tolist())
        self.hashes.extend(hash(bytes(self.pending[i * step:(i + 1) * step])) for i in range(k))
        del values
        if self.spill is None:
            self.spill = tempfile.TemporaryFile(prefix="attnkit-forensics-")
        self.spill.write(self.pending)
        self.pending = bytearray()

    def read_back(self):
        """(owners, values) of the spilled values, a block at a time."""
        self.spill.seek(0)
        per_block = max(1, _BATCH_BYTES // (8 * self.size or 1))
        for start in range(0, len(self.spilled), per_block):
            owners = self.spilled[start:start + per_block]
            data = self.spill.read(8 * self.size * len(owners))
            yield owners, np.frombuffer(data, dtype=np.float64).reshape(len(owners), self.size)
        self.spill.close()


class _Shape:
    """One shape's kept values: the distinct ones sorted by projection (ties: first added
    first), each one's owners in the order they were added; and every distinct value's
    projection, sorted, for counting a crowd."""

    def __init__(self, adding: _Adding, crowd_keys: np.ndarray | None = None):
        self.weights, size, k = adding.weights, adding.size, len(adding.rows)
        distinct = np.frombuffer(b"".join(adding.rows), dtype=np.float64).reshape(k, size)
        adding.rows = {}
        projection = self.project(distinct)
        order = np.argsort(projection, kind="stable")       # ties: the first to come first
        self.values, self.keys = distinct[order], projection[order]
        rank = np.empty(k, np.int64)
        rank[order] = np.arange(k)
        row = rank[np.frombuffer(adding.owner_rows, dtype=np.int64)]    # each kept value's row
        by_row = np.argsort(row, kind="stable")
        self.owners = np.frombuffer(adding.owners, dtype=np.int64)[by_row]
        self.starts = np.searchsorted(row[by_row], np.arange(k + 1))
        self.row_of = row.astype(np.int32)                  # kept value → its row
        self.crowd_keys = self.keys if crowd_keys is None else crowd_keys

    def project(self, rows: np.ndarray) -> np.ndarray:
        return _project(rows, self.weights)


def _crowd_keys(adding: _Adding) -> np.ndarray:
    """The weighted sums of the distinct values added (told apart by their hashes), sorted."""
    pairs = np.unique(np.rec.fromarrays([np.frombuffer(adding.sums, dtype=np.float64),
                                         np.frombuffer(adding.hashes, dtype=np.int64)], names="s,h"))
    return np.ascontiguousarray(pairs["s"])


class ValueIndex:
    """Values by owner (the order they were added in), searchable by closeness.

    With ``queries`` (a frozen index of the values that will be looked up, ``limit`` the
    limit they will be looked up with, None counted as 0), only the values that one of those
    may match are kept in full, the others only counted towards a crowd: the class's
    mistakes are many values a student, and most of them no answer comes near."""

    def __init__(self, rtol: float, atol: float, queries: "ValueIndex | None" = None, limit: int = 0):
        self.rtol, self.atol, self._queries, self._limit = rtol, atol, queries, limit
        self.n = 0                      # values added, those that are no real numbers included
        self._adding: dict = {}         # shape → _Adding
        self._shapes: list = []         # (shape, _Shape) in the order the shapes came, once frozen
        self._by_shape: dict = {}       # shape → _Shape, once frozen
        self._where = array("q")        # owner → (shape number << 32) | its place among them, or -1

    def add(self, value) -> None:
        a = as_floats(value)
        self._where.append(-1)
        if a is not None:
            adding = self._adding.get(a.shape)
            if adding is None:
                adding = self._adding[a.shape] = _Adding(len(self._adding), a.shape)
            data = np.ascontiguousarray(a, dtype=np.float64).tobytes()
            if self._queries is None:
                self._keep(adding, self.n, data)
            else:
                adding.pending += data
                adding.spilled.append(self.n)
                if len(adding.pending) >= _BATCH_BYTES:
                    adding.write_pending()
        self.n += 1

    def _keep(self, adding: _Adding, owner: int, data: bytes) -> None:
        self._where[owner] = (adding.number << 32) | len(adding.owners)
        adding.owners.append(owner)
        adding.owner_rows.append(adding.rows.setdefault(data, len(adding.rows)))

    def freeze(self) -> "ValueIndex":
        crowds = {}
        if self._queries is not None:
            for shape, adding in self._adding.items():
                adding.write_pending()
                crowds[shape] = _crowd_keys(adding)
            near = self._near(crowds)
            for shape, adding in self._adding.items():
                for owners, values in adding.read_back():
                    for i in np.flatnonzero(near.may_match(shape, values)):
                        self._keep(adding, owners[i], values[i].tobytes())
        self._shapes = [(shape, _Shape(adding, crowds.get(shape))) for shape, adding in self._adding.items()]
        self._by_shape = dict(self._shapes)
        self._adding = {}
        return self

    def _near(self, crowds: dict) -> "ValueIndex":
        """The queries that are not in a crowd of this index's values (a crowd answers None
        whatever it holds), as an index."""
        near = ValueIndex(self.rtol, self.atol)
        most = max(CROWD, 4 * (self._limit + 1))
        for shape, rows in self._queries._shapes:
            keys = crowds.get(shape)
            if keys is None or not len(rows.values):
                continue
            x = rows.project(rows.values)                # as ``matching`` sums a query
            total = np.abs(rows.values).sum(axis=1)
            # (narrowed a little: a sum's last bit never drops a query that is no crowd)
            bound = self._bound(total, _size(shape)) - 1e-12 * (1 + 2 * total)
            crowded = (np.searchsorted(keys, x + bound, side="right")
                       - np.searchsorted(keys, x - bound, side="left")) > most
            for value in rows.values[~crowded]:
                near.add(value.reshape(shape))
        return near.freeze()

    def _bound(self, total, size: int):
        """How far apart the weighted sums of a value whose entries' magnitudes sum to
        ``total`` and a value it matches can be: a matches b when |a − b| ≤ atol + rtol·|b|
        entrywise, so with weights w < 2, |w·a − w·b| ≤ 2 (size·atol + rtol·Σ|b|), and
        Σ|b| ≤ (Σ|a| + size·atol) / (1 − rtol); and the sums' own rounding."""
        spread = size * self.atol
        return (2 * (spread + self.rtol * (total + spread) / max(1 - self.rtol, 1e-12))
                + 1e-9 * (1 + 2 * total))

    def value(self, owner: int) -> np.ndarray | None:
        """What ``owner`` added, as floats (None: no real numbers, or not kept)."""
        where = self._where[owner]
        if where < 0:
            return None
        shape, rows = self._shapes[where >> 32]
        return rows.values[rows.row_of[where & 0xFFFFFFFF]].reshape(shape)

    def matching(self, value, limit: int | None = None) -> list[int] | None:
        """The owners of the values ``value`` matches within the tolerance; None when there
        are more than ``limit`` of them (no need to list a value the whole class shares), or
        when more than ``CROWD`` distinct values of its shape lie near its projection (a
        crowd: a match there proves nothing) — so a query costs at most that many
        comparisons, whatever the class handed in."""
        a = as_floats(value)
        rows = None if a is None else self._by_shape.get(a.shape)
        if rows is None:
            return []
        row = a.reshape(1, -1)
        bound = self._bound(float(np.abs(row).sum(axis=1)[0]), a.size)   # only sums that close can match
        x = float(rows.project(row)[0])
        lo, hi = _window(rows.crowd_keys, x, bound)
        if hi - lo > max(CROWD, 4 * ((limit or 0) + 1)):
            return None
        lo, hi = _window(rows.keys, x, bound)
        out: list = []
        for i in np.flatnonzero(_matches(a, rows.values[lo:hi], self.rtol, self.atol)):
            out += rows.owners[rows.starts[lo + i]:rows.starts[lo + i + 1]].tolist()
            if limit is not None and len(out) > limit:
                return None
        return out

    def may_match(self, shape: tuple, values: np.ndarray) -> np.ndarray:
        """For each row b of ``values`` (k × size, floats of ``shape``): might it be matched
        by a value of this index, with b's tolerance: |a − b| ≤ atol + rtol·|b| for a stored
        a? Also yes where more than ``CROWD`` distinct values lie where one could (a crowd
        is not worth telling apart)."""
        out = np.zeros(len(values), dtype=bool)
        rows = self._by_shape.get(shape)
        if rows is None or not len(rows.keys):
            return out
        # |w·a − w·b| ≤ Σ w|a − b| < 2 (size·atol + rtol·Σ|b|); Σ|a| ≤ Σ|b|(1 + rtol) + size·atol
        spread, total = values.shape[1] * self.atol, np.abs(values).sum(axis=1)
        bound = 2 * (spread + self.rtol * total) + 1e-9 * (1 + 4 * (total + spread))
        x = rows.project(values)
        lo = np.searchsorted(rows.keys, x - bound, side="left")
        hi = np.searchsorted(rows.keys, x + bound, side="right")
        out[hi - lo > CROWD] = True
        for i in np.flatnonzero((hi > lo) & (hi - lo <= CROWD)):
            near, b = rows.values[lo[i]:hi[i]], values[i]
            out[i] = bool(np.any(np.all(np.abs(near - b) <= self.atol + self.rtol * np.abs(b), axis=1)))
        return out
