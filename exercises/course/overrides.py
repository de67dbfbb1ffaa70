"""An assignment's overrides of a template it names: the points of the whole problem (scaled
over its parts), of a part, a test family or a rubric item, and tolerances; each checked
against the template and applied to a copy, so builds and the grader see the effective values."""

from __future__ import annotations

import difflib
import math
from dataclasses import replace
from typing import TYPE_CHECKING

from exercises.template import rubrics
from exercises.template.loading import LoadErrors, key_path
from exercises.template.yaml_lines import LineDict

if TYPE_CHECKING:        # (the template engine is imported when templates are read: see ``assignment``)
    from exercises.template.model import Template

PART_OVERRIDE_KEYS = {"points": "optional", "rtol": "optional", "atol": "optional",
                      "rubric": "optional"}   # rubric: {item id: points}
TEST_OVERRIDE_KEYS = {"points": "optional"}


def amount(load: LoadErrors, mapping: LineDict, name: str, key: str) -> float | None:
    """A non-negative, finite number (points or a tolerance); None after reporting a problem."""
    value = load.number(mapping, name, key, None, minimum=0)
    if value is not None and not math.isfinite(value):
        load.error(mapping.line_of(name), key, f"expected a finite number, got {value}")
        return None
    return value


def overridden(load: LoadErrors, entry: LineDict, key: str, template: Template) -> Template | None:
    """The template with the entry's points and tolerances; None if any override is wrong."""
    before = len(load.errors)
    implement = template.kind == "implement"
    # Each override: item id → {name: (value, line)}.
    parts = _item_overrides(load, entry, key, template, "parts") if "parts" in entry else {}
    tests = _item_overrides(load, entry, key, template, "tests") if "tests" in entry else {}
    tolerances = {}
    for name in ("rtol", "atol"):
        if name not in entry:
            continue
        if template.kind == "numeric":
            load.error(entry.line_of(name), key_path(key, name),
                       f"only implement problems have a problem-wide tolerance; set it per part "
                       f"(parts: {{{template.parts[0].id}: {{{name}: …}}}})")
        elif not implement:
            load.error(entry.line_of(name), key_path(key, name),
                       f"'{template.id}' is a {template.kind} problem: it has no tolerance")
        elif (value := amount(load, entry, name, key_path(key, name))) is not None:
            tolerances[name] = value
    total = amount(load, entry, "points", key_path(key, "points")) if "points" in entry else None
    if total is not None:
        each = [(f"{group}.{item}.points", values["points"][1])
                for group, overrides in (("parts", parts), ("tests", tests))
                for item, values in overrides.items() if "points" in values]
        if each:
            load.error(entry.line_of("points"), key_path(key, "points"),
                       f"give either a total 'points' or per-{'family' if implement else 'part'} "
                       f"points, not both ({key_path(key, each[0][0])} on line {each[0][1]})")
        elif total == 0:
            load.error(entry.line_of("points"), key_path(key, "points"),
                       "must be more than 0 (leave the problem out of the assignment instead)")
        elif template.points == 0:
            load.error(entry.line_of("points"), key_path(key, "points"),
                       f"cannot scale: the points of template '{template.id}' add up to 0")
    if len(load.errors) > before:
        return None
    updated = _applied(template, parts if not implement else tests, tolerances)
    if total is not None:
        updated = scaled(updated, total)
    if not implement:
        updated = _rubric_overridden(load, entry, key, updated, parts)
        if len(load.errors) > before:
            return None
    if updated.points == 0:
        group = "parts" if "parts" in entry else "tests"
        load.error(entry.line_of(group), key_path(key, group),
                   f"the overrides leave '{template.id}' with 0 points")
        return None
    return updated


def _item_overrides(load, entry: LineDict, key: str, template: Template,
                    group: str) -> dict[str, dict[str, tuple[float, int]]]:
    """Per-part (``parts``) or per-family (``tests``) overrides, checked against the template."""
    gkey, line = key_path(key, group), entry.line_of(group)
    implement = template.kind == "implement"
    if group == "parts" and implement:
        load.error(line, gkey, f"'{template.id}' is an implement problem: override its test "
                               f"families ('tests'), not 'parts'")
        return {}
    if group == "tests" and not implement:
        load.error(line, gkey, f"only implement problems have test families; '{template.id}' "
                               f"has parts: override those ('parts')")
        return {}
    block = load.mapping(entry[group], line, gkey)
    known = ([t.family for t in template.tests] if implement else [p.id for p in template.parts])
    allowed = TEST_OVERRIDE_KEYS if implement else PART_OVERRIDE_KEYS
    noun, nouns = ("test family", "test families") if implement else ("part", "parts")
    out: dict[str, dict[str, tuple[float, int]]] = {}
    for item, spec in (block or {}).items():
        here, ikey = block.line_of(item), key_path(gkey, item)
        if item not in known:
            hint = difflib.get_close_matches(str(item), known, n=1)
            suggestion = f"; did you mean '{hint[0]}'?" if hint else ""
            load.error(here, ikey, f"unknown {noun} '{item}' (the {nouns} of '{template.id}': "
                                   f"{', '.join(known)}){suggestion}")
            continue
        spec = load.mapping(spec, here, ikey)
        if spec is None:
            continue
        load.keys(spec, allowed, ikey)
        values = {}
        for name in allowed:
            if name not in spec:
                continue
            if name == "rubric":
                part = next(p for p in template.parts if p.id == item)
                points = _rubric_points(load, spec, key_path(ikey, "rubric"), part)
                if points is not None:
                    values["rubric"] = (points, spec.line_of("rubric"))
                continue
            if name != "points" and template.kind != "numeric":
                load.error(spec.line_of(name), key_path(ikey, name),
                           f"only numeric parts have a tolerance ('{template.id}' is {template.kind})")
                continue
            value = amount(load, spec, name, key_path(ikey, name))
            if value is not None:
                values[name] = (value, spec.line_of(name))
        out[item] = values
    return out


def _rubric_points(load: LoadErrors, spec: LineDict, key: str, part) -> dict[str, float] | None:
    """An override of some rubric items' points ({item id: points}), checked against the part."""
    block = load.mapping(spec["rubric"], spec.line_of("rubric"), key)
    if block is None:
        return None
    known = [i.id for i in part.rubric.items] if part.rubric else []
    if not known:
        load.error(spec.line_of("rubric"), key, f"part '{part.id}' has no rubric items to give "
                   f"points to")
        return None
    out = {}
    for iid in block:
        here = key_path(key, iid)
        if iid not in known:
            hint = difflib.get_close_matches(str(iid), known, n=1)
            load.error(block.line_of(iid), here, f"unknown rubric item '{iid}' (the items of part "
                       f"'{part.id}': {', '.join(known) or 'none'})"
                       + (f"; did you mean '{hint[0]}'?" if hint else ""))
            continue
        value = load.number(block, iid, here, None)
        if value is not None and (value == 0 or not math.isfinite(value)):
            load.error(block.line_of(iid), here, f"expected a finite number other than 0, got {value}")
        elif value is not None:
            out[iid] = float(value)
    return out


def _applied(template: Template, overrides: dict, tolerances: dict[str, float]) -> Template:
    """A new Template with the overridden values; ``source_digest`` stays the file's (the
    answer key records the effective points and tolerances itself). A part whose points
    change has its rubric scaled with them; item points the spec gives are applied after."""
    def changed(item, name):
        values = {k: v for k, (v, _) in overrides.get(name, {}).items() if k != "rubric"}
        if "points" in values and getattr(item, "rubric", None) is not None:
            values["rubric"] = rubrics.scaled(item.rubric, item.points, values["points"])
        return replace(item, **values) if values else item
    if template.kind == "implement":
        return replace(template, tests=tuple(changed(t, t.family) for t in template.tests),
                       **tolerances)
    return replace(template, parts=tuple(changed(p, p.id) for p in template.parts))


def scaled(template: Template, total: float) -> Template:
    """Every part's (or family's) points times total / template.points, so the ratios stay
    and the points add up to ``total`` (float rounding goes to the last non-zero item)."""
    group = "tests" if template.kind == "implement" else "parts"
    items = getattr(template, group)
    factor = total / template.points
    points = [item.points * factor for item in items]
    last = max(i for i, p in enumerate(points) if p)   # a 0-point item stays 0
    if sum(points) != total:
        # Points add up left to right; when the items before make up at least half of the
        # total, total − their sum is exact in floating point (Sterbenz), so is the new sum.
        points[last] = total - sum(points[:last])
    return replace(template, **{group: tuple(
        replace(item, points=p, **({"rubric": rubrics.scaled(item.rubric, item.points, p)}
                                   if getattr(item, "rubric", None) is not None else {}))
        for item, p in zip(items, points))})


def _rubric_overridden(load: LoadErrors, entry: LineDict, key: str, template: Template,
                       parts: dict) -> Template:
    """The template with the spec's rubric item points (after any scaling), each rubric
    checked again: the items must still reach the part's points."""
    changed = []
    for part in template.parts:
        points = parts.get(part.id, {}).get("rubric")
        if points is None or part.rubric is None:
            changed.append(part)
            continue
        rubric = rubrics.with_points(part.rubric, points[0])
        best = rubrics.reachable(rubric)
        # (an auto-graded part's items adjust the automatic score: they need reach nothing)
        if template.kind == "free_response" and best < rubric.ceiling - 1e-9:
            load.error(points[1], key_path(key, f"parts.{part.id}.rubric"),
                       f"with these points the items reach at most {best:g} of the part's "
                       f"{rubric.ceiling:g} points")
        changed.append(replace(part, rubric=rubric))
    return replace(template, parts=tuple(changed))
