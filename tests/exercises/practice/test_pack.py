"""Practice notebooks (exercises.practice.pack): built for a template, run in a real Jupyter
kernel with the installed kit out of reach (the notebook must carry what it needs): a right
answer, a named mistake, a slip carried forward, a fresh variant, the log beside it."""

import base64
import json
import re
import zlib

import nbformat
import pytest
from nbclient import NotebookClient

from exercises.course.bank import load_bank
from exercises.practice.pack import build_pack, protected_functions
from exercises.practice.variants import practice_variants

BLOCK_THE_KIT = '''import importlib.abc, sys
class _NoKit(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in {"solutions", "grader", "exercises", "formats", "attnkit", "synthetic", "orjson"}:
            raise ImportError(f"{name}: the installed kit is out of reach in this test")
sys.meta_path.insert(0, _NoKit())
'''


@pytest.fixture(scope="module")
def bank():
    return load_bank()[0]


@pytest.fixture(scope="module")
def sdpa_notebook(bank):
    built, skipped = build_pack([bank["sdpa_four_tokens"]], 3, set(), protected_functions(bank))
    assert skipped == [] and built[0][2] == ()
    return built[0][1]


def variants_of(notebook) -> list[dict]:
    """The variants a practice notebook carries (decoded from its setup cell)."""
    blob = re.search(r'_VARIANTS = _json.loads\(zlib.decompress\(base64.b64decode\("([^"]+)"\)\)\)',
                     notebook.cells[1].source).group(1)
    return json.loads(zlib.decompress(base64.b64decode(blob)))


def run(notebook, cwd, extra: str):
    node = nbformat.from_dict(json.loads(json.dumps(notebook)))
    node.cells.insert(0, nbformat.v4.new_code_cell(BLOCK_THE_KIT))
    node.cells.append(nbformat.v4.new_code_cell(extra))
    for n, cell in enumerate(node.cells):
        cell["id"] = f"c{n}"
    NotebookClient(node, timeout=120, kernel_name="python3", allow_errors=True,
                   resources={"metadata": {"path": str(cwd)}}).execute()
    return node


def outputs(node) -> str:
    return "".join(o.get("text", "") + o.get("evalue", "") for c in node.cells if c.cell_type == "code"
                   for o in c.outputs)


def test_a_practice_session_in_a_kernel_needs_numpy_alone(sdpa_notebook, tmp_path):
    extra = '''import numpy as np
check("raw_scores", Q @ K.T)
check("scaled_scores", Q @ K.T)                       # the scale left out
slip = Q @ K.T; slip[0, 0] += 1
check("raw_scores", slip)
check("scaled_scores", slip / np.sqrt(d_k))           # carried forward
first, before = _practice.index, Q.copy()
next_variant()
print("moved", first, _practice.index, Q.shape != before.shape or bool((Q != before).any()))
summary()
'''
    node = run(sdpa_notebook, tmp_path, extra)
    said = outputs(node)
    assert "the installed kit is out of reach" not in said, said
    assert not [o for c in node.cells if c.cell_type == "code" for o in c.outputs
                if o.output_type == "error"], said
    drawn = [v["index"] for v in variants_of(sdpa_notebook)]
    assert "(raw_scores) right." in said
    assert "(scaled_scores) wrong: `scaled_scores` matches a known mistake: softmax(QKᵀ)V without the 1/√d_k scale" in said
    assert "(scaled_scores) right given your earlier answer." in said
    assert f"moved {drawn[0]} {drawn[1]} True" in said
    assert "(weights) not answered yet: replace the ... in its cell" in said
    assert "scaled_scores: 2 attempts on 1 variant, right at the first attempt on 0" in said and "mistakes met: softmax(QKᵀ)V without" in said
    log = json.loads((tmp_path / "sdpa_four_tokens.practice-log.json").read_text())
    assert [(a["part"], a["outcome"], a["misconception"], a["first"]) for a in log["attempts"]] == [
        ("raw_scores", "right", None, True), ("scaled_scores", "wrong", "sdpa_no_scale", True),
        ("raw_scores", "wrong", None, False), ("scaled_scores", "right given your earlier answer", None, False)]


def test_the_same_pack_twice_is_the_same_bytes(bank, sdpa_notebook):
    again = build_pack([bank["sdpa_four_tokens"]], 3, set(), protected_functions(bank))[0][0][1]
    assert nbformat.writes(again) == nbformat.writes(sdpa_notebook)


def test_the_notebook_says_it_is_practice_and_carries_no_model_or_secret(sdpa_notebook, bank):
    record = sdpa_notebook.metadata["attnkit"]
    assert record["practice"]["template"] == "sdpa_four_tokens" and "student" not in record
    carried = variants_of(sdpa_notebook)
    assert [v["index"] for v in carried] == [p.index for p in practice_variants(bank["sdpa_four_tokens"], 3)]
    assert all("signature" not in v["record"] for v in carried)


def test_follow_through_that_needs_an_implement_answer_is_left_out_and_said(bank):
    built, _ = build_pack([bank["parallel_generation"]], 2, set(), protected_functions(bank))
    template, notebook, left_out = built[0]
    assert left_out == ("log_probs",)
    assert all("log_probs" not in v["record"]["follow"] and "loss" in v["record"]["follow"]
               for v in variants_of(notebook))
    assert "Follow-through for `log_probs` is not checked here" in notebook.cells[0].source
    assert "def causal_attention" not in json.dumps(notebook)


def test_free_response_problems_are_skipped_with_why(bank):
    built, skipped = build_pack([bank["bottleneck_free_response"]], 2, set(), protected_functions(bank))
    assert built == [] and [(s.template, s.why) for s in skipped] == [("bottleneck_free_response", "marked by hand")]


def test_an_implementation_is_checked_on_the_variants_cases_in_a_kernel(bank, tmp_path):
    """implement_decode_step: the reference passes every family; the top-left mask is named;
    the cases are the variant's (none of a graded key)."""
    built, _ = build_pack([bank["implement_decode_step"]], 2, set(), protected_functions(bank))
    notebook = built[0][1]
    sources = [c.source for c in notebook.cells]
    assert "def decode_step(cache, x_new, W_Q, W_K, W_V):\n    ...   # your code" in sources
    assert "check_function(decode_step)" in sources
    assert "def self_attention_decode_step" not in json.dumps(notebook)
    extra = """import numpy as np
def attend(cache, x_new, W_Q, W_K, W_V, offset):
    q, k, v = x_new @ W_Q, x_new @ W_K, x_new @ W_V
    K, V = np.concatenate([cache[0], k]), np.concatenate([cache[1], v])
    L, S = len(q), len(K)
    s = np.where(np.tril(np.ones((L, S), bool), k=offset(L, S)), q @ K.T / np.sqrt(q.shape[-1]), -np.inf)
    w = np.exp(s - s.max(-1, keepdims=True))
    return (w / w.sum(-1, keepdims=True)) @ V, (K, V)
def decode_step(cache, x_new, W_Q, W_K, W_V):
    return attend(cache, x_new, W_Q, W_K, W_V, lambda L, S: S - L)
check_function(decode_step)
def decode_step(cache, x_new, W_Q, W_K, W_V):
    return attend(cache, x_new, W_Q, W_K, W_V, lambda L, S: 0)
check_function(decode_step)
"""
    said = outputs(run(notebook, tmp_path, extra))
    assert said.count("right.") == 5, said     # 4 families, then first_step again (S = L: both masks agree)
    assert "(chunk) wrong: `decode_step` fails" in said
    assert "matches a known mistake: the step masks with the top-left causal mask" in said


AGREE = '''import json, sys
sys.meta_path.insert(0, _NoKit())
nb = json.load(open(sys.argv[1]))
exec(nb["cells"][1]["source"].split("import datetime")[0])          # the carried modules only
from formats.serialize import from_jsonable
from grader.verdicts.practice import judge
out = []
for case in json.load(open(sys.argv[2])):
    verdicts = judge(case["record"], {p: from_jsonable(v) for p, v in case["answers"].items()})
    out.append({p: [v.score, v.status, v.misconception] for p, v in verdicts.items()})
print(json.dumps(out))
'''


@pytest.mark.parametrize("template_id", ["sdpa_four_tokens", "causal_mask_by_hand", "bahdanau_step_by_hand"])
def test_the_carried_checker_gives_the_graders_verdicts_on_the_synthetic_mistakes(bank, template_id, tmp_path):
    """Every synthetic mistake of the template, on each of the notebook's variants: the checker
    the notebook carries (run where the installed kit cannot be imported) and the grader in this
    process give the same score, status and named mistake, part by part."""
    import subprocess
    import sys

    from formats.serialize import decode_names, to_jsonable
    from grader.verdicts.follow_through import carried
    from grader.verdicts.parts import problem_verdicts
    from grader.verdicts.practice import practice_record
    from synthetic import mistakes as corpus

    built, _ = build_pack([bank[template_id]], 3, set(), protected_functions(bank))
    notebook = built[0][1]
    cases, expected = [], []
    for v in variants_of(notebook):
        record = practice_record(v["record"])
        for m in (m for m in corpus.by_template()[template_id] if m.kind == corpus.NUMERIC):
            wrong = corpus.answer(m, record)
            if wrong is None:
                continue
            answers = {**decode_names(record["answers"]), m.part: wrong}
            graded = carried(record, answers, problem_verdicts(record, answers, {}, {}))
            cases.append({"record": v["record"], "answers": {p: to_jsonable(a) for p, a in answers.items()}})
            expected.append({p: [g.score, g.status, g.misconception] for p, g in graded.items()})
    assert len(cases) >= 10
    (tmp_path / "nb.json").write_text(json.dumps(notebook))
    (tmp_path / "cases.json").write_text(json.dumps(cases))
    (tmp_path / "agree.py").write_text(BLOCK_THE_KIT + AGREE)
    done = subprocess.run([sys.executable, str(tmp_path / "agree.py"), str(tmp_path / "nb.json"),
                           str(tmp_path / "cases.json")], capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-2000:]
    assert json.loads(done.stdout) == expected
