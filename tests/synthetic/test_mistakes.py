"""The corpus of plausible mistakes (issue 17, deliverable 3): well-formed, independent of the
kit's diagnosis code, informative on the bank's variants, and the kit's own twins named as
themselves. The shares the grader reaches on it are printed (``bench.diagnosis``), not
asserted: that goal belongs to the diagnosis work."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from bench import diagnosis
from formats import key_shape as shape
from solutions import TWINS
from synthetic import mistakes as corpus

ROOT = Path(__file__).resolve().parents[2]
SEEDS = range(8)
# the issue's four wrongly named cases, each an entry of its own
ISSUE_CASES = {
    "why_pair_weight_per_head": "scaled by the per-head √64, told 'without the 1/√d_k scale'",
    "masked_scale_sqrt_dv": "√d_v where d_v = S, told 'scaled by the sequence length'",
    "causal_off_by_one": "tril(k=1) on saturated rows, told 'no causal mask'",
    "sdpa4_scaled_sqrt_L": "√L where d_k = 2 = √L, told 'divided by d_k'",
}


def _graded_templates() -> dict:
    """The bank's templates a mistake can be judged on (free response is graded by hand)."""
    return {tid: t for tid, t in corpus.templates().items() if t.kind != shape.FREE_RESPONSE}


def test_the_corpus_has_at_least_150_entries_covering_every_graded_template():
    grouped = corpus.by_template()
    assert len(corpus.CORPUS) >= 150
    assert set(_graded_templates()) <= set(grouped), set(_graded_templates()) - set(grouped)
    for tid, template in _graded_templates().items():
        if template.kind in ("numeric", "implement"):
            assert len(grouped[tid]) >= 4, tid


def _kit_names() -> set[str]:
    """The kit's names of mistakes: its twins (listed by a template, or found by the build's
    mistake search)."""
    return set(TWINS)


def test_every_accepted_name_is_a_kit_name_and_every_entry_is_described():
    known = _kit_names()
    for m in corpus.CORPUS.values():
        assert set(m.accept) <= known, (m.id, set(m.accept) - known)
        assert m.description.strip(), m.id


def test_the_issues_four_wrongly_named_cases_are_entries():
    for name, why in ISSUE_CASES.items():
        assert name in corpus.CORPUS, why


def test_every_part_an_entry_answers_exists_in_its_template():
    for m in corpus.CORPUS.values():
        if m.kind == corpus.IMPLEMENT:
            continue
        record = next((r for r in map(lambda s: corpus.record(m.template, s), SEEDS) if r), None)
        if record is None:
            pytest.skip(f"{m.template}: no valid variant on seeds {SEEDS} (being edited?)")
        assert m.part in {shape.part_id(g) for g in shape.gradings(record)}, (m.id, m.part)


def _wrong_somewhere(m) -> bool | None:
    """Does the mistake give a wrong answer on at least one seed? None: no variant builds."""
    built = False
    for seed in SEEDS:
        record = corpus.record(m.template, seed)
        if record is None:
            continue
        built = True
        value = (corpus.case_outputs(m, record) if m.kind == corpus.IMPLEMENT
                 else corpus.answer(m, record))
        if m.kind == corpus.IMPLEMENT or value is not None:
            if not corpus.equals_answer(m, record, value):
                return True
    return False if built else None


def test_no_entry_equals_the_correct_answer_on_every_seed():
    idle = [m.id for m in corpus.CORPUS.values() if _wrong_somewhere(m) is False]
    assert not idle, f"these mistakes never change the answer on seeds {SEEDS}: {idle}"


def _project_imports(path: Path) -> set[str]:
    names = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module)
            names.update(f"{node.module}.{alias.name}" for alias in node.names)
    return names


def test_the_corpus_is_written_independently_of_the_kits_twins_and_diagnosis():
    files = sorted((ROOT / "synthetic").glob("mistakes*.py"))
    assert len(files) >= 2
    for path in files:
        for name in _project_imports(path):
            assert not (name == "solutions" or name.startswith("solutions.")), (path.name, name)
            assert not (name == "grader" or name.startswith("grader.")), (path.name, name)


def test_the_kits_twins_are_all_named_as_themselves():
    baseline = diagnosis.twins_baseline(seeds=4)
    print(f"\ntwins named as themselves: {baseline['named']} of {baseline['twins']}")
    assert baseline["twins"] > 0
    assert baseline["missed"] == [], baseline["missed"][:10]


def test_the_benchmark_prints_the_shares_and_every_wrongly_named_case(capsys):
    assert diagnosis.main(["--seeds", "2", "sdpa_four_tokens", "nsp_loss"]) == 0
    out = capsys.readouterr().out
    assert "sdpa_four_tokens" in out and "all families" in out and "named wrongly (" in out
    result = diagnosis.measure(seeds=2, only={"sdpa_four_tokens"})
    totals = diagnosis.totals(result)
    assert totals["cases"] == sum(totals[k] for k in (diagnosis.CORRECT, diagnosis.WRONG, diagnosis.UNNAMED))
    print("\n" + diagnosis.report(result))


def test_an_unnamed_and_a_wrong_name_are_told_apart():
    m = corpus.CORPUS["sdpa4_scaled_sqrt_L"]
    assert diagnosis.classify(m, []) == diagnosis.UNNAMED
    assert diagnosis.classify(m, ["sdpa_scale_by_sqrt_seq_len"]) == diagnosis.CORRECT
    assert diagnosis.classify(m, ["sdpa_divide_by_d_k"]) == diagnosis.WRONG
    assert diagnosis.classify(m, ["sdpa_divide_by_d_k", "sdpa_scale_by_sqrt_seq_len"]) == diagnosis.CORRECT
    no_twin = next(m for m in corpus.CORPUS.values() if not m.accept and m.kind == corpus.NUMERIC)
    assert diagnosis.classify(no_twin, ["sdpa_no_scale"]) == diagnosis.WRONG
    assert diagnosis.classify(no_twin, []) == diagnosis.UNNAMED


def test_no_plausible_mistake_is_named_wrongly():
    """Deliverable 1, on the whole corpus: a wrong name is worse than none."""
    result = diagnosis.measure(seeds=3)
    totals = diagnosis.totals(result)
    print(f"\nnamed {totals[diagnosis.CORRECT]} of {totals['cases']}, wrongly {totals[diagnosis.WRONG]}")
    assert totals["cases"] >= 600
    assert result["wrongly_named"] == [], [f"{c['template']} {c['mistake']} → {c['names']}"
                                           for c in result["wrongly_named"]][:10]


def test_a_choice_is_named_by_its_options_own_feedback():
    m = next(m for m in corpus.CORPUS.values() if m.kind == corpus.CHOICE)
    record = corpus.record(m.template, 0)
    assert diagnosis.judge(m, record) == [diagnosis.OPTION_FEEDBACK]
    assert diagnosis.classify(m, [diagnosis.OPTION_FEEDBACK]) == diagnosis.CORRECT
