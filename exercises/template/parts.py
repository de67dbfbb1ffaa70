"""The parts of a numeric, choice or free-response template: each part's id, points, answer
expression, tolerances, visible checks, choice options and rubric (an implement problem has
hidden tests instead: ``implement``)."""

from __future__ import annotations

from dataclasses import replace

from formats.rubric import Rubric

from exercises.template.checks import CHECKS
from exercises.template.expressions import Expression
from exercises.template.follow import load_follow
from exercises.template.loading import describe, key_path
from exercises.template.model import MAX_OPTIONS, Option, Part
from exercises.template.names import NAME, NOTEBOOK_NAMES, RESERVED_VALUES, TemplateErrors
from exercises.template.rubrics import load_rubric
from exercises.template.yaml_lines import LineDict, LineList

PART_KEYS = {"id": "required", "prompt": "optional", "points": "required", "answer": "optional",
             "rtol": "optional", "atol": "optional", "misconceptions": "optional",
             "checks": "optional", "options": "optional", "shuffle": "optional",
             "rubric": "optional", "follow": "optional"}
OPTION_KEYS = {"text": "required", "correct": "optional", "feedback": "optional"}


def exercise_parts(load: TemplateErrors, data: LineDict, kind, scope: set[str], calls: set[str],
                    tolerance: tuple[float, float]) -> tuple[list[Part], list[LineDict]]:
    """The parts of a problem that is not an implement problem, and their YAML entries."""
    for forbidden in ("function", "reference", "tests", "output"):
        if forbidden in data:
            load.error(data.line_of(forbidden), forbidden, "only implement problems have this key")
    if "parts" not in data:
        load.error(data.line, "parts", "required")
        return [], []
    return _parts(load, data["parts"], data.line_of("parts"), kind, scope, calls, tolerance)


def _parts(load, raw, line, kind, scope, calls, tolerance) -> tuple[list[Part], list[LineDict]]:
    """The parts, and their YAML entries (misconceptions are resolved once every call is known)."""
    if not isinstance(raw, LineList) or not raw:
        load.error(line, "parts", f"expected a list of at least one part, got {describe(raw)}")
        return [], []
    entries = []
    parts, ids = [], set()
    part_scope = set(scope)
    for i, key, entry in load.mappings(raw, "parts", PART_KEYS):
        _numeric_only_keys(load, entry, key, kind)
        entries.append(entry)
        pid = _part_id(load, entry, key, i, ids, scope)
        earlier = [p.id for p in parts]
        ids.add(pid)
        part = _part(load, entry, key, pid, kind, scope, calls, tolerance)
        follow = load_follow(load, entry, key, kind, scope, earlier, calls)
        parts.append(replace(part, follow=follow) if follow is not None else part)
        part_scope.add(pid)
    scope |= part_scope
    return parts, entries


def _numeric_only_keys(load: TemplateErrors, entry: LineDict, key: str, kind) -> None:
    if kind != "numeric":
        for numeric_only in ("rtol", "atol", "checks", "misconceptions"):
            if numeric_only in entry:
                load.error(entry.line_of(numeric_only), key_path(key, numeric_only),
                           "only numeric parts have this key"
                           + (" (choice options carry 'feedback')" if numeric_only == "misconceptions" else ""))


def _part_id(load: TemplateErrors, entry: LineDict, key: str, i: int, ids: set[str],
             scope: set[str]) -> str:
    """The part's id (partN when it is missing or not a name), unique and not reserved."""
    pid = entry.get("id")
    if not isinstance(pid, str) or not NAME.match(pid):
        if "id" in entry:
            load.error(entry.line_of("id"), key_path(key, "id"),
                       f"'{pid}' is not a valid part id (letters, digits, _)")
        pid = f"part{i + 1}"
    elif pid in ids:
        load.error(entry.line_of("id"), key_path(key, "id"), f"duplicate part id '{pid}'")
    elif pid in RESERVED_VALUES or pid in NOTEBOOK_NAMES or pid.startswith("_"):
        load.error(entry.line_of("id"), key_path(key, "id"),
                   f"'{pid}' is reserved (it names something templates or notebooks read)")
    elif pid in scope:
        load.error(entry.line_of("id"), key_path(key, "id"),
                   f"part id '{pid}' is also a parameter or derived name")
    return pid


def _part(load: TemplateErrors, entry: LineDict, key: str, pid: str, kind, scope: set[str],
          calls: set[str], tolerance: tuple[float, float]) -> Part:
    points = load.number(entry, "points", key_path(key, "points"), 0.0, minimum=0)
    answer = _answer(load, entry, key, kind, scope, calls)
    options = _part_options(load, entry, key, kind, scope, calls)
    rubric = _rubric(load, entry, key, kind, points)
    shuffle = entry.get("shuffle", True)
    if not isinstance(shuffle, bool):
        load.error(entry.line_of("shuffle"), key_path(key, "shuffle"), "expected true or false")
        shuffle = True
    return Part(
        id=pid, line=entry.line, points=points,
        prompt=load.text(entry, "prompt", key_path(key, "prompt")) or "",
        answer=answer,
        rtol=load.number(entry, "rtol", key_path(key, "rtol"), tolerance[0], minimum=0),
        atol=load.number(entry, "atol", key_path(key, "atol"), tolerance[1], minimum=0),
        checks=_checks(load, entry, key, scope) if kind == "numeric" else (),
        options=options, shuffle=shuffle, rubric=rubric)


def _answer(load: TemplateErrors, entry: LineDict, key: str, kind, scope: set[str],
            calls: set[str]) -> Expression | None:
    """The part's answer expression: required for a numeric part, refused for a free-response one."""
    if "answer" not in entry:
        if kind == "numeric":
            load.error(entry.line, key_path(key, "answer"), "required for a numeric part")
        return None
    if kind == "free_response":
        load.error(entry.line_of("answer"), key_path(key, "answer"),
                   "free-response parts are graded by hand: give a 'rubric', not an answer")
        return None
    answer = load.expression(entry["answer"], entry.line_of("answer"), key_path(key, "answer"), scope)
    if answer is not None:
        calls |= answer.calls
    return answer


def _part_options(load: TemplateErrors, entry: LineDict, key: str, kind, scope: set[str],
                  calls: set[str]):
    """A choice part's options (required there, refused elsewhere)."""
    if kind != "choice":
        if "options" in entry:
            load.error(entry.line_of("options"), key_path(key, "options"), "only choice parts have options")
        return None
    if "options" not in entry:
        load.error(entry.line, key_path(key, "options"), "required for a choice part")
        return None
    options = _options(load, entry, key, scope)
    if isinstance(options, Expression):
        calls |= options.calls
    return options


def _rubric(load: TemplateErrors, entry: LineDict, key: str, kind, points: float) -> Rubric | None:
    """The part's rubric (``exercises.template.rubrics``): required for a free-response part, optional
    for the others (used when a grader overrides the automatic score)."""
    if kind == "free_response" and "rubric" not in entry:
        load.error(entry.line, key_path(key, "rubric"), "required for a free-response part "
                   "(what a full answer contains: items with points, or a text guide)")
    return load_rubric(load, entry, key, points, hand=kind == "free_response")


def _checks(load, part: LineDict, key: str, scope: set[str]):
    """A numeric part's visible checks (``exercises.template.checks``): (name, argument expression or None)."""
    raw = part.get("checks", LineList())
    if not isinstance(raw, LineList):
        load.error(part.line_of("checks"), key_path(key, "checks"), f"expected a list, got {describe(raw)}")
        return ()
    out = []
    for i, entry in enumerate(raw):
        here, ckey = raw.line_of(i), f"{key_path(key, 'checks')}[{i}]"
        argument = None
        if isinstance(entry, LineDict) and len(entry) == 1:
            (name, argument), = entry.items()
        else:
            name = entry
        if not isinstance(name, str) or name not in CHECKS:
            load.error(here, ckey, f"unknown check '{name}' (expected one of: {', '.join(CHECKS)})")
            continue
        if CHECKS[name].takes_argument != (argument is not None):
            load.error(here, ckey, f"check '{name}' " + ("needs an argument, e.g. {" + name + ": mask}"
                                                         if CHECKS[name].takes_argument
                                                         else "takes no argument"))
            continue
        expression = load.expression(argument, here, ckey, scope) if argument is not None else None
        out.append((name, expression))
    return tuple(out)


def _options(load, part: LineDict, key: str, scope: set[str]):
    raw = part["options"]
    okey = key_path(key, "options")
    if isinstance(raw, str):
        if "answer" not in part:
            load.error(part.line_of("options"), okey, "options computed by an expression need an "
                                                      "'answer' expression giving the correct one")
        return load.expression(raw, part.line_of("options"), okey, scope)
    if not isinstance(raw, LineList) or len(raw) < 2:
        load.error(part.line_of("options"), okey, "expected a list of at least two options or "
                                                  "an expression")
        return None
    if len(raw) > MAX_OPTIONS:
        load.error(part.line_of("options"), okey, f"at most {MAX_OPTIONS} options (they are "
                                                  "lettered A to Z)")
        return None
    options = []
    for i, entry in enumerate(raw):
        here, ekey = raw.line_of(i), f"{okey}[{i}]"
        if isinstance(entry, str):
            options.append(Option(entry, False))
            continue
        if not isinstance(entry, LineDict):
            load.error(here, ekey, f"expected text or a mapping with 'text', got {describe(entry)}")
            continue
        load.keys(entry, OPTION_KEYS, ekey)
        correct = entry.get("correct", False)
        if not isinstance(correct, bool):
            load.error(entry.line_of("correct"), key_path(ekey, "correct"), "expected true or false")
            correct = False
        options.append(Option(str(entry.get("text", "")), correct, str(entry.get("feedback", "") or "")))
    if "answer" not in part and sum(o.correct for o in options) != 1:
        load.error(part.line_of("options"), okey, f"exactly one option must have 'correct: true' "
                                                  f"(found {sum(o.correct for o in options)})")
    if "answer" in part and any(o.correct for o in options):
        load.error(part.line_of("options"), okey, "give either 'correct: true' on an option or "
                                                  "an 'answer' expression, not both")
    return tuple(options)
