"""The notebook's fixed vocabulary, apart from how notebooks are built: the kit's setup cell,
the answer placeholders, the option letters, the grade ids that name the kit's cells (built
and parsed here only), and how a grade id becomes a cell id.

Kept apart so the grader and ``attnkit check``, which only read notebooks, import this
and not the builder (Jinja2, the schema, the reference implementation).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

LETTERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
CODE_PLACEHOLDER = "# YOUR CODE HERE\nraise NotImplementedError()"   # nbgrader's own
MARKDOWN_PLACEHOLDER = "YOUR ANSWER HERE"

# The notebook's own helpers: defined in the locked setup cell, readable by students.
SETUP = '''\
import numpy as np


def answered(name):
    """True once your answer cell has defined `name`; until then its checks wait."""
    if name in globals():
        return True
    print(f"{name}: not answered yet (run your answer cell above first)")
    return False


def try_example(function, example):
    """Your function's output on a small visible example, or None while it is unwritten."""
    try:
        return function(**example)
    except NotImplementedError:
        print(f"{function.__name__}: not implemented yet")
        return None


def show_heatmap(matrix, title, ylabel="row", xlabel="column"):
    """Draw a matrix as a heatmap with its numbers (needs matplotlib; skipped without it)."""
    m = np.asarray(matrix, dtype=float)
    if m.ndim != 2:
        print(f"{title}: a heatmap needs a 2-D array, this one has shape {m.shape}")
        return
    try:
        import matplotlib.pyplot as plt
    except ImportError:
        print(f"{title}: install matplotlib to see a heatmap")
        return
    fig, ax = plt.subplots(figsize=(1 + 0.6 * m.shape[1], 0.8 + 0.5 * m.shape[0]))
    image = ax.imshow(m, cmap="Blues")
    if m.size <= 144:
        for (i, j), x in np.ndenumerate(m):
            ax.text(j, i, f"{x:.2f}", ha="center", va="center", fontsize=8,
                    color="white" if x > np.nanmean(m) else "black")
    ax.set(title=title, xlabel=xlabel, ylabel=ylabel)
    fig.colorbar(image, ax=ax)
    plt.show()
'''


def cell_id(grade_id: str) -> str:
    """nbformat allows 1–64 characters of [A-Za-z0-9_-]; long grade ids keep a hash suffix."""
    if len(grade_id) <= 64:
        return grade_id
    return grade_id[:55] + "-" + hashlib.sha256(grade_id.encode()).hexdigest()[:8]


# --- grade ids ---------------------------------------------------------------------------
#
# Every kit cell carries an nbgrader grade id that says what it is. Problem, part, function
# and family ids are [a-z][a-z0-9_]* (the schema's rule), so "-" and "--" never occur inside
# one, and a grade id reads back unambiguously:
#
#     setup, header                        the notebook's own cells
#     <problem>--<role>                    a problem's cells: prompt, givens, solution
#     <problem>-<part>                     a part's answer cell (implement: <problem>-<function>)
#     <problem>-<part>--<role>             a part's cells: prompt, check, heatmap, example
#     <problem>-<function>-<family>        an implement problem's tests of one family

SETUP_CELL = "setup"
HEADER_CELL = "header"
PROMPT, GIVENS, SOLUTION = "prompt", "givens", "solution"     # a problem's cells (and PROMPT a part's)
CHECK, HEATMAP, EXAMPLE = "check", "heatmap", "example"       # a part's cells


@dataclass(frozen=True)
class GradeId:
    """What a kit cell is: its problem, its part (an implement problem's function), the test
    family of a tests cell, and its role (None: the answer cell, or a tests cell)."""
    problem: str | None = None
    part: str | None = None
    family: str | None = None
    role: str | None = None

    def __str__(self) -> str:
        if self.problem is None:
            return self.role or ""
        return grade_id(self.problem, self.part, family=self.family, role=self.role)

    @property
    def is_answer(self) -> bool:
        """A part's answer cell (or an implement problem's function cell)."""
        return self.problem is not None and self.part is not None and self.family is None \
            and self.role is None


def grade_id(problem: str, part: str | None = None, *, family: str | None = None,
             role: str | None = None) -> str:
    """The grade id of a kit cell (see the table above)."""
    text = problem if part is None else f"{problem}-{part}"
    if family is not None:
        text += f"-{family}"
    return text if role is None else f"{text}--{role}"


def parse_grade_id(text: str) -> GradeId | None:
    """The GradeId a grade id spells, or None for one the kit never writes."""
    if text in (SETUP_CELL, HEADER_CELL):
        return GradeId(role=text)
    body, marked, role = text.partition("--")
    pieces = body.split("-")
    if (marked and (not role or "-" in role)) or len(pieces) > 3 or not all(pieces):
        return None
    problem, part, family = pieces + [None] * (3 - len(pieces))
    if part is None and not marked:
        return None                              # a bare problem id names no cell
    return GradeId(problem, part, family, role or None)
