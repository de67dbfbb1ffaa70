"""Assignment specs: a good spec loads with its overrides applied; every broken rule fails
with an exact 'file:line: key: message'.

Each test works in a temporary folder holding a small bank (copies of four real templates:
numeric, implement, choice, free response) and writes its spec there as ``hw.yaml``, so
messages show short paths. Specs start with HEAD, so their first problem is on line 6.
"""

import hashlib
import shutil
from pathlib import Path

import pytest

from exercises.template.schema import load_template
from exercises.course.assignment import AssignmentError, load_assignment
from exercises.course.bank import BANK_DIR

ROOT = Path(__file__).resolve().parents[3]
BAD = ROOT / "tests" / "fixtures" / "bad_templates"
BANK_TEMPLATES = ("sdpa_four_tokens", "implement_masked_attention", "mlm_8010_choice",
                  "bottleneck_free_response")
HEAD = """\
id: hw1
title: Homework 1
secret: {env: ATTNKIT_TEST_SECRET}
bank: bank
problems:
"""
TOP_KEYS = "id, title, instructions, secret, bank, problems, due, timezone, late, extensions, counts"
PROBLEM_KEYS = "template, pool, id, title, points, parts, tests, rtol, atol, follow_credit"
SDPA_PARTS = "raw_scores, scaled_scores, weights, output"
MASKED_FAMILIES = "basic, batched, masked, batched_masked, non_square, large_logits"
NEW_SECRET = "python -c 'import secrets; print(secrets.token_hex(32))'"


@pytest.fixture(autouse=True)
def _workspace(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("ATTNKIT_TEST_SECRET", raising=False)
    (tmp_path / "bank").mkdir()
    for name in BANK_TEMPLATES:
        shutil.copy(BANK_DIR / f"{name}.yaml", tmp_path / "bank")


def spec(text: str | bytes, name: str = "hw.yaml") -> Path:
    path = Path(name)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(text if isinstance(text, bytes) else text.encode("utf-8"))
    return path


def problems(text: str | bytes) -> list[str]:
    with pytest.raises(AssignmentError) as err:
        load_assignment(spec(text))
    assert str(err.value) == "\n".join(err.value.errors)
    return err.value.errors


def bank_template(name: str):
    return load_template(Path("bank") / f"{name}.yaml")


def summary(template) -> tuple:
    """What an assignment may change, and what names the template (Expressions hold ASTs,
    which compare by identity, so templates loaded twice are never ==)."""
    return (template.path, template.id, template.source_digest, template.rtol, template.atol,
            [(p.id, p.points, p.rtol, p.atol) for p in template.parts],
            [(t.family, t.points) for t in template.tests])


# --- what loads ------------------------------------------------------------------------------

def test_full_spec_loads():
    text = """\
id: attention-hw1
title: "Attention: by hand and in code"
instructions: |
  Show your work.
secret: {file: course_secret.txt}
bank: bank
problems:
  - template: sdpa_four_tokens
    id: sdpa
    title: SDPA by hand
  - template: implement_masked_attention
  - template: mlm_8010_choice
"""
    assignment = load_assignment(spec(text))
    assert assignment.path == "hw.yaml"
    assert assignment.id == "attention-hw1"
    assert assignment.title == "Attention: by hand and in code"
    assert assignment.instructions == "Show your work.\n"
    assert assignment.secret_source == ("file", str(Path("course_secret.txt").resolve()), 5)
    assert assignment.source_digest == hashlib.sha256(text.encode()).hexdigest()
    assert [(p.id, p.title, p.line) for p in assignment.problems] == [
        ("sdpa", "SDPA by hand", 8),
        ("implement_masked_attention", "Implement masked scaled dot-product attention", 11),
        ("mlm_8010_choice", "BERT's masked LM — the 15% and the 80/10/10 rule, and why", 12)]
    # No overrides: the templates as the bank has them.
    assert [summary(p.template) for p in assignment.problems] == [
        summary(bank_template(name)) for name in ("sdpa_four_tokens", "implement_masked_attention",
                                                  "mlm_8010_choice")]
    assert [p.points for p in assignment.problems] == [6, 8, 4]
    assert assignment.points == 18


def test_default_bank_is_the_built_in_one():
    assignment = load_assignment(spec("id: hw1\ntitle: T\nsecret: {env: ATTNKIT_TEST_SECRET}\n"
                                      "problems:\n  - template: why_sqrt_dk\n"))
    assert summary(assignment.problems[0].template) == \
        summary(load_template(BANK_DIR / "why_sqrt_dk.yaml"))


def test_template_by_path_relative_to_the_spec():
    Path("course/extra").mkdir(parents=True)
    shutil.copy(BANK_DIR / "why_sqrt_dk.yaml", "course/extra/mine.yaml")
    assignment = load_assignment(spec(HEAD.replace("bank: bank", "bank: ../bank")
                                      + "  - template: extra/mine.yaml\n", "course/hw.yaml"))
    assert assignment.problems[0].id == "why_sqrt_dk"
    assert assignment.problems[0].template.path == "course/extra/mine.yaml"


def test_same_template_twice_with_ids():
    assignment = load_assignment(spec(HEAD + "  - {template: sdpa_four_tokens, id: first}\n"
                                             "  - {template: sdpa_four_tokens, id: second}\n"))
    assert [p.id for p in assignment.problems] == ["first", "second"]


def test_spec_with_bom_loads():
    text = HEAD + "  - template: mlm_8010_choice\n"
    assert load_assignment(spec(b"\xef\xbb\xbf" + text.encode())).id == "hw1"


# --- overrides -------------------------------------------------------------------------------

def test_part_overrides_change_points_and_tolerances_only_where_given():
    original = bank_template("sdpa_four_tokens")
    template = load_assignment(spec(HEAD + """\
  - template: sdpa_four_tokens
    parts:
      weights: {points: 3, atol: 0.01}
      output: {rtol: 1e-3}
""")).problems[0].template
    parts = {p.id: p for p in template.parts}
    assert (parts["weights"].points, parts["weights"].atol, parts["weights"].rtol) == \
        (3, 0.01, original.parts[2].rtol)
    assert (parts["output"].points, parts["output"].rtol, parts["output"].atol) == \
        (2, 1e-3, original.parts[3].atol)
    assert summary(template)[5][:2] == summary(original)[5][:2]
    assert template.points == 7
    # The answer key records effective values itself; the digest still names the file.
    assert template.source_digest == original.source_digest
    assert original.points == 6


def test_points_scale_every_part_keeping_ratios():
    original = bank_template("sdpa_four_tokens")
    template = load_assignment(spec(HEAD + "  - {template: sdpa_four_tokens, points: 10}\n")
                               ).problems[0].template
    assert template.points == 10
    assert [p.points for p in template.parts] == pytest.approx([10 / 6, 10 / 6, 20 / 6, 20 / 6])
    ratios = [p.points / q.points for p, q in zip(template.parts, original.parts)]
    assert ratios == pytest.approx([10 / 6] * 4)
    assert [p.atol for p in template.parts] == [p.atol for p in original.parts]


@pytest.mark.parametrize("total", [1, 7, 25, 100, 0.3, 12.34])
def test_scaled_points_add_up_exactly(total):
    assignment = load_assignment(spec(HEAD + f"""\
  - {{template: sdpa_four_tokens, points: {total}}}
  - {{template: implement_masked_attention, points: {total}}}
  - {{template: bottleneck_free_response, points: {total}}}
"""))
    assert [p.points for p in assignment.problems] == [total] * 3


def test_implement_overrides_families_and_tolerances():
    original = bank_template("implement_masked_attention")
    template = load_assignment(spec(HEAD + """\
  - template: implement_masked_attention
    tests:
      basic: {points: 3}
      large_logits: {points: 0}
    rtol: 1e-4
    atol: 0
""")).problems[0].template
    assert [(t.family, t.points) for t in template.tests] == [
        ("basic", 3), ("batched", 1), ("masked", 2), ("batched_masked", 1), ("non_square", 1),
        ("large_logits", 0)]
    assert (template.rtol, template.atol) == (1e-4, 0)
    assert (original.rtol, original.atol) == (1e-6, 1e-9)
    assert template.tests[1].cases == original.tests[1].cases


def test_implement_points_scale_families_and_keep_tolerances():
    original = bank_template("implement_masked_attention")
    template = load_assignment(spec(HEAD + "  - template: implement_masked_attention\n"
                                           "    points: 4\n    rtol: 1e-5\n")).problems[0].template
    assert [t.points for t in template.tests] == pytest.approx([t.points / 2 for t in original.tests])
    assert (template.rtol, template.atol) == (1e-5, original.atol)


def test_choice_and_free_response_part_points():
    assignment = load_assignment(spec(HEAD + """\
  - template: mlm_8010_choice
    parts: {counts: {points: 2}}
  - template: bottleneck_free_response
    points: 4
"""))
    choice, free = (p.template for p in assignment.problems)
    assert [p.points for p in choice.parts] == [2, 1, 1, 1]
    assert [p.points for p in free.parts] == [1, 1, 2]


# --- the secret ------------------------------------------------------------------------------

def test_secret_from_env(monkeypatch):
    monkeypatch.setenv("ATTNKIT_TEST_SECRET", "0123456789abcdef ")
    assignment = load_assignment(spec(HEAD + "  - template: mlm_8010_choice\n"))
    assert assignment.secret_source == ("env", "ATTNKIT_TEST_SECRET", 3)
    assert assignment.secret() == b"0123456789abcdef "


@pytest.mark.parametrize("value", [None, ""])
def test_secret_env_unset_or_empty(monkeypatch, value):
    if value is not None:
        monkeypatch.setenv("ATTNKIT_TEST_SECRET", value)
    assignment = load_assignment(spec(HEAD + "  - template: mlm_8010_choice\n"))
    with pytest.raises(AssignmentError) as err:
        assignment.secret()
    assert err.value.errors == ["hw.yaml:3: secret.env: the environment variable "
                                  "ATTNKIT_TEST_SECRET is not set (or is empty)"]


def test_secret_env_too_short(monkeypatch):
    monkeypatch.setenv("ATTNKIT_TEST_SECRET", "hunter2")
    with pytest.raises(AssignmentError) as err:
        load_assignment(spec(HEAD + "  - template: mlm_8010_choice\n")).secret()
    assert err.value.errors == [
        f"hw.yaml:3: secret.env: the secret in the environment variable ATTNKIT_TEST_SECRET is "
        f"7 bytes; it must be at least 16 bytes; e.g. `{NEW_SECRET}`"]


def file_secret_spec() -> Path:
    return spec(HEAD.replace("{env: ATTNKIT_TEST_SECRET}", "\n  file: ../keys/course.txt")
                .replace("bank: bank", "bank: ../bank")
                + "  - template: mlm_8010_choice\n", "course/hw.yaml")


def test_secret_from_file_relative_to_the_spec():
    Path("keys").mkdir()
    Path("keys/course.txt").write_bytes(b"\x00\xffbytes-not-text-0123\n\r\n")
    assignment = load_assignment(file_secret_spec())
    assert assignment.secret_source == ("file", str(Path("keys/course.txt").resolve()), 4)
    assert assignment.secret() == b"\x00\xffbytes-not-text-0123"


def test_secret_file_missing():
    where = Path("keys/course.txt").resolve()
    with pytest.raises(AssignmentError) as err:
        load_assignment(file_secret_spec()).secret()
    assert err.value.errors == [f"course/hw.yaml:4: secret.file: {where}: no such file"]


def test_secret_file_too_short():
    Path("keys").mkdir()
    Path("keys/course.txt").write_text("0123456789abcde \n")
    with pytest.raises(AssignmentError) as err:
        load_assignment(file_secret_spec()).secret()
    assert err.value.errors == [
        f"course/hw.yaml:4: secret.file: the secret in {Path('keys/course.txt').resolve()} is "
        f"15 bytes; it must be at least 16 bytes; e.g. `{NEW_SECRET}`"]


def test_secret_file_unreadable():
    Path("keys/course.txt").mkdir(parents=True)
    with pytest.raises(AssignmentError) as err:
        load_assignment(file_secret_spec()).secret()
    assert err.value.errors == [f"course/hw.yaml:4: secret.file: cannot read "
                                  f"{Path('keys/course.txt').resolve()}: Is a directory"]


def with_secret(secret: str) -> str:
    return HEAD.replace("secret: {env: ATTNKIT_TEST_SECRET}", secret) + \
        "  - template: mlm_8010_choice\n"


def test_secret_both_env_and_file():
    assert problems(with_secret("secret: {env: S, file: s.txt}")) == [
        "hw.yaml:3: secret: give exactly one of 'env' (an environment variable) or 'file' "
        "(relative to this spec)"]


def test_secret_neither():
    assert problems(with_secret("secret: {}")) == [
        "hw.yaml:3: secret: give exactly one of 'env' (an environment variable) or 'file' "
        "(relative to this spec)"]


def test_secret_unknown_key():
    assert problems(with_secret("secret: {envv: S}")) == [
        "hw.yaml:3: secret.envv: unknown key 'envv' (expected one of: env, file); did you "
        "mean 'env'?"]


def test_secret_written_into_the_spec_is_not_echoed():
    found = problems(with_secret("secret: 3f9a0c1d2e4b5a6978"))
    assert found == ["hw.yaml:3: secret: expected {env: VARIABLE} or {file: path}, got text "
                     "(the secret itself must not be in the spec)"]
    assert "3f9a" not in found[0]


def test_secret_env_not_a_variable_name():
    assert problems(with_secret("secret: {env: MY SECRET}")) == [
        "hw.yaml:3: secret.env: 'MY SECRET' is not an environment variable name (letters, "
        "digits, _)"]


# --- the spec file ---------------------------------------------------------------------------

def test_missing_spec():
    with pytest.raises(AssignmentError) as err:
        load_assignment("nowhere.yaml")
    assert err.value.errors == ["nowhere.yaml: no such file"]


def test_empty_spec():
    assert problems("# nothing yet\n") == ["hw.yaml: the file is empty"]


def test_spec_not_a_mapping():
    assert problems("- template: sdpa_four_tokens\n") == [
        "hw.yaml:1: an assignment is a mapping of keys (id, title, secret, problems, …), got a list"]


def test_yaml_syntax_error():
    assert problems(HEAD + "  - {template: sdpa_four_tokens, points: 3: 4}\n") == [
        "hw.yaml:6: invalid YAML: expected ',' or '}', but got ':' (while parsing a flow mapping)"]


def test_spec_not_utf8():
    assert problems(HEAD.replace("Homework", "Übung").encode("latin-1")) == [
        "hw.yaml:2: not valid UTF-8 (byte 0xdc at column 8); save the file as UTF-8"]


def test_unknown_key_did_you_mean():
    assert problems(HEAD.replace("title:", "titel:") + "  - template: mlm_8010_choice\n") == [
        f"hw.yaml:2: titel: unknown key 'titel' (expected one of: {TOP_KEYS}); did you mean "
        f"'title'?",
        "hw.yaml:1: title: required"]


def test_missing_required_keys():
    assert problems("instructions: Read chapter 3.\n") == [
        "hw.yaml:1: id: required", "hw.yaml:1: title: required",
        "hw.yaml:1: secret: required", "hw.yaml:1: problems: required"]


@pytest.mark.parametrize("aid", ["hw 1", "-hw1", "hw1/part2", "x" * 65, "hw1.2"])
def test_bad_assignment_id(aid):
    assert problems(HEAD.replace("id: hw1", f"id: {aid}") + "  - template: mlm_8010_choice\n") == [
        f"hw.yaml:1: id: '{aid}' is not a valid assignment id (1 to 64 letters, digits, _ and -, "
        f"starting with a letter or digit; it names a folder)"]


def test_numeric_assignment_id_needs_quotes():
    assert problems(HEAD.replace("id: hw1", "id: 2026") + "  - template: mlm_8010_choice\n") == [
        'hw.yaml:1: id: expected text, got int 2026 (write it in quotes: id: "2026")']
    assert load_assignment(spec(HEAD.replace("id: hw1", 'id: "2026"')
                                + "  - template: mlm_8010_choice\n")).id == "2026"


def test_missing_bank_folder():
    assert problems(HEAD.replace("bank: bank", "bank: ../nowhere")
                    + "  - template: mlm_8010_choice\n") == [
        "hw.yaml:4: bank: no such folder '../nowhere' (relative to this spec's folder)"]


# --- the problem list ------------------------------------------------------------------------

def test_empty_problem_list():
    assert problems(HEAD.replace("problems:", "problems: []")) == [
        "hw.yaml:5: problems: expected a list of at least one problem, got an empty list"]


def test_problems_not_a_list():
    assert problems(HEAD.replace("problems:", "problems: sdpa_four_tokens")) == [
        "hw.yaml:5: problems: expected a list of at least one problem, got str 'sdpa_four_tokens'"]


def test_problem_not_a_mapping():
    assert problems(HEAD + "  - sdpa_four_tokens\n") == [
        "hw.yaml:6: problems[0]: expected a mapping (key: value lines), got str 'sdpa_four_tokens'"]


def test_unknown_problem_key():
    assert problems(HEAD + "  - template: mlm_8010_choice\n    point: 3\n") == [
        f"hw.yaml:7: problems[0].point: unknown key 'point' (expected one of: {PROBLEM_KEYS}); "
        f"did you mean 'points'?"]


def test_missing_template():
    assert problems(HEAD + "  - id: first\n") == ["hw.yaml:6: problems[0].template: required"]


def test_unknown_template_id():
    assert problems(HEAD + "  - template: sdpa_4_tokens\n  - template: nothing_like_it\n") == [
        "hw.yaml:6: problems[0].template: unknown template 'sdpa_4_tokens' (not an id in the "
        "bank bank, nor a path ending in .yaml); did you mean 'sdpa_four_tokens'?",
        "hw.yaml:7: problems[1].template: unknown template 'nothing_like_it' (not an id in the "
        "bank bank, nor a path ending in .yaml)"]


def test_template_path_not_found():
    assert problems(HEAD + "  - template: extra/mine.yaml\n"
                           "  - template: sdpa_four_tokens.yaml\n") == [
        "hw.yaml:6: problems[0].template: no such template file 'extra/mine.yaml' (paths are "
        "relative to this spec's folder)",
        "hw.yaml:7: problems[1].template: no such template file 'sdpa_four_tokens.yaml' (paths "
        "are relative to this spec's folder); did you mean the bank's template "
        "'sdpa_four_tokens' (an id, without .yaml)?"]


def test_broken_template_file_reports_its_problems():
    shutil.copy(BAD / "missing_points.yaml", "broken.yaml")
    assert problems(HEAD + "  - template: broken.yaml\n") == [
        "broken.yaml:9: parts[0].points: required"]


def test_broken_template_in_the_bank_blocks_only_when_named():
    shutil.copy(BAD / "missing_points.yaml", "bank/missing_points.yaml")
    assert load_assignment(spec(HEAD + "  - template: mlm_8010_choice\n")).problems
    assert problems(HEAD + "  - template: missing_points\n  - template: missing_points\n") == [
        "bank/missing_points.yaml:9: parts[0].points: required"]


def test_duplicate_problem_ids():
    assert problems(HEAD + "  - template: sdpa_four_tokens\n"
                           "  - template: sdpa_four_tokens\n"
                           "  - {template: mlm_8010_choice, id: quiz}\n"
                           "  - {template: bottleneck_free_response, id: quiz}\n") == [
        "hw.yaml:7: problems[1].id: duplicate problem id 'sdpa_four_tokens' (also on line 6); "
        "give one of them an `id:`",
        "hw.yaml:9: problems[3].id: duplicate problem id 'quiz' (also on line 8); give one of "
        "them an `id:`"]


@pytest.mark.parametrize("pid", ["Quiz", "1st", "my-quiz", "42"])
def test_bad_problem_id(pid):
    assert problems(HEAD + f"  - {{template: mlm_8010_choice, id: {pid}}}\n") == [
        f"hw.yaml:6: problems[0].id: '{pid}' is not a valid problem id (lower-case letters, "
        f"digits, _; starting with a letter)"]


# --- wrong overrides -------------------------------------------------------------------------

def test_unknown_part_did_you_mean():
    assert problems(HEAD + "  - template: sdpa_four_tokens\n"
                           "    parts:\n      weigths: {points: 3}\n") == [
        f"hw.yaml:8: problems[0].parts.weigths: unknown part 'weigths' (the parts of "
        f"'sdpa_four_tokens': {SDPA_PARTS}); did you mean 'weights'?"]


def test_unknown_test_family_did_you_mean():
    assert problems(HEAD + "  - template: implement_masked_attention\n"
                           "    tests:\n      masks: {points: 3}\n") == [
        f"hw.yaml:8: problems[0].tests.masks: unknown test family 'masks' (the test families of "
        f"'implement_masked_attention': {MASKED_FAMILIES}); did you mean 'masked'?"]


def test_unknown_part_override_key():
    assert problems(HEAD + "  - template: sdpa_four_tokens\n"
                           "    parts:\n      weights: {point: 3}\n") == [
        "hw.yaml:8: problems[0].parts.weights.point: unknown key 'point' (expected one of: "
        "points, rtol, atol, rubric); did you mean 'points'?"]


def test_part_override_not_a_mapping():
    assert problems(HEAD + "  - template: sdpa_four_tokens\n"
                           "    parts:\n      weights: 3\n") == [
        "hw.yaml:8: problems[0].parts.weights: expected a mapping (key: value lines), got int 3"]


def test_parts_on_an_implement_problem():
    assert problems(HEAD + "  - template: implement_masked_attention\n"
                           "    parts: {basic: {points: 1}}\n") == [
        "hw.yaml:7: problems[0].parts: 'implement_masked_attention' is an implement problem: "
        "override its test families ('tests'), not 'parts'"]


def test_tests_and_tolerances_on_a_numeric_problem():
    assert problems(HEAD + "  - template: sdpa_four_tokens\n"
                           "    tests: {basic: {points: 1}}\n"
                           "    rtol: 1e-4\n") == [
        "hw.yaml:7: problems[0].tests: only implement problems have test families; "
        "'sdpa_four_tokens' has parts: override those ('parts')",
        "hw.yaml:8: problems[0].rtol: only implement problems have a problem-wide tolerance; "
        "set it per part (parts: {raw_scores: {rtol: …}})"]


def test_tolerance_on_a_choice_problem():
    assert problems(HEAD + "  - template: mlm_8010_choice\n    atol: 0.1\n") == [
        "hw.yaml:7: problems[0].atol: 'mlm_8010_choice' is a choice problem: it has no tolerance"]


def test_tolerance_on_a_choice_part():
    assert problems(HEAD + "  - template: mlm_8010_choice\n"
                           "    parts: {counts: {atol: 0.1}}\n") == [
        "hw.yaml:7: problems[0].parts.counts.atol: only numeric parts have a tolerance "
        "('mlm_8010_choice' is choice)"]


def test_total_points_and_part_points_together():
    assert problems(HEAD + "  - template: sdpa_four_tokens\n"
                           "    points: 10\n"
                           "    parts:\n      output: {atol: 0.1}\n      weights: {points: 3}\n") == [
        "hw.yaml:7: problems[0].points: give either a total 'points' or per-part points, not "
        "both (problems[0].parts.weights.points on line 10)"]


def test_total_points_and_family_points_together():
    assert problems(HEAD + "  - template: implement_masked_attention\n"
                           "    tests: {basic: {points: 3}}\n"
                           "    points: 10\n") == [
        "hw.yaml:8: problems[0].points: give either a total 'points' or per-family points, not "
        "both (problems[0].tests.basic.points on line 7)"]


@pytest.mark.parametrize("value, message", [
    ("-2", "must be at least 0, got -2"),
    ("ten", "expected a number, got str 'ten'"),
    ("true", "expected a number, got bool True"),
    (".inf", "expected a finite number, got inf"),
])
def test_bad_points(value, message):
    assert problems(HEAD + f"  - template: sdpa_four_tokens\n    points: {value}\n") == [
        f"hw.yaml:7: problems[0].points: {message}"]


@pytest.mark.parametrize("value, message", [
    ("-1e-3", "must be at least 0, got -0.001"),
    ("tight", "expected a number, got str 'tight'"),
    ("", "expected a number, got nothing"),
])
def test_bad_tolerances(value, message):
    assert problems(HEAD + "  - template: sdpa_four_tokens\n"
                           f"    parts:\n      weights:\n        atol: {value}\n"
                           "  - template: implement_masked_attention\n"
                           f"    rtol: {value}\n") == [
        f"hw.yaml:9: problems[0].parts.weights.atol: {message}",
        f"hw.yaml:11: problems[1].rtol: {message}"]


def test_bad_part_and_family_points():
    assert problems(HEAD + "  - template: sdpa_four_tokens\n"
                           "    parts: {weights: {points: -1}}\n"
                           "  - template: implement_masked_attention\n"
                           "    tests: {basic: {points: lots}}\n") == [
        "hw.yaml:7: problems[0].parts.weights.points: must be at least 0, got -1",
        "hw.yaml:9: problems[1].tests.basic.points: expected a number, got str 'lots'"]


def test_points_zero():
    assert problems(HEAD + "  - template: sdpa_four_tokens\n    points: 0\n") == [
        "hw.yaml:7: problems[0].points: must be more than 0 (leave the problem out of the "
        "assignment instead)"]


def test_part_points_adding_up_to_zero():
    assert problems(HEAD + "  - template: mlm_8010_choice\n    parts:\n" + "".join(
        f"      {part}: {{points: 0}}\n"
        for part in ("counts", "why_8010", "why_selected_only", "why_no_causal_mask"))) == [
        "hw.yaml:7: problems[0].parts: the overrides leave 'mlm_8010_choice' with 0 points"]


def test_every_problem_at_once():
    text = """\
id: hw 1
secret: {env: S, file: s.txt}
bank: bank
problems:
  - template: sdpa_four_tokens
    parts: {weigths: {points: 3}}
  - template: implement_masked_attention
    parts: {basic: {points: 1}}
  - template: mlm_8010_choice
    id: Quiz
"""
    assert problems(text) == [
        "hw.yaml:1: title: required",
        "hw.yaml:1: id: 'hw 1' is not a valid assignment id (1 to 64 letters, digits, _ and -, "
        "starting with a letter or digit; it names a folder)",
        "hw.yaml:2: secret: give exactly one of 'env' (an environment variable) or 'file' "
        "(relative to this spec)",
        f"hw.yaml:6: problems[0].parts.weigths: unknown part 'weigths' (the parts of "
        f"'sdpa_four_tokens': {SDPA_PARTS}); did you mean 'weights'?",
        "hw.yaml:8: problems[1].parts: 'implement_masked_attention' is an implement problem: "
        "override its test families ('tests'), not 'parts'",
        "hw.yaml:10: problems[2].id: 'Quiz' is not a valid problem id (lower-case letters, "
        "digits, _; starting with a letter)"]
