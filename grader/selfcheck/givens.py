"""Is a givens cell still what the kit wrote there? Grading sets the givens as issued and
runs nothing else of the cell, so a cell holding more than its assignments runs differently
in the self-check than at grading."""

from __future__ import annotations

import ast

from grader.intake.givens import PARSING

_GIVENS_AT_MOST = 256 * 1024      # a givens cell longer than this is not parsed: it was replaced
_GIVENS_CALLS = frozenset({"array", "zeros"})      # what formats.literals writes for arrays
_LITERAL_NODES = (ast.Constant, ast.List, ast.Tuple, ast.Dict, ast.UnaryOp, ast.USub, ast.UAdd,
                  ast.Load, ast.Call, ast.keyword, ast.Attribute, ast.Name)


def givens_change(source: str) -> str:
    """'' when a givens cell still holds only what the kit writes there (comments, and one
    ``name = <literal>`` per given); else what changed, in words. Without the answer key this
    cannot see a number changed in place: only what the cell holds besides its givens."""
    if len(source) > _GIVENS_AT_MOST:
        return "it was replaced by something much longer"
    try:        # (parsing never runs anything; a deeply nested expression can overflow it)
        with PARSING:
            module = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return "it no longer parses as Python"
    names = set()
    for statement in module.body:
        if not (isinstance(statement, ast.Assign) and len(statement.targets) == 1
                and isinstance(statement.targets[0], ast.Name) and statement.targets[0].id not in names
                and _is_literal(statement.value)):
            return "other code added"
        names.add(statement.targets[0].id)
    return "" if names else "its assignments were removed"


def _is_literal(node) -> bool:
    """A value as ``formats.literals`` writes it: numbers, strings, lists, tuples, dicts,
    ``np.array(…)``, ``np.zeros(…, dtype=np.…)``, ``np.nan``, ``np.inf``."""
    for n in ast.walk(node):
        if not isinstance(n, _LITERAL_NODES):
            return False
        if isinstance(n, ast.Name) and n.id != "np":
            return False
        if isinstance(n, ast.Attribute) and not (isinstance(n.value, ast.Name) and n.value.id == "np"):
            return False
        if isinstance(n, ast.Call) and not (isinstance(n.func, ast.Attribute) and n.func.attr in _GIVENS_CALLS):
            return False
    return True
