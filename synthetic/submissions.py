"""Putting it together: one submission per student, each filled by its profile, written in
nbgrader or flat layout, and ``manifest.json`` saying what grading each must give."""

from __future__ import annotations

import json
import random
from dataclasses import dataclass
from pathlib import Path

from exercises.render.notebook import notebook_bytes
from formats import key_shape as shape
from formats.textfile import write_atomic
from synthetic.hostile import HOSTILE_FILLERS
from synthetic.notebooks import BuildFolder, SyntheticError
from synthetic.oracle import MANUAL, PASSED, Templates, expectations, recompute_answers
from synthetic.profiles import (HONEST_FILLERS, MISCONCEPTION_PREFIX, PROFILES,
                                assign_profiles, describe_profile, misconception, profile_names)

FORMAT = "attnkit-synthetic/1"
LAYOUTS = ("nbgrader", "flat")
MANIFEST = "manifest.json"

_FILLERS = {**HONEST_FILLERS, **HOSTILE_FILLERS}


@dataclass(frozen=True)
class Synthetic:
    """One synthetic submission and what grading it must give."""
    student: str
    profile: str
    path: Path                    # the file written
    notebook_of: str              # whose release notebook it is (another for wrong_student)
    expected: dict                # problem → part (implement: family) → verdict dict
    issues: tuple[str, ...] = ()  # wrong_student | unreadable | no_cell_metadata
    notes: tuple[str, ...] = ()   # what was done, cell by cell

    @property
    def score(self) -> float:
        return sum(v["score"] for parts in self.expected.values() for v in parts.values())

    @property
    def max_score(self) -> float:
        return sum(v["max_score"] for parts in self.expected.values() for v in parts.values())

    def lost(self) -> list[tuple[str, str]]:
        """(problem, part) of every auto-graded part that does not earn full points."""
        return [(pid, part) for pid, parts in self.expected.items() for part, v in parts.items()
                if v["status"] not in (PASSED, MANUAL)]


class _Context:
    """What a profile may use besides its own draft: the build, the key, the key's path and
    answers for other givens."""

    def __init__(self, build: BuildFolder, key: dict, build_dir: Path):
        self.build = build
        self.key = key
        self.key_path = Path(build_dir).resolve() / "instructor" / "answer_key.json"
        self._templates = Templates()

    def recompute(self, record: dict, edited: dict) -> dict | None:
        template = self._templates.get(record["template"])
        return None if template is None else recompute_answers(template, record, edited)


def _filler(profile: str):
    if profile.startswith(MISCONCEPTION_PREFIX):
        return misconception(profile[len(MISCONCEPTION_PREFIX):])
    try:
        return _FILLERS[profile]
    except KeyError:
        raise SyntheticError(f"unknown profile {profile!r}; known: {', '.join(PROFILES)}, "
                             f"{MISCONCEPTION_PREFIX}<twin>") from None


def _rng(seed: int, student: str, profile: str) -> random.Random:
    return random.Random(f"{seed}/{student}/{profile}")


def submission_path(out: Path, layout: str, assignment_id: str, student: str) -> Path:
    if layout == "nbgrader":
        return Path(out) / "submitted" / student / assignment_id / f"{assignment_id}.ipynb"
    return Path(out) / f"{student}.ipynb"


def synthesize(build_dir: Path, key: dict, out: Path, layout: str = "nbgrader", seed: int = 0,
               profiles: list[str] | None = None) -> list[Synthetic]:
    """Write one synthetic submission per student of ``key`` (a loaded, verified answer key)
    into ``out``, in nbgrader layout (``out/submitted/<student>/<assignment>/<assignment>.ipynb``)
    or flat (``out/<student>.ipynb``), and ``out/manifest.json``.

    ``profiles`` (optional) is assigned over the sorted roster in order, cycling; by default
    every profile the key supports is assigned once (``assign_profiles``) and the rest of the
    roster gets repeatable ones."""
    if layout not in LAYOUTS:
        raise SyntheticError(f"layout must be one of {LAYOUTS}, not {layout!r}")
    out = Path(out)
    build = BuildFolder(build_dir, key)
    context = _Context(build, key, build_dir)
    students = shape.key_students(key)
    if profiles:
        for p in profiles:
            _filler(p)
        chosen = {sid: profiles[i % len(profiles)] for i, sid in enumerate(students)}
    else:
        chosen = assign_profiles(students, profile_names(key), seed)
    written = []
    for sid in students:
        profile = chosen[sid]
        draft = build.draft(sid)
        _filler(profile)(draft, _rng(seed, sid, profile), context)
        path = submission_path(out, layout, build.assignment, sid)
        write_atomic(path, draft.raw if draft.raw is not None else notebook_bytes(draft.notebook))
        written.append(Synthetic(sid, profile, path, draft.notebook_of,
                                 expectations(draft.entry, draft.values, draft.modes,
                                              follow_through=draft.follow_through),
                                 tuple(draft.issues), tuple(draft.notes)))
    write_atomic(out / MANIFEST, manifest_bytes(written, key, out, layout, seed))
    return written


def manifest_bytes(written: list[Synthetic], key: dict, out: Path, layout: str, seed: int) -> bytes:
    used = sorted({s.profile for s in written})
    data = {
        "format": FORMAT, "assignment": shape.assignment_id(key), "layout": layout, "seed": seed,
        "profiles": {p: describe_profile(p) for p in used},
        "students": {s.student: {
            "profile": s.profile, "path": s.path.relative_to(out).as_posix(),
            "notebook_of": s.notebook_of, "issues": list(s.issues), "notes": list(s.notes),
            "expected": s.expected, "score": s.score, "max_score": s.max_score,
            "lost": [list(x) for x in s.lost()],
        } for s in written},
    }
    return (json.dumps(data, sort_keys=True, indent=1, ensure_ascii=False) + "\n").encode("utf-8")


def load_manifest(out: Path) -> dict:
    return json.loads((Path(out) / MANIFEST).read_text(encoding="utf-8"))
