"""The trusted side's judgement of one part: the student's value (as the sandbox returned it)
against the answer key, with a message that says what is wrong and, where a misconception
twin gives the same wrong value on this student's variant, which mistake it was.

Pure functions of (key record, student values): no I/O, no sandbox, so every message is
tested directly. The sandbox only ever hands over values; everything that decides a score
happens here, in the grader's own process.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, replace

import numpy as np
from solutions import TWINS
from solutions.same_error import one_name_per_error

from formats.compare import compare, is_numeric, matches_twin, telling
from formats.degenerate import NOT_FINITE, ZERO, degenerate
from formats.degenerate import describe as describe_form
from formats.key_shape import answer_names, gradings
from formats.key_shape import points as points_of
from formats.cells import LETTERS
from formats.serialize import decode_names, from_jsonable

PASSED, FAILED, PARTIAL, MISSING, ERROR, MANUAL = "passed", "failed", "partial", "missing", "error", "manual"


@dataclass(frozen=True)
class Verdict:
    """One part's outcome: what goes into the gradebook and the student's feedback."""
    score: float
    max_score: float
    status: str                       # passed | failed | partial | missing | error | manual
    message: str = ""                 # why it failed ("" when it passed)
    misconception: str | None = None  # a twin's name when the wrong value is that mistake

    @property
    def passed(self) -> bool:
        return self.status == PASSED


@dataclass(frozen=True)
class Missing:
    """No value: the variable was never assigned (``cause``: the error or crash that explains it)."""
    cause: str = ""


MAX_ALTERNATIVES = 2      # "either … or …" between at most two mistakes; more name none
_BACKTICKS = re.compile(r"`+")


def code(text: str) -> str:
    """``text`` (a student's exception message, say) as a Markdown code span: shown as it is
    on the feedback page, never read as emphasis, a link or math. The fence is one backtick
    longer than the longest run inside (CommonMark's rule); spaces pad a text that starts or
    ends with one. An empty text is no span at all: ''."""
    text = str(text)
    fence = "`" * (max(map(len, _BACKTICKS.findall(text)), default=0) + 1)
    pad = " " if text.startswith("`") or text.endswith("`") or not text.strip() else ""
    return f"{fence}{pad}{text}{pad}{fence}" if text else ""


def describe(value) -> str:
    """What a value is, in a student's words: 'an array of shape (4, 4)', 'text', 'a function'."""
    type_name = getattr(value, "type_name", None)
    if type_name is not None and not isinstance(value, (np.ndarray, str)):
        return f"a {type_name}"        # a frames.Unsupported: an object that cannot cross
    if value is None:
        return "None"
    if isinstance(value, str):
        return "text"
    if isinstance(value, (bool, np.bool_)):
        return "True/False"
    if isinstance(value, np.ndarray):
        if value.ndim == 0:
            return "a number" if value.dtype.kind in "iuf" else f"a {value.dtype} scalar"
        return f"an array of shape {value.shape}"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, (list, tuple)):
        return f"a list of {len(value)} items"
    if isinstance(value, dict):
        return "a dict"
    return f"a {type(value).__name__}"


def _expected_form(expected) -> str:
    if isinstance(expected, str):
        return "text"
    shape = np.shape(expected) if is_numeric(expected) else None
    if shape:
        return f"an array of shape {shape}"
    if shape == ():
        return "a number"
    return describe(expected)


# --- numeric parts -----------------------------------------------------------------------

def numeric_part(grading: dict, expected, value, twins: dict, variable: str,
                 lookalikes: dict | None = None) -> Verdict:
    """A numeric part: ``grading`` is the key's entry for the part (points, rtol, atol,
    misconceptions), ``twins`` maps each twin's name to what it gives for this part,
    ``lookalikes`` each other twin the build's mistake search stored for the part (see
    ``diagnoses``). ``twins`` may instead be a function giving both, called only for a wrong
    value: a key stores every searched mistake of every part, and decoding them for answers
    that pass would be most of a submission's work."""
    points = points_of(grading)
    if isinstance(value, Missing):
        because = f" ({value.cause})" if value.cause else ""
        return Verdict(0.0, points, MISSING, f"`{variable}` is not defined: your answer cell did "
                       f"not assign it{because}.")
    if getattr(value, "type_name", None) is not None and not isinstance(value, (np.ndarray, str)):
        return Verdict(0.0, points, FAILED, f"`{variable}` is {describe(value)}; expected "
                       f"{_expected_form(expected)}.")
    rtol, atol = float(grading["rtol"]), float(grading["atol"])
    result = compare(value, expected, rtol, atol)
    if result.ok:
        return Verdict(points, points, PASSED)
    if callable(twins):                  # decoded only now: most answers pass (problem_verdicts)
        twins, lookalikes = twins()
    listed = grading.get("misconceptions", ())
    every = diagnoses(value, twins, listed, rtol, atol, lookalikes, nameable=telling(expected), limit=False)
    names = few(every)
    if len(names) == 1:
        m = TWINS[names[0]]
        return Verdict(0.0, points, FAILED, f"`{variable}` matches a known mistake: {m.summary}. "
                       f"{m.explanation}", names[0])
    if names:
        return Verdict(0.0, points, FAILED, f"`{variable}` {either(names)}")
    hint = (_many_hint(every, listed) or _shape_hint(value, expected, rtol, atol)
            or _degenerate_hint(value, expected, rtol, atol))
    return Verdict(0.0, points, FAILED, f"`{variable}`: {for_student(result.reason)}.{hint}")


def _many_hint(every: list[str], listed) -> str:
    """For a value that more than MAX_ALTERNATIVES different mistakes give: that it says
    nothing about which, with one the part lists as an example (no name is recorded)."""
    if len(every) <= MAX_ALTERNATIVES:
        return ""
    example = next((n for n in every if n in listed), None)
    one = f" (one of them: {TWINS[example].summary})" if example else ""
    return (f" {len(every)} different mistakes give this value on your numbers{one}, so it does "
            "not tell which one you made: check each step that leads to it.")


_LARGEST_ERROR = re.compile(r" \(largest error [^;]*; allowed ([^)]*)\)")


def for_student(reason: str) -> str:
    """A comparison's reason without the size of the error: |answer − expected| next to the
    student's own answer would give the expected value away (for a number, to one of two
    candidates), and the feedback must not, before ``--reveal``."""
    return _LARGEST_ERROR.sub(r" (allowed \1)", reason)


def diagnoses(value, twins: dict, names, rtol: float, atol: float,
              lookalikes: dict | None = None, nameable: bool = True, limit: bool = True) -> list[str]:
    """Every explanation of the student's value on this variant: the listed twins it
    matches, in listed order, then the lookalikes it matches (the twins the build's mistake
    search found for this part, ``exercises.variant.draw``). One name is a diagnosis; more are
    alternatives, and none is asserted. Where ``nameable`` is False (a part whose answer is
    not ``telling``: a count, an index, one number) a lookalike is never the diagnosis on
    its own; it only makes a listed twin's name doubtful. ``limit``: as ``few`` keeps them
    (False: every error that explains the value, once each)."""
    found = [name for name in names if name in twins and name in TWINS
             and matches_twin(value, twins[name], rtol, atol)]
    if not found and not nameable:
        return []
    every = found + [name for name, wrong in (lookalikes or {}).items()
                     if name not in found and name in TWINS and matches_twin(value, wrong, rtol, atol)]
    return few(every) if limit else one_name_per_error(every)


def few(names) -> list[str]:
    """The explanations worth showing: each error once (``solutions.same_error``: two codes of
    one mistake are one name), and none when more than MAX_ALTERNATIVES remain — a value
    that many different mistakes give (a saturated softmax, an all-zero row) tells the
    student nothing about which one they made, and a list of six is no feedback."""
    kept = one_name_per_error(names)
    return kept if len(kept) <= MAX_ALTERNATIVES else []


def either(names) -> str:
    """The feedback for a value that several mistakes explain on this variant: each listed
    with its summary, none of them asserted. The verdict records no misconception — the
    gradebook's column feeds the class statistics (``reports.summary_json``), and a guess
    between two mistakes must not be counted as either one."""
    alternatives = " or ".join(TWINS[name].summary for name in names)
    return (f"matches more than one known mistake, and on your numbers they cannot be told "
            f"apart: either {alternatives}. Check which one you made.")


def _shape_hint(value, expected, rtol, atol) -> str:
    """A mistake no twin models but many students make: rows and columns swapped."""
    if not (isinstance(value, np.ndarray) and is_numeric(expected)):
        return ""
    want = np.asarray(expected)
    if value.ndim == 2 and want.ndim == 2 and matches_twin(value.T, want, rtol, atol):
        return " Its transpose is right: rows and columns are swapped."
    return ""


_DEGENERATE_HINTS = {
    NOT_FINITE: "look for a division by zero, the log of 0, or an exp that overflowed (subtract each "
                "row's largest entry before exp).",
    ZERO: "did the cell compute the value, or only make an array of the right shape?",
}


def _degenerate_hint(value, expected, rtol, atol) -> str:
    """A plain hint for a degenerate answer (zeros, NaN, all-equal or one-hot rows) where the
    answer is not so (``formats.degenerate``): no twin explains it, but its form says a lot."""
    if not (isinstance(value, np.ndarray) and is_numeric(expected) and value.shape == np.shape(expected)
            and value.dtype.kind in "biuf"):
        return ""
    form = degenerate(value, expected, rtol, atol)
    if form is None:
        return ""
    if form == NOT_FINITE:               # the comparison already says which entries
        return " " + _DEGENERATE_HINTS[NOT_FINITE].capitalize()
    said = describe_form(form, value, atol)
    advice = _DEGENERATE_HINTS.get(form, "the answer's rows are not like that: check the step that "
                                          "should make their entries differ.")
    return f" It {said}: {advice}"


# --- choices -----------------------------------------------------------------------------

def choice_part(grading: dict, options: list[dict], correct: int, value, variable: str) -> Verdict:
    """A multiple-choice part: the student gives a letter (``"B"``; case and spaces do not
    matter). A wrong option earns its own feedback."""
    points = points_of(grading)
    letters = tuple(LETTERS[:len(options)])      # a tuple: "BC" in "ABCD" would be True
    if isinstance(value, Missing):
        because = f" ({value.cause})" if value.cause else ""
        return Verdict(0.0, points, MISSING, f"`{variable}` is not defined: your answer cell did "
                       f"not assign it{because}.")
    if isinstance(value, np.ndarray) and value.ndim == 0 and value.dtype.kind == "U":
        value = str(value)
    if not isinstance(value, str) or value.strip().upper() not in letters:
        return Verdict(0.0, points, FAILED, f"`{variable}` should be one of the letters "
                       f"{', '.join(letters)} (as text, e.g. \"{letters[0]}\"); it is {describe(value)}"
                       + (f" {value!r}" if isinstance(value, str) and len(value) < 40 else "") + ".")
    chosen = letters.index(value.strip().upper())
    if chosen == correct:
        return Verdict(points, points, PASSED)
    feedback = options[chosen].get("feedback", "").strip()
    return Verdict(0.0, points, FAILED, f"{letters[chosen]} is not right." + (f" {feedback}" if feedback else ""))


# --- implement ---------------------------------------------------------------------------

@dataclass(frozen=True)
class CaseOutcome:
    """What the student's function did on one hidden case (from the sandbox)."""
    ok: bool
    value: object = None
    error: str = ""


def outputs_of(value) -> list:
    """The notebook's rule for a function's result: a tuple or list is its outputs, anything
    else one output."""
    return list(value) if isinstance(value, (list, tuple)) else [value]


def _case_problem(outcome: CaseOutcome | None, expected, rtol, atol) -> str:
    if outcome is None:
        return "was never run (an earlier crash)"
    if not outcome.ok:      # (the kit's own words for a crash; the student's exception as code)
        return outcome.error if outcome.error.startswith("not run:") else f"raised {code(outcome.error)}"
    got, want = outputs_of(outcome.value), outputs_of(expected)
    if len(got) != len(want):
        return f"returned {len(got)} value{'s' if len(got) != 1 else ''}, expected {len(want)}"
    for k, (g, e) in enumerate(zip(got, want)):
        if getattr(g, "type_name", None) is not None and not isinstance(g, (np.ndarray, str)):
            return f"returned {describe(g)}" + (f" as output {k}" if len(want) > 1 else "")
        result = compare(g, e, rtol, atol)
        if not result.ok:
            return (f"output {k}: " if len(want) > 1 else "") + for_student(result.reason)
    return ""


def implement_family(family: dict, cases: list[dict], outcomes: dict, function: str,
                     rtol: float, atol: float, twins: dict, misconceptions,
                     lookalikes: dict | None = None, agreement: _Agreement | None = None) -> Verdict:
    """A test family of an ``implement`` problem: points in proportion to the hidden cases
    passed. ``cases`` are the key's tests of this family with their position ``position`` in
    the key; ``outcomes`` maps that position to a CaseOutcome."""
    points = points_of(family)
    failures, failed_positions = [], []
    for case in cases:
        expected = from_jsonable(case["expected"])
        problem = _case_problem(outcomes.get(case["position"]), expected, rtol, atol)
        if problem:
            failures.append(f"case {case['index'] + 1}: {problem}")
            failed_positions.append(case["position"])
    if not failures:
        return Verdict(points, points, PASSED)
    passed = len(cases) - len(failures)
    score = points * passed / len(cases) if cases else 0.0
    status = PARTIAL if passed else FAILED
    shown = "; ".join(failures[:3]) + (f"; and {len(failures) - 3} more" if len(failures) > 3 else "")
    message = (f"`{function}` fails {len(failures)} of {len(cases)} hidden `{family['family']}` "
               f"case{'s' if len(cases) != 1 else ''}: {shown}.")
    names = _diagnose_function(outcomes, failed_positions, twins, misconceptions, rtol, atol,
                               lookalikes, agreement)
    if len(names) == 1:
        m = TWINS[names[0]]
        message += f" It matches a known mistake: {m.summary}. {m.explanation}"
    elif names:
        message += f" It {either(names)}"
    return Verdict(score, points, status, message, names[0] if len(names) == 1 else None)


def _explained_once(verdicts: dict) -> dict:
    """One explanation per mistake: a family that fails by the mistake an earlier family
    already explained names it and points there, instead of repeating the whole text."""
    first: dict[str, str] = {}
    out = {}
    for family, v in verdicts.items():
        m = TWINS.get(v.misconception) if v.misconception else None
        if m is not None and v.misconception in first:
            v = replace(v, message=v.message.replace(
                f"{m.summary}. {m.explanation}", f"{m.summary} (explained under `{first[v.misconception]}`)."))
        elif m is not None:
            first[v.misconception] = family
        out[family] = v
    return out


# How a twin's output on one hidden case compares with the student's (``_agreement``).
_SAME, _DIFFERENT, _NOT_RUN, _TWIN_RAISES, _BOTH_RAISE, _STUDENT_NAN = range(6)


class _Agreement:
    """Per twin, how it compares with the student's function on each hidden case — worked out
    once per problem and read by every family's diagnosis (decoding a twin's stored outputs
    and comparing them is most of the work)."""

    def __init__(self, outcomes: dict, rtol: float, atol: float):
        self.outcomes, self.rtol, self.atol = outcomes, rtol, atol
        self._rows: dict[str, dict[int, int]] = {}

    def rows(self, name: str, wrong: list) -> Iterator[int]:
        """Its agreement case by case, each worked out when first asked for (most twins differ at once)."""
        known = self._rows.setdefault(name, {})
        for p, w in enumerate(wrong):
            if p not in known:
                known[p] = self._case(p, w)
            yield known[p]

    def _case(self, p: int, w) -> int:
        outcome = self.outcomes.get(p)
        if outcome is None or (not outcome.ok and outcome.error.startswith("not run:")):
            return _NOT_RUN
        if w is None:            # the twin raises here (or refuses, as the reference does a
            return _TWIN_RAISES if outcome.ok else _BOTH_RAISE     # row with nothing to attend to)
        if not outcome.ok:
            return _DIFFERENT
        if _matches_outputs(outcome.value, from_jsonable(w), self.rtol, self.atol, blocked_rows=True):
            return _SAME
        return _DIFFERENT if _all_finite(outcome.value) else _STUDENT_NAN


# On a failed case only these agree; elsewhere all but a different finite output or an error.
_AGREES_WHERE_FAILED = {_SAME, _BOTH_RAISE}


def _diagnose_function(outcomes, positions, twins, names, rtol, atol, lookalikes=None,
                       agreement: _Agreement | None = None) -> list[str]:
    """Every twin that behaves like the student's function on every case of the problem (in
    listed order), then every lookalike that does too (``diagnoses``): the same outputs where
    it returns — not only on the cases of this family that failed (``positions``), since a
    twin that explains one family's failures but not another's is not the student's mistake
    (a saturated softmax makes many mistakes agree on one case). Where the twin raises, the
    student's code must raise too on a failed case and may do anything elsewhere; so may a
    non-finite output (NaN where the twin gives 0 is the student's convention for a row with
    nothing to attend to) and a case the kit did not run. ``agreement``: the problem's, shared
    by its families."""
    failed = set(positions)
    agreement = agreement or _Agreement(outcomes, rtol, atol)

    def gives_the_same(name, wrong) -> bool:
        if any(p >= len(wrong) for p in failed):
            return False
        return all(r in _AGREES_WHERE_FAILED if p in failed else r != _DIFFERENT
                   for p, r in enumerate(agreement.rows(name, wrong)))
    found = [name for name in names if twins.get(name) is not None and name in TWINS
             and gives_the_same(name, twins[name])]
    return few(found + [name for name, wrong in (lookalikes or {}).items()
                        if name not in found and name in TWINS and gives_the_same(name, wrong)])


def _all_finite(value) -> bool:
    try:
        return all(np.isfinite(np.asarray(v, dtype=float)).all() for v in outputs_of(value))
    except (TypeError, ValueError):
        return True


def _matches_outputs(value, wrong, rtol, atol, blocked_rows: bool = False) -> bool:
    """Does each output match the twin's? ``blocked_rows``: a NaN where the twin gives 0 counts
    as a match — the reference (and so every twin) gives a row with nothing to attend to a
    zero output, where a student's plain NumPy gives 0/0 = NaN."""
    got, want = outputs_of(value), outputs_of(wrong)
    if len(got) != len(want):
        return False
    if blocked_rows:
        got = [_nan_as_zero(g, w) for g, w in zip(got, want)]
    return all(matches_twin(g, w, rtol, atol) for g, w in zip(got, want))


def _nan_as_zero(value, wrong):
    if not (isinstance(value, np.ndarray) and value.dtype.kind == "f" and np.shape(wrong) == value.shape):
        return value
    nan = np.isnan(value)
    if not nan.any():
        return value
    wrong = np.asarray(wrong)
    if wrong.dtype.kind not in "biuf" or not (wrong[nan] == 0).all():
        return value
    return np.where(nan, 0.0, value)


# --- a whole problem ---------------------------------------------------------------------

def free_response_part(grading: dict, text: str | None) -> Verdict:
    points = points_of(grading)
    if not text:
        return Verdict(0.0, points, MISSING, "No answer written (graded by hand).")
    return Verdict(0.0, points, MANUAL, "Graded by hand.")


def gives_part(stored, part: str) -> bool:
    """Does a stored mistake (an encoded {part: value} table) give a value for ``part``?"""
    return isinstance(stored, dict) and set(stored) == {"dict"} and isinstance(stored["dict"], dict) \
        and part in stored["dict"]


def problem_verdicts(record: dict, values: dict, outcomes: dict, free_text: dict) -> dict:
    """part id (implement: family) → Verdict for one problem of one student.

    ``values``: answer variable → the student's value or Missing; ``outcomes``: position of
    a hidden case → CaseOutcome; ``free_text``: part id → the student's text."""
    kind = record["kind"]
    verdicts = {}
    if kind == "implement":
        twins = record.get("twins", {})          # twin → [stored output per case]: decoded on use
        agreement = _Agreement(outcomes, float(record["rtol"]), float(record["atol"]))
        for family in gradings(record):
            cases = [{**t, "position": i} for i, t in enumerate(record["tests"])
                     if t["family"] == family["family"]]
            verdicts[family["family"]] = implement_family(
                family, cases, outcomes, record["function"], float(record["rtol"]),
                float(record["atol"]), twins, record.get("misconceptions", ()),
                record.get("lookalikes", {}), agreement)
        return _explained_once(verdicts)
    answers = decode_names(record["answers"]) if kind != "free_response" else {}

    def stored(part: str):
        """(twins, lookalikes) of ``part``: what the record's stored mistakes give for it,
        decoded only when that part is wrong (not every part's, for each wrong one)."""
        return tuple({name: from_jsonable(by_part["dict"][part]) for name, by_part in record.get(field, {}).items()
                      if gives_part(by_part, part)} for field in ("twins", "lookalikes"))

    for grading in gradings(record):
        part = grading["id"]
        if kind == "free_response":
            verdicts[part] = free_response_part(grading, free_text.get(part))
            continue
        variable = answer_names(record)[part]
        value = values.get(variable, Missing())
        if kind == "choice":
            verdicts[part] = choice_part(grading, record["options"][part], int(answers[part]), value,
                                         variable)
        else:
            verdicts[part] = numeric_part(grading, answers[part], value,
                                          lambda part=part: stored(part), variable)
    return verdicts
