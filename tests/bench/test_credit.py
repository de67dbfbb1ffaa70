"""The credit benchmark: every chain of the bank, garbage against an honest slip."""

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from bench import credit
from formats.serialize import decode_names
from synthetic import mistakes as corpus


def test_every_chain_of_the_bank_is_measured_and_garbage_earns_at_most_a_quarter():
    result = credit.measure(seeds=3)
    chains = set(result["rows"])
    assert {"dog_ran_fast:projections", "sdpa_four_tokens:raw_scores", "bahdanau_step_by_hand:pre",
            "causal_mask_by_hand:exp_scores", "why_sqrt_dk:variance"} <= chains
    assert result["misses"] == []
    for row in result["rows"].values():
        assert max(row[k] for k in credit.GARBAGE if k in row) <= 0.25
        assert row["slip"] >= 0.5          # an arithmetic slip carried forward keeps most of the chain


def test_the_chain_from_the_projections_reads_the_students_own_q_k_and_v():
    record = corpus.record("dog_ran_fast", 2)
    later = credit.chains(record)["projections"]
    assert later[:2] == ["raw_scores", "scaled_scores"] and "output" in later
    assert record["follow"]["output"]["parts"] == ["projections", "weights"]
    slip = credit.first_step("slip", decode_names(record["answers"])["projections"])
    assert credit.earned(record, credit.carry(record, "projections", slip, later), later) == 1.0


def test_the_report_names_the_goal(capsys):
    assert credit.main(["--seeds", "1", "sdpa_four_tokens"]) == 0
    out = capsys.readouterr().out
    assert "sdpa_four_tokens:raw_scores" in out and "goal ≤ 25 %" in out


def _chains(seeds=3):
    for template in sorted(corpus.by_template()):
        for seed in range(seeds):
            record = corpus.record(template, seed)
            if record is not None and record.get("follow"):
                for root, later in credit.chains(record).items():
                    yield template, seed, record, root, later


def _garbage_share(record, root, later, expected, seed):
    shares = [credit.earned(record, credit.carry(record, root, v, later), later)
              for v in (credit.first_step(k, expected, seed) for k in credit.GARBAGE) if v is not None]
    return max((s for s in shares if s is not None), default=0.0)


@settings(max_examples=40, deadline=None)
@given(data=st.data())
def test_an_arithmetic_slip_carried_forward_never_earns_less_than_garbage(data):
    chains = data.draw(st.sampled_from(_CHAINS))
    template, seed, record, root, later = chains
    expected = np.asarray(decode_names(record["answers"])[root], dtype=float)
    slip = expected.copy()
    index = data.draw(st.integers(0, slip.size - 1))
    slip.flat[index] += data.draw(st.sampled_from([1.0, -1.0, 2.0, -0.5, 0.25]))
    share = credit.earned(record, credit.carry(record, root, slip, later), later)
    if share is not None:
        assert share >= _garbage_share(record, root, later, expected, seed), (template, seed, root)


_CHAINS = list(_chains())


def test_every_plausible_mistake_on_a_first_step_carried_forward_never_earns_less_than_garbage():
    # the corpus's conceptual slips (W X for X W, the positional encoding left out, …) at the
    # head of a chain, every later step done right on them
    checked = 0
    for template, seed, record, root, later in _CHAINS:
        expected = decode_names(record["answers"])[root]
        for mistake in corpus.by_template()[template]:
            if mistake.part != root or mistake.kind != corpus.NUMERIC:
                continue
            value = corpus.answer(mistake, record)
            if value is None or np.shape(value) != np.shape(expected) or corpus.equals_answer(mistake, record, value):
                continue
            share = credit.earned(record, credit.carry(record, root, np.asarray(value, dtype=float), later), later)
            if share is not None:
                checked += 1
                assert share >= _garbage_share(record, root, later, expected, seed), (template, seed, mistake.id)
    assert checked >= 10
