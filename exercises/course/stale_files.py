"""Stale files: those an earlier build wrote in ``OUT`` for students the new answer key does
not hold (a smaller roster, or a student whose variant failed this time), listed after a
build and removed on request — those files only (and a student's folder once it is empty),
never anything else in ``OUT``."""

from __future__ import annotations

from pathlib import Path


def student_of(path: str) -> str:
    """The student a stale file (OUT-relative, as ``stale_files`` lists it) belongs to."""
    parts = Path(path).parts
    if parts[0] == "print" or parts[:2] == ("instructor", "print"):
        return Path(parts[-1]).stem                  # print/<student>.html
    return parts[-2]                                 # release/<student>/<assignment>.ipynb


def stale_files(out: Path, assignment_id: str, students: set[str]) -> list[str]:
    """The files of this assignment a build writes per student (``release/<s>/<id>.ipynb``,
    ``instructor/notebooks/<s>/<id>.ipynb``, ``print/<s>.html``,
    ``instructor/print/<s>.html``) that exist in ``out`` for a student not in ``students``,
    OUT-relative and sorted. Symbolic links are never listed (nor followed)."""
    out = Path(out)
    name = f"{assignment_id}.ipynb"
    found = []
    for folder in ("release", "instructor/notebooks"):
        base = out / folder
        if not base.is_dir() or base.is_symlink():
            continue
        for student in sorted(base.iterdir()):
            file = student / name
            if student.name not in students and not student.is_symlink() and student.is_dir() \
                    and file.is_file() and not file.is_symlink():
                found.append(f"{folder}/{student.name}/{name}")
    for folder in ("print", "instructor/print"):
        base = out / folder
        if not base.is_dir() or base.is_symlink():
            continue
        for file in sorted(base.iterdir()):
            if file.suffix == ".html" and file.stem not in students and file.is_file() \
                    and not file.is_symlink():
                found.append(f"{folder}/{file.name}")
    return sorted(found)


def remove_files(out: Path, stale: list[str]) -> list[str]:
    """Remove the ``stale`` files (and each student folder they leave empty); the ones
    removed. A file that cannot be removed stays listed as stale only."""
    removed = []
    for path in stale:
        file = Path(out) / path
        try:
            file.unlink()
        except OSError:        # gone already, or not ours to remove: it stays listed as stale
            continue
        removed.append(path)
        if file.suffix == ".ipynb":          # release/<student>/: the student's own folder
            try:
                file.parent.rmdir()          # only if empty: a student's own files stay
            except OSError:
                pass
    return removed
