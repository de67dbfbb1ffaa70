"""End to end, in process: the example assignment built for twelve students, synthetic
submissions of known kinds (synthetic/), graded through ``grader.run.pipeline.grade_folder``
(``GradingRun`` and ``grader.run.plugin.run_pytest``) with the real sandbox and a real SQLite gradebook, and every recorded part
compared with the outcome the synthetic manifest expects (computed from the key, never from
the grader's code).

Two batches of twelve submissions: the ordinary and hostile profiles (one memory bomb, no
infinite loop), and every misconception the example assignment can diagnose."""

import json
import math
import re
from dataclasses import dataclass
from pathlib import Path

import pytest
from solutions import TWINS

from formats.answer_key import load_key
from exercises.course.assignment import load_assignment
from exercises.course.build import build
from exercises.course.roster import load_roster
from grader.store.gradebook import Gradebook
from grader.run.grading import GradingRun
from grader.intake.layouts import find_submissions
from grader.intake.pairing import match
from grader.run.pipeline import grade_folder
from grader.run.plugin import run_pytest
from grader.reports.summary import write_csv, write_gradescope
from grader.reports.feedback_page import write_feedback
from grader.sandbox.client import Limits, Sandbox
from synthetic import MISCONCEPTION_PREFIX, load_manifest, profile_names, synthesize

ROOT = Path(__file__).resolve().parents[3]
EXAMPLE = ROOT / "problem_bank" / "assignments" / "example.yaml"
SECRET = "grading end-to-end secret: long, and in no report"
ROSTER = [("g01", "Ada Lovelace"), ("g02", "Søren Kierkegaard"), ("g03", "Nguyễn Thị Mai"),
          ("g04", "Aisha Bello"), ("g05", "Mateo Fernández"), ("g06", "Priya Raghunathan"),
          ("g07", "Chen Wei"), ("g08", "Zoë Hartmann"), ("g09", "Łukasz Wiśniewski"),
          ("g10", "Ingrid Berg"), ("g11", "Kwame Mensah"), ("g12", "Olga Ivanova"),
          ("g13", "Tomás Ó Briain")]
TIMEOUT = 2.0       # seconds per run of a submission: the memory bomb pays it once
WORKERS = 2

# One student each, in roster order: the sandbox and intake see every kind of trouble once.
HOSTILE = ["correct", "partial", "typed_wrong", "allclose_patch", "exit_midway", "fake_frames",
           "read_key", "edited_givens", "wrong_student", "broken_json", "stripped_metadata",
           "memory_bomb", "fork_bomb"]
AUTOGRADED = ("passed", "failed", "partial", "missing", "error")


@dataclass
class GradedSubmission:
    """A batch after grading: what the run said and what the gradebook holds."""
    code: int                     # run_pytest's exit code
    manifest: dict                # the synthetic manifest
    key: dict
    folder: Path                  # the submissions
    gradebook: Path
    submissions: dict             # student → SubmissionRow
    results: dict                 # student → [ResultRow] in recorded order
    recorded: list
    skipped: list

    def student(self, profile: str) -> str:
        return next(sid for sid, m in self.manifest["students"].items() if m["profile"] == profile)

    def expected(self, student: str) -> dict:
        return self.manifest["students"][student]["expected"]

    def rows(self, student: str) -> dict:
        return {(r.problem, r.part): r for r in self.results[student]}

    def kind(self, student: str, problem: str) -> str:
        return self.key["students"][student]["problems"][problem]["kind"]


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """(build folder, verified key) of the example assignment for the twelve students."""
    folder = tmp_path_factory.mktemp("grading-build")
    roster = folder / "roster.csv"
    roster.write_text("student_id,name,email\n" + "".join(
        f"{sid},{name},{sid}@example.edu\n" for sid, name in ROSTER), encoding="utf-8")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("ATTNKIT_SECRET", SECRET)
        result = build(load_assignment(EXAMPLE), list(load_roster(roster)), folder / "build")
    assert result.ok, result.failures
    return folder / "build", load_key(result.key_path, SECRET.encode())


def grade(built, folder: Path, profiles: list[str], students=None) -> GradedSubmission:
    """Synthesize ``profiles`` over the roster into ``folder`` and grade them (only
    ``students``, when given) into ``folder/gradebook.sqlite``."""
    build_dir, key = built
    synthesize(build_dir, key, folder / "submissions", profiles=profiles)
    path = folder / "gradebook.sqlite"
    with pytest.MonkeyPatch.context() as patch, Gradebook(path) as gradebook, \
            Sandbox(WORKERS, Limits(wall_seconds=TIMEOUT)) as sandbox:
        patch.setenv("ATTNKIT_SECRET", SECRET)      # as in a real run: the grader holds it
        run = grade_folder(key, folder / "submissions", gradebook, sandbox, servers=WORKERS,
                           read_ahead=True, students=students, kit_version="")
        assert not run.missing and not run.issues
        code = run.code
        subs = {s.student: s for s in gradebook.submissions(key["assignment"]["id"])}
        results = {}
        for r in gradebook.results(key["assignment"]["id"]):
            results.setdefault(r.student, []).append(r)
    manifest = load_manifest(folder / "submissions")
    if students is not None:
        manifest["students"] = {sid: m for sid, m in manifest["students"].items() if sid in students}
    return GradedSubmission(code, manifest, key, folder / "submissions", path, subs, results,
                  list(run.recorded), list(run.skipped))


def misconception_profiles(key) -> list[str]:
    return [p for p in profile_names(key) if p.startswith(MISCONCEPTION_PREFIX)]


@pytest.fixture(scope="module")
def hostile(built, tmp_path_factory):
    return grade(built, tmp_path_factory.mktemp("hostile"), HOSTILE)


@pytest.fixture(scope="module")
def misconceived(built, tmp_path_factory):
    """Every misconception profile once: in batches of the roster's size, merged."""
    names = misconception_profiles(built[1])
    batches = [grade(built, tmp_path_factory.mktemp("twins"), names[i:i + len(ROSTER)],
                     students=[sid for sid, _ in ROSTER][:len(names[i:i + len(ROSTER)])])
               for i in range(0, len(names), len(ROSTER))]
    return batches


# --- comparing with the manifest ---------------------------------------------------------

def outcome(row) -> dict:
    return {"status": row.status, "score": row.score, "max_score": row.max_score,
            "misconception": row.misconception}


def same(row, expected: dict) -> bool:
    return (row.status == expected["status"] and math.isclose(row.score, expected["score"], abs_tol=1e-9)
            and math.isclose(row.max_score, expected["max_score"], abs_tol=1e-9)
            and row.misconception == expected["misconception"])


def differences(graded: GradedSubmission, student: str) -> list:
    """Every part whose gradebook row differs from the manifest, and parts only one side has."""
    expected = {(pid, part): v for pid, parts in graded.expected(student).items() for part, v in parts.items()}
    rows = graded.rows(student)
    out = [(k, "not in the gradebook") for k in expected if k not in rows]
    out += [(k, "not in the manifest") for k in rows if k not in expected]
    out += [(k, outcome(rows[k]), expected[k]) for k in expected
            if k in rows and not same(rows[k], expected[k])]
    return out


def lost(graded: GradedSubmission, student: str) -> set:
    return {tuple(x) for x in graded.manifest["students"][student]["lost"]}


def lost_in_gradebook(graded: GradedSubmission, student: str) -> set:
    return {(r.problem, r.part) for r in graded.results[student] if r.status not in ("passed", "manual")}


def auto_max(graded: GradedSubmission, student: str) -> float:
    return sum(r.max_score for r in graded.results[student] if r.status != "manual")


def assert_as_expected(graded: GradedSubmission, student: str) -> None:
    assert differences(graded, student) == []
    m, s = graded.manifest["students"][student], graded.submissions[student]
    assert s.status == "graded"
    assert math.isclose(s.score, m["score"]) and math.isclose(s.max_score, m["max_score"])


# --- 1. every kind of problem -------------------------------------------------------------

KINDS = {"numeric", "choice", "free_response", "implement"}


@pytest.mark.parametrize("profile", ["correct", "partial", "typed_wrong"])
def test_every_kind_of_problem_is_graded_as_the_manifest_expects(hostile, profile):
    student = hostile.student(profile)
    assert_as_expected(hostile, student)
    by_kind: dict[str, set] = {}
    for r in hostile.results[student]:
        by_kind.setdefault(hostile.kind(student, r.problem), set()).add(r.status)
    assert set(by_kind) == KINDS
    assert by_kind["free_response"] == {"manual"}          # a human reads them
    # Every implement test family is an item of its own.
    record = hostile.key["students"][student]["problems"]
    for pid, r in record.items():
        if r["kind"] == "implement":
            assert {p for (q, p) in hostile.rows(student) if q == pid} == {f["family"] for f in r["grading"]}
    if profile == "correct":
        assert by_kind["numeric"] == by_kind["choice"] == by_kind["implement"] == {"passed"}
        assert hostile.submissions[student].score == auto_max(hostile, student)
    elif profile == "partial":
        assert {"missing", "failed"} <= by_kind["numeric"] | by_kind["choice"]
    else:   # typed_wrong: wrong forms fail, a choice written ' b ' is right
        assert "failed" in by_kind["numeric"] and by_kind["choice"] == {"passed"}


def test_a_batch_with_failures_exits_1_and_one_of_correct_notebooks_exits_0(built, hostile, tmp_path):
    assert hostile.code == 1
    assert sorted(hostile.recorded) == sorted(hostile.manifest["students"]) and hostile.skipped == []
    correct = grade(built, tmp_path, ["correct"], students=["g01", "g02"])
    assert correct.code == 0          # free responses are skipped ("graded by hand"), not failed
    for student in ("g01", "g02"):
        assert_as_expected(correct, student)


# --- 2. misconceptions ---------------------------------------------------------------------

def test_every_misconception_is_diagnosed_with_its_code_and_its_summary(misconceived):
    profiles = [m["profile"] for g in misconceived for m in g.manifest["students"].values()]
    assert len(set(profiles)) >= 10
    diagnosed, nameable = set(), set()
    for graded in misconceived:
        for student, m in graded.manifest["students"].items():
            twin = m["profile"][len(MISCONCEPTION_PREFIX):]
            assert differences(graded, student) == [], m["profile"]
            # A twin that cannot be told from another mistake on every part of this student's
            # variant (or that raises on every case it could be named by: QK needs a square
            # K) is named nowhere: the oracle says so, and the grader agrees (differences).
            if not any(v["misconception"] == twin for p in graded.expected(student).values()
                       for v in p.values()):
                continue
            nameable.add(twin)
            own = [r for r in graded.results[student] if r.misconception == twin]
            assert own, f"{twin} is diagnosed on no part of {student}"
            for r in graded.results[student]:
                if r.misconception:
                    assert r.status in ("failed", "partial")
                    assert TWINS[r.misconception].summary in r.message
                    diagnosed.add(r.misconception)
    assert len(diagnosed) >= 10
    assert nameable <= diagnosed and len(nameable) >= 0.9 * len(set(profiles)), \
        sorted({p[len(MISCONCEPTION_PREFIX):] for p in profiles} - nameable)


# --- 3. hostile submissions -------------------------------------------------------------

def test_every_hostile_submission_is_graded_as_the_manifest_expects(hostile):
    for student, m in hostile.manifest["students"].items():
        assert differences(hostile, student) == [], m["profile"]
        assert math.isclose(hostile.submissions[student].score, m["score"]), m["profile"]


def test_allclose_patch_earns_nothing_for_its_wrong_parts(hostile):
    student = hostile.student("allclose_patch")
    wrong = lost(hostile, student)
    assert wrong and lost_in_gradebook(hostile, student) == wrong
    rows = hostile.rows(student)
    assert all(rows[k].score == 0.0 and rows[k].status == "failed" for k in wrong)
    assert all(r.status in ("passed", "manual") for k, r in rows.items() if k not in wrong)
    assert math.isclose(hostile.submissions[student].score,
                        auto_max(hostile, student) - sum(rows[k].max_score for k in wrong))


@pytest.mark.parametrize("profile", ["exit_midway", "memory_bomb"])
def test_a_cell_that_ends_its_process_costs_only_its_own_parts(hostile, profile):
    student = hostile.student(profile)
    gone = lost(hostile, student)
    assert len(gone) == 1 and lost_in_gradebook(hostile, student) == gone
    (pid, part), = gone
    row = hostile.rows(student)[(pid, part)]
    assert row.status == "missing" and row.score == 0.0
    if profile == "exit_midway":   # the memory bomb may be a MemoryError or a timeout
        notes = hostile.submissions[student].notes
        assert any(n.startswith(f"{pid}-{part}:") and "stopped the run" in n for n in notes), notes
        assert "stopped the run" in row.message


def test_fake_frames_lose_nothing(hostile):
    student = hostile.student("fake_frames")
    assert lost(hostile, student) == set() == lost_in_gradebook(hostile, student)
    assert hostile.submissions[student].score == auto_max(hostile, student)


def _bytes_under(*paths: Path) -> list[tuple[Path, bytes]]:
    out = []
    for path in paths:
        files = [path] if path.is_file() else sorted(p for p in path.rglob("*") if p.is_file())
        out += [(p, p.read_bytes()) for p in files]
    return out


def test_read_key_never_gets_the_key_and_the_secret_reaches_no_file(hostile, tmp_path):
    student = hostile.student("read_key")
    gone = lost(hostile, student)
    assert len(gone) == 1 and lost_in_gradebook(hostile, student) == gone
    row = hostile.rows(student)[next(iter(gone))]
    assert row.status == "failed"
    assert isinstance(row.answer, str)                 # what it found, as text: no key in it
    assert "answer_key.json" in row.answer
    assert not re.search(r"answer_key\.json: \d+ bytes", row.answer), row.answer
    assert '"students"' not in row.answer and "signature" not in row.answer
    with Gradebook(hostile.gradebook) as gradebook:
        write_csv(gradebook, hostile.key, tmp_path / "grades.csv")
        write_gradescope(gradebook, hostile.key, tmp_path / "gradescope")
        write_feedback(gradebook, hostile.key, tmp_path / "feedback", reveal=True)
    files = _bytes_under(tmp_path, *hostile.gradebook.parent.glob("gradebook.sqlite*"))
    assert len(files) > 2 * len(ROSTER)
    assert [p for p, data in files if SECRET.encode() in data] == []


def test_edited_givens_are_graded_against_the_keys_givens(hostile):
    student = hostile.student("edited_givens")
    changed = lost(hostile, student)
    assert changed and lost_in_gradebook(hostile, student) == changed
    assert all(hostile.rows(student)[k].status == "failed" for k in changed)
    problems = {pid for pid, _ in changed}
    notes = hostile.submissions[student].notes
    assert any(f"{pid}--givens" in n and "edited" in n for pid in problems for n in notes), notes


def test_another_students_notebook_is_flagged(hostile):
    student = hostile.student("wrong_student")
    owner = hostile.manifest["students"][student]["notebook_of"]
    assert owner != student
    notes = hostile.submissions[student].notes
    assert any("issued to" in n and owner in n for n in notes), notes
    assert_as_expected(hostile, student)


def test_a_broken_notebook_gets_zero_with_its_reason(hostile):
    student = hostile.student("broken_json")
    assert hostile.submissions[student].score == 0.0
    assert any("not valid JSON" in n for n in hostile.submissions[student].notes)
    for r in hostile.results[student]:
        assert (r.status, r.score) == ("missing", 0.0)
        assert "not valid JSON" in r.message


def test_stripped_metadata_gets_full_marks(hostile):
    student = hostile.student("stripped_metadata")
    assert lost(hostile, student) == set() == lost_in_gradebook(hostile, student)
    assert hostile.submissions[student].score == auto_max(hostile, student) > 0
    assert any("cell id" in n for n in hostile.submissions[student].notes)


# --- containment ---------------------------------------------------------------------------

class _FailingFor:
    """A sandbox that fails for one student (fault injection: a grader bug on one submission)
    and is the real sandbox for everyone else."""

    def __init__(self, sandbox, steps_marker: str):
        self.sandbox, self.marker = sandbox, steps_marker

    def run(self, steps, budget=None):
        if any(self.marker in str(s.get("source", "")) for s in steps):
            raise RuntimeError("injected failure")
        return self.sandbox.run(steps, budget=budget)


def test_a_failure_on_one_submission_costs_that_submission_only(built, tmp_path):
    build_dir, key = built
    synthesize(build_dir, key, tmp_path / "subs", profiles=["correct", "correct", "correct"])
    found = find_submissions(tmp_path / "subs", key["assignment"]["id"])
    submissions = match(found, key).submissions[:3]
    victim = submissions[1]
    path = victim.path
    notebook = json.loads(path.read_text(encoding="utf-8"))
    cell = next(c for c in notebook["cells"] if c["metadata"].get("nbgrader", {}).get("grade_id") == "scaling-std")
    cell["source"] = ["# INJECT-FAILURE\n", *cell["source"]]
    path.write_text(json.dumps(notebook), encoding="utf-8")
    submissions = match(find_submissions(tmp_path / "subs", key["assignment"]["id"]), key).submissions[:3]
    with Gradebook(tmp_path / "gb.sqlite") as gradebook, Sandbox(1, Limits(wall_seconds=TIMEOUT)) as box:
        run = GradingRun(key, submissions, gradebook, _FailingFor(box, "INJECT-FAILURE"))
        run_pytest(run, key["assignment"]["id"])
        rows = {s.student: s for s in gradebook.submissions(key["assignment"]["id"])}
        parts = [r for r in gradebook.results(key["assignment"]["id"]) if r.student == victim.student]
    assert set(rows) == {s.student for s in submissions}
    assert rows[victim.student].status == "error"
    assert parts and all(r.status == "error" and "injected failure" in r.message for r in parts)
    others = [s for sid, s in rows.items() if sid != victim.student]
    assert all(s.status == "graded" and s.score > 0 for s in others)
    with Gradebook(tmp_path / "gb.sqlite") as gradebook:    # an error is retried next run
        again = GradingRun(key, submissions, gradebook, None)
        assert again.students_to_grade() == [victim.student]


def test_a_cell_error_without_a_message_is_named_without_an_empty_code_span():
    """``raise NotImplementedError()`` has no message: the cause names the error and its line
    (once shown as "…on line 2: ``" on the feedback page)."""
    from grader.run.graded import causes_of as _causes
    from grader.sandbox.results import CellError, RunResult

    result = RunResult(errors=[CellError("p-a", "NotImplementedError", "", 2),
                               CellError("p-b", "ValueError", "bad *shape*", None),
                               CellError("p-c", "NotImplementedError", "\n", 2)])     # issue 15: "…line 2: \n)."
    assert _causes(result) == {"p-a": "the cell raised `NotImplementedError` on line 2",
                               "p-b": "the cell raised `ValueError`: `bad *shape*`",
                               "p-c": "the cell raised `NotImplementedError` on line 2"}


def test_the_grader_version_digests_every_file_of_the_scoring_code():
    """Each pattern of the digest matches files where the kit is (a root one folder off would
    match nothing, and a changed grader would stop regrading old submissions)."""
    from pathlib import Path

    from grader.run import grading

    root = Path(grading.__file__).resolve().parents[2]
    for pattern in grading._SCORING_CODE:
        assert list(root.glob(pattern)), pattern
    assert Path(grading.__file__).resolve() in {p.resolve() for p in root.glob("grader/**/*.py")}
