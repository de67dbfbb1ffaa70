"""``attnkit practice TEMPLATE`` in a terminal: one practice variant, answers typed as NumPy
literals and judged at once — right, a named mistake with its explanation, right given the
earlier answer — through the real command with its stdin."""

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from exercises.course.bank import load_bank
from exercises.practice.variants import practice_variants

ROOT = Path(__file__).resolve().parents[2]


def practise(*args, typed: str):
    return subprocess.run([sys.executable, "-m", "attnkit", "practice", *args], cwd=ROOT, input=typed,
                          capture_output=True, text=True, timeout=120)


def literal(value) -> str:
    return repr(np.asarray(value, dtype=float).tolist())


@pytest.fixture(scope="module")
def variant():
    return practice_variants(load_bank()[0]["sdpa_four_tokens"], 1, start=4)[0].variant


def test_each_answer_is_judged_at_once(variant):
    a = variant.answers
    typed = "\n".join([literal(a["raw_scores"]), literal(a["raw_scores"]),   # (b): the scale left out
                       "not a number", literal(a["weights"]), ""]) + "\n"
    done = practise("sdpa_four_tokens", "--variant", "4", typed=typed)
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert out.startswith("Practice variant 4 of sdpa_four_tokens (never a graded one")
    assert out.count("  right.") == 2
    assert "wrong: `scaled_scores` matches a known mistake: softmax(QKᵀ)V without the 1/√d_k scale" in out
    assert "cannot read it: not a number, a list of numbers or a letter" in out
    assert "2 of 4 parts right. Another variant: attnkit practice sdpa_four_tokens" in out


def test_a_slip_carried_forward_is_right_given_the_earlier_answer(variant):
    slip = np.asarray(variant.answers["raw_scores"], dtype=float).copy()
    slip[1, 2] += 1.0
    d_k = np.asarray(variant.values["Q"]).shape[-1]
    done = practise("sdpa_four_tokens", "--variant", "4", typed=f"{literal(slip)}\n{literal(slip / np.sqrt(d_k))}\n")
    assert "(a) raw_scores =   wrong:" in done.stdout
    assert "right given your earlier answer. " in done.stdout


def test_problems_not_answered_with_values_and_unknown_ids_are_refused():
    done = practise("implement_masked_attention", typed="")
    assert done.returncode == 1
    assert "implement_masked_attention is an implementation problem: it is answered with code" in done.stderr
    done = practise("dog_ran_fst", typed="")
    assert done.returncode == 1 and "did you mean: dog_ran_fast" in done.stderr


def test_a_fresh_variant_each_time_without_variant():
    first = practise("nsp_loss", typed="")
    second = practise("nsp_loss", typed="")
    assert first.returncode == second.returncode == 0
    assert first.stdout.splitlines()[0] != second.stdout.splitlines()[0]   # "Practice variant N of …"


# --- practice packs: built for a class, refused when handed in, their logs summed up ----------

import base64  # noqa: E402
import json  # noqa: E402
import os  # noqa: E402
import re  # noqa: E402
import shutil  # noqa: E402
import zlib  # noqa: E402

from exercises.practice.variants import givens_digest  # noqa: E402
from formats.answer_key import load_key  # noqa: E402

EXAMPLE = ROOT / "problem_bank" / "assignments" / "example.yaml"
SECRET = "practice tests' class secret, 32b"


def attnkit(*args, env):
    return subprocess.run([sys.executable, "-m", "attnkit", *args], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=600)


@pytest.fixture(scope="module")
def example_class(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("practice_class")
    env = {**os.environ, "ATTNKIT_SECRET": SECRET}
    built = attnkit("build", str(EXAMPLE), "--roster", str(ROOT / "problem_bank" / "assignments" / "sample_roster.csv"),
                    "--out", str(tmp / "build"), env=env)
    assert built.returncode == 0, built.stderr
    pack = attnkit("practice", "build", str(EXAMPLE), "--build", str(tmp / "build"), "--out", str(tmp / "pack"),
                   "--variants", "4", "--json", env=env)
    assert pack.returncode == 0, pack.stderr
    return tmp, env, json.loads(pack.stdout), load_key(tmp / "build" / "instructor" / "answer_key.json", SECRET.encode())


def carried(notebook_path) -> list[dict]:
    source = json.loads(notebook_path.read_text())["cells"][1]["source"]
    blob = re.search(r'base64.b64decode\("([^"]+)"\)\)\)\n_practice', "".join(source)).group(1)
    return json.loads(zlib.decompress(base64.b64decode(blob)))


def test_a_pack_for_the_example_assignment_holds_no_graded_students_values(example_class):
    tmp, _, pack, key = example_class
    assert [b["template"] for b in pack["built"]] == ["dog_ran_fast", "why_sqrt_dk", "causal_mask_by_hand",
                                                      "bahdanau_step_by_hand", "implement_masked_attention"]
    assert {s["template"] for s in pack["skipped"]} == {"bottleneck_free_response", "mlm_8010_choice"}
    graded = [r for e in key["students"].values() for r in e["problems"].values()]
    assert pack["graded_variants_avoided"] == len({givens_digest(r) for r in graded})
    for built in pack["built"]:
        text = json.dumps(carried(Path(built["notebook"])))
        mine = {givens_digest(v["record"]) for v in carried(Path(built["notebook"]))}
        for record in (r for r in graded if r["template"] == built["template"]):
            assert givens_digest(record) not in mine
            assert record["seed"] not in text and record["digest"] not in text
            if record["givens"]:
                assert json.dumps(record["givens"], sort_keys=True) not in text
            assert all(json.dumps(case["args"], sort_keys=True) not in text for case in record.get("tests", ()))
            # an answer that only a few small parameters decide (a mask from the lengths, a
            # standard deviation from two variances) may well recur; a float matrix may not
            assert all(json.dumps(v) not in text for v in record.get("answers", {}).values()
                       if isinstance(v, dict) and v.get("dtype") == "float64" and len(v.get("array", [])) >= 3
                       and isinstance(v["array"][0], list))
        assert SECRET not in Path(built["notebook"]).read_text()


def test_a_practice_notebook_handed_in_is_refused_with_a_clear_message(example_class):
    tmp, env, pack, _ = example_class
    handed = tmp / "subs" / "s2026001" / "attention-hw1"
    handed.mkdir(parents=True)
    shutil.copy(pack["built"][0]["notebook"], handed / "attention-hw1.ipynb")
    assert attnkit("grade", str(EXAMPLE), str(tmp / "subs"), "--build", str(tmp / "build"), "--timeout", "5",
                   env=env).returncode == 0
    report = json.loads(attnkit("report", str(EXAMPLE), "--build", str(tmp / "build"), "--json", env=env).stdout)
    student = next(s for s in report["students"] if s["id"] == "s2026001")
    assert student["total"] == 0
    assert student["notes"] == ["s2026001/attention-hw1/attention-hw1.ipynb: a practice notebook of dog_ran_fast, "
                                "not the assignment: practice is never graded and nothing in it was run; hand "
                                "in the notebook of assignment attention-hw1"]


def test_the_summary_counts_parts_and_misconceptions_from_the_logs(tmp_path):
    logs = []
    for n, attempts in enumerate([
            [("scaled_scores", "wrong", "sdpa_no_scale", True), ("scaled_scores", "right", None, False),
             ("weights", "right", None, True)],
            [("scaled_scores", "right", None, True), ("weights", "wrong", "sdpa_no_scale", True)]]):
        path = tmp_path / f"student{n}.practice-log.json"
        path.write_text(json.dumps({"format": 1, "attempts": [
            {"template": "sdpa_four_tokens", "variant": 0, "part": p, "outcome": o, "misconception": m, "first": f}
            for p, o, m, f in attempts]}))
        logs.append(str(path))
    (tmp_path / "broken.json").write_text("{")
    done = practise("summary", *logs, "--json", typed="")
    parts = {p["part"]: p for p in json.loads(done.stdout)["parts"]}
    assert parts["scaled_scores"]["attempts"] == 3 and parts["scaled_scores"]["facility"] == 0.5
    assert parts["weights"]["misconceptions"] == {"sdpa_no_scale": 1} and parts["weights"]["logs"] == 2
    done = practise("summary", *logs, str(tmp_path / "broken.json"), typed="")
    assert done.returncode == 1 and "broken.json: not a practice log (not JSON" in done.stderr
    assert "sdpa_four_tokens/scaled_scores: 2 logs, 3 attempts, facility at the first attempt 0.50" in done.stdout
    assert "1×  sdpa_no_scale — softmax(QKᵀ)V without the 1/√d_k scale" in done.stdout
