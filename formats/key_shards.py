"""The sharded answer key (``attnkit-answer-key/3``): an index and shards of stored entries.

    instructor/answer_key.json                  the index: the key's head, the references,
                                                each shard's file and header digest; signed
    instructor/answer_key.shards/NNNNN-<digest>.shard
                                                a header line (its students: id, bytes, the
                                                SHA-256 of the stored bytes and of the entry's
                                                canonical text; signed), then the entries
                                                stored by ``formats.entry_codec``

Why: one file of canonical entries grows fast with the class, and every grader and cluster
worker mapped all of it (sizes: docs/performance.md). Stored entries are small, a shard holds
SHARD_STUDENTS students of the roster in id order, a build writes each shard as soon as its
students are built (its memory stays flat), and a worker is sent only the stored entries
of the students it grades.

What is signed: the index, with the course secret's key (every byte of it: the head, the
references, each shard's header digest), and each shard's header on its own, with its
index's references digest, so a shard verifies alone too. Each entry's stored bytes are
checked against its header's digest when they are read (an entry edited in place is
refused, never half-trusted), and its canonical text's digest is what
``answer_key.entry_digest`` gives, the same as a one-file key of the same entries.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import threading
import weakref
from collections import OrderedDict
from collections.abc import Mapping
from pathlib import Path

from . import entry_codec
from .lazy_entries import KeyEntries
from .serialize import canonical_json as canonical
from .textfile import write_atomic

FORMAT = "attnkit-answer-key/3"
SHARD_FORMAT = "attnkit-key-shard/1"
SHARD_STUDENTS = 256
_INDEX_CONTEXT = b"attnkit answer key index v3"
_SHARD_CONTEXT = b"attnkit answer key shard v1"


class AnswerKeyError(ValueError):
    """An answer key that cannot be read, or whose signature does not verify."""


def _mac(secret: bytes, context: bytes, text: str) -> str:
    key = hmac.new(secret, context, hashlib.sha256).digest()   # a key of its own per use
    return "hmac-sha256:" + hmac.new(key, text.encode("utf-8"), hashlib.sha256).hexdigest()


def shards_folder(index: Path) -> Path:
    return index.with_name(index.stem + ".shards")


def references_digest(references: dict[str, str]) -> str:
    return hashlib.sha256(canonical(references).encode("utf-8")).hexdigest()


class References:
    """The preset dictionaries of a key's stored entries (``entry_codec``): section name →
    the reference scaffold's text, and the list ``pack``/``unpack`` index."""

    def __init__(self, texts: dict[str, str]):
        self.texts = dict(sorted(texts.items()))
        self.names = {name: i for i, name in enumerate(self.texts)}
        self.zdicts = [t.encode("utf-8")[-entry_codec.WINDOW:] for t in self.texts.values()]
        self.digest = references_digest(self.texts)

    @classmethod
    def of(cls, entry: dict | None) -> "References":
        return cls(entry_codec.reference_sections(entry) if entry else {})

    def pack(self, entry: dict) -> bytes:
        return entry_codec.pack(entry, self.zdicts, self.names)

    def unpack(self, stored: bytes) -> dict:
        return entry_codec.unpack(stored, self.zdicts)


# --- writing ------------------------------------------------------------------------------

class ShardWriter:
    """Writes a key's shards while a build goes on: each as soon as every student of it is
    built or has failed, then the index (``finish``), which replaces an earlier key
    atomically. Shard files are named by their header's digest, so an earlier key's shards
    stay as they are until the new index no longer names them."""

    def __init__(self, index: Path, students: list[str], references: References, secret: bytes,
                 assignment_digest: str):
        self.index, self.folder = Path(index), shards_folder(Path(index))
        self.references, self.secret, self.assignment_digest = references, secret, assignment_digest
        ordered = sorted(students)
        self.shard_of = {sid: i // SHARD_STUDENTS for i, sid in enumerate(ordered)}
        self.left = [0] * (-(-len(ordered) // SHARD_STUDENTS))
        for i in self.shard_of.values():
            self.left[i] += 1
        self.pending: dict[int, dict] = {}
        self.written: dict[int, dict] = {}      # shard → its index record (None: nobody in it)
        self.bytes = 0

    def add(self, sid: str, stored: bytes | None, digest: str | None) -> None:
        """Student ``sid`` built (``stored``, the SHA-256 of their canonical entry) or failed (None)."""
        shard = self.shard_of[sid]
        if stored is not None:
            self.pending.setdefault(shard, {})[sid] = (stored, digest)
        self.left[shard] -= 1
        if self.left[shard] == 0:
            self.written[shard] = self._write(shard, self.pending.pop(shard, {}))

    def _write(self, shard: int, entries: dict) -> dict | None:
        if not entries:
            return None
        rows = [[sid, len(entries[sid][0]), hashlib.sha256(entries[sid][0]).hexdigest(), entries[sid][1]]
                for sid in sorted(entries)]
        header = {"format": SHARD_FORMAT, "shard": shard, "assignment": self.assignment_digest,
                  "references": self.references.digest, "students": rows}
        header["signature"] = _mac(self.secret, _SHARD_CONTEXT, canonical(header))
        line = canonical(header).encode("utf-8") + b"\n"
        digest = hashlib.sha256(line).hexdigest()
        name = f"{shard:05d}-{digest[:16]}.shard"
        data = line + b"".join(entries[sid][0] for sid in sorted(entries))
        write_atomic(self.folder / name, data, private=True)
        self.bytes += len(data)
        return {"file": name, "students": len(rows), "header": digest}

    def finish(self, head: dict) -> int:
        """The index written (``head``: format, kit version, assignment), the shards no key
        names any more removed; returns the key's bytes (index and shards)."""
        if any(self.left):
            raise RuntimeError("the key is finished before every student was built")
        shards = [self.written[i] for i in sorted(self.written) if self.written[i]]
        index = {**head, "format": FORMAT, "references": self.references.texts, "shards": shards}
        index["signature"] = _mac(self.secret, _INDEX_CONTEXT, canonical(index))
        data = _index_text(index)
        write_atomic(self.index, data, private=True)
        self._remove_others({s["file"] for s in shards})
        return len(data) + self.bytes

    def abandon(self) -> None:
        """No new key after all: the shards written for it are removed, and the earlier key
        (its index and its shards) is left as it was."""
        self._remove_others(_named_by(self.index))

    def _remove_others(self, kept: set[str]) -> None:
        if not self.folder.is_dir():
            return
        for path in self.folder.iterdir():
            if path.suffix == ".shard" and path.name not in kept:
                path.unlink(missing_ok=True)


def _index_text(index: dict) -> bytes:
    """The index, a field per line (the references and shards one per line too): diffable."""
    lines = []
    for name in sorted(index):
        value = index[name]
        if name in ("references", "shards") and value:
            items = ([f"  {canonical(k)}: {canonical(v)}" for k, v in value.items()] if isinstance(value, dict)
                     else [f"  {canonical(v)}" for v in value])
            opening, closing = ("{", "}") if isinstance(value, dict) else ("[", "]")
            lines.append(f' {canonical(name)}: {opening}\n' + ",\n".join(items) + f"\n {closing}")
        else:
            lines.append(f" {canonical(name)}: {canonical(value)}")
    return ("{\n" + ",\n".join(lines) + "\n}\n").encode("utf-8")


def _named_by(index: Path) -> set[str]:
    """The shard files the index on disk names (none when it is not a sharded key)."""
    try:
        data = json.loads(Path(index).read_bytes())
        return {s["file"] for s in data.get("shards", []) if isinstance(s, dict)}
    except (OSError, ValueError, AttributeError, TypeError):
        return set()


# --- reading ------------------------------------------------------------------------------

def load_sharded(path: Path, index: dict, secret: bytes) -> dict:
    """The key whose index ``index`` was read from ``path``, verified: the index's signature,
    then each shard's header (its digest in the index, its own signature). Entries are read
    when asked for (``ShardedEntries``)."""
    signature = index.pop("signature", "")
    if not hmac.compare_digest(str(signature).encode("utf-8"),
                               _mac(secret, _INDEX_CONTEXT, canonical(index)).encode("utf-8")):
        raise AnswerKeyError(f"{path}: the signature does not verify: the key was changed after "
                             "it was built, or it was built with another course secret")
    try:
        references = References(index.pop("references"))
        shards = index.pop("shards")
        entries = ShardedEntries(shards_folder(path), shards, references, secret)
    except (KeyError, TypeError, AttributeError) as err:
        raise AnswerKeyError(f"{path}: not an answer key of format {FORMAT} ({err})") from None
    return {**index, "students": entries}


class ShardedEntries(KeyEntries):
    """student id → key entry, each read from its shard when first asked for and checked
    against the digest its shard's signed header gives (an entry changed on disk since is
    refused). The last few entries used stay decoded (``answer_key.Entries``: why few)."""

    CACHED = 4

    def __init__(self, folder: Path, shards: list[dict], references: References, secret: bytes):
        self.folder, self.references = Path(folder), references
        self._files: list = []
        self._spans: dict[str, tuple] = {}
        for record in shards:
            self._open(record, secret)
        self._recent: OrderedDict[str, dict] = OrderedDict()
        self._lock = threading.Lock()

    def _open(self, record: dict, secret: bytes) -> None:
        path = self.folder / record["file"]
        try:
            file = open(path, "rb")
        except OSError as err:
            raise AnswerKeyError(f"{path}: a shard of the key cannot be read ({err.strerror})") from None
        weakref.finalize(self, file.close)
        line = file.readline(64 * 2**20)
        if hashlib.sha256(line).hexdigest() != record["header"]:
            raise AnswerKeyError(f"{path}: this shard is not the one the key's index signed "
                                 "(changed, or from another build)")
        header = json.loads(line)
        signature = header.pop("signature", "")
        if (header.get("format") != SHARD_FORMAT or header.get("references") != self.references.digest
                or not hmac.compare_digest(str(signature), _mac(secret, _SHARD_CONTEXT, canonical(header)))):
            raise AnswerKeyError(f"{path}: the shard's own signature does not verify")
        number, offset = len(self._files), len(line)
        self._files.append((file.fileno(), path))
        for sid, size, stored_digest, entry_digest in header["students"]:
            self._spans[sid] = (number, offset, size, stored_digest, entry_digest)
            offset += size

    def stored(self, sid: str) -> bytes:
        """The entry's stored bytes (``entry_codec``), checked against its signed digest: what
        travels to a cluster worker."""
        number, offset, size, digest, _ = self._spans[sid]      # KeyError: not in the key
        fd, path = self._files[number]
        data = os.pread(fd, size, offset)
        if hashlib.sha256(data).hexdigest() != digest:
            raise AnswerKeyError(f"{path}: the key changed on disk after it was verified "
                                 f"(the entry of {sid!r} differs); load it again")
        return data

    def __getitem__(self, sid: str) -> dict:
        with self._lock:
            if sid in self._recent:
                self._recent.move_to_end(sid)
                return self._recent[sid]
        entry = self._decoded(sid, self.stored(sid))
        with self._lock:
            self._recent[sid] = entry
            if len(self._recent) > self.CACHED:
                self._recent.popitem(last=False)
        return entry

    def _decoded(self, sid: str, data: bytes) -> dict:
        try:
            return self.references.unpack(data)
        except entry_codec.EntryCodecError as err:
            raise AnswerKeyError(f"{self.folder}: the entry of {sid!r}: {err}") from None

    def to_grade(self, sid: str) -> dict:
        """The entry, each record's stored mistakes decoded when first read
        (``entry_codec.unpack_to_grade``); not kept here (grading keeps it while it grades)."""
        try:
            return entry_codec.unpack_to_grade(self.stored(sid), self.references.zdicts)
        except entry_codec.EntryCodecError as err:
            raise AnswerKeyError(f"{self.folder}: the entry of {sid!r}: {err}") from None

    def front(self, sid: str) -> dict:
        """The entry's keys before "problems" (name, e-mail, notebook), no problem decoded."""
        try:
            return entry_codec.unpack_front(self.stored(sid))
        except entry_codec.EntryCodecError as err:
            raise AnswerKeyError(f"{self.folder}: the entry of {sid!r}: {err}") from None

    def problems_of(self, sid: str, problems) -> dict:
        """The entry with only ``problems`` decoded (the others left out): a pass over the class
        that compares a few parts' values does not write out every hidden case."""
        try:
            return entry_codec.unpack(self.stored(sid), self.references.zdicts, set(problems))
        except entry_codec.EntryCodecError as err:
            raise AnswerKeyError(f"{self.folder}: the entry of {sid!r}: {err}") from None

    def outline(self, sid: str) -> dict:
        """The entry without its arrays' values (``entry_codec.unpack_outline``): no array is
        written out, for passes over the class that read names, templates and
        parts."""
        with self._lock:
            if sid in self._recent:
                return self._recent[sid]
        try:
            return entry_codec.unpack_outline(self.stored(sid), self.references.zdicts)
        except entry_codec.EntryCodecError as err:
            raise AnswerKeyError(f"{self.folder}: the entry of {sid!r}: {err}") from None

    def digest(self, sid: str) -> str:
        """SHA-256 of the entry's canonical text (signed in its shard's header)."""
        return self._spans[sid][4]

    def portion(self, sids) -> "Portion":
        """The stored entries of ``sids`` (verified here) with what decodes them: a cluster
        worker's share of the key."""
        return Portion(self.references.texts, {s: self.stored(s) for s in sids},
                       {s: self.digest(s) for s in sids})


class Portion(Mapping):
    """Some students' stored entries, their digests and the references that decode them,
    without files: what a cluster worker gets (verified at the client, which read them from
    the signed shards), read as the key's entries are."""

    def __init__(self, references: dict[str, str], stored: dict[str, bytes], digests: dict[str, str]):
        self.texts, self._stored, self._digests = references, stored, digests
        self._references = None

    def only(self, sid: str) -> "Portion":
        return Portion(self.texts, {sid: self._stored[sid]}, {sid: self._digests[sid]})

    def __getitem__(self, sid: str) -> dict:
        return self._decoding().unpack(self._stored[sid])

    def to_grade(self, sid: str) -> dict:
        return entry_codec.unpack_to_grade(self._stored[sid], self._decoding().zdicts)

    def _decoding(self) -> References:
        if self._references is None:
            self._references = References(self.texts)
        return self._references

    def digest(self, sid: str) -> str:
        return self._digests[sid]

    def front(self, sid: str) -> dict:
        return entry_codec.unpack_front(self._stored[sid])

    def __iter__(self):
        return iter(self._stored)

    def __len__(self) -> int:
        return len(self._stored)

    def __contains__(self, sid) -> bool:
        return sid in self._stored

    def __getstate__(self):
        return self.texts, self._stored, self._digests

    def __setstate__(self, state):
        self.texts, self._stored, self._digests = state
        self._references = None
