"""What needs a human look, said the same way everywhere: whatever makes the class table say
``look`` is a line of the TA's list and an entry of ``report --json``'s top-level
``needs_a_look`` (and of ``attnkit grade``'s list, ``class_look``), for every look code; and what
the late policy chose among a student's handins is said, never silent."""

from datetime import datetime, timedelta, timezone

import pytest

from formats.deadline import Deadline, LatePolicy
from formats.key_shape import assignment_id, graded_parts, is_free_response, key_students, problem_records, total_points
from grader.store import marks
from grader.forensics.flags import COPIED_CHAIN
from grader.store.gradebook import Gradebook
from grader.store.rows import ResultRow, SubmissionRow
from grader.store.grades import class_look
from grader.reports.summary import class_table, look_list, summary_json
from grader.store.look import NEEDS_A_LOOK, RECHECK, REPLACED_ON_TIME, needs_a_look

SECRET = "look test secret: long enough, never real"
DUE = datetime(2026, 12, 5, 23, 59, tzinfo=timezone.utc)
# codes the grades make themselves (not stored with a handin), each reproduced below as it arises
MADE_BY_GRADES = {RECHECK, REPLACED_ON_TIME, "late", "grader-error", COPIED_CHAIN}


@pytest.fixture(scope="module")
def key(example_build):
    return example_build(3, SECRET)[1]


@pytest.fixture
def gradebook(tmp_path):
    with Gradebook(tmp_path / "g.sqlite") as gb:
        yield gb


def hand_in(gb, key, student, handin, fraction, received=DUE - timedelta(hours=1), issues=(), status="graded",
            answer="an answer"):
    """Record a handin of ``student`` earning ``fraction`` of every part."""
    a = assignment_id(key)
    rows = [ResultRow(a, student, pid, part, points * fraction, points, "partial", answer=answer)
            for pid, record in problem_records(key["students"][student]) for part, points in graded_parts(record)]
    gb.record(SubmissionRow(a, student, f"{handin}.ipynb", handin, status, tuple(m for _, m in issues),
                            sum(r.score for r in rows), total_points(key), received_at=received.isoformat(),
                            received_from="LMS export (t.csv)", issues=issues), rows)


def agree(gb, key, deadline=None) -> dict:
    """Check that the table, the TA's list, the top-level list and the counts say the same;
    student → their (code, message) looks."""
    summary = summary_json(gb, key, deadline)
    table = class_table(gb, key, summary=summary).splitlines()
    listed = look_list(summary).splitlines()[1:]
    top = summary["needs_a_look"]
    looks = {}
    for s in summary["students"]:
        mine = [(x["code"], x["message"]) for x in s["needs_a_look"]]
        looks[s["id"]] = mine
        assert [(x["code"], x["message"]) for x in top if x["student"] == s["id"]] == mine, s["id"]
        assert all(x["file"] == s["file"] for x in top if x["student"] == s["id"])
        (row,) = [line for line in table if line.startswith(s["id"] + " ")]
        assert row.endswith(", look") == bool(mine), row
        lines = [line for line in listed if line.split()[0] == s["id"]]
        assert [line.split()[1].rstrip(":") for line in lines] == [code for code, _ in mine]
    assert summary["counts"]["needs_a_look"] == sum(bool(v) for v in looks.values())
    # attnkit grade's list after a run: the same, but for what only the results show
    after_run = needs_a_look(class_look(gb, key, deadline))
    assert after_run == [x for x in top if x["code"] != COPIED_CHAIN]
    return looks


@pytest.mark.parametrize("code", sorted(NEEDS_A_LOOK - MADE_BY_GRADES))
def test_every_stored_look_code_is_said_alike_everywhere(gradebook, key, code):
    ada, bo, _ = key_students(key)
    hand_in(gradebook, key, ada, "ada", 0.5, issues=((code, f"ada.ipynb: something about {code}"),))
    hand_in(gradebook, key, bo, "bo", 1.0, issues=(("metadata-stripped", "bo.ipynb: matched by cell id"),))
    looks = agree(gradebook, key)
    assert looks[ada] == [(code, f"ada.ipynb: something about {code}")] and looks[bo] == []


def test_a_grader_error_late_work_and_a_refused_handin_are_said_alike_everywhere(gradebook, key):
    ada, bo, cy = key_students(key)
    hand_in(gradebook, key, ada, "ada", 0.5, status="error")
    hand_in(gradebook, key, bo, "bo", 1.0, received=DUE + timedelta(hours=5))
    hand_in(gradebook, key, cy, "cy-late", 1.0, received=DUE + timedelta(days=9))
    looks = agree(gradebook, key, Deadline(DUE, LatePolicy("penalty", 10, cutoff=DUE + timedelta(days=2))))
    assert [c for c, _ in looks[ada]] == ["grader-error"]
    assert [c for c, _ in looks[bo]] == ["late"] and [c for c, _ in looks[cy]] == ["late"]


def test_a_refused_handin_names_its_file(gradebook, key):
    _, _, cy = key_students(key)
    hand_in(gradebook, key, cy, "cy-late", 1.0, received=DUE + timedelta(days=9))
    deadline = Deadline(DUE, LatePolicy("cutoff"))
    summary = summary_json(gradebook, key, deadline)
    (entry,) = [x for x in summary["needs_a_look"] if x["student"] == cy]
    assert entry["file"] == "cy-late.ipynb" and "after the cutoff" in entry["message"]
    (me,) = [s for s in summary["students"] if s["id"] == cy]
    assert (me["status"], me["file"], me["total"]) == ("not accepted", "cy-late.ipynb", 0)
    assert [(x["file"], x["accepted"], x["counts"]) for x in me["handed_in"]] == [("cy-late.ipynb", False, False)]
    assert [x["file"] for x in needs_a_look(class_look(gradebook, key, deadline)) if x["student"] == cy] == \
        ["cy-late.ipynb"]


def test_a_hand_override_then_a_resubmission_is_on_the_tas_list(gradebook, key):
    """The override was given to an answer the counted handin no longer holds."""
    ada, bo, _ = key_students(key)
    hand_in(gradebook, key, ada, "ada", 0.5, answer="first")
    hand_in(gradebook, key, bo, "bo", 0.5)
    problem, part = next((pid, p) for pid, record in problem_records(key["students"][ada])
                         if not is_free_response(record) for p, _ in graded_parts(record))
    (result,) = [r for r in gradebook.results(assignment_id(key), ada) if (r.problem, r.part) == (problem, part)]
    marks.save(gradebook, key, problem, part, [marks.Target(ada, 0, result)],
               marks.Edit((), 0.5, "", "a slip in the notation"), "ta")
    hand_in(gradebook, key, ada, "ada-again", 0.5, received=DUE - timedelta(minutes=5), answer="second")
    looks = agree(gradebook, key)
    assert [c for c, _ in looks[ada]] == [RECHECK] and looks[ada][0][1].startswith(f"{problem}/{part}: ")
    assert looks[bo] == []
    assert f"{ada}  {RECHECK}: {problem}/{part}: " in look_list(summary_json(gradebook, key))


# --- which handin counts, said ------------------------------------------------------------

def penalty(counts="last"):
    return Deadline(DUE, LatePolicy("penalty", 20, "day"), counts=counts)


def test_a_late_handin_counted_over_a_better_on_time_one_is_said(gradebook, key):
    ada, bo, _ = key_students(key)
    full = total_points(key)
    hand_in(gradebook, key, ada, "ada-main", 0.6)                                    # on time
    hand_in(gradebook, key, ada, "ada-late", 0.625, received=DUE + timedelta(days=1, hours=2))   # −40 %
    hand_in(gradebook, key, bo, "bo-main", 0.5)
    hand_in(gradebook, key, bo, "bo-late", 1.0, received=DUE + timedelta(hours=2))   # −20 %: still better
    looks = agree(gradebook, key, penalty())
    got = dict(looks[ada])[REPLACED_ON_TIME]
    assert got.startswith(f"the late handin ({0.625 * 0.6 * full:g} of {full:g} after −40 %) counts; "
                          f"an on-time handin scored {0.6 * full:g}")
    assert REPLACED_ON_TIME not in dict(looks[bo])
    summary = summary_json(gradebook, key, penalty())
    assert summary["counting_rule"] == "last"
    (me,) = [s for s in summary["students"] if s["id"] == ada]
    assert [(h["file"], h["counts"], h["received_from"], h["late_penalty_percent"]) for h in me["handed_in"]] == [
        ("ada-late.ipynb", True, "LMS export (t.csv)", 40.0), ("ada-main.ipynb", False, "LMS export (t.csv)", 0.0)]
    late, main = me["handed_in"]
    assert late["score_after_penalty"] == pytest.approx(0.625 * 0.6 * full) and main["score"] == pytest.approx(0.6 * full)
    assert "the last one received" in late["why"] and main["why"] == "another handin counts"
    assert main["received_at"] == (DUE - timedelta(hours=1)).isoformat() and "1 day 2 hours late" in late["late"]


@pytest.mark.parametrize("counts, counted", [("last", "ada-late"), ("best", "ada-main"),
                                             ("last_on_time", "ada-early")])
def test_the_spec_chooses_which_handin_counts(gradebook, key, counts, counted):
    ada, _, cy = key_students(key)
    hand_in(gradebook, key, ada, "ada-early", 0.4, received=DUE - timedelta(days=2))
    hand_in(gradebook, key, ada, "ada-main", 0.9, received=DUE + timedelta(hours=1))       # −20 %: 0.72
    hand_in(gradebook, key, ada, "ada-late", 0.8, received=DUE + timedelta(days=1, hours=1))  # −40 %: 0.48
    hand_in(gradebook, key, cy, "cy-late", 0.5, received=DUE + timedelta(hours=3))
    summary = summary_json(gradebook, key, penalty(counts))
    by_id = {s["id"]: s for s in summary["students"]}
    assert by_id[ada]["file"] == f"{counted}.ipynb"
    assert [h["file"] for h in by_id[ada]["handed_in"] if h["counts"]] == [f"{counted}.ipynb"]
    assert by_id[cy]["file"] == "cy-late.ipynb"          # last_on_time: none on time, the last accepted
    why = {"last": "the last one received that the late policy accepts",
           "best": "the highest score after the late policy (counts: best)",
           "last_on_time": "none was received by the due date: the last one the late policy accepts "
                           "(counts: last_on_time)"}
    assert [h["why"] for h in by_id[cy]["handed_in"]] == [why[counts]]
    agree(gradebook, key, penalty(counts))
