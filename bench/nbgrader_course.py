"""Running the real nbgrader on a course folder, hermetically: no network, nothing read from
or written to the user's Jupyter configuration. Used by the interop tests and the benchmarks.

nbgrader is started as ``python -m nbgrader`` with this interpreter, so the kernel it runs
notebooks in is this environment's python (with NumPy); ``alembic``, which nbgrader runs
from PATH when it creates a gradebook, comes from the same environment.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path


def hermetic_env(scratch: Path) -> dict:
    """Environment variables that keep Jupyter, IPython and matplotlib inside ``scratch``."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("JUPYTER", "IPYTHON")) and k != "PYTHONPATH"}
    dirs = {name: Path(scratch) / name for name in ("home", "jcfg", "jdata", "jrun", "ipython", "mpl", "tmp")}
    for d in dirs.values():
        d.mkdir(parents=True, exist_ok=True)
    env.update(HOME=str(dirs["home"]), JUPYTER_CONFIG_DIR=str(dirs["jcfg"]),
               JUPYTER_DATA_DIR=str(dirs["jdata"]), JUPYTER_RUNTIME_DIR=str(dirs["jrun"]),
               IPYTHONDIR=str(dirs["ipython"]), MPLCONFIGDIR=str(dirs["mpl"]), TMPDIR=str(dirs["tmp"]),
               JUPYTER_NO_CONFIG="1",          # the course's nbgrader_config.py still loads
               JUPYTER_PREFER_ENV_PATH="1", JUPYTER_PLATFORM_DIRS="1", PYTHONDONTWRITEBYTECODE="1",
               PATH=os.path.dirname(sys.executable) + os.pathsep + os.environ.get("PATH", ""))
    return env


def nbgrader(args: list[str], course: Path, env: dict, timeout: float = 600):
    """(completed process, seconds) of ``nbgrader ARGS`` run in ``course``."""
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "nbgrader", *args], cwd=course, env=env,
                          capture_output=True, text=True, timeout=timeout)
    return done, time.perf_counter() - started
