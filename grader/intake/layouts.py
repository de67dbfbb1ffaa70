"""Finding the notebooks in a submissions folder, in every layout courses use, and what their
names say (a student, or an LMS's user id and login); which student each is, is pairing's job.

Layouts (``find_submissions``), all collected when a folder mixes them:

    ROOT/submitted/<student>/<assignment>/*.ipynb    nbgrader's exchange ("collect")
    ROOT/<student>/<assignment>/*.ipynb              the same, pointed at ``submitted/``
    ROOT/<student>.ipynb                             a flat folder
    ROOT/<student> (1).ipynb                         a browser's second download of it
    ROOT/<student>/<assignment>.ipynb                the build's release/ layout, handed back
    ROOT/<student>/<any name>.ipynb                  a student's folder
    ROOT/<login>[_LATE]_<user id>_<submission id>_<name>.ipynb     a Canvas bulk download
    ROOT/<Full Name>_<id>_assignsubmission_file_/<name>.ipynb      a Moodle bulk download
    ROOT/<Full Name>_<id>_assignsubmission_file_<name>.ipynb       (Moodle, without folders)
"""

from __future__ import annotations

import re
from datetime import datetime
from pathlib import Path

from formats.textfile import printable, terminal_safe

from grader.intake.issues import Issue
from grader.intake.records import Found
from grader.intake.timestamps import received

LMS_LAYOUTS = ("canvas", "moodle")        # names an LMS made: their user ids and logins say whose


def _visible(path: Path) -> bool:
    return not path.name.startswith(".")


_DIGITS = re.compile(r"([0-9]+)")     # ASCII digits only: '²'.isdigit() is True, int('²') fails


def natural(text: str) -> list:
    """'hw (10)' after 'hw (9)': numbers compare as numbers. A run of digits compares by its
    length without leading zeros, then by its digits (no ``int``: a name of 300 digits is text
    a student chose, and needs no arithmetic)."""
    key = []
    for i, t in enumerate(_DIGITS.split(text)):
        if i % 2:
            digits = t.lstrip("0") or "0"
            key.append((0, len(digits), digits, t))
        else:
            key.append((1, 0, t, ""))
    return key


# A browser's second download of a file: "u006 (1).ipynb" (Chrome, Edge, Firefox), "u006(1)".
_COPY = re.compile(r"(?P<base>.*?\S) ?\((?P<n>[0-9]{1,6})\)")
# Canvas: <login>[_LATE]_<user id>_<submission id>_<original name>; Moodle: <Full Name>_<id>_
# assignsubmission_file_ (a folder, or the start of the file name when downloaded without
# folders). Neither can be a roster id, which has no '_'.
_CANVAS = re.compile(r"(?P<login>.+?)(?P<late>_LATE)?_(?P<id>[0-9]{1,20})_(?P<sub>[0-9]{1,20})_"
                     r"(?P<original>.+\.ipynb)")
_MOODLE_FOLDER = re.compile(r"(?P<name>.*)_(?P<id>[0-9]{1,20})_assignsubmission_[a-z]+_?")
_MOODLE_FILE = re.compile(r"(?P<name>.*)_(?P<id>[0-9]{1,20})_assignsubmission_file_(?P<original>.+\.ipynb)")


def _is_notebook(path: Path) -> bool:
    return (_visible(path) and path.suffix == ".ipynb" and not path.is_dir()
            and (path.is_file() or path.is_symlink()))


def without_copy(stem: str) -> str:
    """'u006 (1)' → 'u006': the name a browser's copy was saved from."""
    copy = _COPY.fullmatch(stem)
    return copy.group("base") if copy else stem


def find_submissions(root: Path, assignment_id: str) -> list[Found]:
    """Every notebook of ``assignment_id`` under ``root``, sorted by student then file name.

    ``root`` may be an nbgrader course (``root/submitted/<student>/<assignment>/``), its
    ``submitted`` folder itself, a flat folder of ``<student>.ipynb`` files (and browser
    copies ``<student> (1).ipynb``), student folders (``<student>/<any>.ipynb``, the build's
    ``release/<student>/<assignment>.ipynb``), or a Canvas or Moodle bulk download (see the
    module's layouts); every kind is collected when a folder mixes them. Names are only
    parsed here: ``match`` says whose each notebook is. Hidden files and folders
    (``.ipynb_checkpoints``) are skipped; symbolic links are listed, so that reading them
    refuses them with an issue instead of their vanishing silently. No notebook is read;
    a ``timestamp.txt`` beside one is (at most 256 bytes)."""
    root = Path(root)
    base = root / "submitted" if (root / "submitted").is_dir() else root
    found: list[Found] = []
    if not base.is_dir():
        return found
    stamps: dict[Path, tuple[datetime | None, str]] = {}

    def add(student: str, nb: Path, layout: str, **lms) -> None:
        shown = terminal_safe(printable(str(nb.relative_to(root))), newlines=False)
        at, source, notes = received(nb, base, shown, stamps)
        if lms.get("lms_late"):
            notes += (Issue("late-by-name", f"{shown}: Canvas marked this submission late (_LATE in "
                                            "its file name)"),)
        found.append(Found(student, nb, shown, layout, received_at=at, received_from=source,
                           notes=notes, **lms))

    for entry in sorted(base.iterdir()):
        if not _visible(entry):
            continue
        if _is_notebook(entry):
            moodle, canvas = _MOODLE_FILE.fullmatch(entry.name), _CANVAS.fullmatch(entry.name)
            if moodle:
                add("", entry, "moodle", lms_id=moodle["id"], lms_name=moodle["name"])
            elif canvas:
                add("", entry, "canvas", lms_id=canvas["id"], lms_login=canvas["login"],
                    lms_late=bool(canvas["late"]))
            else:
                add(without_copy(entry.stem), entry, "flat")
        elif entry.is_dir() and not entry.is_symlink():
            notebooks = [nb for nb in sorted(entry.iterdir()) if _is_notebook(nb)]
            moodle = _MOODLE_FOLDER.fullmatch(entry.name)
            for nb in notebooks:
                if moodle:
                    add("", nb, "moodle", lms_id=moodle["id"], lms_name=moodle["name"])
                else:
                    add(entry.name, nb, "release" if nb.name == f"{assignment_id}.ipynb" else "folder")
            folder = entry / assignment_id
            if moodle or not folder.is_dir() or folder.is_symlink():
                continue
            for nb in sorted(folder.iterdir()):
                if _is_notebook(nb):
                    add(entry.name, nb, "nbgrader")
    found.sort(key=lambda f: (f.student, natural(f.path.name), f.shown))
    return found


def original_name(f: Found) -> str:
    """The notebook's own name: for an LMS download, the name the student uploaded."""
    if f.layout in LMS_LAYOUTS:
        named = _MOODLE_FILE.fullmatch(f.path.name) or _CANVAS.fullmatch(f.path.name)
        if named:
            return named["original"]
    return f.path.name
