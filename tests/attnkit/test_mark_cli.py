"""``attnkit mark``: its help, the routing of ``mark ASSIGNMENT`` to ``serve``, the printed URL
with its token, Ctrl-C (SIGINT) as a clean stop, and clear errors for bad arguments."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from attnkit.cli import main
from tests.children import sigint_default

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "problem_bank" / "assignments" / "example.yaml"


def run(capsys, *argv) -> tuple[int, str, str]:
    try:
        code = main(list(argv))
    except SystemExit as exit_:
        code = exit_.code
    out, err = capsys.readouterr()
    return code, out, err


def test_mark_help_names_its_subcommands_and_the_default(capsys):
    code, out, _ = run(capsys, "mark", "--help")
    assert code == 0
    for word in ("serve", "export", "import", "attnkit mark ASSIGNMENT.yaml --build DIR", "127.0.0.1", "Ctrl-C"):
        assert word in out
    code, out, _ = run(capsys, "--help")
    assert "mark" in out and "grade by hand" in out


def test_each_subcommand_has_its_own_help(capsys):
    code, out, _ = run(capsys, "mark", "serve", "--help")
    assert code == 0 and "--port" in out and "--grader" in out and "--no-browser" in out
    code, out, _ = run(capsys, "mark", "export", "--help")
    assert code == 0 and "--out" in out and "PROBLEM/PART" in out
    code, out, _ = run(capsys, "mark", "import", "--help")
    assert code == 0 and "--apply" in out and "SHEET.csv" in out


def test_mark_alone_prints_its_help_and_fails(capsys):
    code, _, err = run(capsys, "mark")
    assert code == 2 and "SUBCOMMAND" in err


@pytest.mark.parametrize("argv,code,message", [
    (("mark", str(EXAMPLE)), 2, "give --build DIR"),
    (("mark", str(EXAMPLE), "--build", "/nonexistent", "--port", "70000"), 2, "a port is 0 to 65535"),
    (("mark", str(EXAMPLE), "--build", "/nonexistent", "--port", "http"), 2, "not a port number"),
    (("mark", "export", str(EXAMPLE), "--build", "/nonexistent"), 2, "--out"),
    (("mark", "export", str(EXAMPLE), "--build", "/nonexistent", "--out", "x.csv", "--part", "motivation"),
     1, "give PROBLEM/PART"),
    (("mark", "nonexistent.yaml", "--build", "/nonexistent"), 1, "nonexistent.yaml"),
])
def test_bad_arguments_exit_non_zero_with_a_clear_message(capsys, argv, code, message):
    got, _, err = run(capsys, *argv)
    assert got == code
    assert message in err


def test_a_missing_gradebook_and_a_missing_sheet_are_named(capsys, graded_class, tmp_path, monkeypatch):
    out, _, gradebook, secret = graded_class(12)
    monkeypatch.setenv("ATTNKIT_SECRET", secret)
    code, _, err = run(capsys, "mark", str(EXAMPLE), "--build", str(out), "--gradebook", str(tmp_path / "none.sqlite"))
    assert code == 1 and "none.sqlite: no gradebook yet" in err
    code, _, err = run(capsys, "mark", "import", str(EXAMPLE), str(tmp_path / "sheet.csv"), "--build", str(out),
                       "--gradebook", str(gradebook))
    assert code == 1 and "sheet.csv: no such file" in err


def test_serve_prints_the_url_with_its_token_and_stops_cleanly_on_sigint(graded_class, tmp_path):
    out, _, gradebook, secret = graded_class(12)
    copy = tmp_path / "gradebook.sqlite"
    shutil.copy(gradebook, copy)
    proc = subprocess.Popen([sys.executable, "-m", "attnkit", "mark", str(EXAMPLE), "--build", str(out),
                             "--gradebook", str(copy), "--no-browser"], cwd=ROOT,
                            env={**os.environ, "ATTNKIT_SECRET": secret}, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, preexec_fn=sigint_default)
    try:
        lines = []
        for line in proc.stdout:
            lines.append(line)
            if line.strip().startswith("http://"):
                break
        url = lines[-1].strip()
        assert url.startswith("http://127.0.0.1:") and "/?token=" in url and len(url.split("token=")[1]) >= 43
        assert any("every grade is scored under the current rubric" in line or "re-scored" in line for line in lines)
        with urllib.request.urlopen(url, timeout=30) as response:
            assert response.status == 200 and b"mark.js" in response.read()
        proc.send_signal(signal.SIGINT)
        rest, err = proc.communicate(timeout=30)
    finally:
        proc.kill()
    assert proc.returncode == 0, err
    assert "attnkit mark: stopped" in rest
    assert "Traceback" not in err


def test_export_then_import_of_an_unchanged_sheet_changes_nothing(capsys, graded_class, tmp_path, monkeypatch):
    out, _, gradebook, secret = graded_class(12)
    monkeypatch.setenv("ATTNKIT_SECRET", secret)
    copy = tmp_path / "gradebook.sqlite"
    shutil.copy(gradebook, copy)
    sheet = tmp_path / "sheet.csv"
    common = ("--build", str(out), "--gradebook", str(copy))
    code, printed, err = run(capsys, "mark", "export", str(EXAMPLE), *common, "--out", str(sheet),
                             "--part", "motivation/static")
    assert code == 0, err
    assert printed.startswith("wrote 12 rows to") and sheet.is_file()
    code, printed, err = run(capsys, "mark", "import", str(EXAMPLE), str(sheet), *common)
    assert code == 0, err
    assert "0 to change, 12 unchanged, 0 refused" in printed
    code, printed, err = run(capsys, "mark", "import", str(EXAMPLE), str(sheet), *common, "--apply")
    assert code == 0 and "saved 0 grades" in printed


def test_the_browser_is_opened_through_a_private_redirect_file_never_with_the_token(graded_class, tmp_path):
    """A browser started with the URL would show the token to every user in ``ps``: the
    command line holds a file only this user can read, which redirects to the page."""
    out, _, gradebook, secret = graded_class(12)
    copy = tmp_path / "gradebook.sqlite"
    shutil.copy(gradebook, copy)
    seen = tmp_path / "browser-argv.txt"
    fake = tmp_path / "fake-browser"
    fake.write_text(f"#!/bin/sh\nprintf '%s\\n' \"$@\" > {seen}\ncat \"${{1#file://}}\" >> {seen}\n")
    fake.chmod(0o755)
    proc = subprocess.Popen([sys.executable, "-m", "attnkit", "mark", str(EXAMPLE), "--build", str(out),
                             "--gradebook", str(copy)], cwd=ROOT,
                            env={**os.environ, "ATTNKIT_SECRET": secret, "BROWSER": f"{fake} %s"},
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            preexec_fn=sigint_default)
    try:
        url = next(line.strip() for line in proc.stdout if line.strip().startswith("http://"))
        token = url.split("token=")[1]
        for _ in range(300):
            if seen.exists() and "refresh" in seen.read_text():
                break
            time.sleep(0.1)                        # (waiting for the browser to start)
        argv, *page = seen.read_text().splitlines()
        redirect = Path(argv.removeprefix("file://"))
        assert token not in argv and redirect.name.startswith("attnkit-mark-")
        assert (redirect.stat().st_mode & 0o777) == 0o600
        assert token in "".join(page) and "http-equiv=\"refresh\"" in "".join(page)
        proc.send_signal(signal.SIGINT)
        proc.communicate(timeout=30)
    finally:
        proc.kill()
    assert proc.returncode == 0 and not redirect.exists()       # tidied at the stop
