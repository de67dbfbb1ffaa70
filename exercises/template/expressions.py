"""The template expression language: arithmetic on givens, calls to reference functions.

Templates never run Python. An expression such as ``steps.weights[2]`` or
``scaled_dot_product_attention(Q, K, V, mask=mask, return_steps=True)`` is parsed with
``ast`` and interpreted node by node here; anything outside a small whitelist (imports,
lambdas, dunder attributes, assignments, calls to anything but the built-in functions and
the public reference functions in ``solutions``) is refused when the template is loaded.

Well-posedness is built in: ``argmax``/``argmin``/``rank`` refuse near-ties while a variant
is being made, so a question that asks "which word wins" always has one clear winner. The
functions expressions call are in ``builtin_functions``, the errors in ``expression_errors``.
"""

from __future__ import annotations

import ast
import threading
import operator
import zlib
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from exercises.template import references
from exercises.template.builtin_functions import BUILTINS, KNOWN_FUNCTIONS, TIE_AWARE, tie_aware
from exercises.template.expression_errors import MAX_ITEMS, ExpressionError


_BINARY = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul,
           ast.Div: operator.truediv, ast.FloorDiv: operator.floordiv, ast.Mod: operator.mod,
           ast.Pow: operator.pow, ast.MatMult: operator.matmul,
           ast.BitOr: operator.or_, ast.BitAnd: operator.and_, ast.BitXor: operator.xor}
_UNARY = {ast.USub: operator.neg, ast.UAdd: operator.pos, ast.Not: operator.not_,
          ast.Invert: operator.invert}
_COMPARE = {ast.Eq: operator.eq, ast.NotEq: operator.ne, ast.Lt: operator.lt,
            ast.LtE: operator.le, ast.Gt: operator.gt, ast.GtE: operator.ge,
            ast.In: lambda a, b: a in b, ast.NotIn: lambda a, b: a not in b}
_ARRAY_ATTRIBUTES = {"T", "shape", "ndim", "size"}
_MAX_SOURCE = 2_000       # characters in one expression


@dataclass
class Scope:
    """What an expression can see: values by name, the functions to call (reference functions,
    possibly replaced by a misconception twin) and whether near-ties are refused."""

    values: dict
    functions: dict = field(default_factory=lambda: dict(references.FUNCTIONS))
    strict: bool = True
    tie_gap: float = 0.01
    rng_seed: int = 0
    model: object = None     # the template's trained model (exercises.template.trained_models)
    budget: int = 0          # comprehension items left in the current evaluation
    rng_uses: int = 0        # uses of rng so far in the current evaluation


# --- parsing ---------------------------------------------------------------------------------

_ALLOWED_NODES = (ast.Expression, ast.Constant, ast.Name, ast.Load, ast.BinOp, ast.UnaryOp,
                  ast.BoolOp, ast.And, ast.Or, ast.Compare, ast.IfExp, ast.Call, ast.keyword,
                  ast.Subscript, ast.Slice, ast.Attribute, ast.List, ast.Tuple, ast.Dict, ast.ListComp,
                  ast.comprehension, ast.Store, *_BINARY, *_UNARY, *_COMPARE)


@dataclass(frozen=True)
class Expression:
    """A parsed expression; ``names`` are the values it reads, ``calls`` the functions."""

    source: str
    tree: ast.Expression
    names: frozenset
    calls: frozenset
    where: str = ""

    @property
    def salt(self) -> int:
        return zlib.crc32(f"{self.where}\0{self.source}".encode("utf-8"))

    def evaluate(self, scope: Scope) -> Any:
        run = self.__dict__.get("_run")
        if run is None:  # compiled once, on first use (and again after unpickling)
            run = _compile(self.tree.body, self.salt)
            object.__setattr__(self, "_run", run)
        scope.budget, scope.rng_uses = MAX_ITEMS, 0
        return run(scope, {})

    def __getstate__(self):
        return {k: v for k, v in self.__dict__.items() if k != "_run"}  # closures don't pickle

    def __setstate__(self, state):
        for key, value in state.items():
            object.__setattr__(self, key, value)


# CPython 3.11's parser is not safe to run in two threads at once ("SystemError: AST
# constructor recursion depth mismatch"), and the grader parses on its sandbox threads (a
# follow-through recipe, a givens cell, a student's cell): every ast.parse of the kit holds
# this lock (the grader's own take it from grader.intake.givens).
PARSING = threading.Lock()


def parse(source, where: str = "") -> Expression:
    """Parse ``source`` (a string, or a plain number/bool) into an Expression. ``where`` (the
    template key it sits under) seeds its uses of ``rng``: the same text under two keys draws
    two different streams."""
    if isinstance(source, bool) or isinstance(source, (int, float)):
        source = repr(source)
    if not isinstance(source, str):
        raise ExpressionError(f"expected an expression (text), got {type(source).__name__}")
    if len(source) > _MAX_SOURCE:
        raise ExpressionError(f"expression of {len(source)} characters (at most {_MAX_SOURCE})")
    try:
        with PARSING:
            tree = ast.parse(source.strip(), mode="eval")
        if _depth(tree) > 60:
            raise ExpressionError(f"expression nested too deeply: {source.strip()[:60]!r}…")
    except SyntaxError as err:
        raise ExpressionError(f"cannot parse expression {source.strip()!r}: {err.msg}") from None
    except (RecursionError, MemoryError):
        raise ExpressionError(f"expression too complex: {source.strip()[:60]!r}…") from None
    calls: set[str] = set()
    for node in ast.walk(tree):
        if not isinstance(node, _ALLOWED_NODES):
            raise ExpressionError(f"{type(node).__name__} is not allowed in expression "
                                  f"{source.strip()!r}")
        if isinstance(node, ast.Attribute) and node.attr.startswith("_"):
            raise ExpressionError(f"attribute {node.attr!r} is not allowed in expression "
                                  f"{source.strip()!r}")
        if isinstance(node, ast.ListComp) and len(node.generators) != 1:
            raise ExpressionError(f"only one 'for' per comprehension in {source.strip()!r}")
        if isinstance(node, ast.comprehension):
            if not isinstance(node.target, ast.Name) or node.is_async:
                raise ExpressionError(f"only 'for NAME in …' comprehensions are allowed in "
                                      f"{source.strip()!r}")
        if isinstance(node, ast.Call):
            if isinstance(node.func, ast.Name):
                calls.add(node.func.id)
            elif not isinstance(node.func, ast.Attribute):
                raise ExpressionError(f"only named functions can be called in {source.strip()!r}")
            if any(isinstance(a, ast.Starred) for a in node.args) or any(k.arg is None for k in node.keywords):
                raise ExpressionError(f"*args/**kwargs are not allowed in {source.strip()!r}")
    names = _free_names(tree.body, frozenset())
    expression = Expression(source.strip(), tree, frozenset(names), frozenset(calls), where)
    object.__setattr__(expression, "_run", _compile(tree.body, expression.salt))
    return expression


def _depth(node, limit: int = 61) -> int:
    """How deeply ``node`` nests (stops counting at ``limit``)."""
    deepest, stack = 0, [(node, 1)]
    while stack:
        current, depth = stack.pop()
        deepest = max(deepest, depth)
        if depth < limit:
            stack.extend((child, depth + 1) for child in ast.iter_child_nodes(current))
    return deepest


def _free_names(node, bound: frozenset) -> set[str]:
    """Names read from outside: comprehension variables are visible only inside their
    comprehension, and a called function's name is not a value."""
    if isinstance(node, ast.Name):
        return set() if node.id in bound else {node.id}
    if isinstance(node, ast.ListComp):
        generator = node.generators[0]
        inner = bound | {generator.target.id}
        names = _free_names(generator.iter, bound)
        for part in [node.elt, *generator.ifs]:
            names |= _free_names(part, inner)
        return names
    if isinstance(node, ast.Call):
        names = set() if isinstance(node.func, ast.Name) else _free_names(node.func, bound)
        for child in [*node.args, *(k.value for k in node.keywords)]:
            names |= _free_names(child, bound)
        return names
    names: set[str] = set()
    for child in ast.iter_child_nodes(node):
        names |= _free_names(child, bound)
    return names


def unknown_functions(expression: Expression) -> list[str]:
    """The functions ``expression`` calls that are neither built-ins nor reference functions."""
    return sorted(c for c in expression.calls
                  if c not in KNOWN_FUNCTIONS and c not in references.FUNCTIONS)


# --- evaluation ------------------------------------------------------------------------------

def _function(name: str, scope: Scope):
    if name in TIE_AWARE:
        return tie_aware(name, scope)
    if name in scope.functions:
        return scope.functions[name]
    if name in BUILTINS:
        return BUILTINS[name]
    raise ExpressionError(f"unknown function {name!r}")


def _name(name: str, scope: Scope, local: dict):
    if name in local:
        return local[name]
    if name in scope.values:
        return scope.values[name]
    if name == "model" and scope.model is not None:
        return scope.model
    if name == "rng":  # a fresh generator per use, so re-evaluating gives the same draws
        return np.random.Generator(np.random.PCG64(scope.rng_seed))
    if name in references.CONSTANTS:
        return references.CONSTANTS[name]
    if name in BUILTINS and not callable(BUILTINS[name]):
        return BUILTINS[name]
    raise ExpressionError(f"unknown name {name!r}")


def _attribute(value, attr: str):
    if isinstance(value, np.ndarray):
        if attr not in _ARRAY_ATTRIBUTES:
            raise ExpressionError(f"arrays only offer .{', .'.join(sorted(_ARRAY_ATTRIBUTES))}, "
                                  f"not .{attr}")
        return getattr(value, attr)
    owner = value if isinstance(value, type) else type(value)
    if not owner.__module__.startswith("solutions"):
        raise ExpressionError(f"attribute .{attr} is only available on arrays and on results of "
                              f"reference functions, not on {owner.__name__}")
    return getattr(value, attr)


def _check_size(value):
    if isinstance(value, (str, list, tuple)) and len(value) > MAX_ITEMS:
        raise ExpressionError(f"value too large ({len(value)} items)")
    return value


def _binary(op, left, right):
    if op is ast.Pow and isinstance(left, int) and isinstance(right, int) \
            and right > 0 and left.bit_length() * right > 4096:
        raise ExpressionError("integer power too large (more than 4096 bits)")
    if op is ast.Mult and (isinstance(left, (str, list)) or isinstance(right, (str, list))):
        raise ExpressionError("repeating text or lists with * is not allowed")
    return _check_size(_BINARY[op](left, right))


# --- compiling: a closure per node, made by the table below by node type ---------------------

def _compile(node, salt: int):
    """Turn an AST node into a closure ``(scope, local) → value``, once per expression, so
    evaluating a template's expressions many times does not re-walk the tree. ``salt``
    (from the expression's text) gives each use of ``rng`` its own stream."""
    make = _COMPILERS.get(type(node))
    if make is None:
        raise ExpressionError(f"{type(node).__name__} is not allowed")
    return make(node, salt)


def _compile_constant(node, salt: int):
    value = node.value
    return lambda scope, local: value


def _compile_name(node, salt: int):
    if node.id != "rng":
        name = node.id
        return lambda scope, local: _name(name, scope, local)
    where = [salt, node.col_offset]

    def generator(scope, local):
        if "rng" in local or "rng" in scope.values:
            return _name("rng", scope, local)
        # Fresh per use and seeded from the variant: re-evaluating gives the same draws,
        # while two uses (in two places, or two turns of a comprehension) do not share one.
        scope.rng_uses += 1
        return np.random.Generator(np.random.PCG64([scope.rng_seed, *where, scope.rng_uses]))
    return generator


def _compile_bin_op(node, salt: int):
    op, left, right = type(node.op), _compile(node.left, salt), _compile(node.right, salt)
    return lambda scope, local: _binary(op, left(scope, local), right(scope, local))


def _compile_unary_op(node, salt: int):
    op, operand = _UNARY[type(node.op)], _compile(node.operand, salt)
    return lambda scope, local: op(operand(scope, local))


def _compile_bool_op(node, salt: int):
    operands, is_and = [_compile(v, salt) for v in node.values], isinstance(node.op, ast.And)

    def bool_op(scope, local):
        value = None
        for operand in operands:
            value = operand(scope, local)
            if (not value) if is_and else value:
                return value
        return value
    return bool_op


def _compile_compare(node, salt: int):
    first = _compile(node.left, salt)
    rest = [(_COMPARE[type(op)], _compile(c, salt)) for op, c in zip(node.ops, node.comparators)]

    def compare(scope, local):
        left = first(scope, local)
        result = True
        for op, comparator in rest:
            right = comparator(scope, local)
            result = op(left, right)
            # (a plain True, the usual result of comparing numbers, needs no np.all)
            if result is not True and (result is False or not np.all(result)):
                return False if np.ndim(result) == 0 else result
            left = right
        return result if len(rest) == 1 else True
    return compare


def _compile_if_exp(node, salt: int):
    test, body, orelse = (_compile(node.test, salt), _compile(node.body, salt),
                          _compile(node.orelse, salt))
    return lambda scope, local: body(scope, local) if test(scope, local) else orelse(scope, local)


def _compile_call(node, salt: int):
    args = [_compile(a, salt) for a in node.args]
    kwargs = [(k.arg, _compile(k.value, salt)) for k in node.keywords]
    if isinstance(node.func, ast.Name):
        name = node.func.id
        function = lambda scope, local: _function(name, scope)  # noqa: E731
    else:
        function = _compile(node.func, salt)

    if not kwargs and len(args) <= 2:
        # the commonest calls, f(x) and f(x, y), without an argument tuple and a keyword
        # dict built per call (a build evaluates them anew for every student's draw)
        first, second = (args + [None, None])[:2]

        def call_positional(scope, local):
            f = function(scope, local)
            if not callable(f):
                raise ExpressionError("only functions can be called")
            if second is not None:
                return f(first(scope, local), second(scope, local))
            return f(first(scope, local)) if first is not None else f()
        return call_positional

    def call(scope, local):
        f = function(scope, local)
        if not callable(f):
            raise ExpressionError("only functions can be called")
        return f(*[a(scope, local) for a in args], **{k: v(scope, local) for k, v in kwargs})
    return call


def _compile_attribute(node, salt: int):
    value, attr = _compile(node.value, salt), node.attr
    return lambda scope, local: _attribute(value(scope, local), attr)


def _compile_subscript(node, salt: int):
    value, index = _compile(node.value, salt), _compile(node.slice, salt)

    def subscript(scope, local):
        container, i = value(scope, local), index(scope, local)
        return container[np.asarray(i) if isinstance(i, list) else i]
    return subscript


def _compile_slice(node, salt: int):
    parts = [_compile(p, salt) if p is not None else None for p in (node.lower, node.upper, node.step)]
    return lambda scope, local: slice(*(p(scope, local) if p else None for p in parts))


def _compile_tuple(node, salt: int):
    items = [_compile(e, salt) for e in node.elts]
    return lambda scope, local: tuple(i(scope, local) for i in items)


def _compile_list(node, salt: int):
    items = [_compile(e, salt) for e in node.elts]
    return lambda scope, local: [i(scope, local) for i in items]


def _compile_dict(node, salt: int):
    if any(k is None for k in node.keys):
        raise ExpressionError("**mapping is not allowed")
    pairs = [(_compile(k, salt), _compile(v, salt)) for k, v in zip(node.keys, node.values)]
    return lambda scope, local: {k(scope, local): v(scope, local) for k, v in pairs}


def _compile_list_comp(node, salt: int):
    generator = node.generators[0]
    iterable, target = _compile(generator.iter, salt), generator.target.id
    conditions, element = [_compile(c, salt) for c in generator.ifs], _compile(node.elt, salt)

    def comprehension(scope, local):
        items = iterable(scope, local)
        scope.budget -= len(items)
        if scope.budget < 0:
            raise ExpressionError(f"comprehensions of more than {MAX_ITEMS} steps in one expression")
        out = []
        for item in items:
            inner = {**local, target: item}
            if all(c(scope, inner) for c in conditions):
                out.append(element(scope, inner))
        return out
    return comprehension


_COMPILERS = {ast.Constant: _compile_constant, ast.Name: _compile_name, ast.BinOp: _compile_bin_op,
              ast.UnaryOp: _compile_unary_op, ast.BoolOp: _compile_bool_op,
              ast.Compare: _compile_compare, ast.IfExp: _compile_if_exp, ast.Call: _compile_call,
              ast.Attribute: _compile_attribute, ast.Subscript: _compile_subscript,
              ast.Slice: _compile_slice, ast.Tuple: _compile_tuple, ast.List: _compile_list,
              ast.Dict: _compile_dict, ast.ListComp: _compile_list_comp}
