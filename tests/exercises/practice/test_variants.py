"""Practice variants (exercises.practice.variants): drawn from a seed space of their own,
distinct from one another, and never with the givens of a graded variant of the class."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from exercises.course.bank import load_bank
from exercises.practice.variants import (PracticeError, givens_digest, graded_givens,
                                         practice_variants)
from exercises.variant.seeds import practice_seed, variant_seed
from formats.answer_key import load_key

ROOT = Path(__file__).resolve().parents[3]
SECRET = "practice tests' class secret"


@pytest.fixture(scope="module")
def bank():
    return load_bank()[0]


def test_practice_seeds_are_their_own_space():
    seeds = {practice_seed("dog_ran_fast", i) for i in range(1000)}
    assert len(seeds) == 1000 and practice_seed("dog_ran_fast", 3) == practice_seed("dog_ran_fast", 3)
    assert practice_seed("dog_ran_fast", 3) != practice_seed("sdpa_four_tokens", 3)
    graded = {variant_seed(SECRET, "hw", f"s{i}", "p") for i in range(1000)}
    assert not seeds & graded
    with pytest.raises(ValueError, match="non-negative"):
        practice_seed("dog_ran_fast", -1)


def test_practice_variants_are_distinct_and_reproducible(bank):
    first = practice_variants(bank["causal_mask_by_hand"], 20)
    again = practice_variants(bank["causal_mask_by_hand"], 20)
    assert [p.index for p in first] == [p.index for p in again]
    assert [p.variant.answers.keys() for p in first] == [p.variant.answers.keys() for p in again]
    digests = [givens_digest(p.variant.record()) for p in first]
    assert len(set(digests)) == 20 and digests == [givens_digest(p.variant.record()) for p in again]


def test_a_variant_with_graded_givens_is_skipped(bank):
    template = bank["nsp_loss"]
    drawn = practice_variants(template, 5)
    avoid = {givens_digest(drawn[1].variant.record()), givens_digest(drawn[3].variant.record())}
    kept = practice_variants(template, 5, avoid=avoid)
    assert not {givens_digest(p.variant.record()) for p in kept} & avoid
    assert [p.index for p in kept][:1] == [drawn[0].index] and len(kept) == 5
    with pytest.raises(PracticeError, match="at least one"):
        practice_variants(template, 0)
    with pytest.raises(PracticeError, match="marked by hand"):
        practice_variants(bank["bottleneck_free_response"], 1)


@pytest.fixture(scope="module")
def class_of_1000(tmp_path_factory):
    """The example assignment built for a class of 1,000: its answer key."""
    tmp = tmp_path_factory.mktemp("class")
    roster = tmp / "roster.csv"
    roster.write_text("student_id,name\n" + "".join(f"s{i:04d},Student {i}\n" for i in range(1000)),
                      encoding="utf-8")
    env = {**os.environ, "ATTNKIT_SECRET": SECRET}
    subprocess.run([sys.executable, "-m", "attnkit", "build", str(ROOT / "problem_bank" / "assignments" / "example.yaml"),
                    "--roster", str(roster), "--out", str(tmp / "build")], cwd=ROOT, env=env, check=True,
                   capture_output=True)
    return load_key(tmp / "build" / "instructor" / "answer_key.json", SECRET.encode())


def test_no_practice_variant_shares_givens_with_a_class_of_1000(bank, class_of_1000):
    graded = graded_givens(class_of_1000)
    templates = {r["template"] for e in class_of_1000["students"].values() for r in e["problems"].values()}
    assert len(graded) >= 1000          # (a template without givens counts once)
    refused = set()
    for tid in sorted(t for t in templates if bank[t].kind != "free_response"):
        try:
            practised = practice_variants(bank[tid], 50, avoid=graded)
        except PracticeError as err:          # the same numbers for every student: no practice
            assert "the same for every student" in str(err)
            refused.add(tid)
            continue
        assert not {givens_digest(p.variant.record()) for p in practised} & graded, tid
    assert refused == {"mlm_8010_choice"}     # a choice whose options only change order
    answers = json.dumps([p.variant.record()["answers"] for p in practice_variants(bank["dog_ran_fast"], 3)])
    assert answers and all(e["problems"]["dog_ran_fast"]["seed"] not in answers
                           for e in class_of_1000["students"].values())
