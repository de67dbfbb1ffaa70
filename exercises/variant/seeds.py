"""Per-student seeds: HMAC-SHA256(course secret, assignment, student, problem) → PCG64.

The secret keeps students from computing each other's variants; the HMAC makes the seed a
pure function of its inputs, so a rebuild gives the same variant bit for bit.
"""

from __future__ import annotations

import hashlib
import hmac
import json

import numpy as np


def variant_seed(secret: bytes | str, assignment: str, student: str, problem: str) -> int:
    """A 256-bit seed for one student's variant of one problem."""
    if isinstance(secret, str):
        secret = secret.encode("utf-8")
    if not secret:
        raise ValueError("the course secret is empty")
    # JSON framing so ("ab", "c") and ("a", "bc") cannot collide.
    message = json.dumps([assignment, student, problem], ensure_ascii=False,
                         separators=(",", ":")).encode("utf-8")
    return int.from_bytes(hmac.new(secret, message, hashlib.sha256).digest(), "big")


def generator(seed: int) -> np.random.Generator:
    """NumPy's PCG64 seeded with ``seed`` (any non-negative integer, e.g. from variant_seed)."""
    if seed < 0:
        raise ValueError(f"seed must be non-negative, got {seed}")
    return np.random.Generator(np.random.PCG64(seed))


PRACTICE_DOMAIN = "attnkit practice variant v1"


def practice_seed(template: str, index: int) -> int:
    """The seed of practice variant ``index`` of a template: SHA-256 of its own message, with
    no course secret — practice is public, and anyone may recompute it. Graded seeds are
    HMACs under the course secret (``variant_seed``), so the two spaces meet only by a
    256-bit collision; a practice pack also refuses any variant whose givens equal a graded
    one's (``exercises.practice.variants``), which small parameter spaces could allow."""
    if index < 0:
        raise ValueError(f"a practice variant's index must be non-negative, got {index}")
    message = json.dumps([PRACTICE_DOMAIN, template, int(index)], separators=(",", ":")).encode("utf-8")
    return int.from_bytes(hashlib.sha256(message).digest(), "big")
