"""The answer key: every student's variants (givens, expected values, digests), signed.

Written at build time and read at grading time, so grading never depends on re-sampling
giving the same numbers on another NumPy version. It is signed with HMAC-SHA256 under a key
derived from the course secret: a key edited by hand (or by a student who got hold of a
copy and wants easier numbers) no longer verifies. It is private: the build writes it
with mode 0600, and it must never be shipped to students.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import mmap
import os
import re
import threading
import weakref
from collections import OrderedDict
from pathlib import Path

import numpy as np
import orjson

from .key_shape import grading_student
from .key_shards import FORMAT as SHARDED, AnswerKeyError, load_sharded
from .lazy_entries import KeyEntries, front_of
from .serialize import canonical_json as canonical

FORMAT = "attnkit-answer-key/2"
# /2 may hold packed arrays (formats.serialize.to_packed), which a kit that reads only /1
# would fail on at the first wrong answer: it refuses the whole key at once instead. Every
# /1 key (lists only) is read as before.
READABLE = (FORMAT, "attnkit-answer-key/1")
# A build writes the sharded key (formats.key_shards, /3); this module writes and reads the
# one-file key (an nbgrader course's class key, and every key built before /3).
_SIGNING_CONTEXT = b"attnkit answer key signature v1"


__all__ = ["AnswerKeyError", "entry_digest", "key_bytes", "load_key", "parse_entry"]


def parse_entry(text: bytes) -> dict:
    """A student's entry from its canonical text (UTF-8 bytes, as the key file holds it).

    orjson, because entries are mostly floats and grading reads one per submission: it
    parses them faster than ``json``, to the same values (a parsed entry's canonical text is
    the text it came from: tested on every entry of a built key). orjson reads an integer beyond
    64 bits as a float, so a text with a bare integer of 19 digits or more (canonical JSON
    has no spaces: one stands between ``:``, ``,`` or ``[`` and ``,``, ``]`` or ``}``; the kit
    writes none today) is read by ``json``, as is anything orjson refuses."""
    if not _may_hold_a_long_integer(text):
        try:
            return orjson.loads(text)
        except orjson.JSONDecodeError:
            pass
    return json.loads(text.decode("utf-8"))


_LONG_INTEGER = re.compile(rb"[:,\[]-?[0-9]{19,}[,\]}]")
_RUN = 19


def _may_hold_a_long_integer(text: bytes) -> bool:
    """Does ``text`` hold a bare integer of 19 digits or more (``_LONG_INTEGER``)? The regex
    alone answers, but it tries every comma of a float-heavy entry, so the runs of 19 digits
    or more are found first, over the whole text at once: most are a small float's digits
    after its point, and only a run that is not is asked of the regex."""
    data = np.frombuffer(text, dtype=np.uint8)
    if len(data) < _RUN:
        return False
    digit = (data - np.uint8(48)) < 10                     # (uint8 wraps below "0")
    bounds = np.concatenate(([0], np.flatnonzero(digit[1:] != digit[:-1]) + 1, [len(data)]))
    starts, ends = bounds[:-1], bounds[1:]
    long_runs = digit[starts] & (ends - starts >= _RUN)
    return any(text[start - 1:start] != b"." and _LONG_INTEGER.search(text, max(start - 2, 0), end + 1)
               for start, end in zip(starts[long_runs].tolist(), ends[long_runs].tolist()))


def _signing_key(secret: bytes) -> bytes:
    # A key of its own, so a signature never doubles as a variant seed.
    return hmac.new(secret, _SIGNING_CONTEXT, hashlib.sha256).digest()


def _signed_text(head: dict, entries: dict[str, str]) -> bytes:
    """What the signature covers: the head, and each student's id with the SHA-256 of their
    canonical entry (so workers can serialise entries in parallel and nothing is encoded twice)."""
    return _signed_lines(head, {sid: hashlib.sha256(text.encode()).hexdigest() for sid, text in entries.items()})


def _signed_lines(head: dict, digests: dict[str, str]) -> bytes:
    lines = [canonical(head)] + [f"{canonical(sid)}:{digests[sid]}" for sid in sorted(digests)]
    return "\n".join(lines).encode("utf-8")


def sign(head: dict, entries: dict[str, str], secret: bytes) -> str:
    mac = hmac.new(_signing_key(secret), _signed_text(head, entries), hashlib.sha256)
    return "hmac-sha256:" + mac.hexdigest()


def key_bytes(assignment: dict, entries: dict[str, str], kit_version: str, secret: bytes) -> bytes:
    """The signed key file. ``entries``: student id → ``canonical(entry)``, where an entry is
    {"name", "email", "notebook", "problems": problem id → variant record + answer names}.
    One student per line: diffable, and the same bytes for the same inputs."""
    head = {"format": FORMAT, "kit_version": kit_version, "assignment": assignment}
    top = {**head, "signature": sign(head, entries, secret)}
    lines = [f" {canonical(k)}: {canonical(top[k])}," for k in sorted(top)]
    students = [f"  {canonical(sid)}: {entries[sid]}" for sid in sorted(entries)]
    return ("{\n" + "\n".join(lines) + '\n "students": {\n' + ",\n".join(students)
            + "\n }\n}\n").encode("utf-8")


def load_key(path: Path, secret: bytes) -> dict:
    """The key at ``path``, after checking its signature against the course secret.

    A key as the kit writes it (one student per line) is verified by hashing each student's
    line as it stands, and its entries are parsed only when asked for (``Entries``): a key
    for ten thousand students is hundreds of megabytes, and grading needs one entry at a
    time. Any other layout (a key re-indented by some tool) is read whole and verified
    against its canonical form, as before."""
    path = Path(path)
    try:
        quick = _verified_lines(path, secret)
    except FileNotFoundError:
        raise AnswerKeyError(f"{path}: no such file") from None
    except (OSError, UnicodeDecodeError, ValueError):
        quick = None
    return quick if quick is not None else _load_whole(path, secret)


def _load_whole(path: Path, secret: bytes) -> dict:
    try:
        key = json.loads(path.read_bytes().decode("utf-8"))
    except FileNotFoundError:
        raise AnswerKeyError(f"{path}: no such file") from None
    except (UnicodeDecodeError, json.JSONDecodeError) as err:
        raise AnswerKeyError(f"{path}: not a readable answer key ({err})") from None
    if isinstance(key, dict) and key.get("format") == SHARDED:
        return load_sharded(path, key, secret)
    if not isinstance(key, dict) or key.get("format") not in READABLE:
        raise AnswerKeyError(f"{path}: not an answer key of format {' or '.join(READABLE)}")
    signature = key.pop("signature", "")
    students = key.get("students")
    if not isinstance(students, dict):
        raise AnswerKeyError(f"{path}: not an answer key of format {key['format']} (no students)")
    head = {k: v for k, v in key.items() if k != "students"}
    try:
        entries = {sid: canonical(entry) for sid, entry in students.items()}
    except ValueError as err:        # NaN or inf: never written by the kit
        raise AnswerKeyError(f"{path}: not a key the kit wrote ({err})") from None
    expected = sign(head, entries, secret).encode()
    if not hmac.compare_digest(str(signature).encode("utf-8"), expected):
        raise AnswerKeyError(f"{path}: the signature does not verify: the key was changed after "
                             "it was built, or it was built with another course secret")
    return key


_STUDENTS_LINE = b' "students": {\n'


def _verified_lines(path: Path, secret: bytes) -> dict | None:
    """The key read the quick way, or None when the file is not laid out as ``key_bytes``
    writes it or does not verify that way (the whole-file reader then decides). The file
    stays open for its entries: they are read from the very file that was verified, even if
    a rebuild replaces the key on disk meanwhile."""
    file = open(path, "rb")
    try:
        found = _lines(file)
        if found is not None:
            head, spans, digests = found
            signature = head.pop("signature", "")
            mac = hmac.new(_signing_key(secret), _signed_lines(head, digests), hashlib.sha256)
            if head.get("format") in READABLE and hmac.compare_digest(
                    str(signature).encode("utf-8"), ("hmac-sha256:" + mac.hexdigest()).encode()):
                return {**head, "students": Entries(file, spans, digests)}
    except BaseException:
        file.close()
        raise
    file.close()
    return None


def _lines(file) -> tuple[dict, dict, dict] | None:
    """(head, student id → (offset, size) of their entry, student id → its SHA-256) of a key
    laid out one student per line, or None. The file is mapped, not read line by line: each
    entry is hashed where it lies and only the few bytes before it (the student id) are
    decoded (read line by line, every byte of a large class's key would be copied and split
    before it is hashed)."""
    try:
        data = mmap.mmap(file.fileno(), 0, access=mmap.ACCESS_READ)
    except (ValueError, OSError):                       # an empty file cannot be mapped
        return None
    with data:
        view = memoryview(data)
        try:
            return _spans(data, view)
        finally:
            view.release()


_DROP_EVERY = 8 * 2**20     # mapped bytes hashed before their pages are let go of


class _Window:
    """Lets go of the pages of a mapped key once they are hashed: the pages stay in the page
    cache, but a process's resident size no longer counts the whole key (which grows with the
    class) at its peak, only a window of it."""

    def __init__(self, data):
        self.data, self.dropped = data, 0

    def passed(self, offset: int) -> None:
        if offset - self.dropped >= _DROP_EVERY and hasattr(mmap, "MADV_DONTNEED"):
            end = offset - offset % mmap.PAGESIZE
            self.data.madvise(mmap.MADV_DONTNEED, self.dropped, end - self.dropped)
            self.dropped = end


_ID_ROOM = 4096         # bytes decoded to find a student id (a longer one: the whole line)


def _spans(data, view: memoryview) -> tuple[dict, dict, dict] | None:
    decoder = json.JSONDecoder()
    head, spans, digests = {}, {}, {}
    window = _Window(data)
    if data[:2] != b"{\n":
        return None
    pos = 2
    while True:                                          # ' "name": value,' up to the students
        end = data.find(b"\n", pos)
        if end < 0:
            return None
        line, pos = data[pos:end + 1], end + 1
        if line == _STUDENTS_LINE:
            break
        if not (line.startswith(b' "') and line.endswith(b",\n")):
            return None
        name, cut = decoder.raw_decode(line[1:-2].decode("utf-8"))
        head[name] = json.loads(line[1:-2].decode("utf-8")[cut:].removeprefix(": "))
    while True:                                          # '  "id": {entry},'
        end = data.find(b"\n", pos)
        if end < 0:
            return None
        if end - pos == 2 and data[pos:end + 1] == b" }\n":
            pos = end + 1
            break
        if data[pos:pos + 3] != b'  "':
            return None
        found = _student_id(decoder, data, pos + 2, end)
        if found is None:
            return None
        sid, prefix = found                              # prefix: bytes of '"id": '
        start, stop = pos + 2 + prefix, end - (data[end - 1:end] == b",")
        spans[sid] = (start, stop - start)
        digests[sid] = hashlib.sha256(view[start:stop]).hexdigest()
        pos = end + 1
        window.passed(pos)
    if data[pos:] != b"}\n":
        return None
    return head, spans, digests


def _student_id(decoder, data, start: int, end: int) -> tuple[str, int] | None:
    """(student id, bytes up to its entry) of the line at ``start``: '"id": {…'."""
    for stop in (min(end, start + _ID_ROOM), end):
        raw = data[start:stop]
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as err:
            if stop == end or err.start < len(raw) - 3:  # not a character cut by the prefix's end
                return None
            text = raw[:err.start].decode("utf-8")
        try:
            sid, cut = decoder.raw_decode(text)
        except ValueError:
            continue                                     # cut inside the id: try the whole line
        if stop < end and len(text) < cut + 2:
            continue                                     # cut inside the ': ' after it
        if not isinstance(sid, str) or not text.startswith(": ", cut):
            return None
        return sid, len(text[:cut + 2].encode("utf-8"))
    return None


class Entries(KeyEntries):
    """student id → key entry, each read from the verified key file when first asked for,
    and checked again against the digest its signature covers (an entry edited in place
    since is refused, never half-trusted). The last few entries used stay parsed: enough for
    a caller that asks for one student's entry several times in a row; not more, because a
    parsed entry is thousands of containers the garbage collector walks (grader.run.garbage),
    and every entry kept parsed makes each of its collections longer."""

    CACHED = 4

    def __init__(self, file, spans: dict[str, tuple[int, int]], digests: dict[str, str]):
        self._path, self._spans, self._digests = Path(file.name), spans, digests
        self._fd = file.fileno()
        weakref.finalize(self, file.close)     # holds the file open; closes it with the mapping
        self._recent: OrderedDict[str, dict] = OrderedDict()
        self._lock = threading.Lock()           # grading reads entries from several threads

    def __getitem__(self, sid: str) -> dict:
        with self._lock:
            if sid in self._recent:
                self._recent.move_to_end(sid)
                return self._recent[sid]
        entry = parse_entry(self.text(sid))                 # (KeyError: not in the key)
        with self._lock:
            self._recent[sid] = entry
            if len(self._recent) > self.CACHED:
                self._recent.popitem(last=False)
        return entry

    def front(self, sid: str) -> dict | None:
        """The entry's keys before "problems", read from its text alone (``lazy_entries``)."""
        return front_of(self.text(sid))

    def digest(self, sid: str) -> str:
        """SHA-256 of the entry's canonical text, without parsing it."""
        return self._digests[sid]

    def text(self, sid: str) -> bytes:
        """The entry's canonical text as the verified file holds it (checked again against its
        digest), unparsed: what travels to a cluster worker."""
        start, size = self._spans[sid]          # KeyError for a student not in the key
        text = os.pread(self._fd, size, start)
        if hashlib.sha256(text).hexdigest() != self._digests[sid]:
            raise AnswerKeyError(f"{self._path}: the key changed on disk after it was verified "
                                 f"(the entry of {sid!r} differs); load it again")
        return text


def entry_digest(key: dict, student: str) -> str:
    """SHA-256 of the canonical text of the entry that grades ``student`` (theirs, or the
    class entry of an nbgrader course key): it changes whenever anything in the entry does."""
    students, student = key["students"], grading_student(key, student)
    if hasattr(students, "digest"):            # Entries, or a cluster shard's: the stored text's
        return students.digest(student)
    return hashlib.sha256(canonical(students[student]).encode("utf-8")).hexdigest()
