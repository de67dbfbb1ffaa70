"""The answer key's shape: the one place that knows where things sit in a key and its entries.

A key (``formats.answer_key``) is ``{"assignment": head, "students": student → entry, …}``;
the head lists the problems in the assignment's order with their points and parts; an entry
is ``{"name", "email", "notebook", "problems": problem id → record}``, and a record is one
variant: its ``kind``, ``givens``, expected ``answers``, ``answer_names`` (part → the
notebook's variable), and ``grading`` (one item per graded part: an ``id`` and its
``points``, or for an implement problem a test ``family``). Everything that reads a key reads
it through these functions, so a change of layout is a change here.

An nbgrader course's key holds one class-wide entry (``CLASS_STUDENT``) that grades everyone.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping

from .rubric import Rubric, guide_only
from .serialize import digest

# The one entry of an nbgrader course's class-wide key: not a valid roster id, so it never
# collides with a student's seed.
CLASS_STUDENT = "(class)"

FREE_RESPONSE = "free_response"
IMPLEMENT = "implement"
_REQUIRED = object()         # (an accessor without a default: a missing key is a KeyError)


# --- the key's head: the assignment ----------------------------------------------------

def assignment_id(key: dict) -> str:
    return key["assignment"]["id"]


def assignment_title(key: dict, default: str = "") -> str:
    """The assignment's title (``default`` when the key's head has none)."""
    return str(key["assignment"].get("title", default))


def total_points(key: dict) -> float:
    """The assignment's points: what a student's score is out of."""
    return float(key["assignment"]["points"])


def head_problems(key: dict) -> list[dict]:
    """The head's problem records ({id, title, points, parts?}) in the assignment's order."""
    return list(key["assignment"]["problems"])


def problem_title(problem: dict, record: dict | None = None) -> str:
    """A head problem's title as the student with this ``record`` saw it: for a pool, their
    member's own title (the head's title names the pool, for instructors)."""
    if problem.get("pool") and record:
        member = next((m for m in problem["pool"] if m.get("template") == record.get("template")), None)
        if member is not None and "title" in member:
            return str(member["title"])
    return str(problem.get("title", problem["id"]))


def problem_order(key: dict) -> list[str]:
    """Problem ids in the assignment's order (an entry's own mapping is sorted by id)."""
    return [p["id"] for p in key["assignment"]["problems"]]


def head_parts(key: dict) -> list[tuple[str, list[tuple[str, float]]]] | None:
    """(problem, [(part, points)]) in the assignment's order, from the key's head where it
    lists them (they come from the templates: the same for every student); None for a key
    whose head does not, whose entries must then be read (``graded_parts``)."""
    problems = key["assignment"]["problems"]
    if not all("parts" in p for p in problems):
        return None
    return [(p["id"], [(str(part), float(points)) for part, points in p["parts"]]) for p in problems]


# --- students and their entries --------------------------------------------------------

def is_class_key(key: dict | None) -> bool:
    """A key with one class-wide entry (an nbgrader course's): it grades every student."""
    return (isinstance(key, dict) and isinstance(key.get("students"), Mapping)
            and len(key["students"]) == 1 and CLASS_STUDENT in key["students"])


def key_students(key: dict) -> list[str]:
    """The students the key holds an entry for, sorted (a class key: just ``CLASS_STUDENT``)."""
    return sorted(key["students"])


def grading_student(key: dict, student: str) -> str:
    """Whose entry grades ``student``: their own, or the class entry of a class key."""
    students = key["students"]
    if student not in students and CLASS_STUDENT in students:
        return CLASS_STUDENT
    return student


def entry_for(key: dict | None, student: str) -> dict | None:
    """The key entry that grades ``student``: theirs, or the class entry of an nbgrader
    course key (one variant for everyone, stored under ``CLASS_STUDENT``); None if neither."""
    if not isinstance(key, dict) or not isinstance(key.get("students"), Mapping):
        return None
    students = key["students"]
    if student in students:
        return students[student]
    if is_class_key(key):
        return students[CLASS_STUDENT]
    return None


def entry_to_grade(key: dict | None, student: str) -> dict | None:
    """``entry_for``, each record's stored mistakes (its twins' and look-alikes' outputs) of a
    sharded key decoded only when first read (``entry_codec.StoredMistakes``): grading reads
    them for a wrong part alone, and they are most of what an entry holds."""
    students = key.get("students") if isinstance(key, dict) else None
    if hasattr(students, "to_grade"):
        if student in students:
            return students.to_grade(student)
        if is_class_key(key) and CLASS_STUDENT in students:
            return students.to_grade(CLASS_STUDENT)
    return entry_for(key, student)


def entry_outline(key: dict | None, student: str) -> dict | None:
    """``entry_for``, of a sharded key without the arrays' values (``packed`` is a number
    there): its names, templates, grading items and points, no array written out. For
    passes over the class that read nothing else (``grader.store.grades``)."""
    students = key.get("students") if isinstance(key, dict) else None
    if hasattr(students, "outline") and student in students:
        return students.outline(student)
    return entry_for(key, student)


def entry_front(key: dict | None, student: str) -> dict | None:
    """``entry_for``'s name, e-mail and notebook: of a sharded key, no problem decoded (with
    ``head_parts``, all a pass over the class's grades needs of an entry)."""
    students = key.get("students") if isinstance(key, dict) else None
    if hasattr(students, "front") and student in students:
        return students.front(student)
    return entry_for(key, student)


def entry_with(key: dict | None, student: str, problems) -> dict | None:
    """``entry_for`` with (at least) ``problems`` decoded: of a sharded key, only those."""
    students = key.get("students") if isinstance(key, dict) else None
    if hasattr(students, "problems_of") and student in students:
        return students.problems_of(student, problems)
    return entry_for(key, student)


# --- an entry's problems and their parts ------------------------------------------------

def problem_records(entry: dict, default=_REQUIRED) -> Iterator[tuple[str, dict]]:
    """(problem id, record) of an entry, in the key's (sorted) order; KeyError for an entry
    without problems, unless a ``default`` is given."""
    records = entry["problems"] if default is _REQUIRED else entry.get("problems", default)
    return iter(records.items())


def problem_record(entry: dict, problem: str, default=_REQUIRED) -> dict:
    """One problem's record of an entry; KeyError when the entry does not have it, unless a
    ``default`` is given."""
    records = entry.get("problems", {})
    if default is _REQUIRED:
        return records[problem]
    return records.get(problem, default)


def kind(record: dict) -> str | None:
    return record.get("kind")


def is_free_response(record: dict) -> bool:
    return record.get("kind") == FREE_RESPONSE


def gradings(record: dict, default=_REQUIRED) -> list[dict]:
    """A record's grading items, one per graded part (implement: per test family); KeyError
    for a record without them, unless a ``default`` is given."""
    return record["grading"] if default is _REQUIRED else record.get("grading", default)


def part_id(grading: dict) -> str:
    """A grading item by name: a part's id, or an implement test family's."""
    return grading.get("id") or grading["family"]


def points(grading: dict) -> float:
    return float(grading["points"])


def graded_parts(record: dict) -> list[tuple[str, float]]:
    """(part id, points) of every graded item of a record, in the key's order (none for a
    record without grading items, e.g. a problem the entry does not have: ``{}``)."""
    return [(part_id(g), points(g)) for g in gradings(record, [])]


def answer_names(record: dict) -> dict[str, str]:
    """part id → the notebook variable that holds the student's answer (none: free response
    and implement problems)."""
    return record.get("answer_names", {})


def issued_digest(record: dict) -> str:
    """What a student was issued for a problem, as a digest: the template, the seed, the
    givens and the options of a record — not its tolerances, points, checks or twins, so a
    rebuild that changes only how a part is graded keeps every notebook's variant."""
    options = record.get("options") or {}
    shown = {part: [o.get("text") if isinstance(o, dict) else o for o in choices]   # (not the feedback)
             for part, choices in options.items()} if isinstance(options, dict) else options
    return digest({"template": record.get("template"), "seed": record.get("seed"),
                   "givens": record.get("givens", {}), "options": shown})


def issued_before(record: dict) -> list[str]:
    """The issued digests of the variants this problem had before a rebuild gave new ones."""
    return list(record.get("issued_before", ()))


def givens_of(record: dict) -> dict:
    """The record's givens as stored (``formats.serialize.decode_names`` makes values)."""
    return record.get("givens", {})


# --- hand grading: rubrics and the prompts a grader reads -----------------------------------

def rubric_of(record: dict, part: str, points: float):
    """A part's rubric (``formats.rubric.Rubric``): the one the key holds, or for a part that
    declares none the part's full range with its text guide (if any) and no items."""
    structured = record.get("rubric", {}).get(part)
    if structured:
        return Rubric.from_record(structured)
    return guide_only(points, str(record.get("rubrics", {}).get(part, "")))


def prompt_of(record: dict, part: str | None = None) -> str:
    """The problem's prompt (``part`` None) or a part's, rendered for this student's variant
    (Markdown; '' in a key built before prompts were kept)."""
    prompts = record.get("prompts", {})
    return str(prompts.get("" if part is None else part, ""))
