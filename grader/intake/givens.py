"""Whether a givens cell still assigns what was issued, and what changed if not: the one place
intake parses student code (``ast.parse``, which never executes anything), to tell a harmless
re-spelling from an edit. ``PARSING`` is the lock every ``ast.parse`` of the grader holds."""

from __future__ import annotations

import ast

from exercises.template import expressions
from formats.literals import assignment

from grader.intake.issues import listed

# Submissions are read on the grader's sandbox threads, and CPython 3.11's parser is not safe
# to run in two threads at once: every ast.parse of the grader holds the lock the template
# expressions' parser holds (a follow-through recipe is parsed on those threads too).
PARSING = expressions.PARSING

_MAX_GIVENS_SOURCE = 256 * 1024   # a givens cell longer than this is "edited" without parsing it
_GIVENS_SLACK = 4_096             # … and one longer than 4× its issued text and this: "much longer"


class _TuplesAsLists(ast.NodeTransformer):
    """The key stores tuples as lists: a tuple given and its list copy are the same given."""

    def visit_Tuple(self, node):
        self.generic_visit(node)
        return ast.List(elts=node.elts, ctx=node.ctx)


def _assignments(source: str) -> tuple[dict[str, str], bool] | None:
    """name → the normalised AST of its value, and whether anything else is in the cell
    (None if it does not parse). Layout, comments and float spellings do not matter."""
    values, other = {}, False
    try:        # (a deeply nested expression can overflow the parser or the walk after it)
        with PARSING:
            module = ast.parse(source)
        for statement in module.body:
            if (isinstance(statement, ast.Assign) and len(statement.targets) == 1
                    and isinstance(statement.targets[0], ast.Name) and statement.targets[0].id not in values):
                values[statement.targets[0].id] = ast.dump(_TuplesAsLists().visit(statement.value))
            else:
                other = True
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    return values, other


def assigns_exactly(source: str, names, issued: int | None = None) -> bool:
    """True when the cell only assigns these names, once each (whatever the values): how a
    givens cell is recognised by its content when no id says what it is. ``issued``: the
    length of the givens cell as built, when known; a cell much longer than that is not
    parsed (parsing is what a long cell would make expensive)."""
    limit = _MAX_GIVENS_SOURCE if issued is None else _longest_givens(issued)
    found = _assignments(source) if len(source) <= limit else None
    return found is not None and not found[1] and set(found[0]) == set(names)


def _longest_givens(issued: int) -> int:
    """How long a givens cell may be and still be parsed: re-spelling the numbers or adding
    comments may make it longer, but not many times longer."""
    return min(_MAX_GIVENS_SOURCE, 4 * issued + _GIVENS_SLACK)


def givens_blocks(givens: dict) -> dict[str, str]:
    """name → the assignment line(s) the build wrote for that given (decoded)."""
    return {name: assignment(name, value) for name, value in givens.items()}


def expected_givens_source(givens: dict) -> str:
    """The assignment lines a givens cell holds for these (decoded) givens."""
    return "\n".join(givens_blocks(givens).values())


def _as_issued(source: str, blocks: dict[str, str]) -> bool:
    """The quick answer for the usual case: the cell is, comment lines aside, exactly the
    text the build wrote for these givens (``blocks``: one ``assignment`` per name, in any
    order). Anything else goes to the parser, which tells a harmless re-spelling from an edit."""
    code = "\n".join(line for line in source.split("\n") if not line.startswith("#"))
    order = sorted(blocks, key=lambda name: code.find(blocks[name]))
    return code == "\n".join(blocks[name] for name in order)


def givens_edits(source: str, givens: dict, issued: str | None = None,
                 blocks: dict[str, str] | None = None) -> str:
    """'' when the cell still assigns exactly ``givens`` (the key's, decoded); else what
    changed, in words ("Q and lengths changed", "other code added", …). ``issued``: the
    givens cell's text as built (``expected_givens_source(givens)``), or ``blocks``: its
    lines by name (``givens_blocks``), when the caller has them."""
    blocks = givens_blocks(givens) if blocks is None else blocks
    issued = "\n".join(blocks.values()) if issued is None else issued
    if len(source) > _longest_givens(len(issued)):
        return "it was replaced by something much longer"
    if _as_issued(source, blocks):
        return ""
    found = _assignments(source)
    if found is None:
        return "it no longer parses as Python"
    expected, _ = _assignments(issued)
    values, other = found
    said = []
    changed = [n for n in expected if n in values and values[n] != expected[n]]
    removed = [n for n in expected if n not in values]
    added = [n for n in values if n not in expected]
    if changed:
        said.append(f"{listed(changed)} changed")
    if removed:
        said.append(f"{listed(removed)} removed")
    if added:
        said.append(f"{listed(added)} added")
    if other:
        said.append("other code added")
    return "; ".join(said)
