"""Assignment build: the layout, byte-identical rebuilds (serial or on two cores), the signed
key and what it holds, per-student failures that spare the others, printable pages."""

import json
import stat
from pathlib import Path

import nbformat
import pytest
from nbgrader.nbgraderformat import MetadataValidator

from formats.answer_key import AnswerKeyError, load_key
from exercises.course.assignment import load_assignment
from exercises.course.build import CLASS_STUDENT, build, build_nbgrader
from exercises.course.roster import load_roster

ROOT = Path(__file__).resolve().parents[3]
EXAMPLE = ROOT / "problem_bank" / "assignments" / "example.yaml"
SAMPLE_ROSTER = ROOT / "problem_bank" / "assignments" / "sample_roster.csv"
SECRET = "build-test secret, 32 bytes long"


@pytest.fixture(autouse=True)
def _secret(monkeypatch):
    monkeypatch.setenv("ATTNKIT_SECRET", SECRET)


@pytest.fixture(scope="module")
def example():
    return load_assignment(EXAMPLE)       # the secret is read when a build starts


@pytest.fixture(scope="module")
def roster():
    return list(load_roster(SAMPLE_ROSTER))[:4]


def files(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.fixture(scope="module")
def built(example, roster, tmp_path_factory):
    out = tmp_path_factory.mktemp("build")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("ATTNKIT_SECRET", SECRET)
        result = build(example, roster, out, jobs=1, formats=("notebook", "html"))
    return out, result


def test_the_layout_one_student_notebook_one_instructor_notebook_and_a_key(built, roster):
    out, result = built
    assert result.ok and result.students == 4
    for s in roster:
        for folder in ("release", "instructor/notebooks"):
            nb = nbformat.read(out / folder / s.id / "attention-hw1.ipynb", as_version=4)
            nbformat.validate(nb)
            MetadataValidator().validate_nb(nb)
            assert nb.metadata["attnkit"]["student"] == s.id
            assert nb.metadata["attnkit"]["version"] == {"release": "student"}.get(folder, "instructor")
        assert (out / "print" / f"{s.id}.html").is_file()
        assert (out / "instructor" / "print" / f"{s.id}.html").is_file()
    assert result.files == 4 * 4 + 2       # and the key: its index and one shard


def test_rebuilding_writes_the_same_bytes_serial_or_on_two_cores(built, example, roster, tmp_path):
    out, _ = built
    build(example, roster, tmp_path / "again", jobs=2, formats=("notebook", "html"), chunk=1)
    assert files(tmp_path / "again") == files(out)


def test_every_student_gets_other_numbers(built, roster):
    out, _ = built
    texts = [(out / "release" / s.id / "attention-hw1.ipynb").read_text() for s in roster]
    givens = [[c for c in json.loads(t)["cells"] if c["id"] == "masks--givens"][0]["source"] for t in texts]
    assert len(set(map("".join, givens))) == len(roster)


def test_the_key_is_signed_private_and_matches_the_notebooks(built, roster):
    out, _ = built
    path = out / "instructor" / "answer_key.json"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    key = load_key(path, SECRET.encode())
    assert key["assignment"]["id"] == "attention-hw1"
    assert sorted(key["students"]) == sorted(s.id for s in roster)
    for s in roster:
        entry = key["students"][s.id]
        nb = json.loads((out / entry["notebook"]).read_text())
        record = nb["metadata"]["attnkit"]
        assert [p["variant_digest"] for p in record["problems"]] == \
            [entry["problems"][p["id"]]["digest"] for p in record["problems"]]
        assert entry["name"] == s.name and entry["email"] == s.email
        answers = {p["id"]: p.get("answers", {}) for p in record["problems"]}
        assert {pid: e["answer_names"] for pid, e in entry["problems"].items()} == answers


def test_a_key_changed_by_hand_or_read_with_another_secret_does_not_verify(built, tmp_path):
    """(Each way of changing a sharded key: tests/formats/test_key_shards.py.)"""
    out, _ = built
    index = out / "instructor" / "answer_key.json"
    with pytest.raises(AnswerKeyError, match="the signature does not verify"):
        load_key(index, b"another course secret, 32 bytes")
    key = json.loads(index.read_text())
    key["assignment"]["points"] += 1                     # an easier assignment
    index.write_text(json.dumps(key))
    with pytest.raises(AnswerKeyError, match="the signature does not verify"):
        load_key(index, SECRET.encode())


def test_a_student_whose_variant_fails_is_reported_and_the_others_are_built(example, roster, tmp_path):
    impossible = tmp_path / "impossible.yaml"
    impossible.write_text(
        "id: impossible\ntitle: No variant\nobjective: scaling\nkind: numeric\nprompt: x\n"
        "sampling: {max_attempts: 3}\n"
        "parameters:\n  d_k: {dist: integers, low: 1, high: 20}\n"
        "constraints:\n  - expr: d_k == 7\n"
        "parts:\n  - {id: v, answer: d_k, points: 1}\n")
    spec = tmp_path / "hw.yaml"
    spec.write_text(f"id: hw\ntitle: HW\nsecret: {{env: ATTNKIT_SECRET}}\n"
                    f"problems:\n  - template: {impossible}\n")
    result = build(load_assignment(spec), list(load_roster(SAMPLE_ROSTER)), tmp_path / "out")
    built_ids = sorted(p.name for p in (tmp_path / "out" / "release").iterdir())
    assert result.failures and len(built_ids) + len(result.failures) == 30
    assert built_ids, "3 draws of 1-in-20 succeed for some students"
    assert all("no valid variant in 3 draws" in f for f in result.failures)
    key = load_key(result.key_path, SECRET.encode())
    assert sorted(key["students"]) == built_ids


def test_printable_pages_work_offline_and_show_math(built, roster):
    out, _ = built
    page = (out / "print" / f"{roster[0].id}.html").read_text()
    key_page = (out / "instructor" / "print" / f"{roster[0].id}.html").read_text()
    for html in (page, key_page):
        for forbidden in ("<script", "<link", "http://", "https://", "@import"):
            assert forbidden not in html
        assert "<math" in html and roster[0].name in html
    assert "answer-box" in page and "Worked solution" not in page
    assert "Worked solution" in key_page and "<svg" in key_page


def test_nbgrader_course_mode_writes_one_class_notebook_and_a_class_key(example, tmp_path):
    result = build_nbgrader(example, tmp_path / "course")
    source = tmp_path / "course" / "source" / "attention-hw1" / "attention-hw1.ipynb"
    nb = nbformat.read(source, as_version=4)
    assert nb.metadata["attnkit"]["student"] == "" and nb.metadata["attnkit"]["version"] == "source"
    assert "### BEGIN HIDDEN TESTS" in source.read_text()
    assert (tmp_path / "course" / "nbgrader_config.py").is_file()
    key = load_key(result.key_path, SECRET.encode())
    assert list(key["students"]) == [CLASS_STUDENT]
    assert not result.key_path.is_relative_to(tmp_path / "course" / "source")   # never released
    # a course's own config is left alone
    (tmp_path / "course" / "nbgrader_config.py").write_text("c = get_config()\n")
    build_nbgrader(example, tmp_path / "course")
    assert (tmp_path / "course" / "nbgrader_config.py").read_text() == "c = get_config()\n"


def test_no_temporary_files_are_left_behind(built):
    out, _ = built
    assert not [p for p in out.rglob("*") if p.name.endswith(".tmp")]


def test_student_ids_that_look_like_the_kits_own_files_are_just_students(example, tmp_path):
    roster_file = tmp_path / "roster.csv"
    roster_file.write_text("student_id,name,email\nanswer_key.json,A,\nprint,B,\nnotebooks,C,\n")
    result = build(example, list(load_roster(roster_file)), tmp_path / "out", formats=("notebook", "html"))
    assert result.ok
    key = load_key(tmp_path / "out" / "instructor" / "answer_key.json", SECRET.encode())
    assert sorted(key["students"]) == ["answer_key.json", "notebooks", "print"]
    for sid in key["students"]:
        assert (tmp_path / "out" / "instructor" / "notebooks" / sid / "attention-hw1.ipynb").is_file()
        assert (tmp_path / "out" / "instructor" / "print" / f"{sid}.html").is_file()


def test_the_instructor_folder_is_private(built):
    out, _ = built
    assert stat.S_IMODE((out / "instructor").stat().st_mode) == 0o700
    private = [p for p in (out / "instructor").rglob("*") if p.is_file()]
    assert private and all(stat.S_IMODE(p.stat().st_mode) == 0o600 for p in private)
    public = [p for p in (out / "release").rglob("*") if p.is_file()]
    assert all(stat.S_IMODE(p.stat().st_mode) == 0o644 for p in public)


# --- a build that makes nobody; stale files of an earlier, larger build -------------------------

def _impossible_assignment(tmp_path):
    template = tmp_path / "never.yaml"
    template.write_text(
        "id: never\ntitle: No variant\nobjective: scaling\nkind: numeric\nprompt: x\n"
        "sampling: {max_attempts: 2}\nparameters:\n  d_k: {dist: integers, low: 1, high: 3}\n"
        "constraints:\n  - expr: d_k > 10\nparts:\n  - {id: v, answer: d_k, points: 1}\n")
    spec = tmp_path / "never_hw.yaml"
    spec.write_text("id: attention-hw1\ntitle: HW\nsecret: {env: ATTNKIT_SECRET}\n"
                    f"problems:\n  - template: {template}\n")
    return load_assignment(spec)


def test_a_build_that_makes_no_student_leaves_no_key(example, roster, tmp_path):
    out = tmp_path / "out"
    build(example, roster[:1], out)
    assert (out / "instructor" / "answer_key.json").is_file()
    result = build(_impossible_assignment(tmp_path), roster[:2], out)
    assert result.built == 0 and len(result.failures) == 2
    assert result.key_path is None and result.files == 0
    # the earlier key stays: it still agrees with the notebooks (none was rewritten), and it is
    # the record of what was issued (issue 15: rebuilds never silently change issued work)
    assert (out / "instructor" / "answer_key.json").is_file()
    assert result.stale == [] and result.removed == []               # nothing is touched


def test_a_rebuild_for_a_smaller_roster_lists_the_stale_files_and_removes_only_them(example, roster,
                                                                                   tmp_path):
    out = tmp_path / "out"
    build(example, roster, out, formats=("notebook", "html"))
    gone = [s.id for s in roster[2:]]
    # beside the kit's files: a student's own file, another assignment's notebook, a link
    (out / "release" / gone[0] / "my_notes.txt").write_text("mine")
    (out / "release" / gone[1] / "attention-hw2.ipynb").write_text("{}")
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "elsewhere" / "attention-hw1.ipynb").write_text("{}")
    (out / "release" / "linked").symlink_to(tmp_path / "elsewhere")
    (out / "print" / "README.txt").write_text("printing notes")
    kept = files(out)

    result = build(example, roster[:2], out, formats=("notebook", "html"))
    expected = sorted(f"{folder}/{sid}/attention-hw1.ipynb" for sid in gone
                      for folder in ("release", "instructor/notebooks"))
    expected += sorted(f"{folder}/{sid}.html" for sid in gone for folder in ("print", "instructor/print"))
    assert result.stale == sorted(expected) and result.removed == []
    assert result.stale_students == sorted(gone)
    assert all((out / path).is_file() for path in result.stale)       # listed, not removed

    result = build(example, roster[:2], out, formats=("notebook", "html"), remove_stale=True)
    assert result.removed == result.stale == sorted(expected)
    left = files(out)
    assert not any((out / path).exists() for path in expected)
    assert not (out / "instructor" / "notebooks" / gone[0]).exists()  # emptied, so removed
    assert (out / "release" / gone[0] / "my_notes.txt").read_text() == "mine"
    assert (out / "release" / gone[1] / "attention-hw2.ipynb").read_text() == "{}"
    assert (tmp_path / "elsewhere" / "attention-hw1.ipynb").is_file()
    assert (out / "print" / "README.txt").is_file()
    key_files = {path for path in kept if path.startswith("instructor/answer_key.")}
    assert set(kept) - set(left) - key_files == set(expected)        # nothing else went
    key = load_key(out / "instructor" / "answer_key.json", SECRET.encode())
    assert sorted(key["students"]) == sorted(s.id for s in roster[:2])
