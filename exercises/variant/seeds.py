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
