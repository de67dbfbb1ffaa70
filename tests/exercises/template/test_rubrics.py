"""Rubrics as data: a part's ``rubric:`` block read on load, every wrong one with exactly one
'file:line: key: message'; its texts rendered with each variant's values and kept in the key
with a version; an assignment's overrides of item points and the scaling of a part's points.

Templates are written inline (``inline.yaml``); assignments in a temporary folder (``hw.yaml``)
whose bank holds the real ``bottleneck_free_response`` and a small numeric template.
"""

import shutil
import textwrap
from pathlib import Path

import pytest

from exercises.template import rubrics
from exercises.course.assignment import AssignmentError, load_assignment
from exercises.course.bank import BANK_DIR
from exercises.template.model import TemplateError
from exercises.template.schema import parse_template
from exercises.variant.draw import make_variant
from exercises.template.yaml_lines import load_yaml
from formats.rubric import Rubric, RubricItem
from tests.exercises.templates import inline, line_of

# A free-response template; a case appends its part's rubric (indented by 4) after line 10.
FREE = """\
id: probe
title: Probe
objective: contextual
kind: free_response
parameters:
  word: {dist: choice, values: [bank, bat, crane, pitch]}
prompt: Explain "{{ word }}".
parts:
  - id: why
    points: 2
"""
NUMERIC = """\
id: root
title: Root
objective: scaling
kind: numeric
parameters:
  d_k: {dist: choice, values: [4, 16, 64]}
prompt: What is the square root of {{ d_k }}?
parts:
  - id: root
    answer: sqrt(d_k)
    points: 2
"""
ITEM_KEYS = "id, points, text, note"
RUBRIC_KEYS = "guide, floor, ceiling, start, items"
NAMES = "(a text can use the parameters, the derived values and the part ids)"


def two(points_a="1", points_b="1") -> str:
    return (f"    rubric:\n      items:\n        - {{id: a, points: {points_a}, text: A}}\n"
            f"        - {{id: b, points: {points_b}, text: B}}\n")


def problems(source: str) -> list[str]:
    with pytest.raises(TemplateError) as err:
        parse_template(load_yaml(source), "inline.yaml")
    return err.value.errors


def rubric_of(source: str, part: int = 0) -> Rubric:
    return parse_template(load_yaml(source), "inline.yaml").parts[part].rubric


# --- what loads ------------------------------------------------------------------------------

def test_items_floor_ceiling_and_guide_load_as_written():
    rubric = rubric_of(FREE + """\
    rubric:
      guide: A full answer names the context.
      floor: 0.5
      ceiling: 1.5
      items:
        - {id: same_vector, points: 1, text: One vector., note: per word type}
        - {id: context, points: 1, text: Context decides.}
        - {id: claims-different, points: -0.5, text: Not different.}
""")
    assert rubric == Rubric(
        (RubricItem("same_vector", 1.0, "One vector.", "per word type"),
         RubricItem("context", 1.0, "Context decides.", ""),
         RubricItem("claims-different", -0.5, "Not different.", "")),
        floor=0.5, ceiling=1.5, start=0.5, guide="A full answer names the context.")
    assert rubric.score(["same_vector", "context"]) == 1.5         # capped at the ceiling
    assert rubric.score(["claims-different"]) == 0.5               # held up by the floor


def test_defaults_are_the_parts_range_starting_at_zero():
    rubric = rubric_of(FREE + two())
    assert (rubric.floor, rubric.ceiling, rubric.start, rubric.guide) == (0.0, 2.0, 0.0, "")


def test_start_full_is_the_ceiling_and_items_deduct():
    rubric = rubric_of(FREE + "    rubric:\n      start: full\n      ceiling: 1.5\n      items:\n"
                              "        - {id: sloppy, points: -0.5, text: Sloppy.}\n")
    assert (rubric.start, rubric.ceiling) == (1.5, 1.5)
    assert rubric.score([]) == 1.5 and rubric.score(["sloppy"]) == 1.0


def test_a_plain_text_rubric_is_a_guide_alone():
    rubric = rubric_of(FREE + "    rubric: Names the context words.\n")
    assert rubric == Rubric((), 0.0, 2.0, 0.0, "Names the context words.")


def test_a_numeric_part_may_have_a_rubric_for_overrides():
    # Method credit that does not reach the part's points is fine: an override adds the
    # items to the automatic score, so the items need not add up to anything.
    rubric = rubric_of(NUMERIC + "    rubric:\n      items:\n        - id: method\n"
                                 "          points: 0.5\n          text: Right method for {{ d_k }}.\n")
    assert rubric.items == (RubricItem("method", 0.5, "Right method for {{ d_k }}.", ""),)
    assert rubric.score(["method"], base=0.0) == 0.5 and rubric.score(["method"], base=2.0) == 2.0


def test_a_numeric_part_without_a_rubric_has_none():
    assert rubric_of(NUMERIC) is None


# --- every wrong rubric: one problem, at its line ----------------------------------------

WRONG = [
    ("not a mapping", "    rubric: 5\n", "rubric: 5", "parts[0].rubric",
     "expected a guide (text) or a mapping with items, got int 5"),
    ("empty", "    rubric:\n", "rubric:", "parts[0].rubric",
     "expected a guide (text) or a mapping with items, got nothing"),
    ("empty text", "    rubric: ''\n", "rubric: ''", "parts[0].rubric",
     "empty: write what a full answer contains (a guide), or give items"),
    ("items not a list", "    rubric:\n      items: {a: 1}\n", "items:", "parts[0].rubric.items",
     "expected a list of at least one item, got a mapping"),
    ("items empty", "    rubric:\n      items: []\n", "items:", "parts[0].rubric.items",
     "expected a list of at least one item, got an empty list"),
    ("no items", "    rubric:\n      guide: Names the context.\n", "guide:", "parts[0].rubric.items",
     "required"),
    ("item not a mapping", "    rubric:\n      items:\n        - same_vector\n", "- same_vector",
     "parts[0].rubric.items[0]", "expected a mapping (key: value lines), got str 'same_vector'"),
    ("item without id", "    rubric:\n      items:\n        - {points: 2, text: A}\n", "- {",
     "parts[0].rubric.items[0].id", "required"),
    ("item without points", two().replace("points: 1, ", "", 1), "id: a",
     "parts[0].rubric.items[0].points", "required"),
    ("item without text", two().replace(", text: A", ""), "id: a",
     "parts[0].rubric.items[0].text", "required"),
    ("empty text", two().replace("text: A", "text: ' '"), "id: a",
     "parts[0].rubric.items[0].text", "empty: the student reads this text"),
    ("text not text", two().replace("text: A", "text: [A]"), "id: a",
     "parts[0].rubric.items[0].text", "expected text, got a list"),
    ("duplicate id", two().replace("id: b", "id: a"), "text: B",
     "parts[0].rubric.items[1].id", "duplicate rubric item 'a'"),
    ("bad id", two().replace("id: a", "id: 1st"), "id: 1st", "parts[0].rubric.items[0].id",
     "'1st' is not a valid item id (a letter, then up to 39 letters, digits, _ or -)"),
    ("number id", two().replace("id: a", "id: 7"), "id: 7", "parts[0].rubric.items[0].id",
     "'7' is not a valid item id (a letter, then up to 39 letters, digits, _ or -)"),
    ("0 points", two("0", "2"), "id: a", "parts[0].rubric.items[0].points",
     "an item worth 0 points changes nothing: give it points (negative: a deduction)"),
    ("points not a number", two("lots"), "id: a", "parts[0].rubric.items[0].points",
     "expected a number, got str 'lots'"),
    ("infinite points", two(".inf"), "id: a", "parts[0].rubric.items[0].points",
     "expected a finite number, got inf"),
    ("floor above the ceiling", "    rubric:\n      floor: 1.5\n      ceiling: 1\n" + two()[12:],
     "floor:", "parts[0].rubric.floor", "the floor (1.5) must be between 0 and the ceiling (1)"),
    ("negative floor", "    rubric:\n      floor: -1\n" + two()[12:], "floor:",
     "parts[0].rubric.floor", "the floor (-1) must be between 0 and the ceiling (2)"),
    ("ceiling above the points", "    rubric:\n      ceiling: 3\n" + two("2")[12:], "ceiling:",
     "parts[0].rubric.ceiling", "the ceiling (3) is more than the part's 2 points"),
    ("start above the ceiling", "    rubric:\n      start: 2.5\n" + two()[12:], "start:",
     "parts[0].rubric.start", "start (2.5) must be between the floor (0) and the ceiling (2)"),
    ("start below the floor", "    rubric:\n      floor: 1\n      start: 0.5\n" + two()[12:],
     "start:", "parts[0].rubric.start",
     "start (0.5) must be between the floor (1) and the ceiling (2)"),
    ("start misspelt", "    rubric:\n      start: fulll\n" + two("-1", "-1")[12:], "start:",
     "parts[0].rubric.start",
     "expected a number or 'full' (start from the ceiling and deduct), got str 'fulll'"),
    ("items cannot reach the ceiling", two("1", "0.5"), "items:", "parts[0].rubric.items",
     "the items reach at most 1.5 of the part's 2 points (start 0 plus the positive items)"),
    ("only deductions from 0", two("-1", "-0.5"), "items:", "parts[0].rubric.items",
     "every item is a deduction but the part starts at 0: write `start: full`"),
    ("too many items", "    rubric:\n      items:\n" + "".join(
        f"        - {{id: i{n}, points: 1, text: T}}\n" for n in range(21)), "items:",
     "parts[0].rubric.items", "21 items; at most 20 (a grader reads them all beside every answer)"),
    ("misspelt rubric key", two().replace("items:", "itmes:"), "itmes:", "parts[0].rubric.itmes",
     f"unknown key 'itmes' (expected one of: {RUBRIC_KEYS}); did you mean 'items'?"),
    ("misspelt item key", two().replace("text: A", "txt: A"), "txt: A",
     "parts[0].rubric.items[0].txt",
     f"unknown key 'txt' (expected one of: {ITEM_KEYS}); did you mean 'text'?"),
    ("misspelt optional key", two().replace("items:", "celing: 2\n      items:"), "celing:",
     "parts[0].rubric.celing",
     f"unknown key 'celing' (expected one of: {RUBRIC_KEYS}); did you mean 'ceiling'?"),
]


@pytest.mark.parametrize("body, needle, key, message",
                         [case[1:] for case in WRONG], ids=[case[0] for case in WRONG])
def test_a_wrong_rubric_is_one_problem_at_its_line(body, needle, key, message):
    source = FREE + body
    assert problems(source) == [f"inline.yaml:{line_of(source, needle)}: {key}: {message}"]


def test_a_free_response_part_without_a_rubric():
    assert problems(FREE) == [
        "inline.yaml:9: parts[0].rubric: required for a free-response part (what a full answer "
        "contains: items with points, or a text guide)"]


def test_broken_part_points_are_not_blamed_on_the_rubric_too():
    source = FREE.replace("points: 2", "points: lots") + two("1", "1")
    assert problems(source) == ["inline.yaml:10: parts[0].points: expected a number, got str 'lots'"]


def test_every_problem_of_a_rubric_is_reported_at_once():
    source = FREE + ("    rubric:\n      items:\n        - {id: a, points: 0, text: A}\n"
                     "        - {id: 2b, points: 2, text: B}\n")
    assert problems(source) == [
        "inline.yaml:13: parts[0].rubric.items[0].points: an item worth 0 points changes "
        "nothing: give it points (negative: a deduction)",
        "inline.yaml:14: parts[0].rubric.items[1].id: '2b' is not a valid item id (a letter, "
        "then up to 39 letters, digits, _ or -)"]


def test_an_auto_graded_part_has_no_start():
    source = NUMERIC + "    rubric:\n      start: 1\n      items:\n        - {id: m, points: 1, text: M}\n"
    assert problems(source) == [
        f"inline.yaml:{line_of(source, 'start:')}: parts[0].rubric.start: only free-response "
        "parts have a start: a grader's override of an automatic score starts from that score"]


def test_an_auto_graded_part_still_has_a_range():
    source = NUMERIC + "    rubric:\n      ceiling: 3\n      items:\n        - {id: m, points: 1, text: M}\n"
    assert problems(source) == [
        f"inline.yaml:{line_of(source, 'ceiling:')}: parts[0].rubric.ceiling: the ceiling (3) is "
        "more than the part's 2 points"]


# --- Jinja names in the texts: checked once, at the line of the name ------------------------

@pytest.mark.parametrize("body, key", [
    ("    rubric:\n      items:\n        - id: a\n          points: 2\n          text: |\n"
     "            The word is\n            {{ wrod }}.\n", "parts[0].rubric.items[0].text"),
    ("    rubric:\n      items:\n        - id: a\n          points: 2\n          text: A\n"
     "          note: |\n            graders:\n            {{ wrod }}\n", "parts[0].rubric.items[0].note"),
    ("    rubric:\n      guide: |\n        A full answer\n        quotes {{ wrod }}\n      items:\n"
     "        - {id: a, points: 2, text: A}\n", "parts[0].rubric.guide"),
    ("    rubric: |\n      A full answer\n      quotes {{ wrod }}\n", "parts[0].rubric"),
])
def test_an_unknown_name_in_a_text_names_its_line(body, key):
    source = FREE + body
    assert problems(source) == [
        f"inline.yaml:{line_of(source, '{{ wrod }}')}: {key}: unknown name 'wrod' in the text "
        f"{NAMES}; did you mean 'word'?"]


def test_a_folded_text_is_placed_at_its_first_line():
    # Folded (>) text is joined before Jinja reads it: only its first line is known.
    source = FREE + ("    rubric:\n      items:\n        - id: a\n          points: 2\n"
                     "          text: >-\n            The word is\n            {{ wrod }}.\n")
    assert problems(source) == [
        f"inline.yaml:{line_of(source, 'The word is')}: parts[0].rubric.items[0].text: unknown "
        f"name 'wrod' in the text {NAMES}; did you mean 'word'?"]


# --- where a rubric cannot go ---------------------------------------------------------------

IMPLEMENT = BANK_DIR / "implement_masked_attention.yaml"


def test_a_rubric_on_an_implement_problem_is_refused():
    source = IMPLEMENT.read_text(encoding="utf-8") + "rubric:\n  items:\n    - {id: a, points: 1, text: A}\n"
    assert problems(source) == [
        f"inline.yaml:{line_of(source, 'rubric:')}: rubric: a rubric belongs to a part "
        "(parts[i].rubric); an implement problem is graded by its hidden tests and has none"]


def test_a_rubric_on_a_test_family_is_refused():
    source = IMPLEMENT.read_text(encoding="utf-8")
    first = source.index("  - family: ")
    line = source[:first].count("\n") + 2
    source = source[:first] + "  - rubric: {items: [{id: a, points: 1, text: A}]}\n    family: " + \
        source[first + len("  - family: "):]
    assert problems(source) == [
        f"inline.yaml:{line - 1}: tests[0].rubric: an implement problem is graded by its hidden "
        "tests: a test family has no rubric"]


def test_a_rubric_at_the_top_of_a_free_response_problem_is_refused():
    source = FREE + "    rubric: Names the context.\nrubric: Also here.\n"
    assert problems(source) == [
        f"inline.yaml:{line_of(source, 'rubric: Also')}: rubric: a rubric belongs to a part "
        "(parts[i].rubric); an implement problem is graded by its hidden tests and has none"]


# --- per variant: rendered texts, stored with the version -----------------------------------

RENDERED = FREE + """\
    rubric:
      guide: The context decides the sense of "{{ word }}".
      items:
        - {id: same, points: 1, text: 'The same vector for "{{ word }}".', note: 'Quote "{{ word }}".'}
        - {id: context, points: 1, text: The context decides.}
"""


def _variants(template, wanted: int = 2):
    """Variants with different words (the first ``wanted`` distinct ones among seeds 0..)."""
    out = {}
    for seed in range(60):
        v = make_variant(template, seed)
        out.setdefault(v.values["word"], v)
        if len(out) == wanted:
            return list(out.values())
    raise AssertionError(f"fewer than {wanted} distinct words in 60 seeds")


def test_item_texts_are_rendered_with_each_variants_values_and_recorded():
    template = inline(RENDERED)
    part = template.parts[0]
    seen = set()
    for v in _variants(template):
        word = v.values["word"]
        record = v.record()["rubric"]["why"]
        assert record == {
            "items": [{"id": "same", "points": 1.0, "text": f'The same vector for "{word}".',
                       "note": f'Quote "{word}".'},
                      {"id": "context", "points": 1.0, "text": "The context decides.", "note": ""}],
            "floor": 0.0, "ceiling": 2.0, "start": 0.0,
            "guide": f'The context decides the sense of "{word}".',
            "version": part.rubric.version}
        assert Rubric.from_record(record) == v.rubric(part)
        seen.add(record["items"][0]["text"])
    assert len(seen) == 2


def test_the_grader_text_lists_items_with_signed_points_and_notes():
    template = inline(RENDERED.replace("items:", "ceiling: 1\n      items:")
                      .replace("points: 1, text: The", "points: -0.5, text: The"))
    v = make_variant(template, 0)
    word = v.values["word"]
    assert v.rubric_text(template.parts[0]) == (
        f'The context decides the sense of "{word}".\n\n'
        f'1. **+1** The same vector for "{word}". *(graders: Quote "{word}".)*\n'
        "2. **−0.5** The context decides.\n\n"
        "Score between 0 and 1.")


def test_the_version_follows_points_not_texts():
    rubric = inline(RENDERED).parts[0].rubric
    assert rubrics.rendered(rubric, str.upper).version == rubric.version
    assert rubrics.with_points(rubric, {"same": 1.5}).version != rubric.version
    assert rubrics.with_points(rubric, {"same": 1.0}).version == rubric.version
    assert Rubric(rubric.items, rubric.floor, rubric.ceiling, 1.0).version != rubric.version


# --- scaling ----------------------------------------------------------------------------------

def test_scaling_keeps_each_items_share_and_a_reachable_full_score():
    rubric = Rubric((RubricItem("a", 1.0), RubricItem("b", 1.0), RubricItem("c", 1.0),
                     RubricItem("d", -0.5)), 0.0, 3.0, 0.0)
    big = rubrics.scaled(rubric, 3.0, 10.0)
    assert [i.points for i in big.items] == pytest.approx([10 / 3] * 3 + [-5 / 3], abs=1e-12)
    assert big.ceiling == 10.0 and big.floor == 0.0
    assert big.score(["a", "b", "c"]) == 10.0           # never 9.999999
    deduct = rubrics.scaled(Rubric((RubricItem("x", -1.0),), 0.0, 3.0, 3.0), 3.0, 4.5)
    assert (deduct.start, deduct.ceiling, deduct.items[0].points) == (4.5, 4.5, -1.5)


def test_scaling_to_the_same_points_changes_nothing():
    rubric = Rubric((RubricItem("a", 2.0),), 0.0, 2.0)
    assert rubrics.scaled(rubric, 2.0, 2.0) is rubric and rubrics.scaled(None, 2.0, 4.0) is None


# --- an assignment's overrides ---------------------------------------------------------------

HEAD = """\
id: hw1
title: Homework 1
secret: {env: ATTNKIT_TEST_SECRET}
bank: bank
problems:
"""
METHOD_CREDIT = NUMERIC + """\
    rubric:
      items:
        - {id: method, points: 0.5, text: Right method.}
        - {id: copied, points: -1, text: Copied.}
"""


@pytest.fixture
def workspace(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "bank").mkdir()
    shutil.copy(BANK_DIR / "bottleneck_free_response.yaml", tmp_path / "bank")
    (tmp_path / "bank" / "root.yaml").write_text(METHOD_CREDIT, encoding="utf-8")
    return tmp_path


def assignment_problems(text: str) -> list[str]:
    Path("hw.yaml").write_text(text, encoding="utf-8")
    with pytest.raises(AssignmentError) as err:
        load_assignment(Path("hw.yaml"))
    return err.value.errors


def loaded_part(text: str, part: str, problem: int = 0):
    Path("hw.yaml").write_text(text, encoding="utf-8")
    template = load_assignment(Path("hw.yaml")).problems[problem].template
    return next(p for p in template.parts if p.id == part)


def points(rubric: Rubric) -> dict[str, float]:
    return {i.id: i.points for i in rubric.items}


BOTTLENECK = "  - template: bottleneck_free_response\n    parts:\n"


def test_an_override_sets_item_points_and_keeps_the_others(workspace):
    part = loaded_part(HEAD + BOTTLENECK + "      static: {rubric: {same_vector: 1.5, claims_different: -2}}\n",
                       "static")
    assert points(part.rubric) == {"same_vector": 1.5, "context": 1.0, "claims_different": -2.0}
    assert part.points == 2 and part.rubric.ceiling == 2
    original = loaded_part(HEAD + "  - template: bottleneck_free_response\n", "static")
    assert part.rubric.version != original.rubric.version
    assert [i.text for i in part.rubric.items] == [i.text for i in original.rubric.items]


def test_an_override_naming_an_unknown_item_suggests_the_closest(workspace):
    assert assignment_problems(HEAD + BOTTLENECK + "      static: {rubric: {same_vectr: 1}}\n") == [
        "hw.yaml:8: problems[0].parts.static.rubric.same_vectr: unknown rubric item 'same_vectr' "
        "(the items of part 'static': same_vector, context, claims_different); did you mean "
        "'same_vector'?"]


@pytest.mark.parametrize("value, message", [
    ("0", "expected a finite number other than 0, got 0.0"),
    ("lots", "expected a number, got str 'lots'"),
])
def test_an_override_must_be_a_number_other_than_0(workspace, value, message):
    assert assignment_problems(HEAD + BOTTLENECK + f"      static: {{rubric: {{context: {value}}}}}\n") == [
        f"hw.yaml:8: problems[0].parts.static.rubric.context: {message}"]


def test_an_override_that_leaves_the_points_unreachable_is_refused(workspace):
    assert assignment_problems(HEAD + BOTTLENECK + "      static: {rubric: {context: 0.5}}\n") == [
        "hw.yaml:8: problems[0].parts.static.rubric: with these points the items reach at most "
        "1.5 of the part's 2 points"]


def test_an_override_of_an_auto_graded_part_need_reach_nothing(workspace):
    part = loaded_part(HEAD + "  - template: root\n    parts:\n      root: {rubric: {method: 1}}\n",
                       "root")
    assert points(part.rubric) == {"method": 1.0, "copied": -1.0}


def test_an_override_of_a_part_without_items(workspace):
    (workspace / "bank" / "plain.yaml").write_text(NUMERIC.replace("id: root\ntitle", "id: plain\ntitle"),
                                                   encoding="utf-8")
    assert assignment_problems(HEAD + "  - template: plain\n    parts:\n"
                                      "      root: {rubric: {method: 1}}\n") == [
        "hw.yaml:8: problems[0].parts.root.rubric: part 'root' has no rubric items to give points to"]


def test_a_parts_new_points_scale_its_rubric(workspace):
    part = loaded_part(HEAD + BOTTLENECK + "      static: {points: 4}\n", "static")
    assert part.points == 4
    assert points(part.rubric) == {"same_vector": 2.0, "context": 2.0, "claims_different": -2.0}
    assert (part.rubric.floor, part.rubric.ceiling, part.rubric.start) == (0.0, 4.0, 0.0)


def test_a_problems_total_scales_every_rubric(workspace):
    problem = HEAD + "  - template: bottleneck_free_response\n    points: 4\n"
    Path("hw.yaml").write_text(problem, encoding="utf-8")
    template = load_assignment(Path("hw.yaml")).problems[0].template
    static, bottleneck, common = template.parts
    assert (static.points, bottleneck.points, common.points) == (1, 1, 2)
    assert points(bottleneck.rubric) == {"counts": 0.5, "long_sentences": 0.5, "grows_with_length": -0.25}
    assert common.rubric.ceiling == 2 and rubrics.reachable(common.rubric) == 2


def test_overridden_points_apply_after_scaling(workspace):
    part = loaded_part(HEAD + BOTTLENECK + "      static: {points: 4, rubric: {same_vector: 3}}\n",
                       "static")
    assert points(part.rubric) == {"same_vector": 3.0, "context": 2.0, "claims_different": -2.0}
