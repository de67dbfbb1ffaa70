"""Practice logs an instructor collected (each notebook writes ``TEMPLATE.practice-log.json``):
read with their problems named, and summed up per part and per misconception in the words
of the item analysis — attempts, facility at the first attempt, the mistakes met."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

MAX_LOG_BYTES = 5 * 1024 * 1024           # a log of 5 MiB is tens of thousands of attempts


@dataclass
class PartSummary:
    template: str
    part: str
    logs: int = 0                          # the logs (students, usually) that tried it
    attempts: int = 0
    first_attempts: int = 0
    first_right: int = 0                   # right (or right given the earlier answer) at the first try
    misconceptions: dict[str, int] = field(default_factory=dict)

    @property
    def facility(self) -> float | None:
        return self.first_right / self.first_attempts if self.first_attempts else None


def read_log(path: Path) -> list[dict]:
    """The attempts of one log; ValueError naming the file and what is wrong."""
    try:
        if path.stat().st_size > MAX_LOG_BYTES:
            raise ValueError(f"{path}: larger than {MAX_LOG_BYTES // (1024 * 1024)} MiB: not a practice log")
        data = json.loads(path.read_text(encoding="utf-8"))
    except OSError as err:
        raise ValueError(f"{path}: cannot read: {err.strerror or err}") from None
    except (UnicodeDecodeError, json.JSONDecodeError) as err:
        raise ValueError(f"{path}: not a practice log (not JSON: {err})") from None
    attempts = data.get("attempts") if isinstance(data, dict) else None
    if not isinstance(attempts, list):
        raise ValueError(f"{path}: not a practice log (no list of attempts)")
    keep = []
    for n, a in enumerate(attempts):
        if not (isinstance(a, dict) and isinstance(a.get("template"), str) and isinstance(a.get("part"), str)
                and a.get("outcome") in ("right", "right given your earlier answer", "wrong")):
            raise ValueError(f"{path}: attempt {n}: not a practice attempt (template, part, outcome)")
        keep.append(a)
    return keep


def summarize(logs: list[list[dict]]) -> list[PartSummary]:
    """One summary per (template, part), in the order first met."""
    parts: dict[tuple[str, str], PartSummary] = {}
    for attempts in logs:
        seen = set()
        for a in attempts:
            key = (a["template"], a["part"])
            s = parts.setdefault(key, PartSummary(*key))
            if key not in seen:
                s.logs += 1
                seen.add(key)
            s.attempts += 1
            if a.get("first"):
                s.first_attempts += 1
                s.first_right += a["outcome"] != "wrong"
            name = a.get("misconception")
            if isinstance(name, str) and name:
                s.misconceptions[name] = s.misconceptions.get(name, 0) + 1
    return list(parts.values())
