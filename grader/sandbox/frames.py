"""Values across the sandbox boundary: length-prefixed frames of JSON plus raw array bytes.

Why not pickle: unpickling runs code chosen by whoever wrote the bytes, and here that is a
student. Why not ``np.save``/``np.load``: a lying ``.npy`` header made ``np.load`` try to
allocate terabytes before reading a byte. So a frame is plain data that the reader checks
before it believes any of it:

    frame  = length (4 bytes, big-endian) + body
    body   = header length (4 bytes, big-endian) + header (UTF-8 JSON) + array bytes

The header is a tree in which every container is tagged, so nothing a value contains can be
mistaken for structure: ``{"l": [...]}`` a list, ``{"d": [[key, value], ...]}`` a dict,
``{"a": [dtype, shape]}`` an array whose bytes come next in the data section (in order),
``{"f": "nan" | "inf" | "-inf"}`` a float JSON cannot write, ``{"u": type name}`` a value that
could not cross (a function, a set, a complex array…) — the trusted side can still say what
it was. None, booleans, int64 integers, finite floats and strings are JSON scalars.

Every limit is checked before the memory it guards is spent: the frame length against the
caller's limit before the body is read; the header length, and a count of its structural
characters, before it is parsed; every array's dtype (a whitelist), rank, dimensions (each below
2**31) and byte count before any array is made; and the arrays' bytes must add up to exactly
what the frame holds, so a lying header can never make the reader allocate more than the frame
it already has.

Arrays are judged by shape as well as bytes: ``np.zeros((2**31 - 1, 0, 4))`` has no entries and
no bytes, yet whoever calls its ``.tolist()`` (the trusted side compares and stores answers)
gets 2**31 empty lists. So the lists an array's ``.tolist()`` would make (``nested_lists``) count
among the frame's ``MAX_ITEMS`` values, on both sides: ``encode`` sends an array with more than
that as ``Unsupported`` ("numpy.ndarray of shape (2147483647, 0, 4)"), so the rest of the value
still crosses, and ``decode`` refuses a frame holding one (only a forged frame can).

Text is UTF-8 both ways. JSON can spell a lone surrogate (``"\\ud800"``), which is a Python str
but no Unicode text: stored or printed later it would crash the trusted side, so ``decode``
refuses it. ``encode`` never fails on one (a notebook cell can hold it): each becomes U+FFFD.

``decode`` is the one place the trusted side parses bytes a student may have chosen, so the only
exception that ever leaves it is FrameError, whatever the input (anything else that goes wrong
in the parser or numpy is turned into one).
"""

from __future__ import annotations

import json
import math
import os
import re
import struct
import sys
from collections.abc import Iterator
from dataclasses import dataclass

MAX_FRAME = 64 * 2**20        # default body limit (jobs carry sources and givens)
MAX_HEADER = 2 * 2**20        # the JSON part; Python objects cost ~20× their JSON text
MAX_TEXT = 1_000_000          # characters in one string (a long cell source fits)
MAX_DEPTH = 16                # lists/dicts within lists/dicts, the outermost at depth 1
MAX_ITEMS = 100_000           # values in one frame, containers included
MAX_NDIM = 8
MAX_DIM = 2**31 - 1           # one dimension of an array (numpy refuses shapes past intp anyway)
_MAX_TYPE_NAME = 200
_SURROGATES = re.compile("[\ud800-\udfff]")

_PREFIX = struct.Struct(">I")
_INT64 = (-(2**63), 2**63 - 1)

# The only dtypes that cross, as their little-endian ``dtype.str`` (what the header names):
# bool, int8…int64, uint8…uint64, float16…float64. Written out rather than asked of NumPy,
# which this module never imports itself: a server only asked which walls hold (``--bare``)
# starts without it, and an array can only exist where NumPy was imported already.
DTYPES = frozenset(("|b1", "|i1", "<i2", "<i4", "<i8", "|u1", "<u2", "<u4", "<u8", "<f2", "<f4", "<f8"))


def _numpy():
    """NumPy if this process imported it, else None (then no value can be an array)."""
    return sys.modules.get("numpy")


class FrameError(ValueError):
    """A frame that is malformed or breaks a limit; nothing in it is to be trusted."""


class FrameTooLarge(FrameError):
    """A frame (or the value meant for one) over its size limit."""


@dataclass(frozen=True)
class Unsupported:
    """A value that cannot cross the boundary, named by its type ("function", "set",
    "numpy.ndarray of complex128") so the trusted side can say what the student gave."""
    type_name: str


# --- encoding (untrusted side writes, trusted side writes jobs) ---------------------------

def list_objects(shape) -> int:
    """How many Python objects ``ndarray.tolist()`` makes for an array of ``shape``: a list
    per index of every axis but the last, plus the entries. Sizes are judged by this and by
    bytes, never by ``.size`` alone: ``np.zeros((2**31 - 1, 0, 4))`` has no entries and 0
    bytes, yet its nested lists would be 2**31 empty lists."""
    total, count = 1, 1
    for n in shape:
        count *= int(n)
        total += count
    return total


def type_name(obj) -> str:
    """The name a student would recognise: builtins bare, others with their package."""
    kind = type(obj)
    module = getattr(kind, "__module__", "") or ""
    name = getattr(kind, "__qualname__", None) or getattr(kind, "__name__", "object")
    if module in ("builtins", "__main__", ""):
        return str(name)[:_MAX_TYPE_NAME]
    return f"{module.split('.')[0]}.{name}"[:_MAX_TYPE_NAME]


def nested_lists(shape) -> int:
    """The lists alone of ``list_objects(shape)`` (not the entries, which the bytes bound)."""
    return list_objects(shape) - math.prod(int(n) for n in shape)


def _shape_text(shape) -> str:
    return f"numpy.ndarray of shape {tuple(int(n) for n in shape)}"[:_MAX_TYPE_NAME]


def _array_node(array, encoder: _Encoder):
    if array.dtype.kind not in "biuf" or array.dtype.newbyteorder("<").str not in DTYPES:
        return {"u": f"numpy.ndarray of {array.dtype}"}
    if array.ndim > MAX_NDIM:
        return {"u": f"numpy.ndarray with {array.ndim} dimensions"}
    lists = nested_lists(array.shape)
    if lists > MAX_ITEMS:
        # empty or not, the reader's .tolist() would make that many lists: named, not sent
        return {"u": _shape_text(array.shape)}
    encoder.count(lists)
    little = array.dtype.newbyteorder("<")
    array = encoder.np.asarray(array, dtype=little, order="C")    # (ascontiguousarray makes 0-d 1-d)
    encoder.buffers.append(memoryview(array).cast("B") if array.size else b"")
    return {"a": [little.str, list(array.shape)]}


class _Encoder:
    def __init__(self):
        self.buffers: list = []
        self.items = 0
        self.np = _numpy()

    def count(self, items: int) -> None:
        self.items += items
        if self.items > MAX_ITEMS:
            raise FrameTooLarge(f"more than {MAX_ITEMS} values")

    def node(self, obj, depth: int):
        self.items += 1                  # (count(1), inline: a job has hundreds of nodes)
        if self.items > MAX_ITEMS:
            raise FrameTooLarge(f"more than {MAX_ITEMS} values")
        kind = type(obj)
        if kind is str:                  # (the commonest, first: a job is mostly text)
            return obj if len(obj) <= MAX_TEXT else {"u": f"str of {len(obj)} characters"}
        if kind is dict and depth <= MAX_DEPTH:
            return self._dict(obj, depth)
        if kind is list and depth <= MAX_DEPTH:
            return {"l": [self.node(item, depth + 1) for item in list(obj)]}
        if obj is None or obj is True or obj is False:
            return obj
        if kind is int:
            return obj if _INT64[0] <= obj <= _INT64[1] else {"u": "int beyond 64 bits"}
        if kind is float:
            if math.isfinite(obj):
                return obj
            return {"f": "nan" if math.isnan(obj) else ("inf" if obj > 0 else "-inf")}
        np = self.np
        if np is not None and isinstance(obj, np.ndarray):
            return _array_node(np.asarray(obj), self)
        if np is not None and isinstance(obj, np.generic):
            if isinstance(obj, np.str_):
                return self.node(str(obj), depth)
            return _array_node(np.asarray(obj), self)
        if isinstance(obj, str):
            text = str.__str__(obj)
            return text if len(text) <= MAX_TEXT else {"u": f"str of {len(text)} characters"}
        if kind is Unsupported:
            return {"u": str(obj.type_name)[:_MAX_TYPE_NAME]}
        if isinstance(obj, (list, tuple, dict)) and depth > MAX_DEPTH:
            return {"u": f"{type_name(obj)} nested more than {MAX_DEPTH} levels deep"}
        if isinstance(obj, (list, tuple)):
            return {"l": [self.node(item, depth + 1) for item in list(obj)]}
        if isinstance(obj, dict):
            return self._dict(obj, depth)
        return {"u": type_name(obj)}

    def _dict(self, obj: dict, depth: int):
        if not all(isinstance(key, str) for key in obj):
            return {"u": "dict with keys that are not str"}
        pairs = []
        for key, value in list(obj.items()):
            self.count(1)
            key = str.__str__(key)
            if len(key) > MAX_TEXT:
                raise FrameTooLarge("a dict key over the text limit")
            pairs.append([key, self.node(value, depth + 1)])
        return {"d": pairs}


# What json.dumps(tree, separators=(",", ":"), ensure_ascii=False, allow_nan=False) writes, with
# its encoder made once (json.dumps makes one per call: a cost every small frame paid again).
_HEADER_TEXT = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False, allow_nan=False)


def encode(obj) -> bytes:
    """The body of a frame holding ``obj``; values that cannot cross become ``Unsupported``.
    Raises FrameTooLarge when ``obj`` has too many items or too big a header."""
    encoder = _Encoder()
    header = _header(encoder.node(obj, 1))
    if len(header) > MAX_HEADER:
        raise FrameTooLarge(f"header of {len(header)} bytes (limit {MAX_HEADER})")
    return b"".join([_PREFIX.pack(len(header)), header, *encoder.buffers])


def _header(tree) -> bytes:
    """The tree as compact JSON text, UTF-8. With orjson where the process has it (the
    grader, whose jobs' headers are several kB of text), else the standard library's encoder
    (the sandbox's side never imports orjson). Either text decodes to the
    same tree: finite floats, 64-bit integers, text, lists and dicts with text keys."""
    fast = sys.modules.get("orjson")
    if fast is not None:
        try:
            return fast.dumps(tree)
        except TypeError:         # (orjson's JSONEncodeError: a lone surrogate) the way below
            pass
    text = _HEADER_TEXT.encode(tree)
    try:
        return text.encode()
    except UnicodeEncodeError:
        # lone surrogates, which can only sit inside strings of the tree: U+FFFD, one for one
        return _SURROGATES.sub("\ufffd", text).encode()


# --- small events: two numbers, no JSON -------------------------------------------------
#
# The child announces every step before it runs it (``start``) and asks for each hidden case
# (``need``): dozens of frames per job that hold an event name and two integers. They cross as
# a fixed 10-byte body instead of a JSON header: a marker byte that no JSON body can begin with
# (it would give a header length ≥ 0xFF000000, far over MAX_HEADER), the event's code, the step
# and the case (-1: none). ``decode`` turns one into the very dict the JSON form gives, so the
# checks after it are the same; it refuses a small body with an unknown code or a negative step.

SMALL_MARK = 0xFF
_SMALL = struct.Struct(">BBii")
SMALL_EVENTS = {1: "start", 2: "need"}
_SMALL_CODES = {name: code for code, name in SMALL_EVENTS.items()}


def small_event(event: str, step: int, case: int | None = None) -> bytes:
    """The body of a small event frame (``event``: "start" or "need")."""
    return _SMALL.pack(SMALL_MARK, _SMALL_CODES[event], step, -1 if case is None else case)


def _small(data) -> dict:
    _, code, step, case = _SMALL.unpack_from(data)
    name = SMALL_EVENTS.get(code)
    if name is None or step < 0 or case < -1:
        raise FrameError("a malformed small event")
    return {"event": name, "step": step} if case < 0 else {"event": name, "step": step, "case": case}


# --- decoding (the trusted side reads what the untrusted side wrote) ----------------------

def _text(text: str) -> str:
    """``text`` if it is Unicode text (encodes as UTF-8); FrameError for a lone surrogate."""
    if text.isascii():           # (CPython knows this without a look at the characters)
        return text
    if _SURROGATES.search(text):
        raise FrameError("a string with a lone surrogate (not Unicode text)")
    return text


def _reject_constant(name):
    raise FrameError(f"non-standard JSON constant {name}")


def _parse_int(text: str) -> int:
    if len(text) > 20:
        raise FrameError("integer literal too long")
    return int(text)


# One decoder for every header (json.loads with options builds a new one per call, a cost
# a small frame would pay again each time). A JSONDecoder keeps no state between calls.
_HEADER = json.JSONDecoder(parse_constant=_reject_constant, parse_int=_parse_int)


# Each allowed dtype, and its native-order twin, made once (not once per array): at the first
# array decoded, NumPy then imported if it is not yet (this module never imports it itself).
_DTYPE_OBJECTS: dict = {}


def _dtypes(name: str):
    if not _DTYPE_OBJECTS:
        import numpy as np
        _DTYPE_OBJECTS.update({n: (np.dtype(n), np.dtype(n).newbyteorder("=")) for n in DTYPES})
    return _DTYPE_OBJECTS[name]


class _Decoder:
    def __init__(self, data: memoryview):
        self.data = data
        self.offset = 0
        self.items = 0

    def count(self, items: int) -> None:
        self.items += items
        if self.items > MAX_ITEMS:
            raise FrameError(f"more than {MAX_ITEMS} values")

    def value(self, node, depth: int):
        self.count(1)
        if type(node) is float:         # (what json makes: exact types, the commonest first)
            if not math.isfinite(node):
                raise FrameError("non-finite float literal")
            return node
        if node is None or isinstance(node, bool):
            return node
        if isinstance(node, str):
            if len(node) > MAX_TEXT:
                raise FrameError("string over the text limit")
            return _text(node)
        if type(node) is int:
            if not _INT64[0] <= node <= _INT64[1]:
                raise FrameError("integer outside the int64 range")
            return node
        if not isinstance(node, dict) or len(node) != 1:
            raise FrameError("a header node that is not tagged")
        (tag, body), = node.items()
        if tag in ("l", "d") and depth > MAX_DEPTH:
            raise FrameError(f"lists or dicts nested more than {MAX_DEPTH} levels")
        if tag == "l" and isinstance(body, list):
            return [self.value(item, depth + 1) for item in body]
        if tag == "d" and isinstance(body, list):
            out = {}
            for pair in body:
                if not (isinstance(pair, list) and len(pair) == 2 and isinstance(pair[0], str)):
                    raise FrameError("a dict entry that is not [str, value]")
                if len(pair[0]) > MAX_TEXT:
                    raise FrameError("dict key over the text limit")
                self.count(1)
                out[_text(pair[0])] = self.value(pair[1], depth + 1)
            return out
        if tag == "a":
            return self.array(body)
        if tag == "f" and body in ("nan", "inf", "-inf"):
            return float(body)
        if tag == "u" and isinstance(body, str) and len(body) <= _MAX_TYPE_NAME:
            return Unsupported(_text(body))
        raise FrameError(f"unknown or malformed node {tag!r}")

    def array(self, body):
        if not (isinstance(body, list) and len(body) == 2 and isinstance(body[1], list)):
            raise FrameError("malformed array node")
        dtype_name, shape = body
        if dtype_name not in DTYPES:
            raise FrameError(f"dtype {dtype_name!r} not allowed")
        if len(shape) > MAX_NDIM or not all(type(n) is int and 0 <= n <= MAX_DIM for n in shape):
            raise FrameError(f"bad shape {shape!r:.200}")
        dtype, native = _dtypes(dtype_name)
        count = math.prod(shape)           # exact Python ints: no overflow to hide behind
        nbytes = count * dtype.itemsize
        if nbytes > len(self.data) - self.offset:
            raise FrameError(f"array of {nbytes} bytes but only {len(self.data) - self.offset} left")
        lists = nested_lists(shape)
        if lists > MAX_ITEMS:             # only a forged frame holds one: encode names it instead
            raise FrameError(f"an array of shape {shape!r:.100} (its .tolist() would make {lists} lists)")
        self.count(lists)
        raw = self.data[self.offset:self.offset + nbytes]
        self.offset += nbytes
        np = sys.modules["numpy"]         # (imported by _dtypes at the latest)
        if dtype.kind == "b":             # bytes other than 0/1 make numpy bools that lie
            array = np.frombuffer(raw, dtype=np.uint8, count=count) != 0
        else:
            array = np.frombuffer(raw, dtype=dtype, count=count).astype(native)
        return array.reshape(tuple(shape))


def decode(data: bytes, *, limit: int = MAX_FRAME):
    """The value in a frame body, after checking every limit; FrameError if anything is off,
    and never any other exception, whatever ``data`` holds."""
    try:
        return _decode(data, limit)
    except FrameError:
        raise
    except Exception as error:          # MemoryError, RecursionError, numpy's own refusals…
        raise FrameError(f"undecodable frame: {type(error).__name__}: {error!s:.200}") from None


def _decode(data: bytes, limit: int):
    if len(data) > limit:
        raise FrameTooLarge(f"frame of {len(data)} bytes (limit {limit})")
    if len(data) < _PREFIX.size:
        raise FrameError("frame shorter than its header length")
    if data[0] == SMALL_MARK and len(data) == _SMALL.size:
        return _small(data)
    (header_length,) = _PREFIX.unpack_from(data)
    if header_length > MAX_HEADER or header_length > len(data) - _PREFIX.size:
        raise FrameError(f"header length {header_length} impossible for this frame")
    view = memoryview(data)
    header = bytes(view[_PREFIX.size:_PREFIX.size + header_length])
    # Each list/dict/number costs tens of bytes as a Python object: bound how many the parser
    # could make before it makes them (an over-estimate: brackets inside strings count too).
    if header.count(b"[") + header.count(b"{") + header.count(b",") > 4 * MAX_ITEMS:
        raise FrameError("header with too many values")
    try:
        tree = _HEADER.decode(header.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError, ValueError) as error:
        raise FrameError(f"unreadable header: {error}") from None
    decoder = _Decoder(view[_PREFIX.size + header_length:])
    value = decoder.value(tree, 1)
    if decoder.offset != len(decoder.data):
        raise FrameError(f"{len(decoder.data) - decoder.offset} bytes after the last array")
    return value


# --- frames on file descriptors -----------------------------------------------------------

def framed(body: bytes) -> bytes:
    """A body with its length prefix: the bytes a reader of frames expects."""
    return _PREFIX.pack(len(body)) + body


def frame(obj) -> bytes:
    """``obj`` as a whole frame: length prefix and body."""
    return framed(encode(obj))


def write_all(fd: int, data: bytes) -> None:
    """Write every byte (pipes take large writes in pieces)."""
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def write_frame(fd: int, obj) -> None:
    write_all(fd, frame(obj))


def _read_exactly(fd: int, size: int) -> bytearray | None:
    buffer = bytearray(size)
    view, got = memoryview(buffer), 0
    while got < size:
        n = os.readv(fd, [view[got:]])
        if n == 0:
            return None if got == 0 else buffer[:got]
        got += n
    return buffer


def read_frame(fd: int, *, limit: int = MAX_FRAME):
    """The next value on ``fd``; None on a clean end of file (between frames). A length over
    ``limit`` raises FrameTooLarge before a byte of the body is read or allocated."""
    prefix = _read_exactly(fd, _PREFIX.size)
    if prefix is None:
        return None
    if len(prefix) < _PREFIX.size:
        raise FrameError("end of file inside a frame's length")
    (length,) = _PREFIX.unpack(prefix)
    if length > limit:
        raise FrameTooLarge(f"frame of {length} bytes (limit {limit})")
    body = _read_exactly(fd, length) if length else bytearray()
    if body is None or len(body) < length:
        raise FrameError("end of file inside a frame")
    return decode(body, limit=limit)


class FrameSplitter:
    """Cuts a byte stream read in arbitrary chunks (non-blocking pipes, ``select``) into frame
    bodies; a length over ``limit`` raises FrameTooLarge as soon as the prefix is seen."""

    def __init__(self, limit: int):
        self.limit = limit
        self._buffer = bytearray()

    @property
    def pending(self) -> int:
        """Bytes of an unfinished frame (non-zero at end of file means a truncated frame)."""
        return len(self._buffer)

    def feed(self, chunk: bytes) -> Iterator[bytes]:
        """The bodies completed by ``chunk``, in order. A generator, so the frames before a bad
        length in the same chunk are still delivered (and tell where the writer was)."""
        self._buffer += chunk
        while len(self._buffer) >= _PREFIX.size:
            (length,) = _PREFIX.unpack_from(self._buffer)
            if length > self.limit:
                raise FrameTooLarge(f"frame of {length} bytes (limit {self.limit})")
            end = _PREFIX.size + length
            if len(self._buffer) < end:
                break
            body = bytes(self._buffer[_PREFIX.size:end])
            del self._buffer[:end]
            yield body
