"""Synthetic submissions: built from a real build of the example assignment for six students,
every profile written, the notebooks valid, the correct one run in a real kernel, the
misconception edits checked against the key's twins, the bytes reproducible and the
manifest saying what each profile costs."""

import json
import os
from pathlib import Path

import nbformat
import numpy as np
import pytest
from nbclient import NotebookClient

from exercises.course.bank import load_bank

from exercises.variant.draw import make_variant
from formats.cells import MARKDOWN_PLACEHOLDER
from formats.compare import compare, within
from formats.literals import literal
from exercises.render.notebook import LETTERS
from formats.serialize import decode_names, from_jsonable, same_value
import synthetic
from synthetic import (CODE_EDITS, MISCONCEPTION_PREFIX, SyntheticError, assign_profiles,
                              edit_code, profile_names, synthesize)
from synthetic import hostile

SECRET = "synthetic-test secret, 32 bytes!"
STUDENTS = 6


@pytest.fixture(scope="session")
def built(example_build):
    """(build folder, verified key) of the example assignment for six students."""
    return example_build(STUDENTS, SECRET)


@pytest.fixture(scope="session")
def synthesized(built, tmp_path_factory):
    """profile → (Synthetic, out folder): every profile the key supports, six per run."""
    build_dir, key = built
    names = profile_names(key)
    found = {}
    for n in range(0, len(names), STUDENTS):
        out = tmp_path_factory.mktemp(f"synthetic{n}")
        for s in synthesize(build_dir, key, out, profiles=names[n:n + STUDENTS]):
            found.setdefault(s.profile, (s, out))
    assert set(found) == set(names)
    return found


def read(path: Path) -> nbformat.NotebookNode:
    return nbformat.reads(path.read_text(encoding="utf-8"), as_version=4)


def cell(notebook, cell_id: str):
    return next(c for c in notebook.cells if c.id == cell_id)


def release(build_dir: Path, student: str):
    return read(build_dir / "release" / student / "attention-hw1.ipynb")


def misconceptions(key) -> list[str]:
    return [p[len(MISCONCEPTION_PREFIX):] for p in profile_names(key) if p.startswith(MISCONCEPTION_PREFIX)]


# --- the profiles ------------------------------------------------------------------------

def test_the_example_assignment_diagnoses_at_least_ten_misconceptions(built):
    _, key = built
    names = misconceptions(key)
    assert len(names) >= 10 and len(set(names)) == len(names)
    assert {"sdpa_no_scale", "sdpa_mask_with_zero", "causal_mask_triu", "bahdanau_step_no_tanh",
            "sdpa_scale_by_sqrt_seq_len", "sdpa_no_max_subtraction"} <= set(names)


def test_a_roster_as_long_as_the_profiles_gets_each_once_and_one_infinite_loop(built):
    _, key = built
    names = profile_names(key)
    roster = [f"s{n:04d}" for n in range(len(names) + 7)]
    for seed in (0, 3):
        chosen = assign_profiles(roster, names, seed)
        assert set(chosen.values()) == set(names)
        assert list(chosen.values()).count("infinite_loop") == 1
        assert list(chosen.values()).count("broken_json") == 1
    assert assign_profiles(roster, names, 3) != assign_profiles(roster, names, 0)


def test_an_unknown_profile_or_layout_is_refused(built, tmp_path):
    build_dir, key = built
    with pytest.raises(SyntheticError, match="unknown profile"):
        synthesize(build_dir, key, tmp_path, profiles=["lucky"])
    with pytest.raises(SyntheticError, match="layout"):
        synthesize(build_dir, key, tmp_path, layout="zip")


# --- files -------------------------------------------------------------------------------

def test_every_notebook_but_the_broken_one_is_valid_nbformat_4(synthesized):
    for profile, (s, _) in synthesized.items():
        assert s.path.is_file()
        if profile == "broken_json":
            with pytest.raises(Exception):
                json.loads(s.path.read_bytes())
            continue
        notebook = read(s.path)
        nbformat.validate(notebook)
        assert notebook.nbformat == 4


def test_layouts_nbgrader_and_flat(built, tmp_path):
    build_dir, key = built
    nested = synthesize(build_dir, key, tmp_path / "nested", profiles=["correct"])
    flat = synthesize(build_dir, key, tmp_path / "flat", layout="flat", profiles=["correct"])
    for s in nested:
        assert s.path == tmp_path / "nested" / "submitted" / s.student / "attention-hw1" / "attention-hw1.ipynb"
    for s in flat:
        assert s.path == tmp_path / "flat" / f"{s.student}.ipynb"
    manifest = json.loads((tmp_path / "flat" / "manifest.json").read_text())
    assert manifest["layout"] == "flat"
    assert {sid: m["path"] for sid, m in manifest["students"].items()} == {
        s.student: f"{s.student}.ipynb" for s in flat}


def files(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def test_the_same_inputs_give_the_same_bytes(built, tmp_path):
    build_dir, key = built
    names = profile_names(key)[-STUDENTS:]          # the hostile ones, where randomness would hide
    for run in ("a", "b"):
        synthesize(build_dir, key, tmp_path / run, profiles=names)
        synthesize(build_dir, key, tmp_path / f"default-{run}", layout="flat", seed=5)
    assert files(tmp_path / "a") == files(tmp_path / "b")
    assert files(tmp_path / "default-a") == files(tmp_path / "default-b")
    assert len(files(tmp_path / "a")) == STUDENTS + 1


def test_each_notebook_starts_from_the_students_own_release_notebook(built, synthesized):
    build_dir, _ = built
    for profile, (s, _) in synthesized.items():
        if profile in ("broken_json", "wrong_student"):
            continue
        mine, theirs = release(build_dir, s.student), read(s.path)
        assert theirs.metadata.attnkit == mine.metadata.attnkit
        ids = [c.id for c in theirs.cells if c.id != "forged-frames"]
        assert ids == [c.id for c in mine.cells]
        for ours, issued in zip([c for c in theirs.cells if c.id != "forged-frames"], mine.cells):
            locked = issued.metadata.get("nbgrader", {}).get("locked")
            if locked and not (profile == "edited_givens" and issued.id.endswith("--givens")):
                assert ours.source == issued.source, (profile, issued.id)


# --- the correct notebook, in a real kernel ----------------------------------------------

def _dump_cell(entry: dict) -> str:
    """Code printing, as JSON, every answer variable and each implement function's outputs on
    the key's hidden cases (what the grader will collect)."""
    names = sorted({v for r in entry["problems"].values() for v in r.get("answer_names", {}).values()})
    calls = {pid: (r["function"], [decode_names(t["args"]) for t in r["tests"]])
             for pid, r in entry["problems"].items() if r["kind"] == "implement"}
    lines = ["import json", "from formats.serialize import encode_names, to_jsonable",
             f"_values = {{n: globals()[n] for n in {names!r} if n in globals()}}",
             "_outputs = {}"]
    for pid, (function, cases) in calls.items():
        lines.append(f"_outputs[{pid!r}] = [to_jsonable({function}(**args)) for args in {literal(cases)}]")
    lines.append('print(json.dumps({"values": encode_names(_values), "outputs": _outputs}))')
    return "\n".join(lines)


def test_the_correct_notebook_runs_cleanly_in_a_kernel_and_holds_the_keys_answers(built, synthesized):
    _, key = built
    s, _ = synthesized["correct"]
    entry = key["students"][s.student]
    notebook = read(s.path)
    notebook.cells.append(nbformat.v4.new_code_cell(_dump_cell(entry)))
    NotebookClient(notebook, timeout=120, kernel_name="python3", allow_errors=True,
                   resources={"metadata": {"path": str(s.path.parent)}}).execute()
    errors = [(c.id, o.ename, o.evalue) for c in notebook.cells if c.cell_type == "code"
              for o in c.outputs if o.output_type == "error"]
    assert errors == []
    checks = [c for c in notebook.cells if c.cell_type == "code" and c.metadata.get("nbgrader", {}).get("grade")]
    assert checks and all(c.execution_count for c in checks)      # the check cells ran, and passed
    dumped = json.loads("".join(o.get("text", "") for o in notebook.cells[-1].outputs))
    values = decode_names(dumped["values"])
    for pid, record in entry["problems"].items():
        answers = decode_names(record["answers"])
        for part, variable in record.get("answer_names", {}).items():
            if record["kind"] == "choice":
                assert values[variable] == LETTERS[answers[part]]
            else:
                assert same_value(values[variable], answers[part]), (pid, part)
        if record["kind"] == "implement":
            for output, test in zip(dumped["outputs"][pid], record["tests"]):
                assert compare(from_jsonable(output), from_jsonable(test["expected"]),
                               record["rtol"], record["atol"]).ok


# --- misconceptions ----------------------------------------------------------------------

def _run(source: str, function: str, cases: list[dict]) -> list:
    """The function the (trusted: generated from the kit's reference) source defines, on each
    case: its output, or the exception it raised."""
    namespace = {"np": np}
    exec(compile(source, "<answer>", "exec"), namespace)     # noqa: S102 — trusted fixture code
    outputs = []
    for args in cases:
        with np.errstate(all="ignore"):
            try:
                outputs.append(namespace[function](**args))
            except Exception as err:  # noqa: BLE001
                outputs.append(err)
    return outputs


def _reproduces(outputs, wanted, expected, rtol, atol) -> list[int]:
    """Cases where ``outputs`` does not reproduce the twin: its stored output where there is
    one (NaN equal to NaN), and otherwise at least failing the case as the twin did."""
    bad = []
    for i, (out, want, exp) in enumerate(zip(outputs, wanted, expected)):
        if want is None:
            if not (isinstance(out, Exception) or not within(out, exp, rtol, atol)):
                bad.append(i)
            continue
        got = out if isinstance(out, (list, tuple)) else [out]
        want = want if isinstance(want, (list, tuple)) else [want]
        if isinstance(out, Exception) or len(got) != len(want) or not all(
                within(g, w, rtol, atol) or np.array_equal(np.asarray(g), np.asarray(w), equal_nan=True)
                for g, w in zip(got, want)):
            bad.append(i)
    return bad


def test_misconception_notebooks_reproduce_the_keys_twins(built, synthesized):
    _, key = built
    for twin in misconceptions(key):
        s, _ = synthesized[MISCONCEPTION_PREFIX + twin]
        entry, notebook = key["students"][s.student], read(s.path)
        touched = 0
        for pid, record in entry["problems"].items():
            if twin not in record.get("twins", {}):
                continue
            if record["kind"] == "implement":
                source = cell(notebook, f"{pid}-{record['function']}").source
                outputs = _run(source, record["function"], [decode_names(t["args"]) for t in record["tests"]])
                bad = _reproduces(outputs, from_jsonable(record["twins"][twin]),
                                  [from_jsonable(t["expected"]) for t in record["tests"]],
                                  record["rtol"], record["atol"])
                assert bad == [], (twin, bad)
                touched += 1
                continue
            for part, value in from_jsonable(record["twins"][twin]).items():
                namespace = {"np": np}
                exec(cell(notebook, f"{pid}-{part}").source, namespace)  # noqa: S102 — a literal
                assert same_value(namespace[record["answer_names"][part]], value), (twin, pid, part)
                touched += 1
        assert touched, twin


@pytest.mark.parametrize("template_id", ["implement_masked_attention", "implement_causal_attention",
                                         "implement_additive_attention", "implement_multihead_attention",
                                         "softmax_gradient", "implement_decode_step"])
def test_code_edits_reproduce_the_twins_of_every_implement_template(template_id):
    template = load_bank()[0][template_id]
    header, body = template.reference_code()
    listed = [t for t in template.misconceptions if t in CODE_EDITS]
    assert listed
    for seed in (11, 12):
        variant = make_variant(template, seed)
        for twin in listed:
            source = edit_code(f"{header}\n{body}", twin)
            assert source is not None and source != f"{header}\n{body}", twin
            outputs = _run(source, template.function.name, [c.args for c in variant.tests])
            assert _reproduces(outputs, variant.twins[twin], [c.expected for c in variant.tests],
                               template.rtol, template.atol) == [], (twin, seed)


def test_an_edit_that_does_not_apply_gives_none():
    assert edit_code("def f(x):\n    return x\n", "sdpa_no_scale") is None
    assert edit_code("anything", "not_a_twin") is None


# --- what the manifest says ----------------------------------------------------------------

def manifest_of(synthesized, profile):
    s, out = synthesized[profile]
    return s, json.loads((out / "manifest.json").read_text())["students"][s.student]


def statuses(m) -> dict:
    return {(pid, part): v["status"] for pid, parts in m["expected"].items() for part, v in parts.items()}


def test_the_manifest_covers_every_part_of_the_key(built, synthesized):
    build_dir, key = built
    total = key["assignment"]["points"]
    for profile, (s, out) in synthesized.items():
        manifest = json.loads((out / "manifest.json").read_text())
        assert manifest["format"] == synthetic.FORMAT and manifest["assignment"] == "attention-hw1"
        m = manifest["students"][s.student]
        assert m["profile"] == profile and (out / m["path"]).resolve() == s.path.resolve()
        assert profile in manifest["profiles"]
        record = key["students"][s.student]["problems"]
        assert set(m["expected"]) == set(record)
        for pid, parts in m["expected"].items():
            assert set(parts) == {g.get("id") or g.get("family") for g in record[pid]["grading"]}
        assert m["max_score"] == pytest.approx(total)
        assert m["score"] == pytest.approx(sum(v["score"] for p in m["expected"].values() for v in p.values()))


def test_correct_loses_nothing_and_free_responses_wait_for_a_human(synthesized):
    s, m = manifest_of(synthesized, "correct")
    assert m["lost"] == [] and m["issues"] == []
    assert {st for (pid, _), st in statuses(m).items() if pid == "motivation"} == {"manual"}
    assert set(statuses(m).values()) == {"passed", "manual"}
    notebook = read(s.path)
    answers = [c for c in notebook.cells if c.metadata.get("nbgrader", {}).get("solution")]
    assert answers and all(MARKDOWN_PLACEHOLDER not in c.source
                           and "NotImplementedError" not in c.source for c in answers)


def test_partial_leaves_placeholders_and_one_answer_far_off(synthesized):
    s, m = manifest_of(synthesized, "partial")
    got = statuses(m)
    missing = [k for k, v in got.items() if v == "missing"]
    assert len(missing) == 3 and list(got.values()).count("failed") == 1
    notebook = read(s.path)
    for pid, part in missing:
        assert "raise NotImplementedError()" in cell(notebook, f"{pid}-{part}").source


def _explained_otherwise(record: dict, part: str | None, twin: str) -> bool:
    """Does another mistake the key stores (a listed twin or a lookalike) give what ``twin``
    gives on ``part`` (an implement record: on some case)? Then naming ``twin`` would be a
    guess, and the grader names none ("matches either … or …")."""
    def values(stored, name):
        v = from_jsonable(stored[name])
        return v.get(part) if part is not None and isinstance(v, dict) else v
    mine = values(record["twins"], twin)
    rtol, atol = ((record["rtol"], record["atol"]) if part is None else
                  next((g["rtol"], g["atol"]) for g in record["grading"] if g["id"] == part))
    others = [values(record["twins"], n) for n in record["twins"] if n != twin]
    others += [values(record["lookalikes"], n) for n in record.get("lookalikes", {})]
    def alike(a, b):
        try:
            a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
            return a.shape == b.shape and bool(np.all(np.isclose(a, b, rtol, atol, equal_nan=True)))
        except (TypeError, ValueError):
            return False
    if part is None:
        return any(o is not None and any(x is not None and y is not None and alike(x, y)
                                         for x, y in zip(mine, o)) for o in others)
    return any(o is not None and alike(mine, o) for o in others)


def _raised_on(record: dict, family: str, twin: str) -> bool:
    """An implement twin that raises on a case of ``family`` (QKᵀ transposed on non-square
    scores): the student's code raises there too, and there is nothing to name it by."""
    outputs = record.get("twins", {}).get(twin) if record["kind"] == "implement" else None
    return outputs is not None and any(out is None for t, out in zip(record["tests"], outputs)
                                       if t["family"] == family)


def _never_nameable(problems: dict, twin: str) -> bool:
    for record in problems.values():
        if twin not in record.get("twins", {}):
            continue
        if record["kind"] == "implement":
            families = {t["family"] for t in record["tests"]}
            if not all(_raised_on(record, f, twin) or _explained_otherwise(record, None, twin)
                       for f in families):
                return False
        elif not all(_explained_otherwise(record, part, twin) for part in from_jsonable(record["twins"][twin])):
            return False
    return True


def test_misconception_profiles_report_their_twin(built, synthesized):
    _, key = built
    for twin in misconceptions(key):
        s, m = manifest_of(synthesized, MISCONCEPTION_PREFIX + twin)
        problems = key["students"][s.student]["problems"]
        reported = {v["misconception"] for p in m["expected"].values() for v in p.values()}
        # Even a twin whose wrong outputs hold NaN is named: NaN where the twin has NaN matches —
        # unless on this student's variant every place it could be named by is taken by another
        # stored mistake or is a case the twin raises on (QK needs a square K).
        assert twin in reported or _never_nameable(problems, twin), twin
        for pid, record in problems.items():
            if twin not in record.get("twins", {}) or record["kind"] == "implement":
                continue
            for part in from_jsonable(record["twins"][twin]):
                verdict = m["expected"][pid][part]
                if verdict["status"] != "failed":
                    # right, given the student's own wrong earlier answer: follow-through credit
                    assert part in record.get("follow", {}) and verdict["status"] in ("passed", "partial")
                    continue
                # named as itself, or — where another stored mistake gives the same value —
                # not named at all: never named as another twin
                assert verdict["misconception"] == twin or (
                    verdict["misconception"] is None and _explained_otherwise(record, part, twin)), (pid, part)
        untouched = [(pid, part) for (pid, part), st in statuses(m).items() if st == "failed"
                     and m["expected"][pid][part]["misconception"] is None
                     and not _raised_on(problems[pid], part, twin)
                     and not (twin in problems[pid].get("twins", {}) and _explained_otherwise(
                         problems[pid], None if problems[pid]["kind"] == "implement" else part, twin))]
        assert untouched == [] or twin == "sdpa_no_max_subtraction", (twin, untouched)  # NaN matches nothing


def test_typed_wrong_fails_the_numbers_and_accepts_a_lower_case_letter(built, synthesized):
    _, key = built
    s, m = manifest_of(synthesized, "typed_wrong")
    notebook = read(s.path)
    for pid, record in key["students"][s.student]["problems"].items():
        for part, variable in record.get("answer_names", {}).items():
            source = cell(notebook, f"{pid}-{part}").source
            if record["kind"] == "choice":
                assert m["expected"][pid][part]["status"] == "passed"
                assert source == f"{variable} = ' {LETTERS[from_jsonable(record['answers'][part])].lower()} '"
            else:
                assert m["expected"][pid][part]["status"] == "failed", (pid, part)
    sources = "\n".join(c.source for c in notebook.cells)
    assert "np.nan" in sources and "= '" in sources


def test_allclose_patch_earns_nothing_for_its_wrong_answers(built, synthesized):
    _, key = built
    s, m = manifest_of(synthesized, "allclose_patch")
    notebook = read(s.path)
    sources = "\n".join(c.source for c in notebook.cells)
    for trick in ("np.allclose = ", "np.isclose = ", "builtins.abs = ", "Py_OptimizeFlag", "_Equal("):
        assert trick in sources
    wrong = [k for k, v in statuses(m).items() if v not in ("passed", "manual")]
    assert wrong and all(v == "failed" for k, v in statuses(m).items() if k in wrong)
    assert len({pid for pid, _ in wrong}) == 1
    entry = key["students"][s.student]
    for pid, part in wrong:           # the numbers written are really wrong
        record = entry["problems"][pid]
        g = next(g for g in record["grading"] if g["id"] == part)
        source = cell(notebook, f"{pid}-{part}").source.split("\n")[-1].replace("_Equal(", "float(")
        namespace = {"np": np}
        exec(source, namespace)                             # noqa: S102 — a literal
        value = namespace[record["answer_names"][part]]
        assert not compare(value, decode_names(record["answers"])[part], g["rtol"], g["atol"]).ok


@pytest.mark.parametrize("profile, marker", [
    ("exit_midway", "os._exit(0)"), ("infinite_loop", "while True:"),
    ("memory_bomb", "MemoryError"), ("fork_bomb", "os.fork()")])
def test_a_crashing_cell_costs_exactly_its_own_part(synthesized, profile, marker):
    s, m = manifest_of(synthesized, profile)
    lost = [k for k, v in statuses(m).items() if v not in ("passed", "manual")]
    assert len(lost) == 1 and statuses(m)[lost[0]] == "missing"
    pid, part = lost[0]
    notebook = read(s.path)
    assert marker in cell(notebook, f"{pid}-{part}").source
    assert sum(marker in c.source for c in notebook.cells) == 1
    answers = [c for c in notebook.cells if c.get("metadata", {}).get("nbgrader", {}).get("solution")]
    assert 0 < answers.index(cell(notebook, f"{pid}-{part}")) < len(answers) - 1   # in the middle


def test_the_fork_bomb_is_bounded():
    assert "range(5)" in hostile._FORK_BOMB and "os._exit(0)" in hostile._FORK_BOMB
    assert "chunks=12, size=256 * 2**20" in hostile._MEMORY_BOMB    # a 3 GiB cap


def test_read_key_fails_in_a_sandbox_and_really_reads_the_key_without_one(built, synthesized, monkeypatch):
    build_dir, key = built
    s, m = manifest_of(synthesized, "read_key")
    lost = [k for k, v in statuses(m).items() if v not in ("passed", "manual")]
    assert len(lost) == 1 and statuses(m)[lost[0]] == "failed"
    pid, part = lost[0]
    source = cell(read(s.path), f"{pid}-{part}").source
    assert str((build_dir / "instructor" / "answer_key.json").resolve()) in source
    assert "../../instructor/answer_key.json" in source and '"environ"' in source and "/mem" in source
    # Unsandboxed (here, from the submission's folder) the attack works: that is what the
    # sandbox must stop.
    monkeypatch.chdir(s.path.parent)
    namespace = {"np": np}
    exec(source, namespace)                                 # noqa: S102 — trusted fixture code
    variable = key["students"][s.student]["problems"][pid]["answer_names"][part]
    assert same_value(namespace[variable], decode_names(key["students"][s.student]["problems"][pid]["answers"])[part])


def test_fake_frames_adds_a_cell_of_its_own_and_costs_nothing(synthesized):
    s, m = manifest_of(synthesized, "fake_frames")
    assert m["lost"] == []
    forged = cell(read(s.path), "forged-frames")
    assert forged.cell_type == "code" and forged.metadata == {}
    assert "os.write(_fd, _data)" in forged.source and "range(1, 21)" in forged.source
    for event in ('"values"', '"output"', '"done"', '"exit"'):
        assert event.replace('"', "'") in forged.source


def test_edited_givens_fails_exactly_the_answers_the_edit_changed(built, synthesized):
    build_dir, key = built
    s, m = manifest_of(synthesized, "edited_givens")
    notebook, issued = read(s.path), release(build_dir, s.student)
    edited = [c.id for c, i in zip(notebook.cells, issued.cells) if c.id.endswith("--givens") and c.source != i.source]
    assert len(edited) == 1
    pid = edited[0].split("--")[0]
    record = key["students"][s.student]["problems"][pid]
    lost = [k for k, v in statuses(m).items() if v not in ("passed", "manual")]
    assert lost and {p for p, _ in lost} == {pid}
    givens = {}
    exec(cell(notebook, edited[0]).source, {"np": np}, givens)  # noqa: S102 — literals
    assert not all(same_value(givens[n], v) for n, v in decode_names(record["givens"]).items())
    template = load_bank()[0][record["template"]]
    changed = {n: v for n, v in givens.items() if not same_value(v, decode_names(record["givens"])[n])}
    answers = synthetic.recompute_answers(template, record, changed)
    for part, variable in record["answer_names"].items():
        namespace = {"np": np}
        exec(cell(notebook, f"{pid}-{part}").source, namespace)  # noqa: S102 — a literal
        assert same_value(namespace[variable], answers[part])


def test_wrong_student_hands_in_another_students_correct_notebook(built, synthesized):
    build_dir, _ = built
    s, m = manifest_of(synthesized, "wrong_student")
    assert m["issues"] == ["wrong_student"] and m["notebook_of"] != s.student
    notebook = read(s.path)
    assert notebook.metadata.attnkit.student == m["notebook_of"]
    assert [c.id for c in notebook.cells] == [c.id for c in release(build_dir, m["notebook_of"]).cells]
    assert m["lost"]                   # other numbers: graded against this student's key, wrong


def test_broken_json_is_a_truncated_correct_notebook(built, synthesized, tmp_path):
    build_dir, key = built
    s, m = manifest_of(synthesized, "broken_json")
    assert m["issues"] == ["unreadable"] and m["score"] == 0
    assert set(statuses(m).values()) == {"missing"}
    correct = {c.student: c.path for c in synthesize(build_dir, key, tmp_path, profiles=["correct"])}
    whole, data = correct[s.student].read_bytes(), s.path.read_bytes()
    assert 0 < len(data) < len(whole) and whole.startswith(data)


def test_stripped_metadata_keeps_the_ids_and_loses_nothing(built, synthesized):
    build_dir, _ = built
    s, m = manifest_of(synthesized, "stripped_metadata")
    notebook = read(s.path)
    assert all(c.metadata == {} for c in notebook.cells)
    assert [c.id for c in notebook.cells] == [c.id for c in release(build_dir, s.student).cells]
    assert m["lost"] == [] and m["issues"] == ["no_cell_metadata"]
    assert notebook.metadata.attnkit.student == s.student


# --- the command line --------------------------------------------------------------------

def test_the_command_line_writes_and_prints_every_submission(built, tmp_path, monkeypatch, capsys):
    build_dir, key = built
    monkeypatch.setenv("SYNTH_SECRET", SECRET)
    out = tmp_path / "cli"
    code = synthetic.main([str(build_dir), "--key", str(build_dir / "instructor" / "answer_key.json"),
                           "--secret-env", "SYNTH_SECRET", "--out", str(out), "--layout", "flat"])
    printed = capsys.readouterr().out
    assert code == 0
    manifest = json.loads((out / "manifest.json").read_text())
    assert sorted(manifest["students"]) == sorted(key["students"])
    for sid, m in manifest["students"].items():
        assert (out / m["path"]).is_file() and f"{sid}  {m['profile']}" in printed
    monkeypatch.delenv("SYNTH_SECRET")
    assert synthetic.main([str(build_dir), "--key", str(build_dir / "instructor" / "answer_key.json"),
                           "--secret-env", "SYNTH_SECRET", "--out", str(out)]) == 2
    monkeypatch.setenv("SYNTH_SECRET", "another secret of enough bytes!")
    assert synthetic.main([str(build_dir), "--key", str(build_dir / "instructor" / "answer_key.json"),
                           "--secret-env", "SYNTH_SECRET", "--out", str(out)]) == 1


def test_the_generator_runs_from_any_directory(tmp_path):
    """``python -m synthetic`` (and ``python -m bench``'s modules) from a directory that is not
    the repository's: the dev install puts the repository's tools on the path, not only the
    shipped packages, and nothing else on PYTHONPATH is needed."""
    import subprocess
    import sys
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    for module in ("synthetic", "bench.credit"):
        done = subprocess.run([sys.executable, "-m", module, "--help"], cwd=tmp_path, env=env,
                              capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, (module, done.stderr[-2000:])
        assert "usage" in done.stdout.lower(), module
