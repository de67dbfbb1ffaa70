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


def generate_in_process(course: Path, assignment: str, env: dict, repeats: int = 3) -> list[float]:
    """Seconds of nbgrader's GenerateAssignment converter itself, called ``repeats`` times in
    one warm process (no process start, no imports): the fairest baseline for nbgrader."""
    done = subprocess.run([sys.executable, "-m", "bench.nbgrader_course", str(course), assignment,
                           str(repeats)], cwd=Path(__file__).resolve().parents[1], env=env,
                          capture_output=True, text=True, timeout=600)
    if done.returncode != 0:
        raise RuntimeError(f"in-process nbgrader failed:\n{done.stderr[-2000:]}")
    return [float(x) for x in done.stdout.split()]


def _time_generate(course: str, assignment: str, repeats: int) -> None:
    from nbgrader.converters import GenerateAssignment
    from nbgrader.coursedir import CourseDirectory
    from traitlets.config import Config

    config = Config()
    config.CourseDirectory.root = course
    config.CourseDirectory.course_id = Path(course).name
    for _ in range(repeats):
        started = time.perf_counter()
        app = GenerateAssignment(coursedir=CourseDirectory(config=config, assignment_id=assignment),
                                 config=config)
        app.force = True
        app.start()
        print(time.perf_counter() - started, flush=True)


if __name__ == "__main__":
    _time_generate(sys.argv[1], sys.argv[2], int(sys.argv[3]))
