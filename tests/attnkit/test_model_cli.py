"""``attnkit model`` as a user runs it (a real subprocess): train, show, attention."""

import json
import subprocess
import sys

import pytest


def run(*args, cwd=None):
    return subprocess.run([sys.executable, "-m", "attnkit", "model", *args], capture_output=True,
                          text=True, timeout=300, cwd=cwd)


def test_train_writes_the_weights_and_their_description(tmp_path):
    result = run("train", "copy", "--steps", "3", "--out", str(tmp_path), "--json")
    assert result.returncode == 0, result.stderr
    described = json.loads(result.stdout)
    assert described["recipe"]["steps"] == 3 and described["recipe"]["task"] == "copy"
    assert described["digest"].startswith("sha256:") and described["parameters"] > 20_000
    assert (tmp_path / "copy.npz").is_file()
    assert json.loads((tmp_path / "copy.json").read_text()) == described
    shown = run("show", str(tmp_path / "copy.json"), "--json")
    assert shown.returncode == 0 and json.loads(shown.stdout)["held_out_exact_match_now"] < 0.5


def test_show_names_the_architecture_and_the_held_out_accuracy():
    result = run("show", "reverse")
    assert result.returncode == 0, result.stderr
    assert "2 encoder + 1 decoder layers, d_model 32, 4 heads" in result.stdout
    assert "held-out exact match: 100.0 %" in result.stdout
    assert "parameters:   31,181" in result.stdout


def test_an_unknown_model_fails_and_lists_the_banks():
    result = run("show", "transpose")
    assert result.returncode == 1
    assert "no such model" in result.stderr and "copy, reverse, sort" in result.stderr


def test_attention_prints_the_answer_and_every_head(tmp_path):
    page = tmp_path / "reverse.html"
    result = run("attention", "reverse", "31415", "--html", str(page))
    assert result.returncode == 0, result.stderr
    assert "answer: 5 1 4 1 3 <eos>" in result.stdout
    assert result.stdout.count("attention, head") == 16
    html = page.read_text()
    assert html.count('<svg class="heatmap"') == 16
    assert "http" not in html.replace('name="viewport"', "")        # nothing fetched: it opens offline


@pytest.mark.parametrize("text", ["31a15", "1"])
def test_attention_refuses_what_the_task_does_not_take(text):
    result = run("attention", "reverse", text)
    assert result.returncode == 1
    assert "give 3 to 8 digits" in result.stderr


def test_train_needs_an_out_folder_and_a_seed_of_at_least_0(tmp_path):
    assert run("train", "copy", "--steps", "2").returncode == 2          # the bank's models stay
    result = run("train", "copy", "--steps", "2", "--out", str(tmp_path), "--seed", "-1")
    assert result.returncode == 2 and "below 0" in result.stderr


def test_a_description_without_its_recipe_is_refused_with_its_name(tmp_path):
    assert run("train", "copy", "--steps", "2", "--out", str(tmp_path)).returncode == 0
    described = json.loads((tmp_path / "copy.json").read_text())
    del described["recipe"]
    (tmp_path / "copy.json").write_text(json.dumps(described))
    for command in (("show", str(tmp_path / "copy.json")), ("attention", str(tmp_path / "copy"), "123")):
        result = run(*command)
        assert result.returncode == 1, result.stderr
        assert "no recipe" in result.stderr and "Traceback" not in result.stderr


def test_model_help_reads_well():
    result = run("--help")
    assert result.returncode == 0
    for word in ("train", "show", "attention", "examples:"):
        assert word in result.stdout
