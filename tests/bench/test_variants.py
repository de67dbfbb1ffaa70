"""The variants benchmark runs and reports what it measured (its timings are not asserted)."""

from pathlib import Path

import yaml

from bench import variants

EXAMPLES = ["problem_bank/sdpa_four_tokens.yaml", "problem_bank/alignment_learnable.yaml"]


def test_run_reports_rates_and_the_validation_ratio_per_template():
    result = variants.run(seeds=3, paths=EXAMPLES, rounds=1)
    assert result["templates"] == 2 and result["seeds"] == 3
    assert {r["id"] for r in result["rows"]} == {"sdpa_four_tokens", "alignment_learnable"}
    for row in result["rows"]:
        assert row["validated_per_s"] > 0 and row["bare_per_s"] > 0
        assert row["draws_per_variant"] >= 1
    twins = {r["id"]: r["twins"] for r in result["rows"]}
    # the distinct twins the templates' parts list, read from the YAML itself
    listed = {}
    for path in EXAMPLES:
        data = yaml.safe_load(Path(path).read_text())
        listed[data["id"]] = len({t for part in data.get("parts", []) for t in part.get("misconceptions", [])})
    assert twins == listed and listed["sdpa_four_tokens"] >= 3


def test_main_prints_the_breakdown_and_the_whole_bank_line(capsys):
    assert variants.main(["--seeds", "2", "--rounds", "1", *EXAMPLES]) == 0
    out = capsys.readouterr().out
    assert "sdpa_four_tokens" in out and "validated variants/s" in out
