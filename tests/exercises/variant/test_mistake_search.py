"""The mistake search (exercises/variant/mistake_search.py): which mistakes the build runs on a
variant, what it keeps, and which look-alikes it leaves to the feedback instead of redrawing."""

import numpy as np
import pytest

from exercises.variant import mistake_search
from exercises.course.bank import load_bank
from exercises.variant.draw import make_variant, probe_variant
from formats.compare import telling


@pytest.fixture(scope="module")
def bank():
    return load_bank()[0]


def test_every_reference_function_a_part_uses_is_searched(bank):
    parts = mistake_search.searched_parts(bank["dog_ran_fast"])
    assert "projections" in [p.id for p in parts["linear"]]          # Q = linear(X, W_Q)
    assert {"raw_scores", "weights", "output"} <= {p.id for p in parts["scaled_dot_product_attention"]}
    assert "z_the" not in {p.id for ps in parts.values() for p in ps}  # a sum of given numbers


def test_unlisted_twins_are_kept_where_they_give_a_wrong_answer(bank):
    v = make_variant(bank["sdpa_four_tokens"], 0)
    kept = v.lookalikes["sdpa_weights_transposed"]                    # listed nowhere in the template
    assert "output" in kept and not np.allclose(kept["output"], v.answers["output"])
    assert all(name not in v.template.all_misconceptions for name in v.lookalikes)


def test_a_structural_look_alike_is_found_once_and_never_redrawn(bank):
    template = bank["causal_mask_by_hand"]
    pairs = mistake_search.structural(template, probe_variant)
    # masked after the softmax, the exponentials are the unmasked ones: on every draw
    assert ("sdpa_mask_after_softmax", "sdpa_mask_ignored", "exp_scores") in pairs
    assert mistake_search.structural(template, probe_variant) is pairs                # one probe per process
    redrawn = [r for seed in range(10) for r in make_variant(template, seed).rejections
               if "looks like sdpa_mask_ignored on part exp_scores" in r]
    assert redrawn == []


@pytest.mark.parametrize("value, expected", [
    (np.array([[0.1, 0.2], [0.3, 0.4]]), True),        # four real numbers
    (np.array([[0, -3, 7, 5], [1, 2, 3, 4]]), True),   # whole numbers of many values
    (np.array([1, 2, 3, 3]), False),                   # an argmax row
    (0.38, False), (3, False), ([4, 30522], False),    # one number, a count, a shape
    (["the", "cat"], False), (np.ones((3, 3), dtype=bool), False),
])
def test_telling_values(value, expected):
    assert telling(value) is expected


# --- the caches of issue 19: what does not depend on the draw is worked out once ----------

def test_values_the_same_on_every_draw_are_known_and_only_those(bank):
    from exercises.variant.twin_values import constant_names
    names = constant_names(bank["dog_ran_fast"])
    assert {"e768", "slide", "head", "printed_gap"} <= names     # the slide's own numbers
    assert not names & {"X", "Q", "K", "V", "steps"}               # drawn: x_rows, W_Q …
    assert "sim" not in constant_names(bank["why_sqrt_dk"])         # reads rng: a draw of its own
    assert "pair" in constant_names(bank["why_sqrt_dk"])


def test_parts_the_same_on_every_draw_are_known_and_only_those(bank):
    from exercises.variant.twin_values import constant_parts
    # Part 1 of the walkthrough is the slide's own numbers; part 2 is drawn
    assert constant_parts(bank["dog_ran_fast"]) == {
        "slide_scaled", "slide_scaled_head", "z_the", "implied_ran", "ran_self"}
    assert constant_parts(bank["why_sqrt_dk"]) == {
        "pair_ratio_unscaled", "pair_weight_unscaled", "pair_weight_scaled"}
    assert constant_parts(bank["causal_mask_by_hand"]) == frozenset()


def test_what_the_search_finds_on_such_parts_is_copied_not_searched_again(bank, monkeypatch):
    """The second variant takes the first one's findings on the constant parts: the twins are
    not run there again, and it holds what a fresh process finds."""
    from exercises.variant import twin_values
    template = bank["dog_ran_fast"]
    twin_values._SAME_FOUND.clear()
    first = make_variant(template, 11)
    evaluated = []
    real = twin_values.answers_with

    def counting(template, variant, evaluator, shadows, function, parts, **kwargs):
        evaluated.extend(p.id for p in parts)
        return real(template, variant, evaluator, shadows, function, parts, **kwargs)

    monkeypatch.setattr(mistake_search, "answers_with", counting)
    monkeypatch.setattr(twin_values, "answers_with", counting)
    second = make_variant(template, 12)
    assert evaluated and not set(evaluated) & twin_values.constant_parts(template)
    assert second.lookalikes and any("slide_scaled" in kept for kept in second.lookalikes.values())
    twin_values._SAME_FOUND.clear()
    assert make_variant(template, 12).digest == second.digest
    assert make_variant(template, 11).digest == first.digest


def test_cached_values_give_the_variants_a_fresh_process_gives(bank):
    """A variant made with the per-template caches filled by earlier variants (and by other
    twins) is the variant made with them empty: the same record, digest and draws."""
    from exercises.variant import twin_values
    for template_id in ("dog_ran_fast", "why_sqrt_dk", "causal_mask_by_hand"):
        template = bank[template_id]
        warm = [make_variant(template, seed) for seed in range(6)]
        for seed in (5, 3):
            twin_values._CONSTANT.clear()
            twin_values._PLANS.clear()
            twin_values._SAME.clear()
            twin_values._SAME_FOUND.clear()
            mistake_search._TWINS.clear()
            cold = make_variant(template, seed)
            assert cold.digest == warm[seed].digest and cold.attempts == warm[seed].attempts
            assert cold.rejections == warm[seed].rejections


@pytest.mark.parametrize("actual, expected, rtol, atol", [
    (1.0, 1.0 + 1e-9, 0.0, 1e-9), (1.0, 1.0 + 2e-9, 0.0, 1e-9), (0.3, 0.1 + 0.2, 0, 0),
    (1e-12, 0.0, 0.05, 1e-20), (-2.5, -2.45, 0.01, 0.0), (np.float64(2.0), 2.0000001, 1e-7, 0),
    (float("nan"), 1.0, 0.1, 0.1), (float("inf"), float("inf"), 0, 0), (1.0, float("-inf"), 0, 1),
    (3, 3, 0.5, 1.0), (3, 4, 0.5, 1.0), (np.int64(7), 7, 0, 0), (True, 1, 0, 0), (2**70, 2**70, 0, 0),
    (1, 1.0, 0, 0), (1.0, 1, 0, 0), (np.array([1.0]), 1.0, 0, 0.1), ("a", "A", 0, 0)])
def test_quick_within_says_what_compare_says(actual, expected, rtol, atol):
    from exercises.variant.twin_values import quick_within
    from formats.compare import within
    assert quick_within(actual, expected, rtol, atol) == within(actual, expected, rtol, atol)


@pytest.mark.parametrize("a, b", [(1.0, 1.0 + 3e-9), (1.0, 1.0 + 5e-9), (-0.5, 0.5), (1e300, 1e300 * (1 + 1e-16))])
def test_two_numbers_are_alike_as_two_arrays_are(a, b):
    rtol, atol = 1e-9, 1e-9
    as_arrays = mistake_search._alike(np.array([a]), np.array([b]), rtol, atol)
    assert mistake_search._alike(a, b, rtol, atol) == as_arrays


def test_a_record_is_encoded_once_and_the_key_entry_reuses_the_same_bytes(bank):
    import json
    from formats import serialize
    record = make_variant(bank["sdpa_four_tokens"], 1).record()
    entry = {"name": "N", "notebook": "release/x.ipynb",
             "problems": {"p": {**record, "answer_names": {"weights": "weights"}}}}
    plain = json.dumps(entry, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
    assert serialize.canonical_json(entry) == plain
    body = {k: v for k, v in record.items() if k != "digest"}
    assert record["digest"] == serialize.digest_text(json.dumps(
        body, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False))
    with pytest.raises(ValueError):             # NaN is still refused, as json.dumps refuses it
        serialize.canonical_json({**entry, "x": float("nan")})


def test_an_implement_variant_keeps_its_look_alikes_without_comparing_them_to_listed_twins(bank, monkeypatch):
    """An implement problem is never redrawn for two mistakes that look alike, so which
    listed twin a searched one resembles is asked only of a probe draw."""
    template = bank["implement_masked_attention"]
    calls = []
    real = mistake_search._confused
    monkeypatch.setattr(mistake_search, "_confused", lambda *a: calls.append(a) or real(*a))
    v = make_variant(template, 3)
    assert v.lookalikes and calls == []
    mistake_search._STRUCTURAL.pop(id(template), None)
    mistake_search.structural(template, probe_variant)              # the probe draws still compare them
    assert calls


# --- the stacked comparison: the same verdicts as _too_close and _alike, one value at a time

def _stack_case(answer, twins, part_rtol, part_atol):
    from types import SimpleNamespace
    names = [f"t{i}" for i in range(len(twins))]
    part = SimpleNamespace(id="p", misconceptions=names, rtol=part_rtol, atol=part_atol)
    variant = SimpleNamespace(answers={"p": answer}, twins={n: {"p": t} for n, t in zip(names, twins)})
    return variant, part, names


def _one_by_one(variant, part, names, value):
    from exercises.variant.twin_values import too_close_to
    if too_close_to(value, variant.answers["p"], part.rtol, part.atol):
        return True, None
    return False, next((n for n in names if mistake_search._alike(variant.twins[n]["p"], value,
                                                                  part.rtol, part.atol)), None)


def _near(base, draw, hyp):
    """``base`` scaled and moved by amounts around the tolerances used below (absolute 1e-3,
    relative 0.01 and 0.1, each doubled), so verdicts fall on both sides of them."""
    factors = draw(hyp.extra.numpy.arrays(np.float64, base.shape, elements=hyp.strategies.sampled_from(
        [1.0, 1.0, 1.02, 0.98, 1.0199, 1.0201, 1.2, 0.8, 1.19, 1.21, 0.79, -1.0])))
    steps = draw(hyp.extra.numpy.arrays(np.float64, base.shape, elements=hyp.strategies.sampled_from(
        [0.0, 0.0, 1e-3, -1e-3, 2e-3, -2e-3, 1.999e-3, 2.001e-3, 0.5, 1e-12])))
    return base * factors + steps


def test_a_stack_gives_the_verdicts_of_the_comparisons_one_by_one():
    import hypothesis as hyp
    import hypothesis.extra.numpy  # noqa: F401
    import hypothesis.strategies as st

    @hyp.settings(max_examples=400, deadline=None, database=None)
    @hyp.given(st.data(), st.sampled_from([(4,), (2, 3), (1, 1)]), st.integers(0, 5),
               st.sampled_from([(0.0, 1e-3), (1e-2, 1e-3), (0.1, 0.0), (0.01, 1e-20), (0.0, 0.0)]))
    def check(data, shape, n, tolerance):
        base = data.draw(hyp.extra.numpy.arrays(np.float64, shape, elements=st.sampled_from(
            [0.0, 1.0, -2.5, 0.1, 3e5, 1e-7])))
        answer = _near(base, data.draw, hyp)
        twins = [_near(base, data.draw, hyp) for _ in range(n)]
        values = [_near(base, data.draw, hyp) for _ in range(2)]
        variant, part, names = _stack_case(answer, twins, *tolerance)
        stack = mistake_search._Stack.of(answer, dict(zip(names, twins)))
        assert stack is not None
        for value in values:        # one stack, several values (its answer's bound is kept)
            assert stack.verdict(value, part.rtol, part.atol) == _one_by_one(variant, part, names, value)
        # and other tolerances on the same stack (a bound kept for the first must not serve)
        other = _stack_case(answer, twins, *data.draw(st.sampled_from(
            [(0.0, 1e-3), (1e-2, 1e-3), (0.1, 0.0), (0.01, 1e-20), (0.0, 0.0)])))[1]
        assert stack.verdict(values[0], other.rtol, other.atol) == _one_by_one(variant, other, names, values[0])
        pairs = stack.pairs_alike(part.rtol, part.atol)
        for i in range(n):
            for j in range(n):
                assert pairs[i, j] == mistake_search._alike(twins[i], twins[j], part.rtol, part.atol)

    check()


@pytest.mark.parametrize("answer, twins, value", [
    (np.ones(3), [np.ones(3) * 2], np.array([1.0, np.nan, 1.0])),       # NaN in the value
    (np.ones(3), [np.ones(3) * 2], np.ones(4)),                          # another shape
    (np.ones(3), [np.ones(3) * 2], np.ones(3, dtype=np.float32)),        # another dtype
    (np.ones(3), [np.ones(3) * 2], [1.0, 1.0, 1.0]),                     # a list
])
def test_a_value_the_stack_cannot_hold_is_compared_one_by_one(answer, twins, value):
    assert mistake_search._Stack.of(answer, {"t0": twins[0]}).verdict(value, 0.0, 1e-3) is None


@pytest.mark.parametrize("answer, twins", [
    (np.ones(3), [np.array([1.0, -np.inf, 2.0])]),                       # a masked score: −inf
    (np.ones(3), [np.ones(2)]),                                          # shapes differ
    (1.5, [2.5]),                                                        # plain numbers
    (np.array([1, 2]), [np.array([2, 3])]),                              # integers
])
def test_values_a_stack_cannot_hold_are_not_stacked(answer, twins):
    assert mistake_search._Stack.of(answer, {"t0": twins[0]}) is None
