"""A part's rubric, as the answer key holds it: the items a grader applies by hand, and the
arithmetic that turns applied items into points.

A template declares it (``exercises.template.schema``: ``rubric: {items: [...], floor, ceiling,
start, guide}``); the build renders each item's ``text`` with the student's own variant
values and stores it in the key's record under ``rubric`` (part id → ``Rubric.to_record()``);
the grader's hand grades (``grader.store.marks``) name the items they applied.

    score = clamp(base + Σ points of the applied items + adjustment, floor, ceiling)

where ``base`` is the rubric's ``start`` for a part graded by hand (0: items add up;
the part's points: items deduct), and the automatic score for an override of an
auto-graded part. ``version`` is a digest of what the score depends on (item ids and
points, floor, ceiling, start) — not of the texts, which differ per variant — so a
grade applied under one version is re-scored when the instructor changes an item's points.
"""

from __future__ import annotations

from dataclasses import dataclass

from .serialize import digest


@dataclass(frozen=True)
class RubricItem:
    id: str
    points: float            # positive: earned; negative: a deduction
    text: str = ""           # what the student sees when it is applied (rendered per variant)
    note: str = ""           # for graders only; never on a student's page


@dataclass(frozen=True)
class Rubric:
    items: tuple[RubricItem, ...]
    floor: float             # the part's lowest score (default 0)
    ceiling: float           # the part's highest score (default: its points)
    start: float = 0.0       # the score with no item applied (hand-graded parts)
    guide: str = ""          # free text for graders: what a full answer contains

    @property
    def version(self) -> str:
        """What a score under this rubric depends on, as a short digest ("r" first: a
        spreadsheet never reads it as a number, 12e45 say, and rewrites it)."""
        return "r" + digest({"items": [[i.id, i.points] for i in self.items], "floor": self.floor,
                             "ceiling": self.ceiling, "start": self.start})[:11]

    def item(self, item_id: str) -> RubricItem | None:
        return next((i for i in self.items if i.id == item_id), None)

    def points_of(self, applied) -> dict[str, float]:
        """item id → its points, for the applied items this rubric has."""
        known = {i.id: i.points for i in self.items}
        return {i: known[i] for i in applied if i in known}

    def score(self, applied, adjustment: float = 0.0, base: float | None = None) -> float:
        """The part's score with ``applied`` items (ids this rubric has; others count 0)."""
        total = (self.start if base is None else base) + sum(self.points_of(applied).values())
        return clamp(total + adjustment, self.floor, self.ceiling)

    def to_record(self) -> dict:
        return {"items": [{"id": i.id, "points": i.points, "text": i.text, "note": i.note}
                          for i in self.items],
                "floor": self.floor, "ceiling": self.ceiling, "start": self.start,
                "guide": self.guide, "version": self.version}

    @classmethod
    def from_record(cls, record: dict) -> "Rubric":
        items = tuple(RubricItem(str(i["id"]), float(i["points"]), str(i.get("text", "")),
                                 str(i.get("note", ""))) for i in record.get("items", ()))
        return cls(items, float(record["floor"]), float(record["ceiling"]),
                   float(record.get("start", 0.0)), str(record.get("guide", "")))


def guide_only(points: float, guide: str) -> Rubric:
    """The rubric of a part that declares none: no items, the part's full range, the guide
    (an old-style text rubric) if any. A grader scores it with the adjustment alone."""
    return Rubric((), 0.0, float(points), 0.0, guide)


def clamp(x: float, low: float, high: float) -> float:
    # (+ 0.0: never "-0" in a report)
    return round(min(max(float(x), low), high), 6) + 0.0
