"""The answer key: every student's variants (givens, expected values, digests), signed.

Written at build time and read at grading time, so grading never depends on re-sampling
giving the same numbers on another NumPy version. It is signed with HMAC-SHA256 under a key
derived from the course secret: a key edited by hand (or by a student who got hold of a
copy and wants easier numbers) no longer verifies. It is private: the file is written with
mode 0600 and must never be shipped to students.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
from pathlib import Path

FORMAT = "attnkit-answer-key/1"
_SIGNING_CONTEXT = b"attnkit answer key signature v1"


class AnswerKeyError(ValueError):
    """An answer key that cannot be read, or whose signature does not verify."""


def _signing_key(secret: bytes) -> bytes:
    # A key of its own, so a signature never doubles as a variant seed.
    return hmac.new(secret, _SIGNING_CONTEXT, hashlib.sha256).digest()


def canonical(body: dict) -> bytes:
    return json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False,
                      allow_nan=False).encode("utf-8")


def sign(body: dict, secret: bytes) -> str:
    return "hmac-sha256:" + hmac.new(_signing_key(secret), canonical(body), hashlib.sha256).hexdigest()


def make_key(assignment: dict, students: dict, kit_version: str, secret: bytes) -> dict:
    """The signed key. ``assignment``: id, title, digest, problems; ``students``: student id →
    {"name", "email", "notebook", "problems": problem id → variant record (+ answer names)}."""
    body = {"format": FORMAT, "kit_version": kit_version, "assignment": assignment,
            "students": students}
    return {**body, "signature": sign(body, secret)}


def key_bytes(key: dict) -> bytes:
    """One student per line: diffable, and the same bytes for the same key."""
    head = {k: v for k, v in key.items() if k != "students"}
    lines = [json.dumps(sid, ensure_ascii=False) + ": "
             + json.dumps(entry, sort_keys=True, separators=(",", ":"), ensure_ascii=False,
                          allow_nan=False)
             for sid, entry in sorted(key["students"].items())]
    head_text = json.dumps(head, sort_keys=True, indent=1, ensure_ascii=False, allow_nan=False)
    return (head_text[:-2] + ',\n "students": {\n' + ",\n".join(lines) + "\n }\n}\n").encode("utf-8")


def write_key(path: Path, key: dict) -> None:
    """Atomically, private to the owner: a half-written key never replaces a good one."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(path.name + ".tmp")
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as f:
        f.write(key_bytes(key))
    os.chmod(temporary, 0o600)
    os.replace(temporary, path)


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
    if not hmac.compare_digest(str(signature), sign(key, secret)):
        raise AnswerKeyError(f"{path}: the signature does not verify: the key was changed after "
                             "it was built, or it was built with another course secret")
    return key
