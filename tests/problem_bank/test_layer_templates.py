"""Issue 36 on the layer templates: multihead_perspectives' story is what its numbers show,
and encoder_decoder_step carries every step forward from the student's own inputs."""

import numpy as np
import pytest

from exercises.course.bank import load_bank
from exercises.render.preview import preview
from exercises.variant.draw import make_variant
from formats import key_shape as shape
from formats.serialize import decode_names, from_jsonable
from grader.verdicts.follow_through import recompute, carried
from grader.verdicts.parts import problem_verdicts

SEEDS = range(200)

# what each relation points at, for tokens 0 … 3, written out: a relation with no word there
# (token 0's previous word, token 3's next one, …) points at the token itself
RELATIONS = {"previous": [0, 0, 1, 2], "next": [1, 2, 3, 3], "two back": [0, 1, 0, 1],
             "two ahead": [2, 3, 2, 3], "itself": [0, 1, 2, 3], "first": [0, 0, 0, 0],
             "last": [3, 3, 3, 3]}
STORY_WORDS = {"previous": "before it", "next": "after it", "two back": "two places before",
               "two ahead": "two places after", "itself": "looks at itself",
               "first": "first word, token 0", "last": "last word, token 3"}


@pytest.fixture(scope="module")
def bank():
    return load_bank()[0]


@pytest.fixture(scope="module")
def perspectives(bank):
    return [make_variant(bank["multihead_perspectives"], seed) for seed in SEEDS]


def test_each_head_attends_where_the_solution_says(perspectives):
    for v in perspectives:
        attends = np.asarray(v.answers["attends"])
        for h in (0, 1):
            relation = v.values[f"rel_{h}"]
            assert list(attends[h]) == RELATIONS[relation], (v.seed, h, relation)
            story = v.values[f"story_{h}"]
            assert STORY_WORDS[relation] in story, (relation, story)
        assert v.values["rel_0"] != v.values["rel_1"]


def test_the_edge_tokens_are_said_to_look_at_themselves(perspectives):
    for v in perspectives[:40]:
        text = preview(v, solution=True)
        for h in (0, 1):
            assert v.values[f"story_{h}"] in " ".join(text.split()), v.seed
        if "previous" in (v.values["rel_0"], v.values["rel_1"]):
            assert "token 0 has no previous word and looks at itself" in " ".join(text.split())
        if "next" in (v.values["rel_0"], v.values["rel_1"]):
            assert "has no next word and looks at itself" in " ".join(text.split())


def test_neighbours_rarely_share_an_answer(perspectives):
    attends = {tuple(np.asarray(v.answers["attends"]).ravel()) for v in perspectives}
    weights = [tuple(np.round(np.asarray(v.answers["weights_0"]), 3).ravel()) for v in perspectives]
    assert len(attends) >= 35                      # 42 ordered pairs of the 7 relations
    shared = sum(a == b for i, a in enumerate(weights) for b in weights[i + 1:])
    assert shared <= 0.002 * len(weights) * (len(weights) - 1) / 2


def test_the_prompt_says_what_the_one_hot_inputs_are(bank):
    prompt = bank["multihead_perspectives"].prompt
    assert "position code" in prompt and "attention-weight matrix" in prompt
    assert "row $i$ of a weight matrix" not in prompt


def test_the_parts_name_what_they_catch(bank):
    parts = {p.id: p for p in bank["multihead_perspectives"].parts}
    assert list(parts["attends"].misconceptions) == ["mha_weights_read_by_column"]
    assert "merge_heads_averaged" in parts["concat"].misconceptions
    assert parts["output"].follow is not None and parts["from_head_1"].follow is not None


# --- encoder_decoder_step ----------------------------------------------------------------------

PE_TWINS = {"positional_encoding_omitted", "positional_encoding_one_based",
            "positional_encoding_sin_cos_swapped", "positional_encoding_concatenated",
            "positional_encoding_exponent_j", "embed_no_sqrt_d_model"}


def test_every_step_reads_the_students_earlier_answers(bank):
    parts = bank["encoder_decoder_step"].parts
    assert [p.id for p in parts] == ["X", "Y", "memory", "self_weights", "cross_weights",
                                     "next_log_probs", "next_token"]
    reads = {p.id: p.follow.names & {q.id for q in parts} for p in parts if p.follow is not None}
    assert reads == {"memory": {"X"}, "self_weights": {"Y"}, "cross_weights": {"Y", "memory"},
                     "next_log_probs": {"Y", "memory"}, "next_token": {"next_log_probs"}}
    for p in parts:                              # the input mistakes are the inputs' to catch
        listed = set(p.misconceptions)
        assert (listed >= PE_TWINS) if p.id in ("X", "Y") else not (listed & PE_TWINS), p.id


@pytest.mark.parametrize("twin", ["positional_encoding_omitted", "positional_encoding_one_based"])
def test_an_input_slip_costs_the_inputs_only(twin):
    from synthetic import mistakes as corpus
    for seed in range(12):
        record = corpus.record("encoder_decoder_step", seed)
        names = shape.answer_names(record)
        mine = dict(decode_names(record["answers"]))
        stored = from_jsonable(record["twins"][twin])
        mine["X"], mine["Y"] = stored["X"], stored["Y"]
        for part in ("memory", "self_weights", "cross_weights", "next_log_probs", "next_token"):
            recipe = record["follow"][part]
            mine[part] = recompute(recipe, {p: np.asarray(mine[p], dtype=float) for p in recipe["parts"]})
        values = {names[p]: v for p, v in mine.items()}
        verdicts = carried(record, values, problem_verdicts(record, values, {}, {}))
        assert verdicts["X"].misconception == twin and verdicts["Y"].misconception == twin
        assert sum(v.score for v in verdicts.values()) == pytest.approx(7), seed
