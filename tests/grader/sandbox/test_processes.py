"""Server processes started on their own (before NumPy is imported) and handed to a Sandbox."""

import subprocess
import sys

from grader.sandbox.client import Sandbox
from grader.sandbox.processes import Limits, start_servers
from grader.sandbox.protocol import exec_step, send_step


def test_started_servers_are_the_ones_the_sandbox_uses():
    limits = Limits(wall_seconds=5)
    started = start_servers(1, limits)
    with Sandbox(2, limits, started=started) as box:
        assert box._servers[0].os_process is started[0] and len(box._servers) == 2
        result = box.run([exec_step("x", "x = 6 * 7"), send_step("p", ["x"])])
        assert result.values == {"p": {"x": 42}}
    assert not started[0].alive


def test_the_launcher_does_not_import_numpy():
    code = ("import sys\nimport grader.sandbox.processes\n"
            "print('numpy' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
