"""The credit benchmark: every chain of the bank, garbage against an honest slip."""

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
