"""Templates that read a trained model (``model: NAME``, exercises.template.trained_models): the
name found beside the template or in the bank, the weights checked against the digest the
template recorded, the model read by expressions as ``model`` and never a value, a given or
a follow-through's input, and its digest part of the template's own."""

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from exercises.template import trained_models
from exercises.template.model import TemplateError
from exercises.template.schema import load_template
from exercises.variant.draw import make_variant
from formats import serialize
from tests.exercises.templates import inline, line_of, numeric

BANK = Path(__file__).resolve().parents[3] / "problem_bank"
READS_MODEL = numeric("digits: {dist: integers, low: 0, high: 9, shape: [4]}\n",
                      "first_weight", derived="maps: head_maps(model, digits)\nfirst_weight: maps.cross[0][0][0][0]\n",
                      extra="model: copy\ngivens: [digits]\n")


def test_a_template_reads_its_model_through_the_reference():
    template = inline(READS_MODEL)
    assert template.model == "copy" and template.model_file.endswith("models/copy.json")
    assert template.model_digest == json.loads((BANK / "models" / "copy.json").read_text())["digest"]
    v = make_variant(template, 3)
    assert 0 < v.answers["ans"] <= 1
    assert "model" not in v.values                 # the weights are never a value of the variant
    assert all(not hasattr(x, "weights") for x in v.values.values())


def test_an_unknown_model_is_a_load_error_at_its_line():
    source = READS_MODEL.replace("model: copy", "model: transpose")
    with pytest.raises(TemplateError) as caught:
        inline(source)
    message = str(caught.value)
    assert message.startswith(f"inline.yaml:{line_of(source, 'model: transpose')}: model: no trained model 'transpose'")
    assert "copy, reverse, sort" in message


@pytest.mark.parametrize("change, says", [
    (lambda s: s.replace("model: copy\n", ""), "a template reads a trained model after 'model: NAME'"),
    (lambda s: s.replace("givens: [digits]", "givens: [digits, model]"), "the trained model is not a given"),
    (lambda s: s.replace("model: copy", "model: ../copy"), "is not a model name"),
    (lambda s: s.replace("digits: {", "model: {"), "reserved"),
])
def test_the_model_is_not_a_value_a_given_or_a_path(change, says):
    with pytest.raises(TemplateError, match=says):
        inline(change(READS_MODEL))


def test_a_follow_expression_may_not_read_the_model():
    later = ("  - id: later\n    answer: first_weight * 2\n    points: 1\n"
             "    follow: ans * 2 + 0 * head_maps(model, digits).cross[0][0][0][0]\n")
    source = READS_MODEL.replace("model: copy\n", later + "model: copy\n")
    with pytest.raises(TemplateError, match="a follow expression cannot read the trained model"):
        inline(source)


def _template_with_local_model(folder: Path, name="copy") -> Path:
    (folder / "models").mkdir(parents=True)
    for suffix in (".json", ".npz"):
        shutil.copy(BANK / "models" / f"copy{suffix}", folder / "models" / f"{name}{suffix}")
    path = folder / "probe.yaml"
    path.write_text(READS_MODEL.replace("model: copy", f"model: {name}"), encoding="utf-8")
    return path


def test_a_model_beside_the_template_comes_first_and_its_digest_is_the_templates(tmp_path):
    path = _template_with_local_model(tmp_path, "mine")
    template = load_template(path)
    assert Path(template.model_file) == tmp_path.resolve() / "models" / "mine.json"
    assert make_variant(template, 1).answers == make_variant(inline(READS_MODEL), 1).answers
    described = json.loads((tmp_path / "models" / "mine.json").read_text())
    described["digest"] = "sha256:" + "0" * 64       # other weights, as far as the template knows
    (tmp_path / "models" / "mine.json").write_text(json.dumps(described))
    assert load_template(path).source_digest != template.source_digest   # a built key goes stale


def test_weights_changed_after_the_template_was_loaded_are_refused(tmp_path):
    path = _template_with_local_model(tmp_path)
    template = load_template(path)
    with np.load(tmp_path / "models" / "copy.npz") as data:
        weights = {k: data[k] for k in data.files}
    weights["decoder.layers.0.cross_attn.W_O"] = weights["decoder.layers.0.cross_attn.W_O"] * 0.5
    np.savez(tmp_path / "models" / "copy.npz", **weights)
    trained_models.load.cache_clear()
    with pytest.raises(Exception, match="not those of its .json"):
        make_variant(template, 0)


def test_the_bank_marks_its_model_templates_and_their_keys_hold_no_weights():
    for tid, model in (("trained_heads", "reverse"), ("ablate_head", "copy")):
        template = load_template(BANK / f"{tid}.yaml")
        assert template.model == model
        v = make_variant(template, 0)
        stored = json.dumps(serialize.to_jsonable({**v.givens, **v.answers}))
        assert len(stored) < 20_000, (tid, len(stored))     # maps and distributions, not 31k weights
