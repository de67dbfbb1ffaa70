"""A key entry stored small: how a sharded answer key (``formats.key_shards``) holds each
student's entry, and reads it back to the very same values.

Two things make an entry's canonical text large: the float arrays (every twin's and
look-alike's outputs, every hidden case), written as base64, and the text around them (prompts, rubrics, tolerances, twin names), which is
nearly the same for every student. So an entry is stored as

- its *scaffold*, one section per problem (and one for the rest: name, e-mail, notebook):
  the canonical text with each packed array's base64 replaced by the array's number, each
  section deflated with the matching section of a *reference* entry as zlib's preset
  dictionary (what is the same as the reference costs almost nothing);
- its *blob*: the bytes of each distinct array, once, in the order the scaffold first names
  them, deflated.

Nothing is rounded or left out: ``unpack`` gives back values whose canonical text is the
entry's own, byte for byte (tested on every entry of a built key). The references are the
class entry's records (``CLASS_STUDENT``'s variant of every problem and pool member): known
before any student is built, the same for a local and a cluster build.

Layout of a stored entry: sections, each ``u32 length · u16 reference · deflated text``
(reference 0xFFFF: none); the top section first (its ``problems`` maps each problem to the
number of its section), then the problems' sections in that order, then ``u32 length ·
deflated blob``.
"""

from __future__ import annotations

import base64
import binascii
import re
import struct
import zlib

import orjson

from .serialize import canonical_json as canonical

_PACKED = re.compile(rb'"packed":"([A-Za-z0-9+/=]*)"')
_INDEX = re.compile(rb'"packed":([0-9]+)(?=[,}])')
_NONE = 0xFFFF
_LEVEL = 6
WINDOW = 32768               # zlib looks back this far: a longer dictionary's start is never used


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


def reference_sections(entry: dict) -> dict[str, str]:
    """A reference entry's sections: problem id/template → its record's scaffold (its own
    arrays numbered from 0). As a preset dictionary, only the last WINDOW bytes count."""
    return {section_name(pid, record): scaffold(canonical(record).encode("utf-8"), {}).decode("utf-8")
            for pid, record in entry["problems"].items()}


def section_name(pid: str, record: dict) -> str:
    """A problem's section is named by the problem and the template (a pool's members differ)."""
    return f"{pid}/{record.get('template', '')}"


def pack(entry: dict, references: list[bytes], names: dict[str, int]) -> bytes:
    """The stored bytes of ``entry``. ``references``: the preset dictionaries, ``names``:
    section name → its index there."""
    arrays: dict[bytes, int] = {}
    problems = entry["problems"]
    order = sorted(problems)                 # canonical order, as a one-file key's text has them
    refs = [names.get(section_name(pid, problems[pid]), _NONE) for pid in order]
    top = {**{k: v for k, v in entry.items() if k != "problems"}, "problems": {pid: i for i, pid in enumerate(order)}}
    out = [_section(canonical(top).encode("utf-8"), None, _NONE)]
    for pid, ref in zip(order, refs):
        text = scaffold(canonical(problems[pid]).encode("utf-8"), arrays)
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


def unpack(stored: bytes, references: list[bytes], only=None) -> dict:
    """The entry ``pack`` stored, as the values it was made of; ``only``: the problems to
    decode (the others are left out of the entry, and their arrays are never written out)."""
    try:
        return _unpacked(memoryview(stored), references, only)
    except (struct.error, zlib.error, orjson.JSONDecodeError, IndexError, KeyError, ValueError) as err:
        raise EntryCodecError(f"a stored entry that does not decode ({type(err).__name__}: {err})") from None


def unpack_front(stored: bytes) -> dict:
    """Only the top section (name, e-mail, notebook, LMS ids): no problem is inflated."""
    try:
        size, _ = struct.unpack_from("<IH", stored, 0)
        top = orjson.loads(zlib.decompress(bytes(stored[6:6 + size])))
    except (struct.error, zlib.error, orjson.JSONDecodeError) as err:
        raise EntryCodecError(f"a stored entry that does not decode ({type(err).__name__}: {err})") from None
    top.pop("problems", None)
    return top


def unpack_outline(stored: bytes, references: list[bytes]) -> dict:
    """The entry without its arrays: every record's fields as stored, each packed array's
    ``packed`` left as its number (its dtype and shape are there). For a pass over the class
    that reads names, templates, parts and points, not values (``key_shape.entry_outline``)."""
    try:
        top, texts, _ = _sections(memoryview(stored), references)
        top["problems"] = {pid: orjson.loads(texts[index]) for pid, index in top["problems"].items()}
        return top
    except (struct.error, zlib.error, orjson.JSONDecodeError, IndexError, KeyError, ValueError) as err:
        raise EntryCodecError(f"a stored entry that does not decode ({type(err).__name__}: {err})") from None


def _sections(view: memoryview, references: list[bytes]) -> tuple[dict, list[bytes], int]:
    """(the top section, parsed; the problems' scaffold texts; where the blob starts)."""
    pos, texts = 0, []
    top = None
    while True:
        size, ref = struct.unpack_from("<IH", view, pos)
        body = bytes(view[pos + 6:pos + 6 + size])
        pos += 6 + size
        inflate = zlib.decompressobj(zdict=references[ref]) if ref != _NONE else zlib.decompressobj()
        text = inflate.decompress(body) + inflate.flush()
        if top is None:
            top = orjson.loads(text)
            wanted = len(top["problems"])
        else:
            texts.append(text)
        if len(texts) == wanted:
            break
    return top, texts, pos


def _unpacked(view: memoryview, references: list[bytes], only=None) -> dict:
    top, texts, pos = _sections(view, references)
    (size,) = struct.unpack_from("<I", view, pos)
    blob = zlib.decompress(bytes(view[pos + 4:pos + 4 + size]))
    if pos + 4 + size != len(view):
        raise ValueError("bytes after the entry's blob")
    arrays = _Arrays(blob)
    # in the order they were packed: arrays are numbered in order of first appearance
    by_index = sorted((index, pid) for pid, index in top["problems"].items())
    decoded = {pid: orjson.loads(arrays.filled(texts[index])) if only is None or pid in only
               else arrays.passed(texts[index]) for index, pid in by_index}
    problems = {pid: decoded[pid] for pid in top["problems"] if only is None or pid in only}  # (sorted)
    if arrays.offset != len(blob):
        raise ValueError("the blob holds bytes no array names")
    top["problems"] = problems
    return top


_NUMBERED = re.compile(rb'"packed":([0-9]+),"shape":\[([0-9,]*)\]')


class _Arrays:
    """The blob's arrays as base64. Arrays are numbered in order of first appearance, and
    where one first appears its shape follows it (canonical order: dtype, packed, shape),
    which gives its length in the blob. The text is cut at the numbers by the regex
    engine and put together again with one join: no Python call per array but the few
    lines that find a new one."""

    def __init__(self, blob: bytes):
        self.blob, self.offset, self.seen = memoryview(blob), 0, []   # (slices copy nothing)
        self._sizes: dict[bytes, int] = {}

    def filled(self, text: bytes) -> bytes:
        pieces = _NUMBERED.split(text)          # text, number, shape, text, number, shape, …
        numbers, shapes = list(map(int, pieces[1::3])), pieces[2::3]
        seen, blob, offset = self.seen, self.blob, self.offset
        for number, shape in zip(numbers, shapes):
            if number == len(seen):
                end = offset + self._size(shape)
                if end > len(blob):
                    raise ValueError("an array runs past the blob's end")
                seen.append(b'"packed":"' + binascii.b2a_base64(blob[offset:end], newline=False)
                            + b'","shape":[')
                offset = end
        self.offset = offset
        try:
            pieces[1::3] = [seen[n] + shape + b"]" for n, shape in zip(numbers, shapes)]
        except IndexError:
            raise ValueError("an array named before it is stored") from None
        del pieces[2::3]
        return b"".join(pieces)

    def passed(self, text: bytes) -> None:
        """A section not decoded: only the lengths of the arrays it names first are taken."""
        for number, shape in _NUMBERED.findall(text):
            if int(number) == len(self.seen):
                self.seen.append(None)
                self.offset += self._size(shape)
        return None

    def _size(self, shape: bytes) -> int:
        size = self._sizes.get(shape)
        if size is None:
            size = 8
            for n in filter(None, shape.split(b",")):
                size *= int(n)
            self._sizes[shape] = size
        return size
