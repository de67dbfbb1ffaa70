"""The profiles: what each kind of student hands in, the order a roster gets them in, and
the honest ones (``correct``, ``partial``, ``typed_wrong``, ``misconception:<twin>``).
The hostile ones are in ``synthetic.hostile``.

A profile fills a ``Draft`` in place: ``fill(draft, rng, context)``."""

from __future__ import annotations

import random

import numpy as np

from formats import key_shape as shape
from formats.cells import CODE_PLACEHOLDER
from formats.serialize import from_jsonable
from synthetic.twin_edits import diagnosable_misconceptions, edit_code
from synthetic.notebooks import Draft, fill_correct

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

_PLACEHOLDER = tuple(CODE_PLACEHOLDER.split("\n"))


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


# --- the honest profiles -----------------------------------------------------------------

def _correct(draft: Draft, rng: random.Random, context) -> None:
    fill_correct(draft)


def _partial(draft: Draft, rng: random.Random, context) -> None:
    fill_correct(draft)
    pool = [a for a in draft.answers if a.kind in ("numeric", "choice")]
    blank = rng.sample(pool, min(3, max(len(pool) - 1, 0)))
    for a in sorted(blank, key=lambda a: a.index):
        draft.lose(a, "\n".join(_PLACEHOLDER), "left as the placeholder")
    rest = [a for a in draft.numeric() if a not in blank]
    if rest:
        a = rng.choice(rest)
        draft.write(a, far_off(draft.expected_value(a)))
        draft.notes.append(f"{a.cell_id}: far off")


def misconception(twin: str):
    """The profile ``misconception:<twin>``: the twin's value for every part that lists it,
    the twin's code edit in implement problems."""
    def fill(draft: Draft, rng: random.Random, context) -> None:
        fill_correct(draft)
        for a in draft.answers:
            record = draft.record(a)
            if twin not in record.get("twins", {}):
                continue
            if a.kind == shape.IMPLEMENT:
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


def _typed_wrong(draft: Draft, rng: random.Random, context) -> None:
    fill_correct(draft)
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


HONEST_FILLERS = {"correct": _correct, "partial": _partial, "typed_wrong": _typed_wrong}
