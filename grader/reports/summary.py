"""What instructors and students read, made from the gradebook and the answer key.

- ``write_csv``, ``write_gradescope``: the class list and Gradescope's results.json, from
  ``grader.reports.exports`` (which also writes what Canvas and Moodle import);
- ``write_feedback``: one self-contained HTML page per student (``grader.reports.feedback_page``,
  named here too);
- ``class_table``: the same numbers as aligned plain text for the terminal, with a summary;
  every text in it from a roster or the gradebook shown terminal-safe;
- ``summary_json``: everything ``class_table`` shows, as data (``attnkit report --json``).

Who is in the class and what each student earned on the handin that counts is
``grader.store.grades``': a student without a submission is listed as ``missing``, never left out. Every output is a function of those two alone — sorted, no times, no
paths of this machine — so reporting twice gives the same bytes.

Expected values appear only on feedback pages written with ``reveal=True``: a page sent to a
student before the deadline must not hand their answers to their classmates.
"""

from __future__ import annotations

import statistics
import unicodedata
from array import array
from collections import Counter
from pathlib import Path

from solutions import TWINS

from formats.key_shape import (assignment_id, assignment_title, entry_for, head_problems, problem_record,
                               total_points)
from formats.textfile import terminal_safe

from formats.deadline import Deadline

from grader.reports import exports
from grader.store.gradebook import Gradebook
from grader.store.grades import (ERROR, GRADED, MISSING, NOT_ACCEPTED, Part, StudentGrades, class_grades,
                                 score_text)
from grader.reports.item_analysis import got_wrong
from grader.forensics.flags import copied_chains
from grader.store.look import needs_a_look
from grader.store.spilled import Spilled

_points = score_text


# ------------------------------------------------------------------------------------- CSV


def csv_text(gradebook: Gradebook, key: dict, deadline: Deadline | None = None) -> str:
    """The class's grades.csv (grader.reports.exports.grades_export)."""
    return exports.grades_export(class_grades(gradebook, key, deadline), key).text


def write_csv(gradebook: Gradebook, key: dict, path: str | Path, deadline: Deadline | None = None) -> Path:
    """One row per student of the key (grader.reports.exports.grades_export)."""
    exports.write_grades_csv(class_grades(gradebook, key, deadline), key, path)
    return Path(path)


def gradescope_results(s: StudentGrades, key: dict) -> dict:
    return exports.gradescope_results(s, key)


def write_gradescope(gradebook: Gradebook, key: dict, out_dir: str | Path,
                     deadline: Deadline | None = None) -> list[Path]:
    """``out_dir/<student>/results.json`` for every student of the key (grader.reports.exports)."""
    return exports.write_gradescope(class_grades(gradebook, key, deadline), key, out_dir)


# ---------------------------------------------------------------------- summary and table


def _statistics(values: list[float]) -> dict:
    if not values:
        return {"mean": None, "median": None}
    return {"mean": round(sum(values) / len(values), 6), "median": round(statistics.median(values), 6)}


def summary_json(gradebook: Gradebook, key: dict, deadline: Deadline | None = None,
                 grades=None, flags=None) -> dict:
    """The class as data: per student and part; per problem the mean and median over the
    graded submissions (a missing or unreadable one would only drag them towards 0); the
    commonest misconceptions; how many submissions are missing or errored. ``grades``,
    ``flags``: the class's grades and its forensics flags, when the caller has them.
    ``"students"`` is a ``Spilled`` sequence (made in one pass over the grades, read back a
    student at a time): the summary of a large class does not hold the class in memory."""
    grades = class_grades(gradebook, key, deadline) if grades is None else grades
    copied, unchecked = copied_issues(gradebook, key, grades, flags)
    tally = _Tally(head_problems(key))
    pools = pool_members(key)
    students = Spilled()
    for s in grades:
        look = [*s.look, *copied.get(s.id, ())]
        row = _student_json(s, look)
        # (an entry is read only when the assignment has a pool)
        entry = (entry_for(key, s.id) or {}) if pools else {}
        row["pools"] = {pid: problem_record(entry, pid, {}).get("template") for pid in pools
                        if problem_record(entry, pid, None) is not None}
        students.append(row)
        tally.add(s, look)
    from grader.reports.item_analysis import from_students
    items = from_students(students)
    return {
        "assignment": {"id": assignment_id(key), "title": assignment_title(key),
                       "points": total_points(key)},
        "students": students,
        "problems": tally.problems(),
        "totals": _statistics(tally.totals),
        "misconceptions": _misconceptions_json(grades),
        "misconceptions_by_part": misconceptions_by_part(students),
        "item_analysis": items,
        "pools": _pools_json(items["pools"], key, students),
        "needs_a_look": needs_a_look(tally.looks),
        "counting_rule": deadline.counts if deadline is not None else "last",
        **({"not_checked": unchecked} if unchecked else {}),
        "counts": {"students": len(grades), "graded": tally.statuses[GRADED],
                   "missing": tally.statuses[MISSING], "error": tally.statuses[ERROR],
                   # parts that wait for a human: not marked yet, or marked and to look at again
                   "manual_parts": tally.manual_parts, "needs_a_look": len(tally.looks)},
    }


class _Tally:
    """What the summary counts over the class, added up a student at a time."""

    def __init__(self, problems: list[dict]):
        self.heads = problems
        self.scores: dict[str, array] = {p["id"]: array("d") for p in problems}   # graded only
        self.totals = array("d")
        self.statuses: Counter = Counter()
        self.manual_parts = 0
        self.looks: list[tuple] = []          # (student, file, look) of those with something to look at

    def add(self, s: StudentGrades, look: list) -> None:
        self.statuses[s.status] += 1
        if s.status != MISSING:
            self.manual_parts += s.waiting
        if look:
            self.looks.append((s.id, s.path, look))
        if s.status == GRADED:
            self.totals.append(s.total)
            for pid, column in self.scores.items():
                column.append(s.problem_scores[pid])

    def problems(self) -> list[dict]:
        return [{"id": p["id"], "title": p.get("title", p["id"]), "points": float(p["points"]),
                 **_statistics(self.scores[p["id"]])} for p in self.heads]


def copied_issues(gradebook: Gradebook, key: dict, grades, flags) -> tuple[dict, str | None]:
    """student → the copied chains of the TA's list (grader.forensics.flags.copied_chains);
    and why they were not checked (None when they were)."""
    try:          # forensics that fail must not cost the grades their summary
        return copied_chains(gradebook, key, grades, flags), None
    except Exception as err:  # noqa: BLE001
        return {}, f"copied chains were not checked ({type(err).__name__}: {err})"


def _misconceptions_json(grades) -> list[dict]:
    """Each misconception diagnosed in the class: how many students made it (somewhere), how
    many parts it cost, and in which problems; the commonest first."""
    mistakes: Counter = Counter()        # students who made the mistake somewhere
    parts: Counter = Counter()           # parts it cost, over the class
    where: dict[str, set[str]] = {}
    for s in grades:
        codes = set()
        for part in s.parts:
            code = part.result.misconception if part.result else None
            if code:
                codes.add(code)
                parts[code] += 1
                where.setdefault(code, set()).add(part.problem)
        mistakes.update(codes)
    return [{"code": code, "count": count, "parts": parts[code],
             "summary": TWINS[code].summary if code in TWINS else "",
             "problems": sorted(where[code])}
            for code, count in sorted(mistakes.items(), key=lambda kv: (-kv[1], kv[0]))]


def _student_json(s: StudentGrades, look: list) -> dict:
    """One student's entry of the summary: totals, handins, and every part."""
    return {"id": s.id, "name": s.name, "email": s.email, "status": s.status,
            "total": round(s.total, 6), "max": s.max_score, "notes": list(s.notes),
            "needs_a_look": [{"code": c, "message": m} for c, m in look],
            "file": s.path, "handins": s.handins, "received_at": s.received_at,
            "received_from": s.received_from, "late": s.late, "late_penalty": round(s.penalty, 6),
            "handed_in": [_handin_json(h) for h in s.history],
            "problems": {pid: round(x, 6) for pid, x in s.problem_scores.items()},
            "complete": s.status == GRADED and not s.waiting, "waiting_parts": s.waiting,
            "parts": [{"problem": p.problem, "part": p.part, "score": round(p.score, 6),
                       "max_score": p.points, "status": p.status,
                       "misconception": p.result.misconception if p.result else None,
                       "auto_score": round(p.result.score, 6) if p.result else None,
                       "mark": _mark_json(p), "waiting": p.waiting}
                      for p in s.parts]}


def _handin_json(h) -> dict:
    """One of a student's handins (grader.store.grades.Handin): when and whence it came, its
    automatic score before and after the late policy, and whether it counts and why."""
    lateness = h.lateness
    return {"file": h.row.path, "received_at": h.row.received_at, "received_from": h.row.received_from,
            "status": h.row.status, "score": round(h.row.score, 6), "max_score": h.row.max_score,
            "late": lateness.words if lateness is not None else "",
            "accepted": lateness.accepted if lateness is not None else True,
            "late_penalty_percent": lateness.penalty_percent if lateness is not None else 0.0,
            "score_after_penalty": round(h.after_penalty, 6), "counts": h.counts, "why": h.why}


def pool_members(key: dict) -> dict[str, dict[str, str]]:
    """pool problem → member template → its title, from the key's head (exercises.course.pools)."""
    return {p["id"]: {m["template"]: str(m.get("title", m["template"])) for m in p["pool"]}
            for p in head_problems(key) if p.get("pool")}


def _pools_json(analysed: list[dict], key: dict, students: list[dict]) -> list[dict]:
    """Each pool's members side by side: how many students got each (of those with a key
    entry) and, over the graded ones, item_analysis's statistics and fairness check."""
    by_problem = {p["problem"]: p for p in analysed}
    titles = {p["id"]: str(p.get("title", p["id"])) for p in head_problems(key)}
    out = []
    for pid, members in pool_members(key).items():
        stats = {m["template"]: m for m in by_problem.get(pid, {}).get("members", [])}
        drawn = Counter(s["pools"].get(pid) for s in students)
        out.append({"problem": pid, "title": titles[pid],
                    "members": [{"template": t, "title": title, "students": drawn[t],
                                 **{k: v for k, v in stats.get(t, {"graded": 0}).items() if k != "template"}}
                                for t, title in members.items()],
                    "fairness": by_problem.get(pid, {}).get("fairness")})
    return out


def misconceptions_by_part(students: list[dict]) -> list[dict]:
    """Per part (a pool member's parts per member): how many graded students got it wrong
    (``item_analysis.got_wrong``: below full marks after hand grades and overrides), how
    many of those a known misconception explains, and which — the answer-note frequencies
    of Moodle's and STACK's reports."""
    counts: dict[tuple, Counter] = {}
    wrong: Counter = Counter()
    for s in students:
        if s["status"] != GRADED:
            continue
        for p in s["parts"]:
            k = (p["problem"], s.get("pools", {}).get(p["problem"]), p["part"])
            counts.setdefault(k, Counter())
            if not got_wrong(s, p):
                continue
            wrong[k] += 1
            if p["misconception"]:
                counts[k][p["misconception"]] += 1
    out = []
    for (pid, template, part), codes in counts.items():
        n, explained = wrong[(pid, template, part)], sum(codes.values())
        out.append({"problem": pid, "template": template, "part": part, "wrong": n, "explained": explained,
                    "share_explained": round(explained / n, 6) if n else None,
                    "misconceptions": [{"code": c, "count": k, "share_of_wrong": round(k / n, 6),
                                        "summary": TWINS[c].summary if c in TWINS else ""}
                                       for c, k in sorted(codes.items(), key=lambda kv: (-kv[1], kv[0]))]})
    return out


def _mark_json(p: Part) -> dict | None:
    """A part's hand grade as data (None without one)."""
    if p.mark is None:
        return None
    m = p.mark
    return {"kind": m.kind, "items": dict(m.items), "adjustment": m.adjustment, "comment": m.comment,
            "reason": m.reason, "grader": m.grader, "version": m.version,
            "rubric_version": m.rubric_version, "recheck": p.recheck or None}


def _width(text: str) -> int:
    """Columns a terminal gives ``text``: combining marks take none, wide characters two."""
    return sum(0 if unicodedata.combining(c) else 2 if unicodedata.east_asian_width(c) in "WF" else 1
               for c in text)


def _clip(text: str, limit: int) -> str:
    """``text`` in at most ``limit`` columns, cut with "…"; one pass, however long the name."""
    if _width(text) <= limit:
        return text
    used, end = 0, 0
    for end, c in enumerate(text):
        used += _width(c)
        if used > limit - 1:
            break
    return text[:end] + "…"


def _shown(text) -> str:
    """A table cell as the terminal shows it (see terminal_safe): widths are counted on this,
    so a U+202E in a name can neither reverse the columns after it nor misalign them."""
    return terminal_safe(text, newlines=False)


def _table(header: list[str], rows: list[list[str]], right: set[int]) -> list[str]:
    widths = [max(_width(r[i]) for r in [header, *rows]) for i in range(len(header))]

    def line(cells):
        padded = [(" " * (w - _width(c)) + c) if i in right else (c + " " * (w - _width(c)))
                  for i, (c, w) in enumerate(zip(cells, widths))]
        return "  ".join(padded).rstrip()
    return [line(header), "  ".join("─" * w for w in widths), *map(line, rows)]


_COLOURS = {MISSING: "\x1b[33m", ERROR: "\x1b[31m", GRADED: "\x1b[32m"}


def class_table(gradebook: Gradebook, key: dict, colour: bool = False, summary: dict | None = None,
                deadline: Deadline | None = None) -> str:
    """The class as aligned plain text: a line per student (total and per problem), then the
    mean and median per problem, the commonest misconceptions and how many submissions are
    missing or errored. ``colour`` adds ANSI colours to the status column. ``summary``:
    ``summary_json``'s, when the caller has it already."""
    summary = summary if summary is not None else summary_json(gradebook, key, deadline)
    assignment = summary["assignment"]
    pids = [p["id"] for p in summary["problems"]]
    out = [f"{_shown(assignment['title'])} ({_shown(assignment['id'])}): "
           f"{len(summary['students'])} students, {_points(assignment['points'])} points", ""]
    rows = []
    for s in summary["students"]:
        rows.append([_shown(s["id"]), _clip(_shown(s["name"]), 28),
                     f"{_points(s['total'])}/{_points(s['max'])}",
                     *(_points(s["problems"][pid]) for pid in pids), _status_cell(s)])
    lines = _table(["student", "name", "total", *map(_shown, pids), "status"], rows,
                   right=set(range(2, 3 + len(pids))))
    if colour:  # after padding, so the escape codes do not count as width
        lines = lines[:2] + [_colour_status(line, _status_cell(s), s["status"])
                             for line, s in zip(lines[2:], summary["students"])]
    out += lines
    counts = summary["counts"]
    graded = counts["graded"]
    out += ["", f"Per problem, over the {graded} graded submission{'s' if graded != 1 else ''}:"]
    stat_rows = [[_shown(p["id"]), _points(p["points"]),
                  "–" if p["mean"] is None else _points(p["mean"]),
                  "–" if p["median"] is None else _points(p["median"])] for p in summary["problems"]]
    out += ["  " + line for line in _table(["problem", "points", "mean", "median"], stat_rows, {1, 2, 3})]
    out.append("")
    if summary["misconceptions"]:
        out.append("Most common misconceptions (students, and the parts it cost them):")
        for m in summary["misconceptions"][:10]:
            what = f" — {_shown(m['summary'])}" if m["summary"] else ""
            out.append(f"  {_counted(m['count'], 'student'):>12}, {_counted(m['parts'], 'part'):>9}  "
                       f"{_shown(m['code'])}{what} ({_shown(', '.join(m['problems']))})")
    else:
        out.append("No misconception was diagnosed.")
    out += _explained_lines(summary.get("misconceptions_by_part", []))
    out += _item_lines(summary.get("item_analysis"))
    out += _pool_lines(summary.get("pools", []))
    out.append(f"Submissions: {counts['graded']} graded, {counts['missing']} missing, "
               f"{counts['error']} with errors.")
    if counts["manual_parts"]:
        out.append(f"{counts['manual_parts']} part{'s' if counts['manual_parts'] != 1 else ''} "
                   "still to grade by hand (attnkit mark; not in the totals until graded).")
    late = [s for s in summary["students"] if s["late_penalty"] or s["status"] == NOT_ACCEPTED]
    if late:
        out.append(f"Late: {_counted(len(late), 'submission')} (penalties are in the totals; "
                   "report --json has each one's lateness).")
    if counts["needs_a_look"]:
        out.append(f"{_counted(counts['needs_a_look'], 'submission')} marked \"look\" need a human "
                   "look before the grade stands (attnkit grade lists them).")
    return "\n".join(out) + "\n"


def _item_lines(items: dict | None) -> list[str]:
    """The item analysis in a few lines: α for the assignment and the dubious items."""
    if not items or items["students"] < 2:
        return []
    a = items["assignment"]
    alpha = ("–" if a["alpha"] is None else f"{a['alpha']:.2f}"
             + ("" if a["se"] is None else f" ± {a['se']:.2f}"))
    out = [f"Item analysis over {items['students']} graded submissions: Cronbach's α = {alpha} "
           f"({_counted(a['items'], 'item')}); {_counted(items['flagged'], 'dubious item')} "
           "(report --json has every part's facility, SD, discrimination and efficiency)."]
    flagged = [x for x in [*items["problems"], *items["parts"]] if x["flags"]]
    for x in flagged[:ITEM_LINES]:
        where = _part_name(x)
        facts = f"facility {x['facility']:.2f}" + (
            "" if x["discrimination"] is None else f", discrimination {x['discrimination']:.2f}")
        out.append(f"  {where}: {facts} — {'; '.join(x['flags'])}")
    if len(flagged) > ITEM_LINES:
        out.append(f"  … and {len(flagged) - ITEM_LINES} more (report --json)")
    if items.get("waiting"):
        out.append(f"  ({_counted(len(items['waiting']), 'part')} still to grade by hand left out)")
    return out


ITEM_LINES = 8          # dubious items listed in the terminal (all of them in --json)


def _part_name(x: dict) -> str:
    """problem/part, with a pool member's template: problem[template]/part."""
    member = f"[{x['template']}]" if x.get("template") else ""
    return _shown(x["problem"] + member + ("" if x.get("part") is None else "/" + x["part"]))


def _explained_lines(rows: list[dict]) -> list[str]:
    """The parts most students lost points on, with the share a known misconception explains."""
    worst = sorted((r for r in rows if r["wrong"]), key=lambda r: (-r["wrong"], r["problem"], r["part"]))
    if not worst:
        return []
    out = ["Parts most often wrong, and how much of it a known misconception explains:"]
    for r in worst[:ITEM_LINES]:
        top = r["misconceptions"][0] if r["misconceptions"] else None
        most = f"; most often {_shown(top['code'])} ({top['count']})" if top else ""
        out.append(f"  {_part_name(r)}: {r['wrong']} wrong, {100 * (r['share_explained'] or 0):.0f} % "
                   f"explained{most}")
    return out


def _pool_lines(pools: list[dict]) -> list[str]:
    """Each pool's members side by side, and the fairness check's verdict."""
    out = []
    for pool in pools:
        members = ", ".join(f"{_shown(m['template'])} {m['students']} students"
                            + ("" if m.get("facility") is None else f" (facility {m['facility']:.2f})")
                            for m in pool["members"])
        fairness = pool.get("fairness") or {}
        out.append(f"Pool {_shown(pool['problem'])}: {members}.")
        if fairness.get("message"):
            out.append(f"  {'Not fair? ' if fairness.get('flag') else ''}{_shown(fairness['message'])}")
    return out


def _counted(n: int, word: str) -> str:
    return f"{n} {word}{'s' if n != 1 else ''}"


def _status_cell(student: dict) -> str:
    """The status column: the status ("incomplete" while a part waits to be graded by hand),
    and "look" when something needs a human look."""
    status = student["status"]
    if status == GRADED and any(p["waiting"] for p in student["parts"]):
        status = "incomplete"
    return _shown(status) + (", look" if student["needs_a_look"] else "")


def look_list(summary: dict) -> str:
    """For the TA, first: every submission that needs a human look, one line per issue."""
    look = summary["needs_a_look"]
    if not look:
        return ""
    students = len({x["student"] for x in look})
    lines = [f"Needs a human look ({_counted(students, 'submission')}):"]
    width = max(_width(_shown(x["student"])) for x in look)
    for x in look:
        student = _shown(x["student"])
        lines.append(f"  {student}{' ' * (width - _width(student))}  {_shown(x['code'])}: {_shown(x['message'])}")
    return "\n".join(lines) + "\n"


def _colour_status(line: str, cell: str, status: str) -> str:
    code = _COLOURS.get(status)
    if not code or not line.endswith(cell):
        return line
    return line[: -len(cell)] + code + cell + "\x1b[0m"
