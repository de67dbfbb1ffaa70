"""Similar implement code (grader/forensics/fingerprints.py): a renamed, reformatted and reordered
copy is found; independent code, short code of the same shape and the reference with the
same small edit are not; hostile input is read in bounded time and never raises."""

import random
import time
from itertools import combinations

from grader.forensics.fingerprints import (MAX_CHARS, MAX_EVIDENCE, W, Fingerprints, _winnow,
                                              candidate_pairs, fingerprints, line_ranges, plain,
                                              reference_share, similar_pairs, similarity, statements)
from synthetic.colluders import ALTERNATIVES, disguise
from synthetic.twin_edits import CODE_EDITS, edit_code

STUB = '''def masked_attention(Q, K, V, mask=None):
    """Returns the output Z, shape (..., L, d_v)."""
    # YOUR CODE HERE
    raise NotImplementedError()
'''
REFERENCE = '''def masked_attention(Q, K, V, mask=None):
    """Returns the output Z, shape (..., L, d_v)."""
    d_k = Q.shape[-1]
    scores = Q @ np.swapaxes(K, -1, -2) / np.sqrt(d_k)          # (..., L, S)
    if mask is not None:
        scores = np.where(mask, scores, -np.inf)                  # blocked → weight 0
    scores = scores - scores.max(axis=-1, keepdims=True)          # no overflow
    weights = np.exp(scores)
    weights = weights / weights.sum(axis=-1, keepdims=True)       # softmax over keys
    return weights @ V                                             # (..., L, d_v)
'''
GIVEN, REF = fingerprints(STUB).hashes, fingerprints(REFERENCE).hashes - fingerprints(STUB).hashes


def _class(extra: dict) -> dict:
    """A class of ten students handing in the reference, and ``extra``."""
    codes = {f"ref{i}": fingerprints(REFERENCE) for i in range(10)}
    codes.update({sid: fingerprints(src) for sid, src in extra.items()})
    return codes


def test_renaming_reformatting_comments_and_reordering_leave_the_fingerprints_as_they_are():
    a = "def f(x, y):\n    total = np.sum(x, axis=0)  # sum\n    scale = len(y) * 2.0\n    return total / scale\n"
    b = ("def f(x, y):\n    '''Docstring.'''\n    s = len(y)*2.0\n\n    acc = np.sum(\n        x,\n"
         "        axis=0)\n    return acc/s\n")
    assert fingerprints(a).hashes == fingerprints(b).hashes
    # what carries the method is kept: another NumPy call, keyword or number kind is another program
    assert fingerprints(a.replace("np.sum", "np.mean")).hashes != fingerprints(a).hashes
    assert fingerprints(a.replace("axis=0", "keepdims=0")).hashes != fingerprints(a).hashes
    assert fingerprints(a.replace("2.0", "2")).hashes != fingerprints(a).hashes


def test_a_disguised_copy_of_independent_code_is_a_similar_pair_with_its_lines():
    for i, original in enumerate(ALTERNATIVES[:5]):
        copy = disguise(original, random.Random(i))
        assert copy != original
        pairs, _ = similar_pairs(_class({"author": original, "copier": copy}), GIVEN, REF)
        assert [(p.a, p.b) for p in pairs] == [("author", "copier")], i
        assert pairs[0].similarity >= 0.5 and len(pairs[0].lines_a) >= 3 and len(pairs[0].lines_b) >= 3


def test_independent_implementations_written_differently_are_not_similar():
    codes = _class({f"alt{i}": src for i, src in enumerate(ALTERNATIVES)})
    pairs, seen = similar_pairs(codes, GIVEN, REF)
    assert pairs == []
    assert max(similarity(codes[f"alt{i}"], codes[f"alt{j}"], GIVEN | REF)
               for i, j in combinations(range(len(ALTERNATIVES)), 2)) < 0.3


def test_everybody_handing_in_the_reference_or_the_same_edit_of_it_is_no_evidence():
    """The synthetic misconceptions are the reference with one textual edit, and a large
    class hands in each several times: the same edit shared is the reference shared."""
    edited = {twin: edit_code(REFERENCE, twin) for twin in CODE_EDITS}
    extra = {f"{twin}#{k}": src for twin, src in edited.items() if src for k in range(3)}
    assert len(extra) >= 30
    for max_holders in (None, 1000):          # with and without MOSS's many-holders filter
        assert similar_pairs(_class(extra), GIVEN, REF, max_holders=max_holders)[0] == []
    assert all(reference_share(fingerprints(src), REF, GIVEN) >= 0.5 for src in extra.values())


def test_short_code_of_the_same_shape_is_not_similar():
    one = "def f(x):\n    y = np.exp(x)\n    return y / y.sum()\n"
    two = "def f(a):\n    b = np.exp(a)\n    return b / b.sum()\n"
    pairs, _ = similar_pairs({"a": fingerprints(one), "b": fingerprints(two)})
    assert pairs == []                     # identical, but too little code to be evidence
    assert similarity(fingerprints(one), fingerprints(two)) == 1.0


def test_identical_code_outside_the_reference_is_similar_without_a_reference_too():
    src = ALTERNATIVES[2]
    pairs, seen = similar_pairs({"a": fingerprints(src), "b": fingerprints(src),
                                 "c": fingerprints(ALTERNATIVES[0])})
    assert [(p.a, p.b, p.similarity) for p in pairs] == [("a", "b", 1.0)]


def test_winnowing_keeps_the_minimum_of_every_window():
    hashes = [5, 3, 8, 1, 9, 9, 2, 7]
    chosen = _winnow(hashes)
    for start in range(len(hashes) - W + 1):
        assert min(hashes[start:start + W]) in chosen
    assert chosen <= set(hashes) and _winnow([4, 2]) == {2} and _winnow([]) == set()


def test_the_inverted_index_compares_only_pairs_that_share_and_skips_long_posting_lists():
    own = {"a": frozenset({1, 2}), "b": frozenset({2, 3}), "c": frozenset({4}),
           **{f"x{i}": frozenset({9}) for i in range(6)}}
    assert candidate_pairs(own, max_holders=4) == {("a", "b"): 1}


def test_hostile_input_is_bounded_and_never_raises():
    long_code = "x = (1 + 2) * y\n" * (1_000_000 // 16)
    cases = {
        "1 MB of code": long_code,
        "deep nesting": "x = " + "(" * 100_000 + "1" + ")" * 100_000 + "\n",
        "unclosed nesting": "x = " + "[" * 50_000,
        "invalid syntax": "def f(:\n  return ]]]\n\tif else\n" * 200,
        "NUL bytes": "def f(x):\n    y = x\x00\x00 + 1\n    return y\n" + "\x00" * 10_000,
        "unterminated string": "s = '''" + "a\n" * 200_000,
        "bad dedent": "def f():\n        x = 1\n    y = 2\n",
        "not text": None,
    }
    for name, source in cases.items():
        started = time.perf_counter()
        fp = fingerprints(source)
        assert isinstance(fp, Fingerprints), name
        assert time.perf_counter() - started < 2.0, name
    assert fingerprints(long_code).truncated and len(long_code) > MAX_CHARS
    first, _ = statements("def f(x):\n    y = x\x00 + 1\n    return y\n")
    assert len(first) == 3                 # a NUL byte is a space, not the end of the code


def test_evidence_is_plain_text_and_capped():
    assert line_ranges([1, 2, 3, 7, 9, 10]) == "1–3, 7, 9–10"
    text = plain("a\x1b[31mb\nc" + "x" * 5000)
    assert "\x1b" not in text and "\n" not in text and len(text) <= MAX_EVIDENCE


def test_rings_of_identical_code_are_compared_once_and_flag_each_student_once():
    """1,200 students in 10 rings, each ring handing in one solution: one comparison per
    ring and per pair of rings (not per pair of students), one flag per student."""
    from grader.forensics.fingerprints import similar_groups
    from grader.forensics.flag_kinds import MAX_PARTNERS
    from grader.forensics.copied_code import _code_flags
    body = ("def f(Q, K, V):\n    s = Q @ K.T / np.sqrt(Q.shape[-1])\n    e = np.exp(s - s.max(-1, keepdims=True))\n"
            "    w = e / e.sum(-1, keepdims=True)\n    out = w @ V\n")
    codes = {}
    for i in range(1200):
        ring = i % 10
        fn = ("tanh", "sin", "cos", "exp", "log1p", "abs", "sqrt", "square", "sign", "floor")[ring]
        extra = "".join(f"    t{j} = np.{fn}(out {op} {j}) {op} np.{fn}(out)\n"
                        for j, op in enumerate(("+", "-", "*", "/", "**", "%")))
        codes[f"s{i:04d}"] = fingerprints(body + extra + "    return out\n")
    groups, seen = similar_groups(codes)
    assert len(seen) <= 10 + 45 and len(groups) == 10
    assert sum(count for _, count in seen) <= 1200 * 1199 // 2
    flags = _code_flags("p", "f", codes, frozenset(), frozenset())
    assert len(flags) == 1200 and len({f.student for f in flags}) == 1200
    assert all(len(f.partners) == MAX_PARTNERS and "more students' code is as similar" in f.evidence
               for f in flags)
