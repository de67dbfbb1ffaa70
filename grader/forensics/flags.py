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

from grader.forensics.copied_numbers import numeric_records, other_variant_flags, shared_wrong_flags
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
    credit (``answers_by_problem``, all problems together)."""
    out = {}
    for _, answers in answers_by_problem(grades, gradebook):
        out.update(answers)
    return out


def answers_by_problem(grades, gradebook=None) -> Iterator[tuple[str, dict]]:
    """(problem, its ``counted_answers``) for each problem with such an answer, in the key's
    order: forensics compares one problem of the class at a time, so what it holds is one
    problem's answers and expected values, not the class's. ``class_grades`` reads no
    answers (a class's would be gigabytes): with the ``gradebook``, each such part's answers
    are read for the counted handins only, one part at a time (``Gradebook.part_results``)."""
    have, wanted = {}, {}
    for s in grades:
        for p in s.parts:
            r = p.result
            if not _counted_part(r):
                continue
            if r.answer is not None:
                have[(s.id, p.problem, p.part)] = r.answer
            elif gradebook is not None and s.handin:
                wanted.setdefault((r.assignment, p.problem, p.part), {})[s.id] = s.handin
    for problem in dict.fromkeys([k[1] for k in have] + [k[1] for k in wanted]):
        out = {k: v for k, v in have.items() if k[1] == problem}
        for (assignment, pid, part), handins in wanted.items():
            if pid != problem:
                continue
            for handin, r in gradebook.part_results(assignment, problem, part, handins=handins):
                if handins.get(r.student) == handin and _counted_part(r) and r.answer is not None:
                    out[(r.student, problem, part)] = r.answer
        yield problem, out


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
    flags = _number_flags(key, answers_by_problem(grades, gradebook), threshold)
    result = {"flags": [], "students": len(grades), "threshold": threshold}
    if code:
        code_flags, result["code"] = similar_code_flags(key, grades, _build_of(gradebook, build))
        flags += code_flags
    carried = _follow_through_parts(grades)
    result["flags"] = [_with_follow_through(f.as_json(), carried.get((f.student, f.problem), ()))
                       for f in flags]
    return result


def _number_flags(key: dict, by_problem, threshold: float) -> list:
    """Other-variant flags, then shared-wrong ones a value's other-variant flag does not
    already explain, a problem of the class at a time (``answers_by_problem``)."""
    other, shared = [], []
    for _, answers in by_problem:
        records = numeric_records(key, answers)          # (each entry's problem decoded once, for both)
        flags = other_variant_flags(key, answers, threshold, records)
        explained = {(f.student, f.problem, f.part) for f in flags}
        other += flags
        shared += [f for f in shared_wrong_flags(key, answers, records)
                   if (f.student, f.problem, f.part) not in explained]
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
        flags = forensics(gradebook, key, threshold, code=False, grades=grades)["flags"]
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
