"""Templates: the YAML schema, checked on load with errors that name file:line and the key.

A template is data (``model``). Its values are sampled from ``distributions``, computed by
expressions (``expressions``) that may call the reference functions in ``solutions``, and
shown through Jinja2 text. ``problem_bank/README.md`` documents the schema for instructors;
this module reads the whole file and its top-level keys, the blocks have modules of their
own (``values``, ``parts``, ``implement``, ``rubrics``, ``follow``, ``claims``), and the
README's key tables mirror their KEYS.
"""

from __future__ import annotations

import difflib
import hashlib
from dataclasses import replace
from pathlib import Path

from exercises.template import references, trained_models
from exercises.template.claims import parse_claims
from exercises.template.expressions import Expression
from exercises.template.follow import DEFAULT_CREDIT, load_credit
from exercises.template.implement import implement
from exercises.template.loading import describe, key_path, parse_yaml_file, require_mapping, shown_path
from exercises.template.model import (DEFAULT_ATOL, DEFAULT_RTOL, KINDS, Derived, Parameter, Part,
                                      Template, TemplateError, TestFamily)
from exercises.template.names import ID, TemplateErrors
from exercises.template.objectives import OBJECTIVES
from exercises.template.parts import exercise_parts
from exercises.template.rubrics import MISPLACED_TOP, texts as rubric_texts
from exercises.template.texts import RenderError, text_names
from exercises.template.values import read_constraints, read_derived, read_parameters
from exercises.template.yaml_lines import LineDict, LineList

TOP_KEYS = {"id": "required", "title": "required", "objective": "required", "kind": "required",
            "prompt": "required", "parameters": "optional", "derived": "optional",
            "constraints": "optional", "givens": "optional", "parts": "optional",
            "function": "optional", "reference": "optional", "output": "optional",
            "tests": "optional", "misconceptions": "optional", "rtol": "optional",
            "atol": "optional", "solution": "optional", "sampling": "optional",
            "tags": "optional", "notes": "optional", "follow_credit": "optional",
            "claims": "optional", "model": "optional"}
SAMPLING_KEYS = {"max_attempts": "optional", "tie_gap": "optional",
                 "allow_fully_masked_rows": "optional"}
TEMPLATE_MAPPING = "a template is a mapping of keys (id, title, …)"


def load_template(path: str | Path, display: str | None = None) -> Template:
    """Read and validate one template file. ``display`` is the path used in messages."""
    path = Path(path)
    shown = display or shown_path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as err:
        raise TemplateError([f"{shown}: not UTF-8 text (byte {err.start})"]) from None
    except OSError as err:
        raise TemplateError([f"{shown}: cannot read: {err.strerror}"]) from None
    data = parse_yaml_file(text, shown, TemplateError, TEMPLATE_MAPPING)
    template = parse_template(data, shown, source=path)
    digest = hashlib.sha256(text.encode("utf-8"))
    digest.update(template.model_digest.encode())     # new weights make a built key stale
    return replace(template, source_digest=digest.hexdigest())


def parse_template(data, path: str, source: Path | None = None) -> Template:
    """Validate YAML data (from load_yaml) as a template; TemplateError lists every problem.

    The blocks are read in the order below, which is the order problems are reported in;
    names are defined top to bottom (parameters, derived values, then part ids), and the
    misconceptions come last, once every function the template calls is known. ``source`` is
    the file (default: ``path``): a model it names is looked for beside it first."""
    require_mapping(data, path, TemplateError, TEMPLATE_MAPPING)
    load = TemplateErrors(path)
    load.keys(data, TOP_KEYS, "", refused=MISPLACED_TOP)
    header = _header(load, data)
    kind = header["kind"]
    rtol, atol = _tolerances(load, data, kind)
    model = _model(load, data, source or Path(path))
    scope: set[str] = {"model"} if model["model"] else set()
    params, derived, calls = _values(load, data, scope)
    givens = _givens(load, data, params, scope)
    values_scope = set(scope)          # what option texts see: the parameters and derived values
    parts: list[Part] = []
    part_entries: list[LineDict] = []
    function = reference = output = None
    tests: list[TestFamily] = []
    if kind == "implement":
        function, reference, output, tests = implement(load, data, scope, calls, header["solution"])
    else:
        parts, part_entries = exercise_parts(load, data, kind, scope, calls, (rtol, atol))
    constraints = read_constraints(load, data.get("constraints", LineList()), data.line_of("constraints"),
                               "constraints", scope)
    parts, misconceptions = _misconceptions(load, data, kind, parts, part_entries, calls, reference)
    sampling, allow_masked = _sampling(load, data)
    tags = _tags(load, data)
    max_attempts, tie_gap = _attempts(load, sampling)
    _texts(load, data, part_entries, scope, values_scope)
    credit = load_credit(load, data, "follow_credit")
    claims = parse_claims(load, data, scope | {p.id for p in parts})
    if load.errors:
        raise TemplateError(load.errors)
    lines = {str(k): data.line_of(k) for k in data}
    return Template(
        path=path, **header,
        parameters=tuple(params), derived=tuple(derived), constraints=tuple(constraints),
        givens=givens, parts=tuple(parts), function=function, reference=reference,
        output=output, tests=tuple(tests), misconceptions=misconceptions, rtol=rtol, atol=atol,
        max_attempts=max_attempts, tie_gap=tie_gap,
        allow_fully_masked_rows=allow_masked, tags=tuple(tags),
        notes=str(data.get("notes", "") or ""), lines=lines,
        follow_credit=credit if credit is not None else DEFAULT_CREDIT, claims=claims, **model)


# What every text of a variant may read besides its values (``Variant.context``).
_TEXT_NAMES = {"answers", "options", "givens"}


def _texts(load: TemplateErrors, data: LineDict, part_entries: list[LineDict], scope: set[str],
           values_scope: set[str]) -> None:
    """Every Jinja text of the template compiles and reads only names it will be given (the
    parameters, derived values and part ids; option texts only the first two): a misspelt
    name is reported once, here, at its line, not once per variant."""
    # A name whose definition is broken has its own problem already: never a second one here.
    defined = {str(name) for block in ("parameters", "derived")
               if isinstance(data.get(block), LineDict) for name in data[block]}
    everything = scope | _TEXT_NAMES | defined
    values = values_scope | defined
    where = "(a text can use the parameters, the derived values and the part ids)"
    for name in ("prompt", "solution"):
        _text(load, data, name, name, everything, where)
    for i, entry in enumerate(part_entries):
        for name in ("prompt", "rubric"):
            _text(load, entry, name, f"parts[{i}].{name}", everything, where)
        for container, name, suffix in rubric_texts(entry.get("rubric")):
            _text(load, container, name, f"parts[{i}].rubric.{suffix}", everything, where)
        options = entry.get("options")
        if not isinstance(options, LineList):
            continue
        for j, option in enumerate(options):
            okey = f"parts[{i}].options[{j}]"
            if isinstance(option, str):
                _text(load, options, j, okey, values, "(an option can use the parameters and "
                                                      "the derived values)")
            elif isinstance(option, LineDict):
                for name in ("text", "feedback"):
                    _text(load, option, name, key_path(okey, name), values,
                          "(an option can use the parameters and the derived values)")


def _text(load: TemplateErrors, container, name, key: str, known: set[str], where: str) -> None:
    """One text (``container[name]``, a mapping's value or a list's item) checked."""
    source = container[name] if isinstance(container, LineList) else container.get(name)
    if not isinstance(source, str) or ("{" not in source):
        return
    try:
        names = text_names(source)
    except RenderError as err:
        load.error(container.text_line(name, err.lineno or 1), key, f"{err}")
        return
    for unknown, lineno in names.items():
        if unknown in known:
            continue
        hint = difflib.get_close_matches(unknown, sorted(known - _TEXT_NAMES), n=1)
        suggestion = f"; did you mean '{hint[0]}'?" if hint else ""
        load.error(container.text_line(name, lineno), key,
                   f"unknown name '{unknown}' in the text {where}{suggestion}")


# --- the top-level blocks ------------------------------------------------------------------

def _header(load: TemplateErrors, data: LineDict) -> dict:
    """id, title, objective, kind, prompt and solution (the Template fields of those names)."""
    tid = data.get("id")
    if "id" in data and (not isinstance(tid, str) or not ID.match(tid)):
        load.error(data.line_of("id"), "id", f"'{tid}' is not a valid id (lower-case letters, digits, _)")
    objective = data.get("objective")
    if "objective" in data and objective not in OBJECTIVES:
        load.error(data.line_of("objective"), "objective",
                   f"unknown objective '{objective}' (expected one of: {', '.join(OBJECTIVES)})")
    kind = data.get("kind")
    if "kind" in data and kind not in KINDS:
        load.error(data.line_of("kind"), "kind", f"unknown kind '{kind}' (expected one of: {', '.join(KINDS)})")
    return {"id": tid, "title": load.text(data, "title", "title"), "objective": objective,
            "kind": kind, "prompt": load.text(data, "prompt", "prompt"),
            "solution": load.text(data, "solution", "solution") or ""}


def _model(load: TemplateErrors, data: LineDict, source: Path) -> dict:
    """model, model_file and model_digest (Template fields): the trained model the template
    reads, found and its digest recorded (the weights are loaded when a variant is drawn)."""
    name = data.get("model")
    if name is None:
        return {"model": None, "model_file": "", "model_digest": ""}
    if not isinstance(name, str) or not ID.match(name):
        load.error(data.line_of("model"), "model", f"'{name}' is not a model name (lower-case letters, "
                                                   "digits, _; the file models/NAME.json)")
        return {"model": None, "model_file": "", "model_digest": ""}
    path = trained_models.model_path(name, beside=source)
    try:
        digest = trained_models.recorded_digest(path)
    except ValueError as err:
        known = ", ".join(trained_models.known_models()) or "none"
        load.error(data.line_of("model"), "model", f"no trained model '{name}' ({err}; the bank's: {known})")
        return {"model": None, "model_file": "", "model_digest": ""}
    return {"model": name, "model_file": str(path), "model_digest": digest}


def _tolerances(load: TemplateErrors, data: LineDict, kind) -> tuple[float, float]:
    """Top-level (rtol, atol): the comparison of implement problems, the default of numeric parts."""
    rtol = load.number(data, "rtol", "rtol", DEFAULT_RTOL, minimum=0)
    atol = load.number(data, "atol", "atol", DEFAULT_ATOL, minimum=0)
    if kind in ("choice", "free_response"):
        for key in ("rtol", "atol"):
            if key in data:
                load.error(data.line_of(key), key, "only numeric and implement problems have this key")
    return rtol, atol


def _values(load: TemplateErrors, data: LineDict,
            scope: set[str]) -> tuple[list[Parameter], list[Derived], set[str]]:
    """The parameters and derived values (their names join ``scope``), and the functions
    their expressions call."""
    params = read_parameters(load, data.get("parameters", LineDict()), data.line_of("parameters"),
                         "parameters", scope)
    derived = read_derived(load, data.get("derived", LineDict()), data.line_of("derived"), "derived", scope)
    calls: set[str] = set()
    for d in derived:
        calls |= d.expression.calls
    for p in params:
        for option in p.options.values():
            for e in option if isinstance(option, list) else [option]:
                if isinstance(e, Expression):
                    calls |= e.calls
    return params, derived, calls


def _givens(load: TemplateErrors, data: LineDict, params: list[Parameter],
            scope: set[str]) -> tuple[str, ...]:
    """The names the problem shows the student (default: every parameter)."""
    givens_raw = data.get("givens")
    if givens_raw is None:
        return tuple(p.name for p in params)
    if isinstance(givens_raw, LineList):
        for i, g in enumerate(givens_raw):
            if g == "model":
                load.error(givens_raw.line_of(i), f"givens[{i}]", "the trained model is not a given: "
                           "give what the reference computes from it (its maps, its probabilities)")
            elif g not in scope:
                load.error(givens_raw.line_of(i), f"givens[{i}]",
                           f"'{g}' is not a parameter or derived value")
        return tuple(str(g) for g in givens_raw)
    load.error(data.line_of("givens"), "givens", f"expected a list of names, got {describe(givens_raw)}")
    return ()


def _misconceptions(load: TemplateErrors, data: LineDict, kind, parts: list[Part],
                    entries: list[LineDict], calls: set[str],
                    reference: str | None) -> tuple[list[Part], tuple[str, ...]]:
    """The parts with their misconceptions, and the problem's own (implement problems).
    They need every call known: a twin must shadow something the template calls."""
    callable_here = calls | ({reference} if reference else set())
    parts = [replace(part, misconceptions=_misconception_list(load, entry, f"parts[{i}]", callable_here))
             if kind == "numeric" else part
             for i, (part, entry) in enumerate(zip(parts, entries))]
    misconceptions: tuple[str, ...] = ()
    if "misconceptions" in data:
        if kind != "implement":
            load.error(data.line_of("misconceptions"), "misconceptions",
                       "list misconceptions on the parts they affect (parts[i].misconceptions)")
        else:
            misconceptions = _misconception_list(load, data, "", {reference} if reference else set())
    return parts, misconceptions


def _sampling(load: TemplateErrors, data: LineDict) -> tuple[LineDict, bool]:
    """The sampling block (its numbers are read by ``_attempts``) and allow_fully_masked_rows."""
    sampling = data.get("sampling", LineDict())
    sampling = load.mapping(sampling, data.line_of("sampling"), "sampling") or LineDict()
    load.keys(sampling, SAMPLING_KEYS, "sampling")
    allow_masked = sampling.get("allow_fully_masked_rows", False)
    if not isinstance(allow_masked, bool):
        load.error(sampling.line_of("allow_fully_masked_rows"), "sampling.allow_fully_masked_rows",
                   "expected true or false")
        allow_masked = False
    return sampling, allow_masked


def _tags(load: TemplateErrors, data: LineDict) -> list:
    tags = data.get("tags", [])
    if not isinstance(tags, list) or not all(isinstance(t, str) for t in tags):
        load.error(data.line_of("tags"), "tags", "expected a list of words")
        return []
    return tags


def _attempts(load: TemplateErrors, sampling: LineDict) -> tuple[int, float]:
    """sampling.max_attempts and sampling.tie_gap (read after the tags, as they always were)."""
    max_attempts = load.number(sampling, "max_attempts", "sampling.max_attempts", 200,
                               minimum=1, integer=True)
    tie_gap = load.number(sampling, "tie_gap", "sampling.tie_gap", 0.01, minimum=0)
    return max_attempts, tie_gap


def _misconception_list(load, mapping, key, allowed_shadows: set[str] | None) -> tuple[str, ...]:
    raw = mapping.get("misconceptions", LineList())
    if not isinstance(raw, LineList):
        load.error(mapping.line_of("misconceptions"), key_path(key, "misconceptions"),
                   f"expected a list of misconception names, got {describe(raw)}")
        return ()
    names = []
    for i, name in enumerate(raw):
        here = raw.line_of(i)
        mkey = f"{key_path(key, 'misconceptions')}[{i}]"
        twin = references.TWINS.get(name) if isinstance(name, str) else None
        if twin is None:
            hint = difflib.get_close_matches(str(name), references.TWINS, n=1)
            suggestion = f"; did you mean '{hint[0]}'?" if hint else ""
            load.error(here, mkey, f"unknown misconception '{name}' (see 'attnkit "
                                   f"misconceptions'){suggestion}")
            continue
        if allowed_shadows is not None and twin.shadows not in allowed_shadows:
            load.error(here, mkey, f"'{name}' is a twin of {twin.shadows}(), which this template "
                                   f"never calls")
            continue
        names.append(name)
    return tuple(names)
