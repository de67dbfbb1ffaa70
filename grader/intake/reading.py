"""Reading a notebook file into a ``Submission``, boundedly and without ever raising: at worst
no cells and an issue saying why, each with a stable code and a message that names the file.

What comes out is data, not judgement: which cells are the kit's (by their nbgrader grade id,
or by their cell id when a tool stripped the nbgrader metadata), which were added, and the
issues found. Nothing here runs student code."""

from __future__ import annotations

import codecs
import errno
import hashlib
import json
import os
import re
import stat
from dataclasses import replace

from formats.key_shape import entry_for
from formats.textfile import quick_json

from grader.intake.issues import Issue, listed, short
from grader.intake.key_checks import (KitCells, kit_cells, kit_issues, other_variant_problems, record_issues,
                                      record_variants)
from grader.intake.limits import MAX_BYTES, MAX_CELLS, MAX_VALUES
from grader.intake.records import Cell, Found, Sent, Submission

_CHEAP_JSON = 4 * 1024 * 1024     # below this many bytes, parsing cannot cost much memory whatever it holds


class _Unread(Exception):
    """Why a file's bytes could not be had; carries the issue (and a hash, when one exists)."""

    def __init__(self, issue: Issue, content_hash: str = ""):
        super().__init__(issue.message)
        self.issue, self.content_hash = issue, content_hash


def _read_bytes(found: Found) -> tuple[bytes, str]:
    """(bytes, sha256 hex). Symbolic links are refused (O_NOFOLLOW): a link planted in a
    submissions folder could point at another student's or the instructor's notebook."""
    if isinstance(found, Sent):
        digest = hashlib.sha256(found.data).hexdigest()
        if len(found.data) > MAX_BYTES:      # (the client sends none: it reads the bounded way)
            raise _too_large(found, len(found.data), digest)
        return found.data, digest
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
    try:
        if found.path.is_symlink():
            raise OSError(errno.ELOOP, "symbolic link")
        fd = os.open(found.path, flags)
    except OSError as err:
        if err.errno == errno.ELOOP:
            raise _Unread(Issue("symlink", f"{found.shown}: a symbolic link, not a file: not read "
                                           "(hand in the notebook itself)")) from None
        raise _Unread(Issue("unreadable", f"{found.shown}: could not be read "
                                          f"({err.strerror or type(err).__name__})")) from None
    digest, chunks, size = hashlib.sha256(), [], 0
    try:
        with os.fdopen(fd, "rb") as f:
            status = os.fstat(fd)
            if not stat.S_ISREG(status.st_mode):     # a FIFO or device named *.ipynb
                raise _Unread(Issue("unreadable", f"{found.shown}: not a regular file: not read"))
            if status.st_size > MAX_BYTES:           # refused by its size, before a byte is read
                raise _too_large(found, status.st_size, _glimpse(f, status))
            while size <= MAX_BYTES and (chunk := f.read(min(1 << 20, MAX_BYTES + 1 - size))):
                digest.update(chunk)                 # (a file still growing is cut at the limit)
                size += len(chunk)
                chunks.append(chunk)
            if size > MAX_BYTES:
                raise _too_large(found, size, _glimpse(f, os.fstat(fd)))
    except OSError as err:
        raise _Unread(Issue("unreadable", f"{found.shown}: could not be read "
                                          f"({err.strerror or type(err).__name__})")) from None
    return b"".join(chunks), digest.hexdigest()


_GLIMPSE = 64 * 1024


def _glimpse(f, status) -> str:
    """What tells one too-large file from another without reading it: its size, modification
    time and first and last 64 KiB (a 2 GiB file is never read or hashed in full)."""
    digest = hashlib.sha256(f"attnkit-too-large|{status.st_size}|{status.st_mtime_ns}|".encode())
    f.seek(0)
    digest.update(f.read(_GLIMPSE))
    f.seek(max(0, status.st_size - _GLIMPSE))
    digest.update(f.read(_GLIMPSE))
    return digest.hexdigest()


def _too_large(found: Found, size: int, content_hash: str) -> _Unread:
    return _Unread(Issue("too-large", f"{found.shown}: {size / (1024 * 1024):.0f} MiB, more than the "
                                      f"{MAX_BYTES // (1024 * 1024)} MiB a notebook may have: not read"),
                   content_hash)


# Every byte but the four that can make a JSON value (or end a string), to delete; and a
# string once only quotes and structure are left of it.
_NOT_STRUCTURE = bytes(sorted(set(range(256)) - set(b'"[{,')))
_STRING = re.compile(rb'"[^"]*"')


def _json_values(data: bytes) -> int:
    """An upper bound on the values ``json.loads`` would make of ``data``: its brackets and
    commas outside strings. What this bounds is memory: ``[[],[],…]`` is 64 MiB of text but
    22 million lists, 1.3 GB. Linear, in C: escaped backslashes and quotes are dropped first
    (so every quote left opens or closes a string), then every byte but quotes and structure,
    then the strings (only quotes and commas, no escapes: a regex that cannot backtrack far,
    run only once their number is known to be bounded). Each string counts as a value too."""
    unescaped = data.replace(b"\\\\", b"").replace(b'\\"', b"")
    structure = unescaped.translate(None, _NOT_STRUCTURE)
    strings = structure.count(b'"') // 2
    if strings > MAX_VALUES:
        return strings
    bare = _STRING.sub(b"", structure)
    return strings + len(bare) - bare.count(b'"') + 1


def _parse(found: Found, data: bytes):
    """The JSON document, or _Unread with the issue."""
    if not data:
        raise _Unread(Issue("empty-file", f"{found.shown}: the file is empty (0 bytes): "
                                          "nothing was saved"))
    if len(data) > _CHEAP_JSON and (values := _json_values(data)) > MAX_VALUES:
        raise _Unread(Issue("too-complex", f"{found.shown}: about {values:,} JSON values, more than "
                                           f"the {MAX_VALUES:,} a notebook may have: not read"))
    document = quick_json(data[3:] if data.startswith(codecs.BOM_UTF8) else data)
    if document is not None:
        return document
    try:
        text = data.decode("utf-8-sig")      # a BOM some editors add is not an error
    except UnicodeDecodeError as err:
        offset = err.start + len(data) - len(err.object)      # the codec counts after a BOM
        raise _Unread(Issue("not-text", f"{found.shown}: not a notebook: byte {offset} "
                                        f"(0x{data[offset]:02x}) is not UTF-8 text")) from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as err:
        # (json says "Unterminated string starting at": not "… at at line 2001")
        said = err.msg.removesuffix(" at")
        raise _Unread(Issue("invalid-json", f"{found.shown}: not valid JSON ({said} at line "
                                            f"{err.lineno}, column {err.colno}): the file was "
                                            "damaged or edited outside Jupyter")) from None
    except (RecursionError, ValueError) as err:
        reason = "nested too deeply" if isinstance(err, RecursionError) else str(err)
        raise _Unread(Issue("invalid-json", f"{found.shown}: not valid JSON ({reason})")) from None


def _json_type(value) -> str:
    return {list: "a list", str: "a string", int: "a number", float: "a number", bool: "true or false",
            type(None): "null"}.get(type(value), type(value).__name__)


def _source(raw) -> str | None:
    if isinstance(raw, str):
        return raw
    if isinstance(raw, list):
        try:
            return "".join(raw)          # (TypeError at the first line that is not text)
        except TypeError:
            return None
    return None


def _cells(found: Found, raw_cells: list, kit: KitCells | None, issues: list[Issue]) -> tuple[Cell, ...]:
    by_cell_id = kit.by_cell_id if kit else {}
    cells, bad = [], []
    for index, raw in enumerate(raw_cells):     # (a notebook has a hundred cells or more: lean)
        if not isinstance(raw, dict):
            bad.append(index)
            continue
        source = raw.get("source", "")
        if type(source) is not str:
            source = _source(source)
            if source is None:
                bad.append(index)
                continue
        metadata = raw.get("metadata")
        if not isinstance(metadata, dict):
            metadata = None
        nbgrader = metadata.get("nbgrader") if metadata is not None else None
        if not isinstance(nbgrader, dict):
            nbgrader = {}
        grade_id, matched_by = nbgrader.get("grade_id"), "nbgrader"
        if not isinstance(grade_id, str) or not grade_id:
            raw_id = raw.get("id")
            grade_id = by_cell_id.get(raw_id) if isinstance(raw_id, str) else None
            matched_by = "cell id" if grade_id else None
        cell_type = raw.get("cell_type")
        if not isinstance(cell_type, str):
            cell_type = "unknown"
        locked = None if metadata is None else \
            (metadata.get("editable") is False and nbgrader.get("locked") is True)
        cells.append(Cell(index, cell_type, source, grade_id, matched_by, locked))
    if bad:
        where = listed([i + 1 for i in bad], ",")
        issues.append(Issue("bad-cell", f"{found.shown}: cell{'s' if len(bad) > 1 else ''} {where} "
                                        f"{'are' if len(bad) > 1 else 'is'} not readable "
                                        "(not a cell object, or its source is not text): skipped"))
    return tuple(cells)


def read_submission(found: Found, key: dict | None = None, entry: dict | None = None) -> Submission:
    """The notebook at ``found``, read as far as it can be; never raises on bad input.

    With the answer key, the notebook is also checked against the student's entry: kit
    cells missing or doubled, givens cells edited, a variant record naming another student,
    assignment or variant. Without it (or for a student the key does not know) only the
    file itself is checked and only nbgrader grade ids identify kit cells. ``entry``: the
    student's key entry when the caller has it already (parsing one is not free). The
    found file's notes come first among the issues; its times and late mark are kept."""
    read = _read(found, key, entry)
    if not (found.notes or found.received_at or found.received_from or found.lms_late):
        return read
    return replace(read, issues=tuple(found.notes) + read.issues, received_at=found.received_at,
                   received_from=found.received_from, lms_late=found.lms_late)


def record_of(found: Found) -> dict | None:
    """The notebook's variant record (its ``attnkit`` metadata), read the bounded way
    ``read_submission`` reads; None when there is none or the file is not a notebook."""
    try:
        document = _parse(found, _read_bytes(found)[0])
    except _Unread:
        return None
    metadata = document.get("metadata") if isinstance(document, dict) else None
    record = metadata.get("attnkit") if isinstance(metadata, dict) else None
    return record if isinstance(record, dict) else None


def _read(found: Found, key: dict | None, entry: dict | None) -> Submission:
    issues: list[Issue] = []
    try:
        data, content_hash = _read_bytes(found)
    except _Unread as err:
        return Submission(found.student, found.path, found.shown, err.content_hash, (), None, (err.issue,))
    try:
        document = _parse(found, data)
    except _Unread as err:
        return Submission(found.student, found.path, found.shown, content_hash, (), None, (err.issue,))
    if not isinstance(document, dict):
        issue = Issue("not-a-notebook", f"{found.shown}: not a notebook: the JSON is "
                                        f"{_json_type(document)}, not an object")
        return Submission(found.student, found.path, found.shown, content_hash, (), None, (issue,))
    version = document.get("nbformat")
    version = version if isinstance(version, int) and not isinstance(version, bool) else None
    metadata = document.get("metadata") if isinstance(document.get("metadata"), dict) else {}
    record = metadata.get("attnkit") if isinstance(metadata.get("attnkit"), dict) else None
    if version != 4:
        said = (f"a notebook of format {version}" if version is not None
                else "a file without an nbformat version")
        issues.append(Issue("not-nbformat-4", f"{found.shown}: {said}, not a Jupyter notebook of "
                                              "format 4: nothing in it was run (open it in Jupyter "
                                              "and save it again to convert it)"))
        return Submission(found.student, found.path, found.shown, content_hash, (), record,
                          tuple(issues), version)
    if record is not None and "practice" in record:
        issues.append(_practice_issue(found, record, key))
        return Submission(found.student, found.path, found.shown, content_hash, (), record,
                          tuple(issues), version)
    entry = entry if entry is not None else entry_for(key, found.student)
    kit = kit_cells(entry) if entry else None
    raw_cells = document.get("cells")
    if not isinstance(raw_cells, list) or not raw_cells:
        issues.append(Issue("no-cells", f"{found.shown}: the notebook has no cells"))
        cells: tuple[Cell, ...] = ()
    elif len(raw_cells) > MAX_CELLS:
        issues.append(Issue("too-many-cells", f"{found.shown}: {len(raw_cells):,} cells, more than "
                                              f"the {MAX_CELLS:,} a notebook may have: nothing in it "
                                              "was run"))
        return Submission(found.student, found.path, found.shown, content_hash, (), record,
                          tuple(issues), version)
    else:
        cells = _cells(found, raw_cells, kit, issues)
    if entry is not None:
        variants = record_variants(record, entry) if record is not None else None     # (once: it hashes)
        issues += record_issues(found, record, key, entry, variants)
        if cells:
            issues += kit_issues(found, cells, kit, entry, other_variant_problems(variants))
    return Submission(found.student, found.path, found.shown, content_hash, cells, record,
                      tuple(issues), version)


def _practice_issue(found: Found, record: dict, key: dict | None) -> Issue:
    """A practice notebook handed in: refused by name (its variants are practice ones, so
    grading it against the student's key entry would only give nonsense)."""
    practice = record["practice"] if isinstance(record["practice"], dict) else {}
    template = practice.get("template")
    named = f" of {short(template)}" if isinstance(template, str) and template else ""
    wanted = (key or {}).get("assignment", {}).get("id") if isinstance((key or {}).get("assignment"), dict) else None
    instead = (f"hand in the notebook of assignment {short(wanted)}" if isinstance(wanted, str)
               else "hand in the assignment's own notebook")
    return Issue("practice-notebook", f"{found.shown}: a practice notebook{named}, not the assignment: "
                                      f"practice is never graded and nothing in it was run; {instead}")


def notebook_bytes(found: Found) -> tuple[bytes, str] | None:
    """(bytes, SHA-256) of the file read the way ``read_submission`` reads it (bounded,
    symbolic links refused), or None when it cannot be read so: ``read_submission`` says why."""
    try:
        return _read_bytes(found)
    except _Unread:
        return None


def file_hash(found: Found) -> str:
    """SHA-256 of the file's bytes, read the way ``read_submission`` reads them ('' when the
    file cannot be read at all): what tells a submission graded before from a changed one."""
    try:
        return _read_bytes(found)[1]
    except _Unread as err:
        return err.content_hash
