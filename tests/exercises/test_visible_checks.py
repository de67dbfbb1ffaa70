"""The visible checks never reject an answer the grader accepts.

For every part of the bank that has visible checks, answers are pushed to the edge of the
part's tolerance (each entry off by 0.999·(atol + rtol·|expected|), all up, all down, and in
alternating directions); every such answer that ``compare`` accepts must pass both the
Python check and the notebook's own check cell, run as the student would run it."""

import numpy as np
import pytest

from formats.compare import compare

from exercises.bank import load_bank

from exercises.variant import make_variant
from exercises.checks import CHECKS
from exercises.notebook import SETUP, Header, ProblemVariant, build_notebook

TEMPLATES, _ = load_bank()
CHECKED = sorted(t.id for t in TEMPLATES.values() if any(p.checks for p in t.parts))
HEADER = Header("hw", "HW", "0" * 64)


def edges(expected: np.ndarray, rtol: float, atol: float):
    step = 0.999 * (atol + rtol * np.abs(expected))
    alternating = np.where(np.indices(expected.shape).sum(axis=0) % 2 == 0, 1.0, -1.0) \
        if expected.ndim else 1.0
    return [expected + step, expected - step, expected + alternating * step]


@pytest.mark.parametrize("template_id", CHECKED)
def test_answers_at_the_edge_of_the_tolerance_pass_the_visible_checks(template_id):
    template = TEMPLATES[template_id]
    tried = 0
    for seed in range(3):
        variant = make_variant(template, seed)
        notebook = build_notebook(HEADER, [ProblemVariant("p", template.title, variant)], "student")
        cells = {c["id"]: c["source"] for c in notebook["cells"]}
        for part in template.parts:
            if not part.checks:
                continue
            expected = np.asarray(variant.answers[part.id], dtype=float)
            for candidate in edges(expected, part.rtol, part.atol):
                if not compare(candidate, variant.answers[part.id], part.rtol, part.atol).ok:
                    continue
                for name, argument in part.checks:
                    value = None if argument is None else variant.evaluate(argument)
                    assert CHECKS[name].test(candidate, value, part.atol, part.rtol) is None, \
                        (part.id, name)
                namespace = {}
                exec(SETUP, namespace)                                  # noqa: S102 — our own code
                exec(cells.get("p--givens", ""), namespace)             # noqa: S102
                namespace[part.id] = candidate
                exec(cells[f"p-{part.id}--check"], namespace)           # noqa: S102
                tried += 1
    assert tried > 0
