"""The visible checks never reject an answer the grader accepts.

For every part of the bank that has visible checks, answers are pushed to the edge of the
part's tolerance (each entry off by 0.999·(atol + rtol·|expected|), all up, all down, and in
alternating directions); every such answer that ``compare`` accepts must pass both the
Python check and the notebook's own check cell, run as the student would run it."""

from pathlib import Path

import numpy as np
import pytest

from formats.compare import compare

from exercises.course.bank import load_bank

from exercises.variant.draw import make_variant
from exercises.template.checks import CHECKS
from exercises.render.notebook import SETUP, Header, ProblemVariant, build_notebook
from exercises.template.schema import load_template

REPO = Path(__file__).resolve().parents[3]
BANK = REPO / "problem_bank"
TEMPLATES, _ = load_bank()
CHECKED = sorted(t.id for t in TEMPLATES.values() if any(p.checks for p in t.parts))
HEADER = Header("hw", "HW", "0" * 64)


def bank(name: str):
    return load_template(BANK / f"{name}.yaml", display=f"problem_bank/{name}.yaml")


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


# --- visible checks honour the part's tolerance --------------------------------------------------

def _weights_part():
    template = bank("sdpa_four_tokens")
    part = next(p for p in template.parts if p.id == "weights")
    assert part.checks, "the weights part has visible checks"
    return template, part


def _assert_line(part, name, argument, answer):
    return CHECKS[name].code("weights", argument, part.atol, part.rtol, n=np.shape(answer)[-1])


@pytest.mark.parametrize("seed", range(6))
def test_a_rounded_answer_the_grader_accepts_passes_every_visible_check(seed):
    template, part = _weights_part()
    v = make_variant(template, seed)
    rounded = np.round(v.answers["weights"], 2)
    assert compare(rounded, v.answers["weights"], part.rtol, part.atol).ok  # the grader accepts
    for name, argument in part.checks:
        assert argument is None
        assert CHECKS[name].test(rounded, None, part.atol, part.rtol) is None, name
        exec(_assert_line(part, name, None, rounded), {"np": np, "weights": rounded})


def test_a_row_summing_to_0_9_fails_the_check_and_its_assert_line():
    template, part = _weights_part()
    v = make_variant(template, 0)
    bad = np.round(v.answers["weights"], 2)
    bad[1] = bad[1] * (0.9 / bad[1].sum())
    assert abs(bad[1].sum() - 0.9) < 1e-12
    assert CHECKS["rows_sum_to_one"].test(bad, None, part.atol, part.rtol)
    with pytest.raises(AssertionError, match="must sum to 1"):
        exec(_assert_line(part, "rows_sum_to_one", None, bad), {"np": np, "weights": bad})
