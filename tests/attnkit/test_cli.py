"""The ``attnkit`` command as a user runs it: a real subprocess."""

import subprocess
import sys
from pathlib import Path

import pytest

import attnkit


def run(*args):
    return subprocess.run([sys.executable, "-m", "attnkit", *args], capture_output=True,
                          text=True, timeout=60)


def test_version():
    result = run("--version")
    assert result.returncode == 0
    assert result.stdout.strip() == f"attnkit {attnkit.__version__}"


def test_help_lists_the_commands():
    result = run("--help")
    assert result.returncode == 0
    assert "demo" in result.stdout and "commands" in result.stdout


def test_no_command_prints_help_and_fails():
    result = run()
    assert result.returncode == 2
    assert "usage: attnkit" in result.stdout


def test_unknown_command_fails_with_a_usage_error():
    result = run("frobnicate")
    assert result.returncode == 2
    assert "invalid choice" in result.stderr


def test_demo_prints_the_walkthrough():
    result = run("demo")
    assert result.returncode == 0
    assert "The dog ran fast" in result.stdout
    assert "110/√768 = 3.97" in result.stdout


def test_console_script_is_installed():
    script = Path(sys.executable).parent / "attnkit"
    if not script.exists():
        pytest.skip("not running inside the project's virtualenv (make test creates it)")
    result = subprocess.run([str(script), "--version"], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0 and "attnkit" in result.stdout


def test_misconceptions_lists_every_twin_by_function():
    from solutions import TWINS

    result = run("misconceptions")
    assert result.returncode == 0
    for name in TWINS:
        assert name in result.stdout
    assert "scaled_dot_product_attention:" in result.stdout


def test_misconceptions_json_for_one_function():
    import json

    result = run("misconceptions", "causal_mask", "--json")
    assert result.returncode == 0
    twins = json.loads(result.stdout)
    from solutions import twins_for
    assert [t["name"] for t in twins] == [m.name for m in twins_for("causal_mask")]
    assert {"causal_mask_triu", "causal_mask_no_diagonal", "causal_mask_inverted"} <= {t["name"] for t in twins}
    assert all(t["explanation"] and t["code"] for t in twins)


def test_misconceptions_for_an_unknown_function_fails_and_lists_the_known_ones():
    result = run("misconceptions", "no_such_function")
    assert result.returncode == 1
    assert "causal_mask" in result.stderr


def test_a_local_cluster_is_seen_before_the_command_line_is_parsed():
    # (main starts its fork server and imports Dask before the commands' own imports)
    from attnkit.cli import local_cluster_asked
    assert local_cluster_asked(["grade", "a.yaml", "subs", "--cluster", "local:2"]) == "local:2"
    assert local_cluster_asked(["build", "a.yaml", "--cluster=local:4", "--jobs", "2"]) == "local:4"
    assert local_cluster_asked(["grade", "a.yaml", "subs", "--cluster", "tcp://10.0.0.1:8786"]) is None
    assert local_cluster_asked(["grade", "a.yaml", "subs", "--cluster"]) is None
    assert local_cluster_asked(["grade", "local:2", "subs"]) is None


def test_the_command_line_module_imports_no_command_until_asked():
    code = ("import sys, attnkit.cli; print(sorted(m for m in ('numpy', 'attnkit.grade_commands', "
            "'grader.run.workers') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
