"""nbgrader course mode against the real nbgrader: ``generate_assignment`` releases our source
notebook (solutions and hidden tests stripped), ``autograde`` scores a correct, a wrong and an
empty submission, and the gradebook holds the points we expect, part by part.

One course is set up per module (nbgrader's gradebook creation alone takes seconds)."""

import copy
from pathlib import Path

import nbformat
import pytest
from nbgrader.api import Gradebook
from nbgrader.nbgraderformat import MetadataValidator

from bench.nbgrader_course import hermetic_env, nbgrader
from exercises.course.assignment import load_assignment
from exercises.course.build import CLASS_STUDENT, build_nbgrader, header, problem_variants
from exercises.render.notebook import build_notebook

ROOT = Path(__file__).resolve().parents[3]
EXAMPLE = ROOT / "problem_bank" / "assignments" / "example.yaml"
SECRET = "nbgrader round trip secret, 32 b"
NAME = "attention-hw1"


def graded_points(notebook, prefix: str = "") -> dict[str, float]:
    return {c.metadata["nbgrader"]["grade_id"]: c.metadata["nbgrader"]["points"]
            for c in notebook.cells
            if c.metadata["nbgrader"]["grade"] and c.metadata["nbgrader"]["grade_id"].startswith(prefix)}


@pytest.fixture(scope="module")
def course(tmp_path_factory):
    scratch = tmp_path_factory.mktemp("nbgrader")
    assignment = load_assignment(EXAMPLE)
    course = scratch / "course"
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("ATTNKIT_SECRET", SECRET)
        build_nbgrader(assignment, course)
    env = hermetic_env(scratch / "env")
    generated, _ = nbgrader(["generate_assignment", NAME, "--force"], course, env)
    assert generated.returncode == 0, generated.stderr
    release = nbformat.read(course / "release" / NAME / f"{NAME}.ipynb", as_version=4)
    variants = problem_variants(assignment, SECRET.encode(), CLASS_STUDENT)
    solved = build_notebook(header(assignment), variants, "instructor")
    L = next(p for p in variants if p.id == "masks").variant.values["L"]
    answers = {c["metadata"]["nbgrader"]["grade_id"]: c["source"] for c in solved["cells"]
               if c["metadata"]["nbgrader"]["solution"]}
    submissions = {"correct": answers, "wrong": dict(answers), "empty": {}}
    wrong = submissions["wrong"]
    wrong["scaling-std"] = "std = 1.0"                                   # a by-hand slip
    wrong["masks-causal"] = f"causal = np.triu(np.ones(({L}, {L}), dtype=bool))"   # the future
    wrong["bert_mlm-counts"] = "counts = 'Z'"                           # not an option
    for student, filled in submissions.items():
        notebook = copy.deepcopy(release)
        for cell in notebook.cells:
            gid = cell.metadata.get("nbgrader", {}).get("grade_id")
            if gid in filled:
                cell.source = filled[gid]
        folder = course / "submitted" / student / NAME
        folder.mkdir(parents=True)
        nbformat.write(notebook, folder / f"{NAME}.ipynb")
    graded, _ = nbgrader(["autograde", NAME, "--force"], course, env)
    assert graded.returncode == 0, graded.stderr
    source = nbformat.read(course / "source" / NAME / f"{NAME}.ipynb", as_version=4)
    return {"course": course, "release": release, "source": source, "assignment": assignment}


def scores(course: Path, student: str) -> dict[str, float | None]:
    with Gradebook(f"sqlite:///{course / 'gradebook.db'}", course_id="course") as gradebook:
        notebook = gradebook.find_submission_notebook(NAME, NAME, student)
        return {g.name: g.auto_score for g in notebook.grades}


def test_the_release_is_valid_and_holds_no_solutions_or_hidden_tests(course):
    release = course["release"]
    nbformat.validate(release)
    MetadataValidator().validate_nb(release)
    text = "\n".join(c.source for c in release.cells)
    assert "BEGIN SOLUTION" not in text and "HIDDEN TESTS" not in text
    assert release.metadata["attnkit"]["version"] == "source"    # the variant record survives


def test_a_correct_submission_gets_every_automatic_point(course):
    points = graded_points(course["source"])
    got = scores(course["course"], "correct")
    manual = {gid for gid, cell in ((c.metadata["nbgrader"]["grade_id"], c) for c in course["source"].cells)
              if cell.cell_type == "markdown" and cell.metadata["nbgrader"]["grade"]}
    assert manual == {"motivation-static", "motivation-bottleneck", "motivation-common_cause"}
    assert {gid: got[gid] for gid in points if gid not in manual} == \
        {gid: p for gid, p in points.items() if gid not in manual}
    assert all(got[gid] is None for gid in manual)       # left for the instructor


def test_a_wrong_submission_loses_exactly_the_wrong_parts(course):
    points = graded_points(course["source"])
    got = scores(course["course"], "wrong")
    lost = {gid for gid in points if got[gid] == 0}
    assert lost == {"scaling-std--check", "masks-causal--check", "bert_mlm-counts--check"}


def test_an_empty_submission_scores_nothing(course):
    got = scores(course["course"], "empty")
    assert all(not score for score in got.values())
