"""A part's rubric in a template: read and checked on load (file:line problems), scaled and
overridden by an assignment, rendered per variant for the answer key and the notebooks.

    rubric:
      guide: |              # optional: what a full answer contains, for graders (Jinja)
        ...
      floor: 0              # optional: the part's lowest score (default 0)
      ceiling: 2            # optional: its highest (default: the part's points)
      start: 0              # optional, free response only: the score with no item applied
                            #   (default: the floor, items add up; `full`: the ceiling, items deduct)
      items:
        - id: same_vector   # a name; keys 1–9 on the marking page follow this order
          points: 1         # earned when applied; negative: a deduction
          text: The same vector for "{{ word }}" in both sentences.   # the student sees it (Jinja)
          note: one embedding per word type, from a fixed table       # graders only (Jinja)

A rubric given as plain text is a guide alone: no items, scored by the grader's adjustment.
Item texts and notes are Jinja, rendered with the student's own values. On a free-response
part (graded by hand) the items must be able to reach the ceiling from ``start``; on an
auto-graded part a rubric is optional and only adjusts the automatic score a grader
overrides, so it has no ``start`` and its items need not add up to anything.
"""

from __future__ import annotations

import difflib
import math
import re
from dataclasses import replace

from formats.rubric import Rubric, RubricItem, guide_only

from exercises.template.loading import LoadErrors, describe, key_path
from exercises.template.yaml_lines import LineDict, LineList

RUBRIC_KEYS = {"guide": "optional", "floor": "optional", "ceiling": "optional",
               "start": "optional", "items": "required"}
ITEM_KEYS = {"id": "required", "points": "required", "text": "required", "note": "optional"}
MAX_ITEMS = 20
_ITEM_ID = re.compile(r"^[A-Za-z][A-Za-z0-9_-]{0,39}$")
FULL = "full"
# Where a rubric cannot go, and why (``LoadErrors.keys(refused=…)`` in ``schema``).
MISPLACED_TOP = {"rubric": "a rubric belongs to a part (parts[i].rubric); an implement problem "
                           "is graded by its hidden tests and has none"}
MISPLACED_TEST = {"rubric": "an implement problem is graded by its hidden tests: a test family "
                            "has no rubric"}


def load_rubric(load: LoadErrors, entry: LineDict, key: str, points: float,
                hand: bool = True) -> Rubric | None:
    """The part's rubric (None when it has none, or when it has problems, reported on
    ``load``). ``hand``: the part is graded by hand (free response), so its score starts
    at ``start`` and the items alone must be able to reach the ceiling; an auto-graded
    part's rubric only adjusts the automatic score a grader overrides."""
    if "rubric" not in entry:
        return None
    raw, rkey, line = entry["rubric"], key_path(key, "rubric"), entry.line_of("rubric")
    if isinstance(raw, str):
        if not raw.strip():
            load.error(line, rkey, "empty: write what a full answer contains (a guide), or give items")
        return guide_only(points, raw)
    if not isinstance(raw, LineDict):
        load.error(line, rkey, f"expected a guide (text) or a mapping with items, got {describe(raw)}")
        return None
    before = len(load.errors)
    _keys(load, raw, RUBRIC_KEYS, rkey)
    guide = load.text(raw, "guide", key_path(rkey, "guide")) or ""
    floor = _finite(load, raw, "floor", key_path(rkey, "floor"), 0.0)
    ceiling = _finite(load, raw, "ceiling", key_path(rkey, "ceiling"), points)
    start = _start(load, raw, key_path(rkey, "start"), floor, ceiling, hand)
    items = _items(load, raw, rkey)
    if len(load.errors) > before:
        return None      # one problem each: nothing below is judged on a broken figure
    rubric = Rubric(tuple(items), floor, ceiling, start, guide)   # (no None: no problem)
    if not _points_usable(entry):
        return rubric    # the part's points have their own problem: no second one here
    return rubric if _consistent(load, raw, rkey, rubric, points, hand) else None


def _keys(load: LoadErrors, mapping: LineDict, spec: dict, key: str) -> None:
    """``load.keys``, except that a required key a misspelt one stands for ('itmes' for
    'items') is reported once, as the misspelling, not a second time as missing."""
    meant = {hint for name in mapping if name not in spec
             for hint in difflib.get_close_matches(str(name), spec, n=1)}
    load.keys(mapping, {k: "optional" if k in meant else need for k, need in spec.items()}, key)


def _finite(load: LoadErrors, mapping: LineDict, name: str, key: str, default: float) -> float | None:
    """A number that can be added up (``.inf`` or ``.nan`` would make every score one);
    ``default`` when it is absent, None when it has a problem (reported)."""
    if name not in mapping:
        return default
    value = load.number(mapping, name, key, None)
    if value is not None and not math.isfinite(value):
        load.error(mapping.line_of(name), key, f"expected a finite number, got {value}")
        return None
    return value


def _start(load: LoadErrors, spec: LineDict, key: str, floor: float | None,
           ceiling: float | None, hand: bool) -> float | None:
    """The score with no item applied: a number, or ``full`` (the ceiling: the items deduct);
    by default the floor (0 unless given), where an empty answer ends up anyway. Only a
    hand-graded part has one: an override starts from the automatic score."""
    if "start" not in spec:
        return floor
    if not hand:
        load.error(spec.line_of("start"), key, "only free-response parts have a start: a grader's "
                   "override of an automatic score starts from that score")
        return None
    value = spec["start"]
    if value == FULL:
        return ceiling
    if not _is_number(value):
        load.error(spec.line_of("start"), key, f"expected a number or '{FULL}' (start from the "
                   f"ceiling and deduct), got {describe(value)}")
        return 0.0
    return _finite(load, spec, "start", key, 0.0)


def _is_number(value) -> bool:
    """A YAML number, or text that reads as one (YAML 1.1 reads 1e-5 as text)."""
    if isinstance(value, str):
        try:
            float(value)
        except ValueError:
            return False
        return True
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _points_usable(entry: LineDict) -> bool:
    """Whether the part's own ``points`` read as a number (else it has its own problem)."""
    probe = LoadErrors("")
    probe.number(entry, "points", "points", None, minimum=0)
    return not probe.errors


def _items(load: LoadErrors, spec: LineDict, rkey: str) -> list[RubricItem]:
    raw, ikey = spec.get("items"), key_path(rkey, "items")
    if "items" not in spec:
        return []        # reported by _keys ("required")
    if not isinstance(raw, LineList) or not raw:
        got = "an empty list" if isinstance(raw, LineList) else describe(raw)
        load.error(spec.line_of("items"), ikey, f"expected a list of at least one item, got {got}")
        return []
    if len(raw) > MAX_ITEMS:
        load.error(spec.line_of("items"), ikey, f"{len(raw)} items; at most {MAX_ITEMS} "
                   f"(a grader reads them all beside every answer)")
    items, seen = [], set()
    for _, key, entry in load.mappings(raw, ikey):
        _keys(load, entry, ITEM_KEYS, key)
        item = _item(load, entry, key, seen)
        if item is not None:
            seen.add(item.id)
            items.append(item)
    return items


def _item(load: LoadErrors, item: LineDict, key: str, seen: set[str]) -> RubricItem | None:
    """One item, or None when its id is missing, malformed or already taken."""
    iid = item.get("id")
    if "id" not in item:
        return None      # reported by _keys ("required")
    if not isinstance(iid, str) or not _ITEM_ID.match(iid):
        load.error(item.line_of("id"), key_path(key, "id"),
                   f"'{iid}' is not a valid item id (a letter, then up to 39 letters, digits, _ or -)")
        return None
    if iid in seen:
        load.error(item.line_of("id"), key_path(key, "id"), f"duplicate rubric item '{iid}'")
        return None
    points = _finite(load, item, "points", key_path(key, "points"), 0.0)
    if points == 0 and "points" in item:
        load.error(item.line_of("points"), key_path(key, "points"),
                   "an item worth 0 points changes nothing: give it points (negative: a deduction)")
    text = load.text(item, "text", key_path(key, "text"))
    if text is not None and "text" in item and not text.strip():
        load.error(item.line_of("text"), key_path(key, "text"), "empty: the student reads this text")
    note = load.text(item, "note", key_path(key, "note")) or ""
    return RubricItem(iid, points or 0.0, text or "", note)


def _consistent(load: LoadErrors, spec: LineDict, rkey: str, rubric: Rubric, points: float,
                hand: bool) -> bool:
    """The figures fit together; the first that does not is the one problem reported."""
    problem = _inconsistency(rubric, points, hand)
    if problem:
        name, message = problem
        load.error(spec.line_of(name), key_path(rkey, name), message)
    return problem is None


def _inconsistency(rubric: Rubric, points: float, hand: bool) -> tuple[str, str] | None:
    """(key, message) of the first figure that does not fit, or None."""
    floor, ceiling, start = rubric.floor, rubric.ceiling, rubric.start
    if not 0 <= floor <= ceiling:
        return "floor", f"the floor ({floor:g}) must be between 0 and the ceiling ({ceiling:g})"
    if ceiling > points + 1e-9:
        return "ceiling", f"the ceiling ({ceiling:g}) is more than the part's {points:g} points"
    if not floor <= start <= ceiling:
        return "start", (f"start ({start:g}) must be between the floor ({floor:g}) and the "
                         f"ceiling ({ceiling:g})")
    if not hand or not rubric.items:
        return None      # an override adds its items to the automatic score, whatever it is
    if all(i.points < 0 for i in rubric.items) and start == 0:
        return "items", "every item is a deduction but the part starts at 0: write `start: full`"
    best = reachable(rubric)
    if best < ceiling - 1e-9:
        return "items", (f"the items reach at most {best:g} of the part's {ceiling:g} points "
                         f"(start {start:g} plus the positive items)")
    return None


def reachable(rubric: Rubric) -> float:
    """The best score the items allow without an adjustment: start plus every positive item."""
    return rubric.start + sum(i.points for i in rubric.items if i.points > 0)


# --- an assignment's changes -------------------------------------------------------------

def scaled(rubric: Rubric | None, old_points: float, new_points: float) -> Rubric | None:
    """The rubric of a part whose points an assignment changed: every figure times
    new/old, so an item worth half the part stays worth half. A figure equal to the old
    points (the ceiling, ``start: full``) becomes the new points exactly, so that a full
    score stays reachable; the others are rounded to 12 places, far below the 6 a score
    is rounded to, so that the items of a full answer still add up to it."""
    if rubric is None or old_points == new_points:
        return rubric
    if old_points == 0:     # nothing to scale by: the part's range only
        return replace(rubric, ceiling=float(new_points))
    f = new_points / old_points

    def times(x: float) -> float:
        return float(new_points) if x == old_points else round(x * f, 12) + 0.0

    return replace(rubric, items=tuple(replace(i, points=times(i.points)) for i in rubric.items),
                   floor=times(rubric.floor), ceiling=times(rubric.ceiling), start=times(rubric.start))


def with_points(rubric: Rubric, points: dict[str, float]) -> Rubric:
    """The rubric with some items' points set (item id → points)."""
    return replace(rubric, items=tuple(replace(i, points=points.get(i.id, i.points)) for i in rubric.items))


# --- per variant ---------------------------------------------------------------------------

def rendered(rubric: Rubric, render) -> Rubric:
    """The rubric with its texts rendered by ``render(text)`` (the variant's values)."""
    return replace(rubric, guide=render(rubric.guide) if rubric.guide else "",
                   items=tuple(replace(i, text=render(i.text), note=render(i.note) if i.note else "")
                               for i in rubric.items))


def as_markdown(rubric: Rubric) -> str:
    """The rubric as graders read it in the notebook's solution cell or on paper."""
    lines = [rubric.guide.strip()] if rubric.guide.strip() else []
    if rubric.items:
        if lines:
            lines.append("")
        for n, item in enumerate(rubric.items, 1):
            sign = "+" if item.points > 0 else "−"
            note = f" *(graders: {item.note.strip()})*" if item.note.strip() else ""
            lines.append(f"{n}. **{sign}{abs(item.points):g}** {item.text.strip()}{note}")
        bounds = f"Score between {rubric.floor:g} and {rubric.ceiling:g}"
        lines += ["", bounds + (f", starting at {rubric.start:g}." if rubric.start else ".")]
    return "\n".join(lines)


def texts(raw) -> list[tuple[object, object, str]]:
    """(container, name, key suffix) of every Jinja text in a raw rubric entry, for the
    template's name check (``schema._texts``)."""
    if isinstance(raw, str) or not isinstance(raw, LineDict):
        return []
    out = [(raw, "guide", "guide")] if "guide" in raw else []
    items = raw.get("items")
    if isinstance(items, LineList):
        for j, item in enumerate(items):
            if isinstance(item, LineDict):
                out += [(item, name, f"items[{j}].{name}") for name in ("text", "note") if name in item]
    return out
