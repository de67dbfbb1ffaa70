"""Answer forensics, for instructors only: every flag of the class (``forensics``), as
``attnkit forensics`` prints it, and what the reports take from it: the TA's copied chains,
the follow-through credit a flag puts in doubt.

The kinds (``grader.forensics.flag_kinds``): a submitted value that is *another student's*
expected answer or another student's mistake ("other-variant") and the same wrong numbers
handed in by two students on different variants ("shared-wrong"), found by
``grader.forensics.copied_numbers``; two students' similar implement code ("similar-code"),
found by ``grader.forensics.copied_code``.

The answers are read from the gradebook part by part for the counted handins: every failed or
partial numeric part, and every part passed by follow-through credit only (a copied chain is
right "given the student's own" earlier answers, which are copied too).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from formats.key_shape import key_students

from grader.forensics.copied_numbers import by_part, part_flags, part_rows
from grader.forensics.flag_kinds import THRESHOLD
from grader.forensics.copied_code import similar_code_flags
from grader.verdicts.follow_through import FOLLOW_THROUGH


def _counted_part(r) -> bool:
    """A part whose answer forensics reads: failed, partial, or passed only by follow-through
    credit (a copied chain is right "given the student's own" earlier, copied, answers)."""
    return r is not None and (r.status in ("failed", "partial")
                              or (r.status == "passed" and r.message.startswith(FOLLOW_THROUGH)))


def counted_answers(grades, gradebook=None) -> dict:
    """(student, problem, part) → stored answer of every failed numeric part of ``grades``
    (``grades.class_grades``: the counted handins), and of every part passed by follow-through
    credit (``answers_by_part``, all parts together)."""
    out = {}
    for _, answers in answers_by_part(grades, gradebook):
        out.update(answers)
    return out


def answers_by_part(grades, gradebook=None, problems=None,
                    counted=None) -> Iterator[tuple[tuple[str, str], dict]]:
    """((problem, part), its ``counted_answers``) for each part with such an answer (of
    ``problems``; None: of all), in the key's order: forensics compares one part of the
    class at a time. ``class_grades`` reads no answers (a class's would be gigabytes): with
    the ``gradebook``, each such part's answers are read for the counted handins only
    (``Gradebook.part_results``). ``counted``: ``_counted_parts``' when the caller has it."""
    have, wanted = _counted_parts(grades, gradebook, problems) if counted is None else counted
    for where in dict.fromkeys([*have, *wanted]):
        out = have.pop(where, {})
        if where in wanted:
            (problem, part), (assignment, handins) = where, wanted.pop(where)
            for handin, r in gradebook.part_results(assignment, problem, part, handins=handins):
                if handins.get(r.student) == handin and _counted_part(r) and r.answer is not None:
                    out[(r.student, problem, part)] = r.answer
        yield where, out


def _counted_parts(grades, gradebook, problems=None) -> tuple[dict, dict]:
    """One pass over the class: (problem, part) → the answers ``grades`` hold already; and
    (problem, part) → (assignment, {student: counted handin}) of those to read."""
    have, wanted = {}, {}
    for s in grades:
        for p in s.parts:
            r = p.result
            if not _counted_part(r) or (problems is not None and p.problem not in problems):
                continue
            if r.answer is not None:
                have.setdefault((p.problem, p.part), {})[(s.id, p.problem, p.part)] = r.answer
            elif gradebook is not None and s.handin:
                wanted.setdefault((p.problem, p.part), (r.assignment, {}))[1][s.id] = s.handin
    return have, wanted


def forensics(gradebook, key: dict, threshold: float = THRESHOLD, build=None, code: bool = True,
              deadline=None, grades=None) -> dict:
    """Every flag of the class, as ``attnkit forensics --json`` prints it: other-variant and
    shared-wrong numbers, and similar implement code (``grader.forensics.copied_code``;
    ``build``: the build folder, for the stub and the reference solution, by default the
    folder above the gradebook's ``instructor/``; ``code=False`` skips it; ``deadline``: the
    late policy that says which handin counts). ``result["code"]``
    says what the code comparison read and which handins it skipped, and why. ``grades``:
    the class's grades when the caller has them already."""
    from grader.store.grades import class_grades
    grades = class_grades(gradebook, key, deadline) if grades is None else grades
    flags = _number_flags(key, grades, gradebook, threshold)
    result = {"flags": [], "students": len(grades), "threshold": threshold}
    if code:
        code_flags, result["code"] = similar_code_flags(key, grades, _build_of(gradebook, build))
        flags += code_flags
    carried = _follow_through_parts(grades)
    result["flags"] = [_with_follow_through(f.as_json(), carried.get((f.student, f.problem), ()))
                       for f in flags]
    return result


def _number_flags(key: dict, grades, gradebook, threshold: float, ask=None) -> list:
    """Other-variant flags, then shared-wrong ones that a value's other-variant flag does not
    already explain, a part of the class at a time: each key entry decoded once
    (``part_rows``), each part's answers read when its turn comes (``answers_by_part``).
    ``ask``: the (student, problem) pairs whose flags are wanted (None: all): only their
    problems are compared, every classmate's answer still evidence."""
    asked = None if ask is None else {pid for _, pid in ask}
    counted = _counted_parts(grades, gradebook, asked)      # (the class read once, for both)
    wanted: dict = {}
    for problem, part in [*counted[0], *counted[1]]:
        wanted.setdefault(problem, set()).add(part)
    if not wanted:
        return []
    rows = part_rows(key, wanted)
    students = len(key_students(key))
    other, shared = [], []
    for (problem, part), answers in answers_by_part(grades, gradebook, counted=counted):
        given = by_part(answers).get((problem, part), {})
        if (problem, part) in rows and given:
            who = None if ask is None else {sid for sid, pid in ask if pid == problem}
            found = part_flags(problem, part, rows.pop((problem, part)), given, threshold, students, who)
            other += found[0]
            shared += found[1]
    return other + shared


def _follow_through_parts(grades) -> dict[tuple[str, str], list[str]]:
    """(student, problem) → the parts that earned follow-through credit on the counted handin:
    credit "given your earlier answers" that a flag says may be another student's."""
    out: dict[tuple[str, str], list[str]] = {}
    for s in grades:
        for p in s.parts:
            r = p.result
            if r is not None and r.status in ("passed", "partial") and r.message.startswith(FOLLOW_THROUGH):
                out.setdefault((s.id, p.problem), []).append(p.part)
    return out


def _with_follow_through(flag: dict, parts) -> dict:
    """A flag with the follow-through parts of its problem named: a copied chain earns them."""
    flag["follow_through"] = list(parts)
    return flag


def class_forensics(gradebook, key: dict, grades, deadline=None, code: bool = True):
    """``forensics`` of the class, or the exception it raised: a failure must cost only the
    output that shows it (a dashboard section, the TA's copied chains), never the others."""
    try:
        return forensics(gradebook, key, deadline=deadline, code=code, grades=grades)
    except Exception as err:  # noqa: BLE001
        return err


def flags_of(found) -> list | None:
    """The flags of a ``class_forensics`` result (None where it failed)."""
    return None if isinstance(found, Exception) else found["flags"]


COPIED_CHAIN = "copied-chain"      # the TA's list: follow-through credit that rests on a flag


def copied_chains(gradebook, key: dict, grades, flags=None, threshold: float = THRESHOLD) -> dict[str, list]:
    """student → the (code, message) issues for the TA's list ("Needs a human look"): one per
    flag whose problem earned follow-through credit on the counted handin — a chain that
    may be another student's, worked "consistently" from a copied first step. Numbers only
    (the code comparison reads notebooks, and an implement problem has no follow-through).
    ``flags``: the class's forensics flags when the caller has them."""
    if flags is None:
        carried = _follow_through_parts(grades)
        # (only the problems that earned follow-through credit are compared: their flags
        # are all the TA's list shows; a grading run without any compares nothing)
        found = _number_flags(key, grades, gradebook, threshold, ask=set(carried)) if carried else []
        flags = [_with_follow_through(f.as_json(), carried.get((f.student, f.problem), ())) for f in found]
    out: dict[str, list] = {}
    for flag in flags:
        note = follow_through_note(flag)
        if note:
            out.setdefault(flag["student"], []).append(
                (COPIED_CHAIN, f"{flag['evidence']}; {note}"))
    return out


def follow_through_note(flag: dict) -> str:
    """The words for a flag's follow-through parts ("" without any), for the lists a TA reads."""
    parts = flag.get("follow_through") or ()
    if not parts:
        return ""
    return (f"follow-through credit on {', '.join(parts)} of {flag['problem']} rests on these answers: "
            "it stands or falls with this flag")


def _build_of(gradebook, build):
    """The build folder: ``build``, else the folder above the gradebook's ``instructor/``
    when it holds the build's notebooks (``attnkit build``'s layout), else None."""
    if build is not None:
        return Path(build)
    path = Path(getattr(gradebook, "path", ""))
    if path.parent.name == "instructor" and (path.parent / "notebooks").is_dir():
        return path.parent.parent
    return None
