"""Scratch folders: a killed run's are removed by the next run of that kind, and nothing else."""

import os
import signal
import subprocess
import sys
from pathlib import Path

from grader.run.scratch import LOCK, scratch, sweep

ROOT = Path(__file__).resolve().parents[3]


def _killed_run(tmp_path, kind: str) -> Path:
    """The folder a run of ``kind`` left when it was killed with SIGKILL inside scratch()."""
    code = ("import os, signal, sys; sys.path.insert(0, sys.argv[1])\n"
            "from grader.run.scratch import scratch\n"
            f"with scratch({kind!r}) as f:\n"
            "    os.makedirs(os.path.join(f, '0'))\n"
            "    open(os.path.join(f, '0', 'notebook.ipynb'), 'w').write('a student notebook')\n"
            "    print(f, flush=True); os.kill(os.getpid(), signal.SIGKILL)")
    done = subprocess.run([sys.executable, "-c", code, str(ROOT)], capture_output=True, text=True,
                          env={**os.environ, "TMPDIR": str(tmp_path)})
    assert done.returncode == -signal.SIGKILL
    left = Path(done.stdout.strip())
    assert left.parent == tmp_path and (left / "0" / "notebook.ipynb").exists()
    return left


def test_a_killed_runs_folder_is_removed_by_the_next_sweep_and_nothing_else(tmp_path):
    left = _killed_run(tmp_path, "shard")
    other_kind = _killed_run(tmp_path, "grade")
    starting = tmp_path / f"attnkit-shard-{os.getpid()}-nolockyet"       # its lock not named yet
    starting.mkdir()
    (starting / (LOCK + ".new")).write_text("")
    lookalike = tmp_path / "attnkit-shard-12-abc.d"                        # not the pattern
    lookalike.mkdir()
    (lookalike / LOCK).write_text("")
    link = tmp_path / "attnkit-shard-12-link"                              # a link is never followed
    link.symlink_to(left)
    assert sweep("shard", tmp_path) == [left]
    assert not left.exists()
    assert all(p.exists() for p in (other_kind, starting, lookalike)) and link.is_symlink()


def test_a_running_runs_folder_is_kept_whatever_its_pid_says(tmp_path, monkeypatch):
    """A live run's lock is held, even where the pid in its name means another process
    (another pid namespace): the sweep leaves it."""
    monkeypatch.setattr("tempfile.tempdir", str(tmp_path))
    with scratch("shard") as folder:
        renamed = tmp_path / "attnkit-shard-999999-abc123"       # a pid that does not exist here
        os.rename(folder, renamed)
        assert sweep("shard", tmp_path) == []
        assert renamed.exists()
        os.rename(renamed, folder)                 # (for the block's own clean-up)


def test_a_scratch_folder_is_private_named_by_its_process_and_removed_after():
    with scratch("grade") as folder:
        assert os.path.basename(folder).startswith(f"attnkit-grade-{os.getpid()}-")
        assert os.stat(folder).st_mode & 0o777 == 0o700
    assert not os.path.exists(folder)
