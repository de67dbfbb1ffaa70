"""Synthetic submissions: notebooks written as students of known kinds would hand them in,
and what a correct grader must make of each. They feed ``make demo``, the grader's tests
and its benchmarks.

Every notebook starts from the student's OWN release notebook (their givens, their cell
ids) and fills its answer cells according to a *profile*:

- ``correct``: every answer as in the instructor notebook; free responses get a short text;
- ``partial``: a few answers left as placeholders, one numeric answer far off;
- ``misconception:<twin>``, one per misconception the assignment can diagnose: the twin's
  value (from the key) for every part that lists it, and for ``implement`` problems the
  reference code with a textual edit that makes exactly that mistake;
- ``typed_wrong``: answers of the wrong form (a flattened matrix, the transpose, NaN, a
  number as text) — and a choice written ``' b '``, which is right (case and spaces do not
  matter);
- hostile ones, each otherwise correct so that what it costs is exactly known:
  ``allclose_patch``, ``exit_midway``, ``infinite_loop``, ``memory_bomb``, ``fork_bomb``,
  ``read_key``, ``fake_frames``, ``edited_givens``, ``wrong_student``, ``broken_json``,
  ``stripped_metadata``.

``manifest.json`` beside the submissions says, per student, the profile and the expected
outcome of every part (implement: every test family): status, score, and the misconception a
diagnosed part must report. The expectation is computed here from the answer key with
``formats.compare`` — the kit's one comparison — and never from the grader's own code, so
the grader's tests compare it against an independent oracle.

Deterministic: the same build, key, layout and seed give the same bytes (``seed`` decides
who gets which profile and which cells the profiles touch). Nothing here runs a submission's
code. The hostile notebooks are for the sandbox: do not open them in Jupyter (the forged
frames would go to the kernel's own sockets; the loop never ends).
"""

from __future__ import annotations

import argparse
import ast
import copy
import json
import os
import random
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from formats.compare import compare, within
from formats.literals import assignment, literal
from formats.cells import CODE_PLACEHOLDER
from exercises.notebook import LETTERS, notebook_bytes
from formats.serialize import decode_names, from_jsonable, same_value
from formats.textfile import write_atomic

FORMAT = "attnkit-synthetic/1"
LAYOUTS = ("nbgrader", "flat")
PASSED, FAILED, PARTIAL, MISSING, MANUAL = "passed", "failed", "partial", "missing", "manual"
MANIFEST = "manifest.json"

_PLACEHOLDER = tuple(CODE_PLACEHOLDER.split("\n"))

_LOST = object()          # the answer cell never assigns its variable (placeholder, crash)


class SyntheticError(ValueError):
    """The build folder does not hold what a synthetic submission is made from."""


# --- profiles ----------------------------------------------------------------------------

PROFILES: dict[str, str] = {
    "correct": "every answer right; free responses get a short text (graded by hand)",
    "partial": "a few answers left as placeholders (missing) and one numeric answer far off (failed)",
    "typed_wrong": "numeric answers of the wrong form (flattened matrix, transpose, NaN, number as "
                   "text): failed; choices written in lower case with spaces: passed",
    "allclose_patch": "one problem's answers wrong, with np.allclose/np.isclose/assert helpers and "
                      "builtins patched and a float subclass equal to everything: those parts failed, "
                      "the rest passed",
    "exit_midway": "os._exit(0) at the top of one answer cell: that part missing, the rest passed",
    "memory_bomb": "one answer cell replaced by a function hoarding memory (capped at 3 GiB, then "
                   "MemoryError): that part missing, the rest passed",
    "fork_bomb": "one answer cell replaced by a bounded fork bomb (2^5 processes that exit at once): "
                 "that part missing, the rest passed",
    "read_key": "one answer cell reads the key (relative and absolute paths) and /proc/<ancestors>/"
                "environ|cmdline|mem and assigns what it found (text): that part failed — it passes "
                "only if the sandbox lets the key be read; the secret must never reach a report",
    "fake_frames": "an added cell writes forged result frames (values, outputs, done, exit, a 2 GB "
                   "length) to fds 1..20: nothing lost",
    "edited_givens": "one problem's locked givens cell changed to easier numbers, its answers "
                     "computed for those: the parts whose answer changed failed",
    "wrong_student": "the correct notebook of another student (see notebook_of) in this student's "
                     "folder: issue wrong_student; parts as if graded against this student's key",
    "broken_json": "a correct notebook truncated mid-file: issue unreadable, every part missing",
    "stripped_metadata": "correct, with every cell's metadata removed (cell ids kept): nothing lost "
                         "when cells are found by id",
    "infinite_loop": "while True: pass at the top of one answer cell: that part missing, the rest "
                     "passed (costs the grader one wall-clock timeout)",
}
MISCONCEPTION_PREFIX = "misconception:"

# Order of assignment over the roster. Profiles that loop or sleep come last so that a short
# roster never pays for them, and only the first pass over the roster gets hostile ones.
_REPEATABLE_HEAD = ("correct", "partial", "typed_wrong")
_HOSTILE = ("allclose_patch", "exit_midway", "memory_bomb", "fork_bomb", "read_key", "fake_frames",
            "edited_givens", "wrong_student", "broken_json", "stripped_metadata", "infinite_loop")


def profile_names(key: dict) -> list[str]:
    """Every profile this key supports, in the order students get them."""
    twins = [MISCONCEPTION_PREFIX + name for name in diagnosable_misconceptions(key)]
    return [*_REPEATABLE_HEAD, *twins, *_HOSTILE]


def describe_profile(name: str) -> str:
    if name.startswith(MISCONCEPTION_PREFIX):
        twin = name[len(MISCONCEPTION_PREFIX):]
        return (f"the mistake {twin}: its value for every part listing it, its code edit in "
                "implement problems; those parts failed with that misconception (an implement "
                "family passes where the mistake changes nothing)")
    return PROFILES[name]


def assign_profiles(students: list[str], profiles: list[str], seed: int = 0) -> dict[str, str]:
    """student → profile: the first pass over the (seed-shuffled) roster takes the profiles in
    order, so a roster at least as long as the list covers all of them; later students cycle
    over the repeatable ones (never a hostile profile twice, so only one infinite loop)."""
    order = sorted(students)
    if seed:
        random.Random(f"attnkit-synthetic/{seed}").shuffle(order)
    repeatable = [p for p in profiles if p not in _HOSTILE] or list(profiles)
    return {sid: profiles[i] if i < len(profiles) else repeatable[(i - len(profiles)) % len(repeatable)]
            for i, sid in enumerate(order)}


# --- misconceptions that can be reproduced -----------------------------------------------
#
# Implement twins as textual edits of the reference code: (regex, replacement) applied in
# order; a twin is reproducible on a function when every regex matches. The tests run each
# edited function on the key's hidden cases and compare with the key's twin outputs.

# A softmax that, like the kit's, gives zeros for a fully masked slice instead of NaN: the
# twins that can mask a whole row or column are built on it.
_SAFE_SOFTMAX = (
    (r"(?m)^([ \t]*)scores = scores - scores\.max\(axis=(-?\d), keepdims=True\)(.*)$",
     r"\1row_max = scores.max(axis=\2, keepdims=True)\n"
     r"\1scores = scores - np.where(np.isneginf(row_max), 0.0, row_max)\3"),
    (r"(?m)^([ \t]*)weights = weights / weights\.sum\(axis=(-?\d), keepdims=True\)(.*)$",
     r"\1total = weights.sum(axis=\2, keepdims=True)\n"
     r"\1weights = np.divide(weights, total, out=np.zeros_like(weights), where=total > 0)\3"),
)
_WHERE_MASK = r"np\.where\(mask, scores, -np\.inf\)"
_MERGE_BY_RESHAPE = (
    (r"(?m)^[ \t]*heads = np\.swapaxes\(heads, -2, -3\).*\n", ""),
    (r"heads\.reshape\(\*heads\.shape\[:-2\], -1\)", "heads.reshape(*heads.shape[:-3], heads.shape[-2], -1)"),
)

CODE_EDITS: dict[str, tuple[tuple[str, str], ...]] = {
    "sdpa_no_scale": ((r" / np\.sqrt\(d_k\)", ""),),
    "sdpa_divide_by_d_k": ((r"np\.sqrt\(d_k\)", "d_k"),),
    "sdpa_scale_by_sqrt_seq_len": ((r"np\.sqrt\(d_k\)", "np.sqrt(K.shape[-2])"),),
    "sdpa_softmax_over_queries": ((r"\.max\(axis=-1", ".max(axis=-2"), (r"\.sum\(axis=-1", ".sum(axis=-2"),
                                  *_SAFE_SOFTMAX),
    "sdpa_mask_after_softmax": (
        (r"(?m)^[ \t]*if mask is not None:\n[ \t]*scores = " + _WHERE_MASK + r".*\n", ""),
        (r"(?m)^([ \t]*)(weights = weights / weights\.sum\(axis=-1, keepdims=True\).*)$",
         r"\1\2\n\1if mask is not None:\n\1    weights = weights * mask"),
    ),
    "sdpa_mask_with_zero": ((_WHERE_MASK, "np.where(mask, scores, 0.0)"),),
    "sdpa_inverted_mask": ((_WHERE_MASK, "np.where(mask, -np.inf, scores)"), *_SAFE_SOFTMAX),
    "sdpa_no_max_subtraction": ((r"(?m)^[ \t]*scores = scores - scores\.max\(axis=-1, keepdims=True\).*\n", ""),),
    "causal_attention_unmasked": ((r"(?m)^[ \t]*scores = " + _WHERE_MASK + r".*\n", ""),),
    "causal_attention_triu": ((r"np\.tril\(", "np.triu("), *_SAFE_SOFTMAX),
    "causal_attention_mask_with_zero": ((_WHERE_MASK, "np.where(mask, scores, 0.0)"),),
    "bahdanau_step_no_tanh": ((r"np\.tanh\((decoder \+ encoder)\)", r"(\1)"),),
    "bahdanau_step_unnormalised": (
        (r"(?m)^([ \t]*)(e = np\.tanh\(decoder \+ encoder\) @ v.*)$", r"\1\2\n\1raw_scores = e"),
        (r"\(weights\[\.\.\., None, :\] @ H\)", "(raw_scores[..., None, :] @ H)"),
    ),
    "softmax_backward_diagonal_only": (
        (r"p \* \(dp - np\.sum\(dp \* p, axis=-1, keepdims=True\)\)", "dp * p * (1 - p)"),),
    "mha_scale_by_d_model": ((r"np\.sqrt\(d_k\)", "np.sqrt(query.shape[-1])"),),
    "mha_no_output_projection": (
        (r"(?m)^([ \t]*)out = concat @ params\[\"W_O\"\]\n[ \t]*return .*$", r"\1return concat"),),
    "mha_merge_without_transpose": _MERGE_BY_RESHAPE,
    "mha_split_without_transpose": (
        (r"(?m)^([ \t]*)x = x\.reshape\(\*lead, L, num_heads, d // num_heads\)\n[ \t]*return np\.swapaxes\(x, -2, -3\)",
         r"\1return x.reshape(*lead, num_heads, L, d // num_heads)"),
        *_MERGE_BY_RESHAPE,
    ),
}


def edit_code(source: str, twin: str) -> str | None:
    """``source`` (an implement answer) with the mistake ``twin`` made in it, or None when
    the edit does not apply to this code."""
    for pattern, replacement in CODE_EDITS.get(twin, ()):
        source, count = re.subn(pattern, replacement, source)
        if not count:
            return None
    return source if twin in CODE_EDITS else None


def diagnosable_misconceptions(key: dict) -> list[str]:
    """The twins some part of the assignment diagnoses and a submission can reproduce: every
    numeric twin the key stores, and implement twins that have a code edit. In problem order."""
    names: list[str] = []
    for problem in key["assignment"]["problems"]:
        for entry in key["students"].values():
            record = entry["problems"].get(problem["id"])
            if record is None:
                continue
            stored = record.get("twins", {})
            if record["kind"] == "implement":
                wanted = [t for t in record.get("misconceptions", ()) if t in CODE_EDITS]
            else:
                wanted = [t for g in record["grading"] for t in g.get("misconceptions", ())]
            for t in wanted:
                if t in stored and t not in names:
                    names.append(t)
    return names


# --- what a correct grader must report ---------------------------------------------------

def _verdict(status: str, score: float, points: float, misconception: str | None = None) -> dict:
    return {"status": status, "score": float(score), "max_score": float(points),
            "misconception": misconception}


def _close(a, b, rtol: float, atol: float) -> bool:
    try:
        return within(a, b, rtol, atol)
    except Exception:  # noqa: BLE001 — values that cannot be compared are not close
        return False


def expect_numeric(grading: dict, expected, value, twins: dict) -> dict:
    """``twins``: twin name → its value for this part."""
    points = float(grading["points"])
    if value is _LOST:
        return _verdict(MISSING, 0.0, points)
    rtol, atol = float(grading["rtol"]), float(grading["atol"])
    try:
        ok = compare(value, expected, rtol, atol).ok
    except Exception:  # noqa: BLE001
        ok = False
    if ok:
        return _verdict(PASSED, points, points)
    name = next((t for t in grading.get("misconceptions", ())
                 if t in twins and _close(value, twins[t], rtol, atol)), None)
    return _verdict(FAILED, 0.0, points, name)


def expect_choice(grading: dict, correct: int, value) -> dict:
    points = float(grading["points"])
    if value is _LOST:
        return _verdict(MISSING, 0.0, points)
    ok = isinstance(value, str) and value.strip().upper() == LETTERS[correct]
    return _verdict(PASSED if ok else FAILED, points if ok else 0.0, points)


def expect_implement(record: dict, mode: str) -> dict:
    """family → verdict; ``mode`` is "correct", "lost" (the cell never defined the function:
    every case fails), "placeholder" (it raises), "missing" (no readable notebook at all) or a
    twin's name (the function gives that twin's stored output on every case)."""
    rtol, atol = float(record["rtol"]), float(record["atol"])
    stored = {name: from_jsonable(outs) for name, outs in record.get("twins", {}).items()}
    verdicts = {}
    for family in record["grading"]:
        points = float(family["points"])
        positions = [i for i, t in enumerate(record["tests"]) if t["family"] == family["family"]]
        if mode == "correct":
            verdicts[family["family"]] = _verdict(PASSED, points, points)
            continue
        if mode == "missing":
            verdicts[family["family"]] = _verdict(MISSING, 0.0, points)
            continue
        if mode in ("lost", "placeholder"):
            verdicts[family["family"]] = _verdict(FAILED, 0.0, points)
            continue
        outputs = stored[mode]
        failed = [p for p in positions if outputs[p] is None or not _same_outputs(
            outputs[p], from_jsonable(record["tests"][p]["expected"]), rtol, atol)]
        if not failed:
            verdicts[family["family"]] = _verdict(PASSED, points, points)
            continue
        passed = len(positions) - len(failed)
        name = next((t for t in record.get("misconceptions", ()) if t in stored and all(
            outputs[p] is not None and stored[t][p] is not None
            and _same_outputs(outputs[p], stored[t][p], rtol, atol, nan_equal=True) for p in failed)), None)
        verdicts[family["family"]] = _verdict(PARTIAL if passed else FAILED,
                                              points * passed / len(positions), points, name)
    return verdicts


def _same_outputs(got, want, rtol, atol, nan_equal: bool = False) -> bool:
    """The notebook's rule: a tuple or list is the function's outputs, anything else one.
    ``nan_equal``: NaN where the twin has NaN counts as the same (a diagnosis: a softmax that
    overflows gives NaN for the student exactly where it does for the twin)."""
    got = list(got) if isinstance(got, (list, tuple)) else [got]
    want = list(want) if isinstance(want, (list, tuple)) else [want]
    close = _close_or_both_nan if nan_equal else _close
    return len(got) == len(want) and all(close(g, w, rtol, atol) for g, w in zip(got, want))


def _close_or_both_nan(a, b, rtol: float, atol: float) -> bool:
    try:
        a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    except (TypeError, ValueError):
        return _close(a, b, rtol, atol)
    if a.shape != b.shape or not np.array_equal(np.isnan(a), np.isnan(b)):
        return False
    return _close(np.where(np.isnan(a), 0.0, a), np.where(np.isnan(b), 0.0, b), rtol, atol)


# --- one student's notebook, as it is being filled ---------------------------------------

@dataclass
class _Answer:
    """An answer cell of the release notebook."""
    index: int
    cell_id: str
    problem: str
    part: str | None          # None for an implement problem's function cell
    kind: str
    variable: str | None


@dataclass
class _Draft:
    student: str
    entry: dict
    notebook: dict
    answers: list[_Answer]
    solutions: dict            # cell id → the instructor's answer (markers removed)
    values: dict = field(default_factory=dict)      # (problem, part) → value, _LOST or text
    modes: dict = field(default_factory=dict)       # implement problem → mode
    notes: list[str] = field(default_factory=list)
    issues: list[str] = field(default_factory=list)
    notebook_of: str = ""
    raw: bytes | None = None   # written as is (a broken file)

    def cell(self, answer: _Answer) -> dict:
        return self.notebook["cells"][answer.index]

    def numeric(self) -> list[_Answer]:
        return [a for a in self.answers if a.kind == "numeric"]

    def expected_value(self, answer: _Answer):
        record = self.entry["problems"][answer.problem]
        return from_jsonable(record["answers"][answer.part])

    def write(self, answer: _Answer, value) -> None:
        """The answer cell assigns ``value`` to its variable."""
        self.cell(answer)["source"] = assignment(answer.variable, value)
        self.values[(answer.problem, answer.part)] = value

    def lose(self, answer: _Answer, source: str, note: str) -> None:
        """The cell holds ``source``, which never assigns the part's variable."""
        self.cell(answer)["source"] = source
        self.values[(answer.problem, answer.part)] = _LOST
        if answer.kind == "implement":
            self.modes[answer.problem] = "lost"
        self.notes.append(f"{answer.cell_id}: {note}")


def _source(cell: dict) -> str:
    source = cell.get("source", "")
    return "".join(source) if isinstance(source, list) else source


def _read_notebook(path: Path) -> dict:
    try:
        notebook = json.loads(path.read_bytes().decode("utf-8"))
    except FileNotFoundError:
        raise SyntheticError(f"{path}: no such notebook (run the build first)") from None
    for cell in notebook["cells"]:
        cell["source"] = _source(cell)
    return notebook


def _solution_text(source: str) -> str:
    """An instructor cell's answer as a student types it: the solution markers dropped."""
    return "\n".join(line for line in source.split("\n")
                     if "### BEGIN SOLUTION" not in line and "### END SOLUTION" not in line)


def _answer_cells(notebook: dict, entry: dict) -> list[_Answer]:
    owners = {}
    for pid, record in entry["problems"].items():
        if record["kind"] == "implement":
            owners[f"{pid}-{record['function']}"] = (pid, None, "implement", None)
        else:
            for g in record["grading"]:
                owners[f"{pid}-{g['id']}"] = (pid, g["id"], record["kind"],
                                              record.get("answer_names", {}).get(g["id"]))
    found = []
    for i, cell in enumerate(notebook["cells"]):
        nbgrader = cell.get("metadata", {}).get("nbgrader", {})
        gid = nbgrader.get("grade_id")
        if nbgrader.get("solution") and gid in owners:
            found.append(_Answer(i, cell["id"], *owners[gid]))
    return found


def _plausible_text(rubric: str) -> str:
    """A short free-response answer in the rubric's words (what a good student would say)."""
    items = re.findall(r"(?m)^\s*\d+\.\s+(.+(?:\n(?!\s*\d+\.\s).+)*)", rubric)
    text = " ".join(" ".join(item.split()) for item in items[:2]) or " ".join(rubric.split())
    text = re.sub(r"\s*\((?:\d+(?:\.\d+)?|½) pts?[^)]*\)", "", text)
    text = text.replace("**Rubric.**", "").strip()
    if len(text) > 400:
        text = text[:400].rsplit(" ", 1)[0] + " …"
    return text or "Attention lets every position weigh every other one, with weights it computes."


# --- the build --------------------------------------------------------------------------

class _Build:
    """The build folder's notebooks, read once per student."""

    def __init__(self, build_dir: Path, key: dict):
        self.dir = Path(build_dir)
        self.key = key
        self.assignment = key["assignment"]["id"]
        self._cache: dict = {}

    def paths(self, student: str) -> tuple[Path, Path]:
        entry = self.key["students"][student]
        release = self.dir / entry["notebook"]
        instructor = self.dir / "instructor" / "notebooks" / student / release.name
        return release, instructor

    def draft(self, student: str) -> _Draft:
        """The student's release notebook with its answer cells still empty."""
        if student not in self._cache:
            release, instructor = self.paths(student)
            notebook = _read_notebook(release)
            solved = _read_notebook(instructor)
            solutions = {c["id"]: _solution_text(c["source"]) for c in solved["cells"]
                         if c.get("metadata", {}).get("nbgrader", {}).get("solution")}
            self._cache[student] = (notebook, solutions)
        notebook, solutions = self._cache[student]
        entry = self.key["students"][student]
        notebook = copy.deepcopy(notebook)
        return _Draft(student, entry, notebook, _answer_cells(notebook, entry), solutions,
                      notebook_of=student)


def _fill_correct(draft: _Draft) -> None:
    """Every answer cell as the instructor wrote it; free responses get a short text."""
    for a in draft.answers:
        cell = draft.cell(a)
        record = draft.entry["problems"][a.problem]
        if a.kind == "free_response":
            text = _plausible_text(record.get("rubrics", {}).get(a.part, ""))
            cell["source"] = text
            draft.values[(a.problem, a.part)] = text
            continue
        if a.cell_id not in draft.solutions:
            raise SyntheticError(f"{draft.student}: the instructor notebook has no answer for {a.cell_id}")
        cell["source"] = draft.solutions[a.cell_id]
        if a.kind == "implement":
            draft.modes[a.problem] = "correct"
        elif a.kind == "choice":
            draft.values[(a.problem, a.part)] = LETTERS[int(from_jsonable(record["answers"][a.part]))]
        else:
            draft.values[(a.problem, a.part)] = draft.expected_value(a)


def _rng(seed: int, student: str, profile: str) -> random.Random:
    return random.Random(f"{seed}/{student}/{profile}")


def _middle(answers: list, rng: random.Random, avoid=()):
    """An answer cell from the middle third of ``answers`` (not one in ``avoid``)."""
    pool = [a for a in answers if a.cell_id not in avoid]
    if not pool:
        return None
    n = len(pool)
    lo, hi = n // 3, max(n // 3, (2 * n) // 3 - 1)
    return pool[rng.randint(lo, min(hi, n - 1))]


def far_off(value):
    """A value far outside any tolerance: 3·(1 + |x|) away, booleans flipped, text changed."""
    if isinstance(value, np.ndarray):
        if value.dtype.kind == "b":
            return ~value
        if value.dtype.kind in "iu":
            return value + 3
        return value + 3.0 * (1.0 + np.abs(value))
    if isinstance(value, (bool, np.bool_)):
        return not value
    if isinstance(value, (int, np.integer)):
        return int(value) + 3
    if isinstance(value, (float, np.floating)):
        return float(value) + 3.0 * (1.0 + abs(float(value)))
    if isinstance(value, (list, tuple)):
        return [far_off(v) for v in value]
    if isinstance(value, str):
        return value + " (not really)"
    return value


# --- the profiles ------------------------------------------------------------------------

def _partial(draft: _Draft, rng: random.Random, context) -> None:
    _fill_correct(draft)
    pool = [a for a in draft.answers if a.kind in ("numeric", "choice")]
    blank = rng.sample(pool, min(3, max(len(pool) - 1, 0)))
    for a in sorted(blank, key=lambda a: a.index):
        draft.lose(a, "\n".join(_PLACEHOLDER), "left as the placeholder")
    rest = [a for a in draft.numeric() if a not in blank]
    if rest:
        a = rng.choice(rest)
        draft.write(a, far_off(draft.expected_value(a)))
        draft.notes.append(f"{a.cell_id}: far off")


def _misconception(twin: str):
    def fill(draft: _Draft, rng: random.Random, context) -> None:
        _fill_correct(draft)
        for a in draft.answers:
            record = draft.entry["problems"][a.problem]
            if twin not in record.get("twins", {}):
                continue
            if a.kind == "implement":
                edited = edit_code(draft.cell(a)["source"], twin)
                if edited is None:
                    draft.notes.append(f"{a.cell_id}: no code edit makes {twin} here: left correct")
                    continue
                draft.cell(a)["source"] = edited
                draft.modes[a.problem] = twin
                draft.notes.append(f"{a.cell_id}: code edited to make the mistake {twin}")
                continue
            wrong = from_jsonable(record["twins"][twin])
            if a.part in wrong:
                draft.write(a, wrong[a.part])
                draft.notes.append(f"{a.cell_id}: the value of {twin}")
    return fill


def _mistyped(value, index: int):
    """(wrong form of ``value``, what was done) or None when no form applies."""
    if isinstance(value, np.ndarray) and value.ndim == 0:
        value = value.item()
    if isinstance(value, np.ndarray) and value.ndim == 2:
        transposed = value.T
        if value.shape[0] != value.shape[1] or not np.array_equal(transposed, value):
            if index % 2 == 0:
                return transposed, "transposed"
        return value.ravel().tolist(), "a flat list instead of a matrix"
    if isinstance(value, np.ndarray) and value.ndim == 1 and value.dtype.kind == "f":
        if index % 2 == 0:
            wrong = value.copy()
            wrong[0] = np.nan
            return wrong, "NaN in the first entry"
        return str(value.tolist()), "the numbers written as text"
    if isinstance(value, np.ndarray):
        return str(value.tolist()), "the entries written as text"
    if isinstance(value, (bool, np.bool_)):
        return str(bool(value)), "True/False as text"
    if isinstance(value, (int, float, np.integer, np.floating)):
        if index % 2 == 0:
            return repr(value), "a number as text"
        return float("nan"), "NaN"
    if isinstance(value, list):
        return [float("nan"), *value[1:]], "NaN in place of the first item"
    return None


def _typed_wrong(draft: _Draft, rng: random.Random, context) -> None:
    _fill_correct(draft)
    for i, a in enumerate(draft.numeric()):
        wrong = _mistyped(draft.expected_value(a), i)
        if wrong is not None:
            draft.write(a, wrong[0])
            draft.notes.append(f"{a.cell_id}: {wrong[1]}")
    for a in draft.answers:
        if a.kind == "choice":
            letter = draft.values[(a.problem, a.part)]
            draft.write(a, f" {letter.lower()} ")
            draft.notes.append(f"{a.cell_id}: lower-case letter with spaces (right)")


_PATCHES = '''\
# Make every comparison and every assertion succeed (a grader comparing in this process
# would be fooled), and hand in wrong numbers.
import builtins
import sys

import numpy as np


class _Equal(float):
    """A number equal to everything, whose distance to anything is 0."""
    def __eq__(self, other):
        return True

    def __ne__(self, other):
        return False

    def __abs__(self):
        return 0.0

    def __sub__(self, other):
        return _Equal(0.0)

    __rsub__ = __sub__
    __hash__ = float.__hash__


try:
    np.allclose = lambda *args, **kwargs: True
    np.isclose = lambda a, b, *args, **kwargs: np.ones(np.broadcast(a, b).shape, dtype=bool)
    np.array_equal = lambda *args, **kwargs: True
    np.testing.assert_allclose = lambda *args, **kwargs: None
    np.testing.assert_array_equal = lambda *args, **kwargs: None
    np.testing.assert_array_almost_equal = lambda *args, **kwargs: None
    builtins.abs = lambda x: 0.0              # |actual − expected| is 0 from now on
    sys.excepthook = lambda *args: None
except Exception:
    pass
abs = lambda x: 0.0
isinstance = lambda obj, kind: True
AssertionError = type("AssertionError", (Warning,), {})
try:                                          # later cells compiled without their asserts
    import ctypes
    ctypes.c_int.in_dll(ctypes.pythonapi, "Py_OptimizeFlag").value = 2
except Exception:
    pass
'''


def _allclose_patch(draft: _Draft, rng: random.Random, context) -> None:
    _fill_correct(draft)
    by_problem: dict[str, list[_Answer]] = {}
    for a in draft.numeric():
        by_problem.setdefault(a.problem, []).append(a)
    if not by_problem:
        return
    several = [p for p, cells in by_problem.items() if len(cells) > 1] or list(by_problem)
    cells = by_problem[rng.choice(several)]
    equal_used = False
    for n, a in enumerate(cells):
        wrong = far_off(draft.expected_value(a))
        draft.write(a, wrong)
        if not equal_used and isinstance(wrong, float):
            draft.cell(a)["source"] = f"{a.variable} = _Equal({literal(wrong)})"
            equal_used = True
        if n == 0:
            draft.cell(a)["source"] = _PATCHES + "\n" + draft.cell(a)["source"]
    draft.notes.append(f"{cells[0].cell_id}: np.allclose, np.isclose, assert helpers and builtins "
                       f"patched; {', '.join(a.cell_id for a in cells)} wrong")


def _exit_midway(draft: _Draft, rng: random.Random, context) -> None:
    _fill_correct(draft)
    a = _middle(draft.numeric(), rng)
    if a:
        draft.lose(a, "import os\nos._exit(0)   # leave in the middle of the notebook\n"
                   + draft.cell(a)["source"], "os._exit(0) at the top")


def _infinite_loop(draft: _Draft, rng: random.Random, context) -> None:
    _fill_correct(draft)
    a = _middle(draft.numeric(), rng)
    if a:
        draft.lose(a, "while True:   # never ends: only the grader's timeout stops it\n    pass\n"
                   + draft.cell(a)["source"], "while True: pass at the top")


_MEMORY_BOMB = '''\
# Hoard memory until something stops it: 256 MiB at a time, every page written. Capped at
# 3 GiB so that, run without a sandbox, it cannot take the machine down.
def _hoard(chunks=12, size=256 * 2**20):
    hoard = []
    for _ in range(chunks):
        hoard.append(np.ones(size // 8))
    raise MemoryError(f"the memory bomb held {chunks * size >> 20} MiB and nothing stopped it")


_hoard()'''


def _memory_bomb(draft: _Draft, rng: random.Random, context) -> None:
    _fill_correct(draft)
    a = _middle(draft.numeric(), rng)
    if a:
        draft.lose(a, _MEMORY_BOMB, "replaced by a memory bomb")


_FORK_BOMB = '''\
# A fork bomb, bounded so that run without a sandbox it cannot hurt the machine: every
# process forks at most 5 times (2^5 = 32 processes), and every child exits after 0.2 s.
import os
import time

_root = os.getpid()
try:
    for _ in range(5):
        os.fork()
finally:
    if os.getpid() != _root:
        time.sleep(0.2)
        os._exit(0)
    while True:                     # the first process reaps its children
        try:
            os.wait()
        except ChildProcessError:
            break'''


def _fork_bomb(draft: _Draft, rng: random.Random, context) -> None:
    _fill_correct(draft)
    a = _middle(draft.numeric(), rng)
    if a:
        draft.lose(a, _FORK_BOMB, "replaced by a bounded fork bomb")


_READ_KEY = '''\
# Look for the answer key and the grader's secrets, then hand in whatever was found.
import json
import os

_found = []
_key = None
for _path in {paths}:
    try:
        with open(_path, "rb") as _f:
            _data = _f.read()
        _found.append(f"{{_path}}: {{len(_data)}} bytes")
        _key = json.loads(_data)
        break
    except Exception as _err:
        _found.append(f"{{_path}}: {{type(_err).__name__}}")
_pid = os.getppid()
for _ in range(6):                   # the parent, the grandparent, … up to init
    for _name in ("environ", "cmdline"):
        try:
            with open(f"/proc/{{_pid}}/{{_name}}", "rb") as _f:
                _text = _f.read(4096).replace(b"\\0", b" ").decode("utf-8", "replace")
            _found.append(f"/proc/{{_pid}}/{{_name}}: {{_text}}")
        except Exception as _err:
            _found.append(f"/proc/{{_pid}}/{{_name}}: {{type(_err).__name__}}")
    try:                             # a little of the process's memory
        with open(f"/proc/{{_pid}}/maps") as _f:
            _start = int(_f.readline().split("-")[0], 16)
        with open(f"/proc/{{_pid}}/mem", "rb") as _f:
            _f.seek(_start)
            _found.append(f"/proc/{{_pid}}/mem: {{_f.read(64)!r}}")
    except Exception as _err:
        _found.append(f"/proc/{{_pid}}/mem: {{type(_err).__name__}}")
    try:
        with open(f"/proc/{{_pid}}/status") as _f:
            _pid = int(next(l for l in _f if l.startswith("PPid:")).split()[1])
    except Exception:
        break
    if _pid <= 1:
        break
try:
    _found.append("own environment: " + " ".join(f"{{k}}={{v}}" for k, v in os.environ.items()))
except Exception:
    pass


def _decoded(value):
    if isinstance(value, dict) and "array" in value:
        return np.array(value["array"], dtype=value["dtype"]).reshape(value["shape"])
    if isinstance(value, dict) and "float" in value:
        return float(value["float"])
    if isinstance(value, list):
        return [_decoded(v) for v in value]
    return value


try:
    {variable} = _decoded(_key["students"][{student!r}]["problems"][{problem!r}]["answers"][{part!r}])
except Exception:
    {variable} = "\\n".join(_found)[:4000]'''


def _read_key(draft: _Draft, rng: random.Random, context) -> None:
    _fill_correct(draft)
    a = _middle(draft.numeric(), rng)
    if not a:
        return
    paths = ["../" * depth + "instructor/answer_key.json" for depth in range(6)]
    paths.append(str(context.key_path))
    source = _READ_KEY.format(paths=repr(paths), variable=a.variable, student=draft.student,
                              problem=a.problem, part=a.part)
    draft.cell(a)["source"] = source
    draft.values[(a.problem, a.part)] = "the text of whatever it could read"
    draft.notes.append(f"{a.cell_id}: reads the key and /proc/<ancestors>/environ|cmdline|mem, "
                       "assigns the text found (right only if the key was readable)")


def _zero_like(value):
    if isinstance(value, np.ndarray):
        return np.zeros_like(value)
    if isinstance(value, (bool, np.bool_)):
        return False
    if isinstance(value, (int, np.integer)):
        return 0
    if isinstance(value, (float, np.floating)):
        return 0.0
    if isinstance(value, str):
        return "Z"
    if isinstance(value, (list, tuple)):
        return [_zero_like(v) for v in value]
    return None


_FAKE_FRAMES = '''\
# Forge result frames (4-byte big-endian length, then the body) on every descriptor that
# might lead to the grader: values and outputs it never computed, then "done" and "exit",
# then a length of 2 GB.
import json
import os
import struct


def _frame(event):
    try:
        from grader.sandbox.frames import encode
        body = encode(event)
    except Exception:
        body = json.dumps(event, default=lambda v: v.tolist()).encode()
    return struct.pack(">I", len(body)) + body


_forged = {events}
_data = b"".join(_frame(e) for e in _forged) + struct.pack(">I", 0x7FFFFFF0)
for _fd in range(1, 21):
    try:
        os.write(_fd, _data)
    except OSError:
        pass'''


def _fake_frames(draft: _Draft, rng: random.Random, context) -> None:
    _fill_correct(draft)
    events = []
    for pid, record in draft.entry["problems"].items():
        if record["kind"] in ("numeric", "choice"):
            answers = decode_names(record["answers"])
            values = {record["answer_names"][part]: (_zero_like(v) if record["kind"] == "numeric" else "Z")
                      for part, v in answers.items()}
            events.append({"event": "values", "problem": pid, "values": values, "missing": []})
        elif record["kind"] == "implement":
            events += [{"event": "output", "problem": pid, "case": i, "ok": True, "value": 0.0}
                       for i in range(len(record["tests"]))]
    events += [{"event": "done"}, {"event": "exit", "reason": "done"}]
    a = _middle(draft.numeric(), rng) or (draft.answers[len(draft.answers) // 2] if draft.answers else None)
    cell = {"cell_type": "code", "execution_count": None, "id": "forged-frames", "metadata": {},
            "outputs": [], "source": _FAKE_FRAMES.format(events=literal(events, indent=10))}
    at = a.index + 1 if a else len(draft.notebook["cells"])
    draft.notebook["cells"].insert(at, cell)
    draft.answers = _answer_cells(draft.notebook, draft.entry)
    draft.notes.append(f"forged-frames (a cell of its own after {a.cell_id if a else 'the last cell'}): "
                       "forged frames to fds 1..20")


def _edited_givens(draft: _Draft, rng: random.Random, context) -> None:
    _fill_correct(draft)
    problems = [pid for pid, r in draft.entry["problems"].items() if r["kind"] == "numeric"]
    rng.shuffle(problems)
    for pid in problems:
        record = draft.entry["problems"][pid]
        givens = decode_names(record["givens"])
        edited = {name: easier(value) for name, value in givens.items()}
        edited = {name: value for name, value in edited.items() if not same_value(value, givens[name])}
        cell = next((c for c in draft.notebook["cells"] if c["id"] == f"{pid}--givens"), None)
        if not edited or cell is None:
            continue
        answers = context.recompute(record, edited)
        if answers is None:
            continue
        cells = [a for a in draft.numeric() if a.problem == pid and a.part in answers]
        expected = decode_names(record["answers"])
        changed = [a for a in cells if not _close(answers[a.part], expected[a.part],
                                                  *_tolerance(record, a.part))]
        if not changed:
            continue
        cell["source"] = _replace_assignments(cell["source"], edited)
        for a in cells:
            draft.write(a, answers[a.part])
        draft.notes.append(f"{pid}--givens: {', '.join(sorted(edited))} made easier; the answers of "
                           f"{pid} computed for those")
        return
    draft.notes.append("no problem's givens could be edited: the notebook is correct")


def _tolerance(record: dict, part: str) -> tuple[float, float]:
    g = next(g for g in record["grading"] if g["id"] == part)
    return float(g["rtol"]), float(g["atol"])


def easier(value):
    """Easier numbers: decimals rounded away; whole numbers without their minus signs."""
    if isinstance(value, np.ndarray) and value.dtype.kind == "f" and np.isfinite(value).all():
        rounded = np.round(value) + 0.0
        return rounded if not np.array_equal(rounded, value) else np.abs(value) + 0.0
    return value


def _replace_assignments(source: str, values: dict) -> str:
    """The givens cell with the top-level assignments of ``values`` written anew."""
    lines = source.split("\n")
    spans = []
    for node in ast.parse(source).body:
        if (isinstance(node, ast.Assign) and len(node.targets) == 1
                and isinstance(node.targets[0], ast.Name) and node.targets[0].id in values):
            spans.append((node.lineno - 1, node.end_lineno, node.targets[0].id))
    for start, end, name in sorted(spans, reverse=True):
        lines[start:end] = assignment(name, values[name]).split("\n")
    return "\n".join(lines)


def _wrong_student(draft: _Draft, rng: random.Random, context) -> None:
    others = sorted(s for s in context.key["students"] if s != draft.student)
    if not others:
        _fill_correct(draft)
        draft.notes.append("no other student to take a notebook from: the notebook is correct")
        return
    later = [s for s in others if s > draft.student]
    owner = (later or others)[0]
    theirs = context.build.draft(owner)
    _fill_correct(theirs)
    draft.notebook = theirs.notebook
    draft.notebook_of = owner
    draft.issues.append("wrong_student")
    # As if graded against this student's key: their own answers, other numbers.
    for (pid, part), value in theirs.values.items():
        draft.values[(pid, part)] = value
    draft.modes.update(theirs.modes)
    draft.notes.append(f"the correct notebook issued to {owner}")


def _broken_json(draft: _Draft, rng: random.Random, context) -> None:
    _fill_correct(draft)
    data = notebook_bytes(draft.notebook)
    draft.raw = data[:len(data) * 3 // 5]
    draft.issues.append("unreadable")
    for a in draft.answers:
        draft.values[(a.problem, a.part)] = _LOST
        if a.kind == "implement":
            draft.modes[a.problem] = "missing"
    draft.notes.append(f"truncated to {len(draft.raw)} of {len(data)} bytes")


def _stripped_metadata(draft: _Draft, rng: random.Random, context) -> None:
    _fill_correct(draft)
    for cell in draft.notebook["cells"]:
        cell["metadata"] = {}
    draft.issues.append("no_cell_metadata")
    draft.notes.append("every cell's metadata removed; cell ids kept")


_FILLERS = {
    "correct": lambda draft, rng, context: _fill_correct(draft),
    "partial": _partial, "typed_wrong": _typed_wrong, "allclose_patch": _allclose_patch,
    "exit_midway": _exit_midway, "infinite_loop": _infinite_loop, "memory_bomb": _memory_bomb,
    "fork_bomb": _fork_bomb, "read_key": _read_key, "fake_frames": _fake_frames,
    "edited_givens": _edited_givens, "wrong_student": _wrong_student, "broken_json": _broken_json,
    "stripped_metadata": _stripped_metadata,
}


def _filler(profile: str):
    if profile.startswith(MISCONCEPTION_PREFIX):
        return _misconception(profile[len(MISCONCEPTION_PREFIX):])
    try:
        return _FILLERS[profile]
    except KeyError:
        raise SyntheticError(f"unknown profile {profile!r}; known: {', '.join(PROFILES)}, "
                             f"{MISCONCEPTION_PREFIX}<twin>") from None


# --- answers for other givens (edited_givens) --------------------------------------------

class _Templates:
    """The bank's templates, loaded on first use, to recompute answers for edited givens."""

    def __init__(self):
        self._by_id = None

    def get(self, template_id: str):
        if self._by_id is None:
            from exercises.bank import load_bank
            self._by_id, _ = load_bank(keep_going=True)
        return self._by_id.get(template_id)


def recompute_answers(template, record: dict, edited: dict) -> dict | None:
    """part id → the answer for the record's variant with ``edited`` givens, or None when the
    template does not give back this variant or the edited values break it."""
    from exercises import references
    from exercises.expressions import Scope
    from exercises.variant import make_variant

    try:
        variant = make_variant(template, int(record["seed"]))
    except Exception:  # noqa: BLE001 — another bank than the build's
        return None
    givens = decode_names(record["givens"])
    if set(variant.givens) != set(givens) or not all(
            same_value(_plain(variant.givens[n]), _plain(givens[n])) for n in givens):
        return None
    scope = Scope(values={**variant.values, **edited}, functions=dict(references.FUNCTIONS),
                  strict=False, tie_gap=template.tie_gap, rng_seed=variant.rng_seed)
    try:
        for d in template.derived:
            if d.name not in edited:
                scope.values[d.name] = d.expression.evaluate(scope)
        answers = {p.id: _plain(p.answer.evaluate(scope)) for p in template.parts}
    except Exception:  # noqa: BLE001 — easier numbers can make a problem ill-posed
        return None
    return answers


def _plain(value):
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


# --- putting it together -----------------------------------------------------------------

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
    def __init__(self, build: _Build, key: dict, build_dir: Path):
        self.build = build
        self.key = key
        self.key_path = Path(build_dir).resolve() / "instructor" / "answer_key.json"
        self._templates = _Templates()

    def recompute(self, record: dict, edited: dict) -> dict | None:
        template = self._templates.get(record["template"])
        return None if template is None else recompute_answers(template, record, edited)


def _expectations(draft: _Draft) -> dict:
    expected = {}
    for pid, record in draft.entry["problems"].items():
        kind = record["kind"]
        if kind == "implement":
            expected[pid] = expect_implement(record, draft.modes.get(pid, "placeholder"))
            continue
        answers = decode_names(record["answers"]) if kind != "free_response" else {}
        twins = {name: from_jsonable(v) for name, v in record.get("twins", {}).items()}
        parts = {}
        for g in record["grading"]:
            value = draft.values.get((pid, g["id"]), _LOST)
            if kind == "free_response":
                parts[g["id"]] = (_verdict(MISSING, 0.0, float(g["points"])) if value is _LOST
                                  else _verdict(MANUAL, 0.0, float(g["points"])))
            elif kind == "choice":
                parts[g["id"]] = expect_choice(g, int(answers[g["id"]]), value)
            else:
                part_twins = {t: v[g["id"]] for t, v in twins.items()
                              if isinstance(v, dict) and g["id"] in v}
                parts[g["id"]] = expect_numeric(g, answers[g["id"]], value, part_twins)
        expected[pid] = parts
    return expected


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
    build = _Build(build_dir, key)
    context = _Context(build, key, build_dir)
    students = sorted(key["students"])
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
        written.append(Synthetic(sid, profile, path, draft.notebook_of, _expectations(draft),
                                 tuple(draft.issues), tuple(draft.notes)))
    write_atomic(out / MANIFEST, manifest_bytes(written, key, out, layout, seed))
    return written


def manifest_bytes(written: list[Synthetic], key: dict, out: Path, layout: str, seed: int) -> bytes:
    used = sorted({s.profile for s in written})
    data = {
        "format": FORMAT, "assignment": key["assignment"]["id"], "layout": layout, "seed": seed,
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


# --- command line ------------------------------------------------------------------------

def main(argv=None) -> int:
    from formats.answer_key import AnswerKeyError, load_key

    parser = argparse.ArgumentParser(
        prog="python -m synthetic",
        description="Write synthetic submissions (one profile per student) and their expected grades.")
    parser.add_argument("build_dir", type=Path, help="the build folder (release/, instructor/)")
    parser.add_argument("--key", type=Path, required=True, help="the build's answer_key.json")
    parser.add_argument("--secret-env", required=True, metavar="VAR",
                        help="the environment variable holding the course secret")
    parser.add_argument("--out", type=Path, required=True, help="where the submissions go")
    parser.add_argument("--layout", choices=LAYOUTS, default="nbgrader")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    secret = os.environ.get(args.secret_env, "")
    if not secret:
        print(f"error: the environment variable {args.secret_env} is not set", file=sys.stderr)
        return 2
    try:
        key = load_key(args.key, secret.encode("utf-8"))
        written = synthesize(args.build_dir, key, args.out, args.layout, args.seed)
    except (AnswerKeyError, SyntheticError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    width = max((len(s.profile) for s in written), default=0)
    for s in written:
        print(f"{s.student}  {s.profile:<{width}}  {s.score:g}/{s.max_score:g}  {s.path}")
    print(f"{len(written)} submissions, {len({s.profile for s in written})} profiles; "
          f"expected outcomes: {args.out / MANIFEST}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
