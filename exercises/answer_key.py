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
from pathlib import Path

from .serialize import canonical_json as canonical

FORMAT = "attnkit-answer-key/1"
# The one entry of an nbgrader course's class-wide key: not a valid roster id, so it never
# collides with a student's seed.
CLASS_STUDENT = "(class)"
_SIGNING_CONTEXT = b"attnkit answer key signature v1"


class AnswerKeyError(ValueError):
    """An answer key that cannot be read, or whose signature does not verify."""


def _signing_key(secret: bytes) -> bytes:
    # A key of its own, so a signature never doubles as a variant seed.
    return hmac.new(secret, _SIGNING_CONTEXT, hashlib.sha256).digest()


def _signed_text(head: dict, entries: dict[str, str]) -> bytes:
    """What the signature covers: the head, and each student's id with the SHA-256 of their
    canonical entry (so workers can serialise entries in parallel and nothing is encoded twice)."""
    lines = [canonical(head)] + [f"{canonical(sid)}:{hashlib.sha256(entries[sid].encode()).hexdigest()}"
                                 for sid in sorted(entries)]
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
    """The key at ``path``, after checking its signature against the course secret."""
    path = Path(path)
    try:
        key = json.loads(path.read_bytes().decode("utf-8"))
    except FileNotFoundError:
        raise AnswerKeyError(f"{path}: no such file") from None
    except (UnicodeDecodeError, json.JSONDecodeError) as err:
        raise AnswerKeyError(f"{path}: not a readable answer key ({err})") from None
    if not isinstance(key, dict) or key.get("format") != FORMAT:
        raise AnswerKeyError(f"{path}: not an answer key of format {FORMAT}")
    signature = key.pop("signature", "")
    students = key.get("students")
    if not isinstance(students, dict):
        raise AnswerKeyError(f"{path}: not an answer key of format {FORMAT} (no students)")
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
