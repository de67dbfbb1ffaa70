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

Why the mistakes apart: they are most of what an entry decodes (their outputs are most of
its arrays), and grading reads them only for a part the student got wrong.
``unpack_to_grade`` decodes the rest and leaves each record's mistakes to a
``StoredMistakes`` mapping, which decodes its problem's section when first read.

Layout of a stored entry: sections, each ``u32 length · u16 reference · deflated text``
(reference 0xFFFF: none); the top section first (its ``problems`` maps each problem to
``[its section, its mistakes' section or -1, the mistakes' fields, the number of the first
array of the mistakes' own, where its bytes start in the blob]``, sections numbered from 0
after the top), then the problems' sections in that order, then their mistakes' sections in
that order, then ``u32 length · deflated blob``. A mistakes' section names the records'
arrays and its own only, so it decodes alone. An entry stored before the mistakes were apart
maps each problem to its one section's number, and reads as it always did.
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


def scaffold(text: bytes, arrays: dict[bytes, int], known: dict[bytes, int] | None = None,
             first: int = 0) -> bytes:
    """``text`` with each packed array's base64 replaced by its number: its number in
    ``known`` if it is there, else in ``arrays`` (base64 → number, extended in order of first
    appearance, numbered from ``first``)."""
    def number(match):
        data = match.group(1)
        index = known.get(data) if known is not None else None
        if index is None:
            index = arrays.get(data)
            if index is None:
                index = arrays[data] = first + len(arrays)
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
    problems = entry["problems"]
    order = sorted(problems)                 # canonical order, as a one-file key's text has them
    parts = [(pid, section_name(pid, problems[pid]), *split(problems[pid])) for pid in order]
    records: dict[bytes, int] = {}           # the records' arrays: any section may name one
    sections = [(name, scaffold(canonical(rest).encode("utf-8"), records)) for _, name, rest, _ in parts]
    blob = [_decoded(data) for data in records]          # (dict order: first appearance)
    number, offset, layout = len(records), sum(map(len, blob)), {}
    for i, (pid, name, _, mistakes) in enumerate(parts):
        if not mistakes:
            layout[pid] = [i, -1, [], 0, 0]
            continue
        # its own arrays (those of no record) numbered after every earlier section's: it
        # decodes alone, with the records' arrays (a value it shares with another problem's
        # mistakes is stored again)
        own: dict[bytes, int] = {}
        text = scaffold(canonical(mistakes).encode("utf-8"), own, records, number)
        layout[pid] = [i, len(sections), sorted(mistakes), number, offset]
        sections.append((mistakes_name(name), text))
        arrays = [_decoded(data) for data in own]
        blob += arrays
        number, offset = number + len(own), offset + sum(map(len, arrays))
    top = {**{k: v for k, v in entry.items() if k != "problems"}, "problems": layout}
    out = [_section(canonical(top).encode("utf-8"), None, _NONE)]
    for name, text in sections:
        ref = names.get(name, _NONE)
        out.append(_section(text, references[ref] if ref != _NONE else None, ref))
    body = zlib.compress(b"".join(blob), _LEVEL)
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
        elif not (type(at) is list and len(at) == 5 and all(type(at[i]) is int for i in (0, 1, 3, 4))
                  and type(at[2]) is list and set(at[2]) <= set(MISTAKES) and bool(at[2]) == (at[1] >= 0)):
            raise ValueError("a problem's place in the entry is not [section, mistakes' section, "
                             "fields, first array, blob offset]")
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
    later = _Later(sections, references, arrays)
    problems = {}
    for pid, (number, mistakes, fields, first, offset) in layout.items():
        record = records[number]
        if not isinstance(record, dict) or (mistakes >= 0 and mistakes < rest):
            raise ValueError(f"the sections of {pid!r} are not a record and its mistakes")
        place = (mistakes, fields, first, offset)
        record.update({field: StoredMistakes(later, place, field) for field in fields})
        problems[pid] = {k: record[k] for k in sorted(record)}
    top["problems"] = problems
    return top


class _Later:
    """An entry's mistakes' sections, each decoded alone when first asked for: with the
    records' arrays (decoded already) and its own, which start where its place says."""

    def __init__(self, sections: list, references: list[bytes], records: "_Arrays"):
        self.sections, self.references, self.records = sections, references, records
        self.decoded: dict[int, dict] = {}
        self.lock = threading.Lock()

    def section(self, place: tuple) -> dict:
        number, fields, first, offset = place
        with self.lock:
            found = self.decoded.get(number)
            if found is None:
                try:
                    found = self.decoded[number] = self._decode(number, fields, first, offset)
                except _DECODING as err:
                    raise _error(err) from None
            return found

    def _decode(self, number: int, fields: list, first: int, offset: int) -> dict:
        if first < len(self.records.spans):
            raise ValueError("a mistakes' section whose arrays start among the records'")
        arrays = _Arrays(self.records.blob, self.records.spans, first, offset)
        decoded = orjson.loads(arrays.filled(_inflated(self.sections[number], self.references)))
        if not isinstance(decoded, dict) or sorted(decoded) != fields:
            raise ValueError("a mistakes' section that does not hold its fields")
        return decoded


class StoredMistakes(Mapping):
    """A record's twins or look-alikes (``MISTAKES``), decoded from the stored entry when first
    read: the same mapping ``unpack`` would have put there. Copied or pickled, a plain dict."""

    __slots__ = ("_later", "_place", "_field", "_decoded")

    def __init__(self, later: _Later, place: tuple, field: str):
        self._later, self._place, self._field = later, place, field
        self._decoded = None

    def _value(self) -> dict:
        if self._decoded is None:            # (a part's verdict reads it dozens of times)
            self._decoded = self._later.section(self._place)[self._field]
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
        return f"StoredMistakes({self._field!r} of section {self._place[0]})"


_NUMBERED = re.compile(rb'"packed":([0-9]+),"shape":\[([0-9,]*)\]')


class _Arrays:
    """The blob's arrays. Arrays are numbered in order of first appearance, and where one
    first appears its shape follows it (canonical order: dtype, packed, shape), which gives
    its length in the blob. The text is cut at the numbers by the regex engine and put
    together again with one join; each array's base64 is written once, when first needed.
    A mistakes' section decoded alone has the records' arrays as its ``base`` and numbers its
    own from ``first``, at ``offset`` in the blob."""

    def __init__(self, blob, base: list | tuple = (), first: int = 0, offset: int = 0):
        self.blob, self.offset = memoryview(blob), offset     # (slices copy nothing)
        self.base, self.first = base, first
        self.spans: list[tuple[int, int]] = []              # its own arrays' bytes in the blob
        self.texts: dict[int, bytes] = {}                   # array number → its text, once made
        self._sizes: dict[bytes, int] = {}

    def filled(self, text: bytes) -> bytes:
        pieces = _NUMBERED.split(text)          # text, number, shape, text, number, shape, …
        numbers, shapes = list(map(int, pieces[1::3])), pieces[2::3]
        texts, blob = self.texts, self.blob
        out = []
        for number, shape in zip(numbers, shapes):
            if number == self.first + len(self.spans):
                self._count(shape)
            piece = texts.get(number)
            if piece is None:
                start, end = self._span(number)
                piece = texts[number] = (b'"packed":"' + binascii.b2a_base64(blob[start:end], newline=False)
                                         + b'","shape":[')
            out.append(piece + shape + b"]")
        pieces[1::3] = out
        del pieces[2::3]
        return b"".join(pieces)

    def passed(self, text: bytes) -> None:
        """A section not decoded: only the places of the arrays it names first are taken."""
        for number, shape in _NUMBERED.findall(text):
            if int(number) == self.first + len(self.spans):
                self._count(shape)
        return None

    def _span(self, number: int) -> tuple[int, int]:
        if number < min(len(self.base), self.first):
            return self.base[number]
        if 0 <= number - self.first < len(self.spans):
            return self.spans[number - self.first]
        raise ValueError("an array named before it is stored")

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
