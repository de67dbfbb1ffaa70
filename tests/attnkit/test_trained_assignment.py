"""The example assignment on a trained model (problem_bank/assignments/trained.yaml) end to end
through the real commands, as ``make demo`` runs the example one: built for a class of 48,
a synthetic class handed in (right, partial, every listed misconception of its problems,
hostile), graded in the sandbox, reported. The grades are the synthetic manifest's, each
misconception is named where it was made, and no notebook or key holds the model's weights."""

import json
import math
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from formats.answer_key import load_key
from synthetic import MISCONCEPTION_PREFIX, load_manifest

ROOT = Path(__file__).resolve().parents[2]
TRAINED = ROOT / "problem_bank" / "assignments" / "trained.yaml"
ROSTER = ROOT / "problem_bank" / "assignments" / "sample_roster.csv"
SECRET = "trained class secret, tests only"
N = 48


def _run(*args, env):
    return subprocess.run([sys.executable, "-m", *args], cwd=ROOT, env=env, capture_output=True,
                          text=True, check=True)


@pytest.fixture(scope="module")
def trained_class(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("trained")
    rows = ROSTER.read_text(encoding="utf-8").splitlines()
    extra = [f"s2027{i:03d},Student {i},student{i}@example.edu" for i in range(N + 1 - len(rows))]
    (tmp / "roster.csv").write_text("\n".join(rows + extra) + "\n", encoding="utf-8")
    env = {**os.environ, "ATTNKIT_SECRET": SECRET}
    out = tmp / "build"
    _run("attnkit", "build", str(TRAINED), "--roster", str(tmp / "roster.csv"), "--out", str(out), env=env)
    _run("synthetic", str(out), "--key", str(out / "instructor" / "answer_key.json"),
         "--secret-env", "ATTNKIT_SECRET", "--out", str(out / "submissions"), env=env)
    _run("attnkit", "grade", str(TRAINED), str(out / "submissions" / "submitted"), "--build", str(out),
         "--timeout", "5", env=env)
    report = _run("attnkit", "report", str(TRAINED), "--build", str(out), "--json", env=env)
    return out, json.loads(report.stdout), load_manifest(out / "submissions")


def test_every_student_is_graded_as_the_synthetic_manifest_expects(trained_class):
    out, report, manifest = trained_class
    assert report["counts"]["graded"] == N and report["counts"]["error"] == 0
    with sqlite3.connect(out / "instructor" / "gradebook.sqlite") as con:
        scores = dict(con.execute("SELECT student, score FROM submissions"))
    wrong = {s: (scores[s], m["score"], m["profile"]) for s, m in manifest["students"].items()
             if not math.isclose(scores[s], m["score"], abs_tol=1e-9)}
    assert wrong == {}, "scores differ from the synthetic manifest (got, expected, profile)"
    correct = next(s for s in report["students"] if manifest["students"][s["id"]]["profile"] == "correct")
    assert correct["total"] == correct["max"] == 43


def test_each_misconception_is_named_on_the_part_it_was_made_in(trained_class):
    _, report, manifest = trained_class
    named = {(s["id"], p["problem"], p["part"]): p["misconception"] for s in report["students"] for p in s["parts"]}
    checked = set()
    for sid, m in manifest["students"].items():
        if not m["profile"].startswith(MISCONCEPTION_PREFIX):
            continue
        for problem, parts in m["expected"].items():
            for part, want in parts.items():
                if want["misconception"]:
                    assert named[(sid, problem, part)] == want["misconception"], (sid, problem, part)
                    checked.add(want["misconception"])
    new = {"strongest_queries", "same_position", "head_ablated_output_columns_zeroed", "kl_divergence_reversed",
           "shift_right_not_shifted", "cached_attention_top_left_mask", "decode_step_top_left_mask"}
    assert new <= checked, sorted(new - checked)


def test_the_notebooks_and_the_key_hold_what_the_model_computed_not_the_model(trained_class):
    out, _, _ = trained_class
    key = load_key(out / "instructor" / "answer_key.json", SECRET.encode())
    student = next(iter(key["students"]))
    notebook = out / "release" / student / "attention-trained.ipynb"
    assert notebook.stat().st_size < 200_000
    source = "\n".join(c.source for c in nbformat.read(notebook, as_version=4).cells)
    assert "cross_map = " in source and "ablated = " in source
    assert "W_Q" in source and "decoder.layers" not in source
    record = key["students"][student]["problems"]
    for pid in ("heads", "ablation"):
        assert len(json.dumps(record[pid])) < 60_000, pid
