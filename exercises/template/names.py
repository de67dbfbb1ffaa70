"""The names in a template: which names a parameter, derived value or part may take (none a
built-in, a reference function or a name the notebook defines), and the expressions that read
them (``TemplateErrors.expression``: every name it reads defined above it)."""

from __future__ import annotations

import difflib
import re

from exercises.template import expressions, references
from exercises.template.builtin_functions import BUILTINS, KNOWN_FUNCTIONS, TIE_AWARE
from exercises.template.expression_errors import ExpressionError
from exercises.template.expressions import Expression
from exercises.template.loading import LoadErrors

ID = re.compile(r"^[a-z][a-z0-9_]*$")
NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
# Names that expressions and text read as values; a part id (a value, never called) must avoid
# only these, a parameter also the function names.
RESERVED_VALUES = {"rng", "model", "result", "answers", "options", "givens", "pi", "inf",
                   *references.CONSTANTS}
# Names a notebook defines itself (its helpers, the code of its checks, IPython's own): a
# given or an answer variable of that name would break the notebook's cells.
NOTEBOOK_NAMES = {"np", "answered", "try_example", "show_heatmap", "out", "outs", "expected",
                  "In", "Out", "get_ipython", "display", "exit", "quit"}
_RESERVED = {*RESERVED_VALUES, *BUILTINS, *TIE_AWARE,
             *references.FUNCTIONS, *references.CONSTANTS, *NOTEBOOK_NAMES}


class TemplateErrors(LoadErrors):
    """LoadErrors of a template file, which also read the template's expressions."""

    def expression(self, source, line: int, key: str, scope: set[str]) -> Expression | None:
        """``source`` parsed; every name it reads must be in ``scope`` (defined above this
        line), every function it calls a built-in or a reference function."""
        try:
            expression = expressions.parse(source, where=key)
        except ExpressionError as err:
            self.error(line, key, str(err))
            return None
        for name in sorted(expression.names - scope - set(references.CONSTANTS) - {"rng", "pi", "inf"}):
            hint = difflib.get_close_matches(name, scope, n=1)
            suggestion = f"; did you mean '{hint[0]}'?" if hint else ""
            if name == "model":
                suggestion = "; a template reads a trained model after 'model: NAME' at the top"
            self.error(line, key, f"unknown name '{name}' in {expression.source!r} (names must be "
                                  f"defined above this line){suggestion}")
        for name in expressions.unknown_functions(expression):
            known = list(KNOWN_FUNCTIONS) + list(references.FUNCTIONS)
            hint = difflib.get_close_matches(name, known, n=1)
            suggestion = f"; did you mean '{hint[0]}'?" if hint else ""
            self.error(line, key, f"unknown function '{name}' (not a built-in and not a reference "
                                  f"function in solutions){suggestion}")
        return expression


def new_name(load: TemplateErrors, name, line: int, key: str, scope: set[str]) -> bool:
    """Whether ``name`` may name a new parameter or derived value (reported where not)."""
    if not isinstance(name, str) or not NAME.match(name):
        load.error(line, key, f"'{name}' is not a valid name (letters, digits, _)")
        return False
    if name in _RESERVED:
        load.error(line, key, f"'{name}' is reserved (a built-in, a reference function or a "
                              "name the notebook defines)")
        return False
    if name.startswith("_"):
        load.error(line, key, f"'{name}' starts with _ (IPython keeps its output history in such names)")
        return False
    if name in scope:
        load.error(line, key, f"'{name}' is already defined")
        return False
    return True
