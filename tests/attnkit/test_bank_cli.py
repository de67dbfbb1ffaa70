"""``attnkit bank list|show|validate`` and ``attnkit preview``, run in-process on small banks
written to a temporary directory (the real problem_bank/ grows while others work on it)."""

import json
import re
import shutil
import textwrap
from pathlib import Path

import pytest

from exercises.template.objectives import OBJECTIVES
from exercises.template.schema import load_template
from exercises.variant.draw import make_variant
from attnkit.cli import main

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"

ROOT = """
    id: square_root
    title: The scale factor
    objective: scaling
    kind: numeric
    tags: [by-hand]
    parameters:
      d_k: {dist: choice, values: [4, 16, 64]}
    prompt: What is $\\sqrt{d_k}$ for $d_k = {{ d_k }}$?
    parts:
      - {id: root, answer: sqrt(d_k), points: 1, atol: 0.001}
    solution: $\\sqrt{ {{- d_k -}} } = {{ root | num }}$.
"""

WEIGHTS = """
    id: two_token_weights
    title: Attention weights for two tokens
    objective: self_attention
    kind: numeric
    parameters:
      Q: {dist: int_matrix, shape: [2, 2], low: -1, high: 2}
      K: {dist: int_matrix, shape: [2, 2], low: -1, high: 2}
    derived:
      steps: scaled_dot_product_attention(Q, K, K, return_steps=True)
    constraints:
      - expr: max(abs(steps.raw_scores)) <= 4
        why: small numbers
    prompt: Compute $\\text{softmax}(QK^\\top / \\sqrt{2})$ for the givens.
    parts:
      - id: weights
        prompt: The weights, row by row.
        answer: steps.weights
        points: 2
        atol: 0.005
        checks: [rows_sum_to_one]
        misconceptions: [sdpa_no_scale]
      - id: scores
        answer: steps.raw_scores
        points: 1
    solution: |
      $$QK^\\top = {{ steps.raw_scores | matrix }}$$
"""


def write(directory: Path, name: str, source: str) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / name
    path.write_text(textwrap.dedent(source).lstrip(), encoding="utf-8")
    return path


@pytest.fixture
def good_bank(tmp_path, monkeypatch):
    """tmp/bank with two valid templates; the working directory is tmp, so paths read bank/…"""
    write(tmp_path / "bank", "root.yaml", ROOT)
    write(tmp_path / "bank", "weights.yaml", WEIGHTS)
    monkeypatch.chdir(tmp_path)
    return "bank"


def run(capsys, *args):
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


# --- attnkit bank ---------------------------------------------------------------------------

def test_bank_without_a_subcommand_prints_help_and_exits_2(capsys):
    code, out, _ = run(capsys, "bank")
    assert code == 2
    assert out.startswith("usage: attnkit bank")
    for command in ("list", "show", "validate"):
        assert re.search(rf"^\s+{command}\s", out, re.M)


# --- bank list ------------------------------------------------------------------------------

def test_bank_list_table(capsys, good_bank):
    code, out, err = run(capsys, "bank", "list", "--bank", good_bank)
    assert code == 0 and err == ""
    assert out == (
        "id                 objective       kind     points  title\n"
        "square_root        scaling         numeric       1  The scale factor\n"
        "two_token_weights  self_attention  numeric       3  Attention weights for two tokens\n"
        "\n"
        "2 templates covering 2 of 6 objectives\n")


def test_bank_list_json(capsys, good_bank):
    code, out, _ = run(capsys, "bank", "list", "--json", "--bank", good_bank)
    assert code == 0
    assert json.loads(out) == [
        {"id": "square_root", "objective": "scaling", "kind": "numeric", "points": 1.0,
         "title": "The scale factor", "path": "bank/root.yaml"},
        {"id": "two_token_weights", "objective": "self_attention", "kind": "numeric",
         "points": 3.0, "title": "Attention weights for two tokens", "path": "bank/weights.yaml"},
    ]


def test_bank_list_reports_broken_templates_and_fails(capsys, good_bank, tmp_path):
    shutil.copy(FIXTURES / "bad_templates" / "unknown_kind.yaml", tmp_path / "bank")
    code, out, err = run(capsys, "bank", "list", "--bank", good_bank)
    assert code == 1
    assert "square_root" in out and "two_token_weights" in out
    assert err == ("attnkit: bank/unknown_kind.yaml:4: kind: unknown kind 'essay' "
                   "(expected one of: numeric, implement, choice, free_response)\n")


def test_bank_list_of_the_built_in_bank_has_the_examples(capsys):
    code, out, _ = run(capsys, "bank", "list", "--json")
    ids = {row["id"] for row in json.loads(out)}
    assert {"sdpa_four_tokens", "implement_masked_attention", "alignment_learnable"} <= ids


# --- bank show ------------------------------------------------------------------------------

def test_bank_show_text(capsys, good_bank):
    code, out, _ = run(capsys, "bank", "show", "two_token_weights", "--bank", good_bank)
    assert code == 0
    assert out.startswith("Attention weights for two tokens\n"
                          "  id two_token_weights · numeric · 3 points · bank/weights.yaml\n")
    assert f"  objective: self_attention — {OBJECTIVES['self_attention']}\n" in out
    assert "  parameters: Q (int_matrix), K (int_matrix)\n" in out
    assert "  derived: steps\n" in out
    assert "  constraint: max(abs(steps.raw_scores)) <= 4\n" in out
    assert ("  part weights: 2 pt atol 0.005 rtol 1e-05; diagnoses sdpa_no_scale; "
            "checks rows_sum_to_one\n") in out
    assert "  part scores: 1 pt atol 1e-08 rtol 1e-05\n" in out
    assert out.endswith("  attnkit preview two_token_weights --seed 0 --solution   # see a variant\n")


def test_bank_show_json(capsys, good_bank):
    code, out, _ = run(capsys, "bank", "show", "square_root", "--json", "--bank", good_bank)
    assert code == 0
    assert json.loads(out) == {
        "id": "square_root", "title": "The scale factor", "objective": "scaling",
        "objective_text": OBJECTIVES["scaling"], "kind": "numeric", "points": 1.0,
        "path": "bank/root.yaml", "tags": ["by-hand"], "parameters": {"d_k": "choice"},
        "derived": [], "givens": ["d_k"], "constraints": [],
        "parts": [{"id": "root", "points": 1.0, "rtol": 1e-05, "atol": 0.001,
                   "misconceptions": [], "checks": [], "rubric": None}],
    }


ESSAY = """
    id: essay
    title: Why scale
    objective: scaling
    kind: free_response
    parameters:
      d_k: {dist: choice, values: [4, 16]}
    prompt: Why divide by $\\sqrt{d_k}$ when $d_k = {{ d_k }}$?
    parts:
      - id: why
        points: 2
        rubric:
          guide: |
            Variance {{ d_k }}
            restored to 1.
          items:
            - id: variance
              points: 1.5
              text: The dot products have variance {{ d_k }}.
              note: |
                Also accept
                "grows with d_k".
            - {id: softmax, points: 0.5, text: Saturated softmax.}
            - {id: wrong_root, points: -1, text: Not the square root.}
      - id: deducted
        points: 1
        rubric:
          start: full
          items:
            - {id: sloppy, points: -0.5, text: Sloppy notation.}
      - id: plain
        points: 1
        rubric: Any clear reason.
"""


def test_bank_show_lists_each_parts_rubric(capsys, tmp_path, monkeypatch):
    write(tmp_path / "bank", "essay.yaml", ESSAY)
    monkeypatch.chdir(tmp_path)
    code, out, _ = run(capsys, "bank", "show", "essay", "--bank", "bank")
    assert code == 0
    rubrics = load_template(tmp_path / "bank" / "essay.yaml").parts
    assert (
        "  part why: 2 pt\n"
        f"    rubric: score 0 to 2, starting at 0; version {rubrics[0].rubric.version}\n"
        "      guide: Variance {{ d_k }} restored to 1.\n"
        "      [1] variance +1.5: The dot products have variance {{ d_k }}.\n"
        '          graders only: Also accept "grows with d_k".\n'
        "      [2] softmax +0.5: Saturated softmax.\n"
        "      [3] wrong_root -1: Not the square root.\n"
        "  part deducted: 1 pt\n"
        f"    rubric: score 0 to 1, starting at 1; version {rubrics[1].rubric.version}\n"
        "      [1] sloppy -0.5: Sloppy notation.\n"
        "  part plain: 1 pt\n"
        "    rubric: a guide only, scored by the grader's adjustment (score 0 to 1)\n"
        "      guide: Any clear reason.\n") in out


def test_bank_show_json_has_each_rubric_as_data(capsys, tmp_path, monkeypatch):
    write(tmp_path / "bank", "essay.yaml", ESSAY)
    monkeypatch.chdir(tmp_path)
    code, out, _ = run(capsys, "bank", "show", "essay", "--json", "--bank", "bank")
    assert code == 0
    parts = {p["id"]: p["rubric"] for p in json.loads(out)["parts"]}
    version = load_template(tmp_path / "bank" / "essay.yaml").parts[0].rubric.version
    assert parts["why"] == {
        "items": [{"id": "variance", "points": 1.5, "text": "The dot products have variance {{ d_k }}.",
                   "note": 'Also accept\n"grows with d_k".\n'},
                  {"id": "softmax", "points": 0.5, "text": "Saturated softmax.", "note": ""},
                  {"id": "wrong_root", "points": -1.0, "text": "Not the square root.", "note": ""}],
        "floor": 0.0, "ceiling": 2.0, "start": 0.0, "guide": "Variance {{ d_k }}\nrestored to 1.\n",
        "version": version}
    assert (parts["deducted"]["start"], parts["deducted"]["ceiling"]) == (1.0, 1.0)
    assert parts["plain"]["items"] == [] and parts["plain"]["guide"] == "Any clear reason."


def test_bank_show_marks_an_auto_graded_parts_rubric_as_for_overrides(capsys, tmp_path, monkeypatch):
    write(tmp_path / "bank", "root.yaml", ROOT.replace(
        "      - {id: root, answer: sqrt(d_k), points: 1, atol: 0.001}\n",
        "      - id: root\n        answer: sqrt(d_k)\n        points: 1\n        rubric:\n"
        "          items:\n            - {id: method, points: 0.5, text: Right method.}\n"))
    monkeypatch.chdir(tmp_path)
    code, out, _ = run(capsys, "bank", "show", "square_root", "--bank", "bank")
    assert code == 0
    version = load_template(tmp_path / "bank" / "root.yaml").parts[0].rubric.version
    assert ("    rubric (for a grader's override of the automatic score): score 0 to 1; "
            f"version {version}\n"
            "      [1] method +0.5: Right method.\n") in out


def test_bank_show_by_path(capsys, good_bank):
    code, out, _ = run(capsys, "bank", "show", "bank/root.yaml", "--json")
    assert code == 0 and json.loads(out)["id"] == "square_root"


def test_bank_show_unknown_id_suggests_the_closest(capsys, good_bank):
    code, out, err = run(capsys, "bank", "show", "square_rot", "--bank", good_bank)
    assert code == 1 and out == ""
    assert err == "attnkit: unknown problem 'square_rot'; did you mean: square_root?\n"


def test_bank_show_unknown_id_without_a_close_match(capsys, good_bank):
    code, _, err = run(capsys, "bank", "show", "zzz", "--bank", good_bank)
    assert code == 1
    assert err == "attnkit: unknown problem 'zzz'; see 'attnkit bank list'\n"


def test_bank_show_a_broken_path_names_file_and_line(capsys, monkeypatch, tmp_path):
    monkeypatch.chdir(FIXTURES)
    empty_bank = str(tmp_path)  # so that only the named file's problem is printed
    code, out, err = run(capsys, "bank", "show", "bad_templates/missing_points.yaml",
                         "--bank", empty_bank)
    assert code == 1 and out == ""
    assert err == "attnkit: bad_templates/missing_points.yaml:9: parts[0].points: required\n"


def test_bank_show_implement_from_the_built_in_bank(capsys):
    code, out, _ = run(capsys, "bank", "show", "implement_masked_attention", "--json")
    assert code == 0
    summary = json.loads(out)
    assert summary["kind"] == "implement" and summary["reference"] == "scaled_dot_product_attention"
    assert summary["function"].startswith("masked_attention(")
    assert summary["tests"] and all(set(t) == {"family", "cases", "points"} for t in summary["tests"])


# --- bank validate --------------------------------------------------------------------------

def test_bank_validate_good_templates(capsys, good_bank):
    code, out, err = run(capsys, "bank", "validate", "--seeds", "5", good_bank)
    assert code == 0, err
    lines = out.splitlines()
    assert re.fullmatch(r"template\s+valid\s+rejected\s+ms/variant\s+top rejection", lines[0])
    assert re.match(r"square_root\s+5/5\s+0\.0%\s+\d+\.\d\d\s*$", lines[1])
    assert re.match(r"two_token_weights\s+5/5\s+\d+\.\d%", lines[2])
    assert lines[-1] == "2 templates × 5 seeds: 10 variants; all valid"
    assert "FAILED" not in err


def test_bank_validate_one_file(capsys, good_bank):
    code, out, _ = run(capsys, "bank", "validate", "--seeds", "3", "--first-seed", "10",
                       "bank/root.yaml")
    assert code == 0
    assert out.splitlines()[-1] == "1 template × 3 seeds: 3 variants; all valid"


def test_bank_validate_json(capsys, good_bank):
    code, out, _ = run(capsys, "bank", "validate", "--seeds", "5", "--json", good_bank)
    assert code == 0
    report = json.loads(out)
    assert report["ok"] is True and report["load_errors"] == []
    assert [t["id"] for t in report["templates"]] == ["square_root", "two_token_weights"]
    for t in report["templates"]:
        assert set(t) == {"id", "path", "seeds", "valid", "draws", "rejection_rate",
                          "ms_per_variant", "rejections", "failures"}
        assert t["seeds"] == t["valid"] == 5 and t["failures"] == []
        assert t["draws"] >= 5
        assert t["rejection_rate"] == round(1 - 5 / t["draws"], 4)
        assert sum(t["rejections"].values()) <= t["draws"] - 5
    assert report["templates"][0]["path"] == "bank/root.yaml"


def test_bank_validate_a_bad_directory_fails_with_file_and_line(capsys, monkeypatch):
    monkeypatch.chdir(FIXTURES)
    code, out, err = run(capsys, "bank", "validate", "--seeds", "2", "bad_templates")
    assert code == 1
    assert ("attnkit: bad_templates/unknown_kind.yaml:4: kind: unknown kind 'essay' "
            "(expected one of: numeric, implement, choice, free_response)\n") in err
    assert ("attnkit: bad_templates/duplicate_id_b.yaml:1: id: duplicate id 'duplicate_id' "
            "(also in bad_templates/duplicate_id_a.yaml:1)\n") in err
    assert ("attnkit: bad_templates/undefined_name_in_prompt.yaml:9: prompt: unknown name 'dk' "
            "in the text") in err
    assert ("attnkit: FAILED bad_templates/unsatisfiable_constraint.yaml: unsatisfiable_constraint: "
            "no valid variant in 20 draws for seed 1; most common rejections: constraint "
            "'x > 10' (x is at most 3) (20×)\n") in err
    every_problem = re.findall(r"^attnkit: (?!FAILED)(\S+?\.yaml)(:\d+)?: ", err, re.M)
    assert len(every_problem) >= 20
    assert re.search(r"^unsatisfiable_constraint\s+0/2\s+100\.0%", out, re.M)
    assert re.search(r"; 1 template failed, \d+ load errors$", out.splitlines()[-1])


def test_bank_validate_json_on_a_failing_template(capsys, monkeypatch):
    monkeypatch.chdir(FIXTURES)
    code, out, err = run(capsys, "bank", "validate", "--seeds", "2", "--json",
                         "bad_templates/unsatisfiable_constraint.yaml", "bad_templates/empty.yaml")
    assert code == 1
    report = json.loads(out)
    assert report["ok"] is False
    assert report["load_errors"] == ["bad_templates/empty.yaml: the file is empty"]
    (t,) = report["templates"]
    assert (t["id"], t["seeds"], t["valid"], t["draws"], t["rejection_rate"]) == \
        ("unsatisfiable_constraint", 2, 0, 40, 1.0)
    assert t["rejections"] == {"constraint 'x > 10' (x is at most 3)": 40}
    assert [f.rsplit("for seed ", 1)[1][0] for f in t["failures"]] == ["0", "1"]


def test_bank_validate_a_missing_path(capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    code, out, err = run(capsys, "bank", "validate", "nope.yaml")
    assert code == 1 and out == ""
    assert err == "attnkit: nope.yaml: no such file or directory\n"


# --- preview --------------------------------------------------------------------------------

def _d_k(seed):
    template = load_template("bank/root.yaml")
    return make_variant(template, seed).values["d_k"]


def test_preview_exact_text(capsys, good_bank):
    code, out, _ = run(capsys, "preview", "square_root", "--seed", "3", "--bank", good_bank)
    assert code == 0
    d_k = _d_k(3)
    assert out == (
        "The scale factor\n"
        "────────────────\n"
        "square_root · objective: scaling · numeric · 1 point · seed 3\n"
        "\n"
        f"What is √d_k for d_k = {d_k}?\n"
        "\n"
        "Givens\n"
        "──────\n"
        f"d_k = {d_k}\n"
        "\n"
        "(a) root  [1 pt]\n")


def test_preview_with_solution(capsys, good_bank):
    code, out, _ = run(capsys, "preview", "square_root", "--seed", "3", "--solution",
                       "--bank", good_bank)
    assert code == 0
    d_k = _d_k(3)
    root = int(d_k ** 0.5)
    assert out.endswith(
        "(a) root  [1 pt]\n"
        "\n"
        "Answers\n"
        "───────\n"
        f"(a) root = {root}   (tolerance: atol 0.001, rtol 1e-05)\n"
        "\n"
        "Worked solution\n"
        "───────────────\n"
        f"√{d_k} = {root}.\n")


def test_preview_is_deterministic_and_depends_on_the_seed(capsys, good_bank):
    outputs = []
    for seed in (0, 0, 1, 2, 3, 4):
        code, out, _ = run(capsys, "preview", "two_token_weights", "--seed", str(seed),
                           "--solution", "--bank", good_bank)
        assert code == 0
        outputs.append(out)
    assert outputs[0] == outputs[1]
    assert len(set(outputs[1:])) == 5
    assert "Answers" in outputs[0] and "Worked solution" in outputs[0]
    assert "QKᵀ = " in outputs[0] and "\\" not in outputs[0]


def test_preview_without_solution_hides_the_answers(capsys, good_bank):
    code, out, _ = run(capsys, "preview", "two_token_weights", "--seed", "2", "--bank", good_bank)
    assert code == 0
    assert "Givens" in out and "(a) weights  [2 pt]  The weights, row by row." in out
    assert "Answers" not in out and "Worked solution" not in out and "tolerance" not in out


def test_preview_markdown(capsys, good_bank):
    code, out, _ = run(capsys, "preview", "square_root", "--seed", "3", "--solution",
                       "--format", "markdown", "--bank", good_bank)
    assert code == 0
    d_k = _d_k(3)
    assert out.startswith("# The scale factor\n")
    assert f"What is $\\sqrt{{d_k}}$ for $d_k = {d_k}$?\n" in out
    assert "## Givens\n" in out and "## Answers\n" in out and "## Worked solution\n" in out
    assert out.endswith(f"$\\sqrt{{{d_k}}} = {int(d_k ** 0.5)}$.\n")


def test_preview_by_path_matches_preview_by_id(capsys, good_bank):
    _, by_id, _ = run(capsys, "preview", "two_token_weights", "--seed", "4", "--bank", good_bank)
    _, by_path, _ = run(capsys, "preview", "bank/weights.yaml", "--seed", "4")
    assert by_id == by_path


def test_preview_unknown_id(capsys, good_bank):
    code, out, err = run(capsys, "preview", "square_rot", "--bank", good_bank)
    assert code == 1 and out == ""
    assert "unknown problem 'square_rot'; did you mean: square_root?" in err


def test_preview_of_an_unsatisfiable_template_fails_cleanly(capsys, monkeypatch):
    monkeypatch.chdir(FIXTURES)
    code, out, err = run(capsys, "preview", "bad_templates/unsatisfiable_constraint.yaml",
                         "--seed", "4")
    assert code == 1 and out == ""
    assert err == ("attnkit: bad_templates/unsatisfiable_constraint.yaml: unsatisfiable_constraint: "
                   "no valid variant in 20 draws for seed 4; most common rejections: constraint "
                   "'x > 10' (x is at most 3) (20×)\n")


def test_preview_of_the_built_in_implement_problem(capsys):
    code, out, _ = run(capsys, "preview", "implement_masked_attention", "--seed", "1", "--solution")
    assert code == 0
    assert "def masked_attention(Q, K, V, mask=None):" in out
    assert "Hidden tests: " in out
    assert re.search(r"^  \w+ #0: Q: \(", out, re.M)


# --- the command line refuses impossible counts --------------------------------------------------

@pytest.mark.parametrize("argv, option", [
    (["preview", "sdpa_four_tokens", "--seed", "-1"], "--seed"),
    (["bank", "validate", "--seeds", "0"], "--seeds"),
    (["bank", "validate", "--first-seed", "-3"], "--first-seed"),
])
def test_the_cli_refuses_negative_seeds_and_zero_counts(argv, option, capsys):
    from attnkit.cli import main

    with pytest.raises(SystemExit) as caught:
        main(argv)
    assert caught.value.code == 2
    err = capsys.readouterr().err
    assert "usage:" in err and f"argument {option}" in err and "must be at least" in err


# --- a duplicate id is a failed validation, naming both files -----------------------------------

def test_bank_validate_one_file_whose_id_another_template_of_its_folder_has_fails(capsys, good_bank):
    write(Path(good_bank), "copy_of_root.yaml", ROOT)     # copied, its id left unchanged
    code, out, err = run(capsys, "bank", "validate", "--seeds", "2", "bank/copy_of_root.yaml")
    assert code == 1
    assert err == ("attnkit: bank/copy_of_root.yaml:1: id: duplicate id 'square_root' (also in "
                   "bank/root.yaml:1, in the same folder)\n")
    assert out.splitlines()[-1] == "1 template × 2 seeds: 2 variants; 1 load error"
    code, _, err = run(capsys, "bank", "validate", "--seeds", "2", "bank")      # the whole folder
    assert code == 1
    assert err == ("attnkit: bank/root.yaml:1: id: duplicate id 'square_root' (also in "
                   "bank/copy_of_root.yaml:1)\n")


def test_bank_validate_a_file_named_twice_is_no_duplicate(capsys, good_bank):
    code, out, err = run(capsys, "bank", "validate", "--seeds", "2", "bank/root.yaml",
                         "bank/root.yaml", "bank")
    assert code == 0 and err == ""
    assert out.splitlines()[-1] == "2 templates × 2 seeds: 4 variants; all valid"


def test_counts_in_messages_read_as_words_one_template_one_seed_one_case(capsys, good_bank):
    code, out, _ = run(capsys, "bank", "validate", "--seeds", "1", "bank/root.yaml")
    assert code == 0 and out.splitlines()[-1] == "1 template × 1 seed: 1 variant; all valid"
    code, out, _ = run(capsys, "bank", "list", "--bank", "bank")
    assert out.splitlines()[-1] == "2 templates covering 2 of 6 objectives"
    for line in out.splitlines():
        assert not re.search(r"\b1 \w+s\b|\(s\)|\bat at\b", line), line
