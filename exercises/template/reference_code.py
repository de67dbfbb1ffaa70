"""The reference implementation an ``implement`` template shows in its solution, split into the
signature the student's notebook keeps and the body only the instructor notebook runs."""

from __future__ import annotations

import ast
import functools
import re


@functools.lru_cache(maxsize=256)
def reference_code(solution: str, function: str) -> tuple[str, str]:
    """(signature lines, body) of the reference implementation an ``implement`` template shows
    in the first ```python block of its solution: the instructor notebook runs it, and the
    student's notebook keeps its signature. ValueError when the block is not one function."""
    match = re.search(r"```python\n(.*?)```", solution, re.S)
    if not match:
        raise ValueError(f"an implement problem needs its reference code, def {function}(...), "
                         "in a ```python block of its solution (the instructor notebook runs it)")
    code = match.group(1)
    try:
        tree = ast.parse(code)
    except SyntaxError as err:
        # Python's own message may end "(detected at line 2)": say the line once
        message = re.sub(r"\s*\(detected at line \d+\)$", "", err.msg)
        raise ValueError(f"the ```python block does not parse: {message} (line {err.lineno} of "
                         f"the block)") from None
    lines = code.splitlines()
    defs = [n for n in tree.body if isinstance(n, ast.FunctionDef)]
    others = [n for n in tree.body if not isinstance(n, (ast.FunctionDef, ast.Import, ast.ImportFrom))]
    if len(defs) != 1 or defs[0].name != function or others:
        raise ValueError(f"the ```python block must define {function}() and nothing else "
                         "(helpers go inside it): the student's notebook keeps only its signature")
    node = defs[0]
    if node.body[0].lineno == node.lineno:
        raise ValueError(f"put the body of {function}() on the lines after its signature")
    # the signature ends on the first line after which 'def …:' parses on its own
    for end in range(node.lineno, node.body[0].lineno):
        try:
            ast.parse("\n".join(lines[node.lineno - 1:end]) + "\n    pass")
        except SyntaxError:
            continue
        return "\n".join(lines[node.lineno - 1:end]), "\n".join(lines[end:node.end_lineno])
    raise ValueError(f"cannot find where the signature of {function}() ends")
