"""The notebook's fixed vocabulary, apart from how notebooks are built: the kit's setup cell,
the answer placeholders, the option letters and how a grade id becomes a cell id.

Kept apart so the grader and ``attnkit check``, which only read notebooks, import this
and not the builder (Jinja2, the schema, the reference implementation).
"""

from __future__ import annotations

import hashlib

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
