"""What ``attnkit check`` reports: each part's status (``PartCheck``), the notes where this
check and grading part ways (``Note``), and the whole report (``CheckReport``) as a table for
a terminal or as JSON, with the exit code it means.

The statuses never say "right": the check runs without the answer key, so a part whose form
is right is "form OK", and its value is graded later.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from formats.textfile import terminal_safe

# The status of a part, as the table shows it.
FORM_OK = "form OK — the value is graded later"
NOT_ANSWERED = "not answered"
FAILS = "form check fails"
ERROR = "error"
NOT_CHECKED = "not checked"            # answered, but its check cell is not in the notebook
BY_HAND = "written — graded by hand"
AT_GRADING = "written — hidden tests at grading"
OK = FORM_OK                           # (the name the tests and callers import)

# Each status's stable code, for --json and scripts (the words above may be reworded).
STATUS_CODES = {FORM_OK: "form-ok", NOT_ANSWERED: "not-answered", FAILS: "check-fails", ERROR: "error",
                NOT_CHECKED: "not-checked", BY_HAND: "by-hand", AT_GRADING: "at-grading"}
# The statuses of a part that is done, as far as a check without the key can tell.
DONE = frozenset({FORM_OK, BY_HAND, AT_GRADING})

# Exit codes of ``attnkit check``.
READY, NOT_READY, CANNOT_CHECK = 0, 1, 2

# Why this check and grading can differ, or what else a student should know (``Note.code``).
NOTE_CODES = {
    "bad-cell": "a cell that is not readable: skipped, here and at grading",
    "wrong-student": "the notebook's record names another student than --student (blocks exit 0)",
    "no-kit-cells": "no cell carries the kit's metadata: no check is matched to its part",
    "kit-cell-missing": "a kit cell (setup, answer, check, example, tests) is not in the notebook",
    "givens-missing": "no givens cell, and the problem's cells raised NameError",
    "givens-edited": "a givens cell that holds more than assignments, or does not parse",
    "cell-unlocked": "a locked givens, check or tests cell whose lock was removed",
    "duplicate-grade-id": "two cells with one kit id (a copied cell): both run, in order",
    "magics-stripped": "lines starting with % or ! left out, here and at grading",
    "answer-not-code": "an answer cell turned into Markdown or raw: not run, here or at grading",
    "cell-crashed": "a cell that stopped the sandbox's run: skipped",
    "run-stopped": "the run stopped (e.g. a second timeout): later cells did not run",
}

# What a blocking note (``Note.blocking``) makes the reason say.
_BLOCKING = {"wrong-student": "the notebook was not issued to you"}


def _shown(text) -> str:
    return terminal_safe(text, newlines=False)    # one line per part, whatever the message


@dataclass(frozen=True)
class PartCheck:
    problem: str
    part: str
    status: str
    detail: str = ""

    def as_json(self) -> dict:
        return {"problem": self.problem, "part": self.part, "status": self.status,
                "code": STATUS_CODES.get(self.status, "other"), "detail": self.detail}


@dataclass(frozen=True)
class Note:
    """Something the student should know: ``code`` one of ``NOTE_CODES``; ``cell`` the kit
    cell (or "cell N") it is about, when there is one; ``blocking``: it keeps the notebook
    from being ready (exit code 1) whatever its parts say."""
    code: str
    message: str
    cell: str | None = None
    blocking: bool = False

    def __str__(self) -> str:
        return self.message


def _note_json(note) -> dict:
    if isinstance(note, Note):
        return {"code": note.code, "cell": note.cell, "message": note.message, "blocking": note.blocking}
    return {"code": "note", "cell": None, "message": str(note), "blocking": False}


@dataclass
class CheckReport:
    notebook: str
    student: str
    parts: list[PartCheck] = field(default_factory=list)
    notes: list[Note] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def ok(self) -> bool:
        """Every part done (answered, and passing its form check where it has one) and no
        note that blocks: what exit code 0 says."""
        return (bool(self.parts) and all(p.status in DONE for p in self.parts)
                and not any(getattr(n, "blocking", False) for n in self.notes))

    ready = ok

    @property
    def exit_code(self) -> int:
        return READY if self.ok else NOT_READY

    def counts(self) -> dict[str, int]:
        """Parts per status code (every code, 0s included: the keys never change)."""
        counts = dict.fromkeys(STATUS_CODES.values(), 0)
        for p in self.parts:
            code = STATUS_CODES.get(p.status, "other")
            counts[code] = counts.get(code, 0) + 1
        return counts

    def reason(self) -> str:
        """Why the exit code is what it is, in one sentence."""
        done = sum(p.status in DONE for p in self.parts)
        if not self.parts:
            return "not ready: no part of the assignment was found in the notebook"
        if self.ok:
            return (f"ready: all {len(self.parts)} parts are answered and pass their form checks "
                    "(parts graded by hand are written)")
        left = [f"{status}: {n}" for status in (NOT_ANSWERED, FAILS, ERROR, NOT_CHECKED)
                if (n := sum(p.status == status for p in self.parts))]
        left += list(dict.fromkeys(_BLOCKING.get(n.code, "see the notes") for n in self.notes
                                   if getattr(n, "blocking", False)))
        return f"not ready: {done} of {len(self.parts)} parts done; {'; '.join(left)}"

    def as_json(self) -> dict:
        return {"notebook": self.notebook, "student": self.student, "ok": self.ok,
                "exit_code": self.exit_code, "reason": self.reason(), "counts": self.counts(),
                "parts": [p.as_json() for p in self.parts], "notes": [_note_json(n) for n in self.notes],
                "seconds": round(self.seconds, 3),
                "hidden_checks": "these checks test the form of each answer, never its value: the "
                                 "values are checked by hidden tests at grading"}

    def table(self) -> str:
        """The report as aligned text for a terminal. Part names and details come from the
        notebook (its metadata, the student's error messages): each is shown terminal-safe,
        and the columns are measured on what is shown."""
        names = [_shown(f"{p.problem}.{p.part}") for p in self.parts]
        statuses = [_shown(p.status) for p in self.parts]
        width = max([len(name) for name in names] + [4])
        swidth = max([len(s) for s in statuses] + [6])
        lines = [_shown(self.notebook) + (f" ({_shown(self.student)})" if self.student else ""), ""]
        lines += [f"  {'part':<{width}}  {'status':<{swidth}}  detail",
                  f"  {'─' * width}  {'─' * swidth}  {'─' * 30}"]
        for name, status, p in zip(names, statuses, self.parts):
            lines.append(f"  {name:<{width}}  {status:<{swidth}}  {_shown(p.detail)}".rstrip())
        lines.append("")
        lines += [f"note: {terminal_safe(n)}" for n in self.notes]
        if self.notes:
            lines.append("")
        lines.append(f"{'Ready' if self.ok else 'Not ready'} (exit code {self.exit_code}): "
                     f"{_shown(self.reason()).partition(': ')[2]}.")
        lines.append("These checks test the form of your answers only (shape, rows that sum to 1, "
                     "…), never their values: \"form OK\" does not mean the value is right. The values "
                     "are checked by hidden tests when your notebook is graded, with the givens issued "
                     "to you.")
        return "\n".join(lines)
