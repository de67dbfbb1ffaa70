"""The shipped bank: it loads, covers the lecture, and every template yields 200 valid variants.

"Valid" is the engine's check-the-checkers (exercises.variant.draw): the reference passes, every
listed misconception is caught, nothing ill-posed. This is the issue's acceptance test.
"""

from __future__ import annotations

from collections import Counter

import pytest

from exercises.course.bank import load_bank, validate_template
from exercises.template.model import KINDS
from exercises.variant.seeds import variant_seed
from exercises.variant.draw import make_variant
from exercises.template.objectives import OBJECTIVES
from formats import serialize

TEMPLATES, _ = load_bank()
SEEDS = 200


def test_the_bank_loads_without_a_single_problem():
    _, problems = load_bank(keep_going=True)
    assert problems == []


def test_the_bank_has_at_least_16_families_and_every_kind():
    assert len(TEMPLATES) >= 16
    assert {t.kind for t in TEMPLATES.values()} == set(KINDS)


def test_every_learning_objective_is_exercised_by_at_least_two_families():
    per_objective = Counter(t.objective for t in TEMPLATES.values())
    assert {o: per_objective[o] for o in OBJECTIVES if per_objective[o] < 2} == {}


def test_every_template_file_name_is_its_id():
    for template in TEMPLATES.values():
        assert template.path.endswith(f"{template.id}.yaml"), template.path


@pytest.mark.parametrize("template_id", sorted(TEMPLATES))
def test_template_yields_a_valid_variant_for_each_of_200_seeds(template_id):
    report = validate_template(TEMPLATES[template_id], seeds=SEEDS)
    assert report.failures == []
    assert report.valid == SEEDS


@pytest.mark.parametrize("template_id", sorted(TEMPLATES))
def test_template_gives_different_students_different_numbers(template_id):
    template = TEMPLATES[template_id]
    seeds = [variant_seed("course-secret", "hw1", f"s{i}", template_id) for i in range(8)]
    shown = set()
    for seed in seeds:
        variant = make_variant(template, seed)
        record = variant.record()
        # What the student sees (not the seed, which always differs).
        shown.add(serialize.digest([variant.prompt(), record["givens"], record["options"],
                                    [t["args"] for t in record["tests"]]]))
    assert len(shown) >= 2, "eight students all got the same problem"
