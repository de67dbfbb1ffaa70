"""A test run that inherited SIGINT ignored (``nohup make test &``) still stops its children
with Ctrl-C: ``tests.children.sigint_default`` restores the default in each child."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

PARENT = textwrap.dedent("""
    import signal, subprocess, sys, time
    from tests.children import sigint_default
    signal.signal(signal.SIGINT, signal.SIG_IGN)        # as a background shell leaves it
    child = subprocess.Popen([sys.executable, "-c", "import sys, time; print('up', flush=True); time.sleep(60)"],
                             stdout=subprocess.PIPE, text=True,
                             preexec_fn=sigint_default if sys.argv[1] == "reset" else None)
    child.stdout.readline()
    child.send_signal(signal.SIGINT)
    try:
        print(child.wait(timeout=10))
    except subprocess.TimeoutExpired:
        child.kill()
        print("ignored")
""")


def _child_after_ctrl_c(mode: str) -> str:
    done = subprocess.run([sys.executable, "-c", PARENT, mode], cwd=ROOT, capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def test_a_child_started_with_sigint_default_stops_on_ctrl_c_under_an_ignoring_parent():
    assert _child_after_ctrl_c("reset") == "-2"     # an uncaught KeyboardInterrupt ends by SIGINT


def test_without_it_the_child_inherits_the_ignored_sigint():
    assert _child_after_ctrl_c("inherit") == "ignored"
