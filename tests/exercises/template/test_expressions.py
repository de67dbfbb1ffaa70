"""The template expression language: what it refuses, what it computes, and its guards."""

import json
import math
import pickle
from pathlib import Path

import numpy as np
import pytest

import solutions
from exercises.template import expression_errors, expressions
from exercises.course.bank import template_files
from exercises.template.expression_errors import ExpressionError, IllPosed
from exercises.template.expressions import Scope, parse
from exercises.template.model import TemplateError
from exercises.template.schema import load_template
from exercises.variant.draw import make_variant
from tests.exercises.templates import fast, inline, numeric

REPO = Path(__file__).resolve().parents[3]
BANK = REPO / "problem_bank"
BANK_FILES = sorted(template_files([BANK]))


def ev(source, strict=True, tie_gap=0.01, rng_seed=0, functions=None, **values):
    scope = Scope(values=values, strict=strict, tie_gap=tie_gap, rng_seed=rng_seed)
    if functions is not None:
        scope.functions = functions
    return parse(source).evaluate(scope)


# --- refused when parsed (the template does not load) ------------------------------------------

@pytest.mark.parametrize("source, message", [
    ("import os", "cannot parse expression 'import os': invalid syntax"),
    ("x = 1", "cannot parse expression 'x = 1': invalid syntax"),
    ("f(lambda x: x)", "Lambda is not allowed in expression 'f(lambda x: x)'"),
    ("(lambda: 0)()", "only named functions can be called in '(lambda: 0)()'"),
    ("x.__class__", "attribute '__class__' is not allowed in expression 'x.__class__'"),
    ("steps._scale", "attribute '_scale' is not allowed in expression 'steps._scale'"),
    ("softmax.__globals__['np']",
     "attribute '__globals__' is not allowed in expression \"softmax.__globals__['np']\""),
    ("fs[0](1)", "only named functions can be called in 'fs[0](1)'"),
    ("f(*xs)", "*args/**kwargs are not allowed in 'f(*xs)'"),
    ("f(**kw)", "*args/**kwargs are not allowed in 'f(**kw)'"),
    ("{x for x in xs}", "SetComp is not allowed in expression '{x for x in xs}'"),
    ("{x: 1 for x in xs}", "DictComp is not allowed in expression '{x: 1 for x in xs}'"),
    ("sum(x for x in xs)", "GeneratorExp is not allowed in expression 'sum(x for x in xs)'"),
    ("[(y := x) for x in xs]", "NamedExpr is not allowed in expression '[(y := x) for x in xs]'"),
    ("[a for a, b in pairs]",
     "only 'for NAME in …' comprehensions are allowed in '[a for a, b in pairs]'"),
    ("[*xs]", "Starred is not allowed in expression '[*xs]'"),
    ("f'{x}'", "JoinedStr is not allowed in expression \"f'{x}'\""),
])
def test_parse_refuses(source, message):
    with pytest.raises(ExpressionError) as caught:
        parse(source)
    assert str(caught.value) == message


def test_parse_refuses_a_comprehension_with_two_fors():
    """Evaluation only supports one 'for'; the template must be refused when it is loaded,
    not at the first variant whose list happens to be non-empty."""
    with pytest.raises(ExpressionError):
        parse("[x for x in xs for y in ys]")


def test_import_builtin_is_an_unknown_function_and_cannot_run():
    expression = parse("__import__('os').system('true')")
    assert expressions.unknown_functions(expression) == ["__import__"]
    with pytest.raises(ExpressionError, match="unknown function '__import__'"):
        expression.evaluate(Scope(values={}))


def test_names_and_calls_are_collected():
    e = parse("scaled_dot_product_attention(Q, K, V, mask=causal_mask(L)).weights[0] + bias")
    assert e.names == {"Q", "K", "V", "L", "bias"}
    assert e.calls == {"scaled_dot_product_attention", "causal_mask"}


def test_comprehension_variable_is_not_visible_outside_the_comprehension():
    """`n` after the comprehension is an undefined name, and the load-time check must see it."""
    assert "n" in parse("[n for n in xs] + [n]").names
    assert parse("[n * 2 for n in xs if n > 0]").names == {"xs"}


# --- refused when evaluated: attributes of things that are not reference results --------------

@pytest.mark.parametrize("source, message", [
    ("'abc'.upper()", "attribute .upper is only available on arrays and on results of reference "
                      "functions, not on str"),
    ("x.sum()", "arrays only offer .T, .ndim, .shape, .size, not .sum"),
    ("x.tolist()", "arrays only offer .T, .ndim, .shape, .size, not .tolist"),
    ("sum(x).item()", "attribute .item is only available on arrays and on results of reference "
                      "functions, not on float64"),
    ("rng.integers(0, 10)", "attribute .integers is only available on arrays and on results of "
                            "reference functions, not on Generator"),
    ("softmax.func", "unknown name 'softmax'"),   # functions are called, never passed around
    ("nosuch(1)", "unknown function 'nosuch'"),
    ("undefined_name + 1", "unknown name 'undefined_name'"),
])
def test_evaluation_refuses(source, message):
    with pytest.raises(ExpressionError) as caught:
        ev(source, x=np.ones(3))
    assert str(caught.value) == message


def test_attributes_of_reference_results_and_arrays_work():
    Q = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])
    steps = solutions.scaled_dot_product_attention(Q, Q, Q, return_steps=True)
    assert np.array_equal(ev("steps.weights", steps=steps), steps.weights)
    assert ev("steps.weights.shape", steps=steps) == (3, 3)
    assert np.array_equal(ev("Q.T", Q=Q), Q.T)
    assert ev("Q.ndim + Q.size", Q=Q) == 8
    assert ev('ALIGNMENT_SCORES["dot"].learnable') == solutions.ALIGNMENT_SCORES["dot"].learnable


# --- arithmetic, masks, indexing -----------------------------------------------------------------

@pytest.mark.parametrize("source, expected", [
    ("1 + 2 * 3 ** 2", 19),
    ("7 // 2 + 7 % 3", 4),
    ("-7 / 2", -3.5),
    ("2 ** 64", 2 ** 64),
    ("1 < 2 < 3", True),
    ("1 < 3 < 2", False),
    ("'a' if 2 > 1 else 'b'", "a"),
    ("'b' in ['a', 'b']", True),
    ("not 0", True),
    ("0 and undefined_name", 0),       # short-circuit: the right side is never looked up
    ("1 or undefined_name", 1),
    ("[n * n for n in range(5) if n % 2 == 0]", [0, 4, 16]),
    ("len([1, 2, 3]) + max(4, 5) + min(1, 2)", 9),
    ("round(pi, 2)", 3.14),
    ("fmt(2 / 3, 3)", "0.667"),
    ("join(['the', 'dog'])", "the dog"),
    ("index(['a', 'b', 'c'], 'c')", 2),
    ("-inf < 0", True),
])
def test_arithmetic(source, expected):
    assert ev(source) == expected


def test_array_arithmetic_and_indexing():
    A = np.array([[1.0, 2.0], [3.0, 4.0]])
    assert np.array_equal(ev("A @ A", A=A), A @ A)
    assert np.array_equal(ev("A[:, 0]", A=A), np.array([1.0, 3.0]))
    assert np.array_equal(ev("A[1]", A=A), np.array([3.0, 4.0]))
    assert np.array_equal(ev("A[[1, 0]]", A=A), A[[1, 0]])
    assert ev("A[1, 0]", A=A) == 3.0
    assert np.array_equal(ev("A / sqrt(4)", A=A), A / 2)
    assert np.array_equal(ev("(A > 2) == array([[False, False], [True, True]])", A=A),
                          np.array([[True, True], [True, True]]))
    assert np.allclose(ev("sum(exp(A), axis=-1)", A=A), np.exp(A).sum(axis=-1))


def test_masks():
    keep = np.array([[1, 0, 0], [0, 0, 0], [1, 1, 0]])
    mask = ev("as_bool(keep) | as_bool(eye(3))", keep=keep)
    assert mask.dtype == bool
    assert mask.tolist() == [[True, False, False], [False, True, False], [True, True, True]]
    assert ev("~m", m=mask).tolist() == (~mask).tolist()
    assert ev("m & causal_mask(3)", m=mask).tolist() == (mask & np.tril(np.ones((3, 3), bool))).tolist()
    assert ev("count_nonzero(logical_not(m))", m=mask) == 4
    assert ev("all(any(m, axis=-1))", m=mask)


def test_reference_functions_are_called():
    rng = np.random.default_rng(0)
    Q, K, V = rng.normal(size=(3, 4, 2))
    got = ev("scaled_dot_product_attention(Q, K, V, mask=causal_mask(4), return_steps=True)",
             Q=Q, K=K, V=V)
    want = solutions.scaled_dot_product_attention(Q, K, V, mask=solutions.causal_mask(4),
                                                  return_steps=True)
    assert np.array_equal(got.weights, want.weights)
    assert np.array_equal(got.output, want.output)
    assert np.array_equal(ev("causal_mask(3)"), np.tril(np.ones((3, 3), dtype=bool)))
    assert np.allclose(ev("sum(softmax(x), axis=-1)", x=Q), 1.0)
    assert ev("mha_param_count(8, 2)") == solutions.mha_param_count(8, 2)


def test_scope_functions_replace_a_reference_function():
    """How a misconception twin is evaluated: the same expression, another function."""
    x = np.array([[1.0, 2.0], [3.0, 5.0]])
    twin = solutions.TWINS["softmax_axis_1"]
    functions = {**expressions.references.FUNCTIONS, twin.shadows: twin.function}
    normal = ev("softmax(x)", x=x)
    wrong = ev("softmax(x)", x=x, functions=functions)
    assert np.allclose(normal, solutions.softmax(x))
    assert np.allclose(wrong, twin.function(x))


# --- tie-aware choices ---------------------------------------------------------------------------

@pytest.mark.parametrize("source, value, answer", [
    ("argmax(x)", [0.3, 1.0, 1.005, 0.2], 2),
    ("argmin(x)", [0.3, 0.2, 0.205, 0.9], 1),
    ("rank(x)", [0.3, 0.5, 0.505, 0.9], [3, 2, 1, 0]),
])
def test_near_ties_are_ill_posed_in_strict_scope_only(source, value, answer):
    x = np.array(value)
    with pytest.raises(IllPosed, match="near-tie in"):
        ev(source, x=x)
    assert ev(source, x=x, strict=False) == answer
    assert ev(source, x=x, tie_gap=0.001) == answer   # a gap of 0.005 is clear at this tie_gap


def test_clear_winners_are_fine():
    assert ev("argmax(x)", x=np.array([0.1, 0.9, 0.5])) == 1
    assert ev("argmin(x)", x=np.array([0.1, 0.9, 0.5])) == 0
    assert ev("rank(x)", x=np.array([0.1, 0.9, 0.5])) == [1, 2, 0]
    assert ev("argmax(x)", x=np.array([[0.0, 0.0], [0.0, 1.0]])) == 3  # flat index
    assert ev("argmax(x, axis=-1)", x=np.array([[1.0, 0.0], [0.0, 1.0]])).tolist() == [0, 1]


def test_rank_refuses_a_tie_below_the_top():
    with pytest.raises(IllPosed):
        ev("rank(x)", x=np.array([0.9, 0.1, 0.1005, 0.5]))


def test_argmax_along_an_axis_checks_every_row():
    x = np.array([[3.0, 1.0, 0.0], [2.0, 2.0, 0.0]])
    with pytest.raises(IllPosed):
        ev("argmax(x, axis=1)", x=x)
    assert ev("argmax(x, axis=1)", x=x, strict=False).tolist() == [0, 0]
    columns = np.array([[3.0, 1.0], [2.0, 4.0]])
    assert ev("argmax(x, axis=0)", x=columns).tolist() == [0, 1]
    with pytest.raises(IllPosed):
        ev("argmax(x, axis=0)", x=np.array([[1.0, 5.0], [1.0, 0.0]]))


def test_exact_infinite_ties_are_ill_posed():
    """Two -inf (masked) scores tie exactly: "which is largest?" has no single answer."""
    with pytest.raises(IllPosed):
        ev("argmax(x)", x=np.array([-np.inf, -np.inf, -np.inf]))
    with pytest.raises(IllPosed):
        ev("argmax(x)", x=np.array([np.inf, np.inf, 0.0]))


def test_top_gap_for_constraints():
    assert ev("top_gap(x)", x=np.array([0.5, 2.0, 1.25])) == 0.75


# --- rng --------------------------------------------------------------------------------------------

def test_rng_gives_the_same_draws_on_re_evaluation():
    tokens = np.arange(2, 42)
    source = "mlm_select(t, rng, vocab_size=60, mask_id=1).selected"
    first = ev(source, t=tokens, rng_seed=123)
    again = ev(source, t=tokens, rng_seed=123)
    assert np.array_equal(first, again)
    assert first.sum() == 6  # round(0.15 · 40)
    # two uses of rng get separate streams, each reproducible
    both = ev(f"[{source}, {source}]", t=tokens, rng_seed=123)
    both_again = ev(f"[{source}, {source}]", t=tokens, rng_seed=123)
    assert all(np.array_equal(a, b) for a, b in zip(both, both_again))
    assert not np.array_equal(both[0], both[1])
    others = {tuple(ev(source, t=tokens, rng_seed=s).nonzero()[0]) for s in range(5)}
    assert len(others) > 1  # the seed matters


# --- size guards ---------------------------------------------------------------------------------

@pytest.mark.parametrize("source, message", [
    ("2 ** 5000", "integer power too large (more than 4096 bits)"),
    ("10 ** 1000000", "integer power too large (more than 4096 bits)"),
    ("[0] * 1000000000", "repeating text or lists with * is not allowed"),
    ("1000000000 * 'ab'", "repeating text or lists with * is not allowed"),
    ("xs + xs", "value too large (120000 items)"),
])
def test_huge_values_are_refused(source, message):
    with pytest.raises(ExpressionError) as caught:
        ev(source, xs=[0] * 60_000)
    assert str(caught.value) == message


def test_nested_integer_powers_are_refused():
    """Each exponent is ≤ 64, but the result has 262,144 digits; one more '** 64' takes
    ~20 s and another never finishes. The guard must bound the result, not the exponent."""
    with pytest.raises(ExpressionError):
        ev("((10 ** 64) ** 64) ** 64")


def test_comprehensions_are_never_silently_truncated():
    n = expression_errors.MAX_ITEMS + 1
    try:
        value = ev("[i for i in arange(n)]", n=n)
    except ExpressionError:
        return  # refusing is fine
    assert len(value) == n  # but a shortened list is a wrong answer


def test_range_respects_the_size_limit():
    """range() builds a Python list; range(10 ** 10) must be refused, not allocated."""
    with pytest.raises(ExpressionError):
        ev("range(n)", n=expression_errors.MAX_ITEMS * 10)


def test_plain_numbers_parse():
    assert parse(3).evaluate(Scope(values={})) == 3
    assert parse(2.5).source == "2.5"
    assert parse(True).evaluate(Scope(values={})) is True
    with pytest.raises(ExpressionError, match="expected an expression"):
        parse(["not", "text"])
    assert math.isinf(ev("inf"))


# --- size limits in templates --------------------------------------------------------------------

def test_nested_comprehensions_share_one_budget():
    with fast(2.0):
        with pytest.raises(ExpressionError, match="comprehensions of more than"):
            parse("[[j for j in range(400)] for i in range(400)]").evaluate(Scope(values={}))
    assert len(parse("[[j for j in range(100)] for i in range(100)]").evaluate(Scope(values={}))) == 100


@pytest.mark.parametrize("source", [
    "ones((20000, 20000))",
    "zeros([20000, 20000])",
    "full((20000, 20000), 1.0)",
    "eye(20000)",
    "arange(3e9)",
    "arange(0, 3e9, 1)",
    "arange(3000000000)",
    "[[j for j in range(1000)] for i in range(1000)]",
])
def test_huge_values_in_a_template_are_template_errors_quickly(source):
    template = inline(numeric("n: {dist: choice, values: [2, 3]}\n", "n",
                              f"big: {json.dumps(source)}\n"))
    with fast(2.0):
        with pytest.raises(TemplateError, match=r"^inline\.yaml:\d+: derived\.big: "):
            make_variant(template, 0)


def test_a_long_expression_is_refused():
    long = "[" + "1, " * 666 + "1]"   # 2001 characters, flat
    assert len(long) == 2001
    with pytest.raises(ExpressionError, match="at most 2000"):
        parse(long)
    ok = "[" + "1, " * 665 + "111]"   # 2000 characters
    assert len(ok) == 2000
    assert len(parse(ok).evaluate(Scope(values={}))) == 666
    with pytest.raises(TemplateError, match=r"^inline\.yaml:\d+: derived\.big: .*at most 2000"):
        inline(numeric("n: 2\n", "n", f"big: {json.dumps(long)}\n"))


@pytest.mark.parametrize("source", ["-" * 70 + "1", "[" * 70 + "]" * 70, "not " * 70 + "x",
                                    "f(" * 70 + ")" * 70])
def test_a_deeply_nested_expression_is_refused(source):
    with fast(2.0):
        with pytest.raises(ExpressionError):
            parse(source)


# --- pickling ------------------------------------------------------------------------------------

@pytest.mark.parametrize("path", BANK_FILES, ids=lambda p: p.stem)
def test_every_bank_template_pickles_and_gives_the_same_variants(path):
    template = load_template(path, display=f"problem_bank/{path.name}")
    clone = pickle.loads(pickle.dumps(template))
    assert make_variant(clone, 0).digest == make_variant(template, 0).digest
    # a clone that was never evaluated before pickling
    fresh = pickle.loads(pickle.dumps(load_template(path, display=f"problem_bank/{path.name}")))
    assert make_variant(fresh, 1).digest == make_variant(template, 1).digest


@pytest.mark.parametrize("source, expected", [
    ("f()", ((), {})), ("f(a)", ((1,), {})), ("f(a, b)", ((1, 2), {})),
    ("f(a, b, a + b)", ((1, 2, 3), {})), ("f(a, k=b)", ((1,), {"k": 2})), ("f(k=a)", ((), {"k": 1})),
    ("f(f(a), b)", ((((1,), {}), 2), {})),
])
def test_a_call_passes_its_arguments_in_order_however_many(source, expected):
    scope = Scope({"a": 1, "b": 2}, {"f": lambda *args, **kwargs: (args, kwargs)})
    assert parse(source).evaluate(scope) == expected


@pytest.mark.parametrize("source", ["x.shape()", "x.shape(b)", "x.shape(b, b)", "x.shape(b, b, b)",
                                    "x.shape(k=b)"])
def test_calling_what_is_not_a_function_is_an_expression_error(source):
    with pytest.raises(ExpressionError, match="only functions can be called"):
        parse(source).evaluate(Scope({"x": np.zeros(2), "b": 2}))


@pytest.mark.parametrize("source, order", [
    ("f(g(1))", [1]), ("f(g(1), g(2))", [1, 2]), ("f(g(1), g(2), g(3))", [1, 2, 3]),
    ("f(g(1), k=g(2))", [1, 2])])
def test_a_call_evaluates_its_arguments_left_to_right(source, order):
    seen = []
    scope = Scope({}, {"f": lambda *args, **kwargs: None, "g": lambda x: seen.append(x) or x})
    parse(source).evaluate(scope)
    assert seen == order
