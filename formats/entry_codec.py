"""A key entry stored small: how a sharded answer key (``formats.key_shards``) holds each
student's entry, and reads it back to the very same values.

Two things make an entry's canonical text large: the float arrays (every twin's and
look-alike's outputs, every hidden case), written as base64, and the text around them
(prompts, rubrics, tolerances, twin names), which is nearly the same for every student. So an
entry is stored as

- its *scaffold*, two sections per problem (and one for the rest: name, e-mail, notebook):
  the record's canonical text without its stored mistakes, and the stored mistakes
  (``MISTAKES``: its twins' and look-alikes' outputs) apart, each with every packed array's
  base64 replaced by the array's number, each deflated with the matching section of a
  *reference* entry as zlib's preset dictionary (what is the same as the reference costs
  almost nothing);
- its *blob*: the bytes of each distinct array, once, in the order the scaffold first names
  them, deflated.

Nothing is rounded or left out: ``unpack`` gives back values whose canonical text is the
entry's own, byte for byte (tested on every entry of a built key). The references are the
class entry's records (``CLASS_STUDENT``'s variant of every problem and pool member): known
before any student is built, the same for a local and a cluster build.

Why the mistakes apart: they are four fifths of what an entry decodes (their outputs are
most of its arrays), and grading reads them only for a part the student got wrong.
``unpack_to_grade`` decodes the rest and leaves each record's mistakes to a
``StoredMistakes`` mapping, which decodes its problem's section when first read.

Layout of a stored entry: sections, each ``u32 length · u16 reference · deflated text``
(reference 0xFFFF: none); the top section first (its ``problems`` maps each problem to
``[its section, its mistakes' section or -1, the mistakes' fields]``, sections numbered from
0 after the top), then the problems' sections in that order, then their mistakes' sections
in that order, then ``u32 length · deflated blob``. An entry stored before the mistakes were
apart maps each problem to its one section's number, and reads as it always did.
"""

from __future__ import annotations

import base64
import binascii
import re
import struct
import threading
import zlib
from collections.abc import Mapping

import orjson

from .serialize import canonical_json as canonical

_PACKED = re.compile(rb'"packed":"([A-Za-z0-9+/=]*)"')
_NONE = 0xFFFF
_LEVEL = 6
WINDOW = 32768               # zlib looks back this far: a longer dictionary's start is never used
MISTAKES = ("lookalikes", "twins")      # a record's stored mistakes: read for a wrong part only
_DECODING = (struct.error, zlib.error, orjson.JSONDecodeError, IndexError, KeyError, TypeError, ValueError)


class EntryCodecError(ValueError):
    """Stored bytes that do not decode (a damaged or foreign shard)."""


def scaffold(text: bytes, arrays: dict[bytes, int]) -> bytes:
    """``text`` with each packed array's base64 replaced by its number in ``arrays``
    (base64 → number, extended in order of first appearance)."""
    def number(match):
        data = match.group(1)
        index = arrays.get(data)
        if index is None:
            index = arrays[data] = len(arrays)
        return b'"packed":%d' % index
    return _PACKED.sub(number, text)


def split(record: dict) -> tuple[dict, dict]:
    """(the record without its stored mistakes, its stored mistakes)."""
    return ({k: v for k, v in record.items() if k not in MISTAKES},
            {k: record[k] for k in MISTAKES if k in record})


def reference_sections(entry: dict) -> dict[str, str]:
    """A reference entry's sections: problem id/template (and its mistakes') → its record's
    scaffold (its own arrays numbered from 0). As a preset dictionary, only the last WINDOW
    bytes count."""
    sections = {}
    for pid, record in entry["problems"].items():
        rest, mistakes = split(record)
        name = section_name(pid, record)
        sections[name] = scaffold(canonical(rest).encode("utf-8"), {}).decode("utf-8")
        if mistakes:
            sections[mistakes_name(name)] = scaffold(canonical(mistakes).encode("utf-8"), {}).decode("utf-8")
    return sections


def section_name(pid: str, record: dict) -> str:
    """A problem's section is named by the problem and the template (a pool's members differ)."""
    return f"{pid}/{record.get('template', '')}"


def mistakes_name(name: str) -> str:
    return f"{name}#mistakes"


def pack(entry: dict, references: list[bytes], names: dict[str, int]) -> bytes:
    """The stored bytes of ``entry``. ``references``: the preset dictionaries, ``names``:
    section name → its index there."""
    arrays: dict[bytes, int] = {}
    problems = entry["problems"]
    order = sorted(problems)                 # canonical order, as a one-file key's text has them
    parts = [(pid, section_name(pid, problems[pid]), *split(problems[pid])) for pid in order]
    later = [pid for pid, _, _, mistakes in parts if mistakes]
    layout = {pid: [i, len(order) + later.index(pid) if mistakes else -1, sorted(mistakes)]
              for i, (pid, _, _, mistakes) in enumerate(parts)}
    top = {**{k: v for k, v in entry.items() if k != "problems"}, "problems": layout}
    out = [_section(canonical(top).encode("utf-8"), None, _NONE)]
    sections = [(name, rest) for _, name, rest, _ in parts]
    sections += [(mistakes_name(name), mistakes) for _, name, _, mistakes in parts if mistakes]
    for name, value in sections:
        ref = names.get(name, _NONE)
        text = scaffold(canonical(value).encode("utf-8"), arrays)
        out.append(_section(text, references[ref] if ref != _NONE else None, ref))
    blob = b"".join(_decoded(data) for data in arrays)      # (dict order: first appearance)
    body = zlib.compress(blob, _LEVEL)
    out.append(struct.pack("<I", len(body)) + body)
    return b"".join(out)


def _decoded(data: bytes) -> bytes:
    return base64.b64decode(data, validate=True)


def _section(text: bytes, zdict: bytes | None, ref: int) -> bytes:
    deflate = zlib.compressobj(_LEVEL, zdict=zdict) if zdict else zlib.compressobj(_LEVEL)
    body = deflate.compress(text) + deflate.flush()
    return struct.pack("<IH", len(body), ref) + body


# --- reading --------------------------------------------------------------------------------

def unpack(stored: bytes, references: list[bytes], only=None) -> dict:
    """The entry ``pack`` stored, as the values it was made of; ``only``: the problems to
    decode (the others are left out of the entry, and their arrays are never written out)."""
    try:
        return _unpacked(memoryview(stored), references, only)
    except _DECODING as err:
        raise _error(err) from None


def unpack_to_grade(stored: bytes, references: list[bytes]) -> dict:
    """``unpack``, but each record's stored mistakes a ``StoredMistakes`` mapping that decodes
    its problem's section when first read (an entry stored with the mistakes inside its
    records decodes whole)."""
    try:
        return _to_grade(memoryview(stored), references)
    except _DECODING as err:
        raise _error(err) from None


def unpack_front(stored: bytes) -> dict:
    """Only the top section (name, e-mail, notebook, LMS ids): no problem is inflated."""
    try:
        size, _ = struct.unpack_from("<IH", stored, 0)
        top = orjson.loads(zlib.decompress(bytes(stored[6:6 + size])))
    except (struct.error, zlib.error, orjson.JSONDecodeError) as err:
        raise _error(err) from None
    top.pop("problems", None)
    return top


def unpack_outline(stored: bytes, references: list[bytes]) -> dict:
    """The entry without its arrays: every record's fields as stored, each packed array's
    ``packed`` left as its number (its dtype and shape are there). For a pass over the class
    that reads names, templates, parts and points, not values (``key_shape.entry_outline``)."""
    try:
        view = memoryview(stored)
        top, sections, _ = _sections(view)
        texts = [_inflated(section, references) for section in sections]
        top["problems"] = _records(top["problems"], [orjson.loads(text) for text in texts])
        return top
    except _DECODING as err:
        raise _error(err) from None


def _error(err: Exception) -> EntryCodecError:
    return EntryCodecError(f"a stored entry that does not decode ({type(err).__name__}: {err})")


def _sections(view: memoryview) -> tuple[dict, list[tuple[int, bytes]], int]:
    """(the top section, parsed; every other section as (reference, deflated bytes); where
    the blob starts)."""
    size, ref = struct.unpack_from("<IH", view, 0)
    top = orjson.loads(zlib.decompress(bytes(view[6:6 + size])))
    pos, sections = 6 + size, []
    for _ in range(_section_count(top["problems"])):
        size, ref = struct.unpack_from("<IH", view, pos)
        body = bytes(view[pos + 6:pos + 6 + size])
        if len(body) != size:
            raise ValueError("a section runs past the entry's end")
        sections.append((ref, body))
        pos += 6 + size
    return top, sections, pos


def _section_count(layout: dict) -> int:
    count = 0
    for at in layout.values():
        if type(at) is int:
            count += 1
        elif not (type(at) is list and len(at) == 3 and type(at[0]) is int and type(at[1]) is int
                  and type(at[2]) is list and set(at[2]) <= set(MISTAKES) and bool(at[2]) == (at[1] >= 0)):
            raise ValueError("a problem's place in the entry is not [section, mistakes' section, fields]")
        else:
            count += 1 + (at[1] >= 0)
    return count


def _inflated(section: tuple[int, bytes], references: list[bytes]) -> bytes:
    ref, body = section
    inflate = zlib.decompressobj(zdict=references[ref]) if ref != _NONE else zlib.decompressobj()
    return inflate.decompress(body) + inflate.flush()


def _blob(view: memoryview, pos: int) -> bytes:
    (size,) = struct.unpack_from("<I", view, pos)
    if pos + 4 + size != len(view):
        raise ValueError("bytes after the entry's blob")
    return zlib.decompress(bytes(view[pos + 4:pos + 4 + size]))


def _numbers(at) -> list[int]:
    """The sections a problem's layout entry names (legacy: one)."""
    return [at] if type(at) is int else [at[0]] + ([at[1]] if at[1] >= 0 else [])


def _records(layout: dict, decoded: list) -> dict:
    """problem → its record, put back together from its decoded sections (in the key's order)."""
    problems = {}
    for pid, at in layout.items():
        if type(at) is int:
            problems[pid] = decoded[at]
            continue
        record, mistakes = decoded[at[0]], decoded[at[1]] if at[1] >= 0 else {}
        if not isinstance(record, dict) or not isinstance(mistakes, dict) or sorted(mistakes) != at[2]:
            raise ValueError(f"the sections of {pid!r} are not a record and its mistakes")
        record.update(mistakes)
        problems[pid] = {k: record[k] for k in sorted(record)}      # (canonical order)
    return problems


def _unpacked(view: memoryview, references: list[bytes], only=None) -> dict:
    top, sections, pos = _sections(view)
    arrays = _Arrays(_blob(view, pos))
    layout = {pid: at for pid, at in top["problems"].items() if only is None or pid in only}
    wanted = {n for at in layout.values() for n in _numbers(at)}
    # every section in stored order: arrays are numbered in order of first appearance
    decoded = [orjson.loads(arrays.filled(text)) if n in wanted else arrays.passed(text)
               for n, text in enumerate(_inflated(section, references) for section in sections)]
    if arrays.offset != len(arrays.blob):
        raise ValueError("the blob holds bytes no array names")
    top["problems"] = _records(layout, decoded)
    return top


def _to_grade(view: memoryview, references: list[bytes]) -> dict:
    top, sections, pos = _sections(view)
    layout = top["problems"]
    if any(type(at) is int for at in layout.values()):
        return _unpacked(view, references)          # (stored before the mistakes were apart)
    rest = len(layout)                              # (the records' sections come first)
    if sorted(at[0] for at in layout.values()) != list(range(rest)):
        raise ValueError("the records' sections are not the first")
    arrays = _Arrays(_blob(view, pos))
    records = [orjson.loads(arrays.filled(_inflated(section, references))) for section in sections[:rest]]
    later = _Later(sections[rest:], rest, references, arrays)
    problems = {}
    for pid, (number, mistakes, fields) in layout.items():
        record = records[number]
        if not isinstance(record, dict):
            raise ValueError(f"the section of {pid!r} is not a record")
        record.update({field: StoredMistakes(later, mistakes, field, fields) for field in fields})
        problems[pid] = {k: record[k] for k in sorted(record)}
    top["problems"] = problems
    return top


class _Later:
    """An entry's mistakes' sections, decoded one at a time when first asked for. A
    section's arrays follow those of every section before it in the blob: the sections
    before the one asked for are inflated and their arrays counted (not written out)."""

    def __init__(self, sections: list, first: int, references: list[bytes], arrays: "_Arrays"):
        self.sections, self.first, self.references, self.arrays = sections, first, references, arrays
        self.counted = 0                       # sections whose arrays are known
        self.texts: dict[int, bytes] = {}      # counted, not yet decoded
        self.decoded: dict[int, dict] = {}
        self.lock = threading.Lock()

    def section(self, number: int, fields: list) -> dict:
        with self.lock:
            index = number - self.first
            found = self.decoded.get(index)
            if found is None:
                try:
                    found = self.decoded[index] = self._decode(index, fields)
                except _DECODING as err:
                    raise _error(err) from None
            return found

    def _decode(self, index: int, fields: list) -> dict:
        if not 0 <= index < len(self.sections):
            raise IndexError(f"no mistakes' section {index + self.first}")
        while self.counted < index:
            text = _inflated(self.sections[self.counted], self.references)
            self.arrays.passed(text)
            self.texts[self.counted] = text
            self.counted += 1
        text = self.texts.pop(index, None)
        decoded = orjson.loads(self.arrays.filled(text if text is not None
                                                  else _inflated(self.sections[index], self.references)))
        self.counted = max(self.counted, index + 1)
        if not isinstance(decoded, dict) or sorted(decoded) != fields:
            raise ValueError("a mistakes' section that does not hold its fields")
        return decoded


class StoredMistakes(Mapping):
    """A record's twins or look-alikes (``MISTAKES``), decoded from the stored entry when first
    read: the same mapping ``unpack`` would have put there. Copied or pickled, a plain dict."""

    __slots__ = ("_later", "_number", "_field", "_fields", "_decoded")

    def __init__(self, later: _Later, number: int, field: str, fields: list):
        self._later, self._number, self._field, self._fields = later, number, field, fields
        self._decoded = None

    def _value(self) -> dict:
        if self._decoded is None:            # (a part's verdict reads it dozens of times)
            self._decoded = self._later.section(self._number, self._fields)[self._field]
        return self._decoded

    def __getitem__(self, name):
        return self._value()[name]

    def __iter__(self):
        return iter(self._value())

    def __len__(self) -> int:
        return len(self._value())

    def __contains__(self, name) -> bool:
        return name in self._value()

    def get(self, name, default=None):
        return self._value().get(name, default)

    def __copy__(self) -> dict:
        return dict(self._value())

    def __deepcopy__(self, memo) -> dict:
        import copy
        return copy.deepcopy(self._value(), memo)

    def __reduce__(self):
        return dict, (dict(self._value()),)

    def __repr__(self) -> str:
        return f"StoredMistakes({self._field!r} of section {self._number})"


_NUMBERED = re.compile(rb'"packed":([0-9]+),"shape":\[([0-9,]*)\]')


class _Arrays:
    """The blob's arrays. Arrays are numbered in order of first appearance, and where one
    first appears its shape follows it (canonical order: dtype, packed, shape), which gives
    its length in the blob. The text is cut at the numbers by the regex engine and put
    together again with one join; each array's base64 is written once, when first needed."""

    def __init__(self, blob: bytes):
        self.blob, self.offset = memoryview(blob), 0        # (slices copy nothing)
        self.spans: list[tuple[int, int]] = []              # array number → its bytes in the blob
        self.texts: dict[int, bytes] = {}                   # array number → its text, once made
        self._sizes: dict[bytes, int] = {}

    def filled(self, text: bytes) -> bytes:
        pieces = _NUMBERED.split(text)          # text, number, shape, text, number, shape, …
        numbers, shapes = list(map(int, pieces[1::3])), pieces[2::3]
        spans, texts, blob = self.spans, self.texts, self.blob
        out = []
        for number, shape in zip(numbers, shapes):
            if number == len(spans):
                self._count(shape)
            piece = texts.get(number)
            if piece is None:
                if number > len(spans):
                    raise ValueError("an array named before it is stored")
                start, end = spans[number]
                piece = texts[number] = (b'"packed":"' + binascii.b2a_base64(blob[start:end], newline=False)
                                         + b'","shape":[')
            out.append(piece + shape + b"]")
        pieces[1::3] = out
        del pieces[2::3]
        return b"".join(pieces)

    def passed(self, text: bytes) -> None:
        """A section not decoded: only the places of the arrays it names first are taken."""
        for number, shape in _NUMBERED.findall(text):
            if int(number) == len(self.spans):
                self._count(shape)
        return None

    def _count(self, shape: bytes) -> None:
        size = self._sizes.get(shape)
        if size is None:
            size = 8
            for n in filter(None, shape.split(b",")):
                size *= int(n)
            self._sizes[shape] = size
        end = self.offset + size
        if end > len(self.blob):
            raise ValueError("an array runs past the blob's end")
        self.spans.append((self.offset, end))
        self.offset = end
