"""What a practice notebook carries so that it checks its own variants with NumPy alone: the
kit's own modules that judge an answer — the tolerance rule, the verdicts, follow-through and
the expression language its recipes are written in — read from their files as they are, and a
generated ``solutions`` that holds only the twins' texts and the reference functions the
pack's follow-through recipes call, each with what it needs from its module.

A reference function that is the answer to an implement problem of the bank (its
``reference``) is never carried: a recipe that needs one is left out, and the notebook says
that part's follow-through is the grader's alone.
"""

from __future__ import annotations

import ast
import base64
import functools
import importlib
import json
import zlib
from pathlib import Path

KIT = Path(__file__).resolve().parents[2]
VERBATIM = (
    "formats/__init__.py", "formats/compare.py", "formats/degenerate.py", "formats/key_shape.py",
    "formats/rubric.py", "formats/serialize.py", "formats/compact_json.py", "formats/cells.py",
    "exercises/__init__.py", "exercises/template/__init__.py", "exercises/template/expressions.py",
    "exercises/template/builtin_functions.py", "exercises/template/expression_errors.py",
    "exercises/template/references.py",
    "grader/__init__.py", "grader/verdicts/__init__.py", "grader/verdicts/parts.py",
    "grader/verdicts/follow_through.py", "grader/verdicts/practice.py",
    "solutions/same_error.py",
)
HEADER = '''"""Generated for a practice notebook by exercises.practice.bundle: the twins' texts and the
reference functions its follow-through recipes call, copied with what they need."""
from __future__ import annotations

import functools
import math
from dataclasses import dataclass, field
from typing import NamedTuple

import numpy as np


class Twin(NamedTuple):
    name: str
    shadows: str
    summary: str
    explanation: str
    code: str = ""
    function: object = None


'''


class NotCarried(Exception):
    """A recipe's function that a practice notebook may not carry (an implement answer)."""


def module_name(path: str) -> str:
    return path[:-len(".py")].replace("/", ".").removesuffix(".__init__")


@functools.lru_cache(maxsize=None)
def _definitions(module: str) -> dict[str, ast.stmt]:
    """Top-level name → the statement that defines it (def, class, assignment, import-from)."""
    source = Path(importlib.import_module(module).__file__).read_text(encoding="utf-8")
    found: dict[str, ast.stmt] = {}
    for node in ast.parse(source).body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            found[node.name] = node
        elif isinstance(node, ast.Assign):
            targets = [e for t in node.targets for e in (t.elts if isinstance(t, ast.Tuple) else [t])]
            found.update({t.id: node for t in targets if isinstance(t, ast.Name)})
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            found[node.target.id] = node
        elif isinstance(node, ast.ImportFrom) and node.level == 1:
            found.update({a.asname or a.name: node for a in node.names})
    return found


def _segment(module: str, node: ast.stmt) -> str:
    text = Path(importlib.import_module(module).__file__).read_text(encoding="utf-8")
    return ast.get_source_segment(text, node, padded=True)


class _Closure:
    """The reference functions asked for and everything of ``solutions`` they read, in an
    order where each definition comes after what it needs."""

    def __init__(self, protected: frozenset[str]):
        self.protected = protected
        self.emitted: dict[str, str] = {}        # name → module it came from
        self.sources: list[str] = []

    def add(self, module: str, name: str, stack: tuple = ()) -> None:
        if self.emitted.get(name) == module or (module, name) in stack:
            return
        node = _definitions(module).get(name)
        if node is None:
            return                                # numpy, the standard library: in HEADER
        if name in self.emitted and not isinstance(node, ast.ImportFrom):
            if _segment(module, node) != _segment(self.emitted[name], _definitions(self.emitted[name])[name]):
                raise NotCarried(f"{name} is defined in both {self.emitted[name]} and {module}")
            return                                # the same text in two modules: one copy
        if isinstance(node, ast.ImportFrom):
            self.add(f"solutions.{node.module}", name, stack)
            return
        if name in self.protected and module != "solutions.same_error":
            raise NotCarried(f"{name} answers an implement problem")
        for used in sorted({n.id for n in ast.walk(node) if isinstance(n, ast.Name)} - {name}):
            self.add(module, used, stack + ((module, name),))
        if name not in self.emitted:
            self.emitted[name] = module
            self.sources.append(_segment(module, node))


def carried_functions(names: set[str], protected: frozenset[str]) -> tuple[str, dict[str, str]]:
    """(the generated functions' source, name → why it could not be carried)."""
    import solutions

    closure, refused = _Closure(protected), {}
    for name in sorted(names):
        trial = _Closure(protected)
        trial.emitted, trial.sources = dict(closure.emitted), list(closure.sources)
        try:
            trial.add(getattr(solutions, name).__module__, name)
        except NotCarried as err:
            refused[name] = str(err)
            continue
        closure = trial
    return "\n\n".join(closure.sources), refused


def solutions_module(twins: dict[str, tuple[str, str, str]], functions: str) -> str:
    """The generated ``solutions``: the twins' texts (name → (shadows, summary, explanation))
    and the carried functions."""
    table = ",\n".join(f"    {name!r}: Twin({name!r}, {s!r}, {summary!r}, {explanation!r})"
                       for name, (s, summary, explanation) in sorted(twins.items()))
    return (HEADER + f"TWINS = {{\n{table}\n}}\nALIGNMENT_SCORES: dict = {{}}   # no practice recipe reads it\n\n\n"
            + functions + "\n")


def sources(twins: dict, functions: str) -> dict[str, str]:
    """module name → source: every module the notebook's checker imports."""
    out = {module_name(p): (KIT / p).read_text(encoding="utf-8") for p in VERBATIM}
    out["solutions"] = solutions_module(twins, functions)
    return out


def packed(modules: dict[str, str]) -> str:
    """The modules as one compressed text (base64 of zlib of JSON), for a notebook cell."""
    raw = json.dumps(modules, sort_keys=True, ensure_ascii=False).encode("utf-8")
    return base64.b64encode(zlib.compress(raw, 9)).decode("ascii")


LOADER = '''import base64, importlib.abc, importlib.util, json, sys, zlib

class _Carried(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Imports the kit's checking modules from this notebook (first, before any installed kit)."""
    def __init__(self, modules):
        self.modules = modules
    def find_spec(self, name, path=None, target=None):
        if name not in self.modules:
            return None
        package = any(other.startswith(name + ".") for other in self.modules)
        return importlib.util.spec_from_loader(name, self, is_package=package)
    def create_module(self, spec):
        return None
    def exec_module(self, module):
        exec(compile(self.modules[module.__name__], f"<practice {module.__name__}>", "exec"), module.__dict__)

_modules = json.loads(zlib.decompress(base64.b64decode(_PACKED)))
for _name in [n for n in sys.modules if n.split(".")[0] in {m.split(".")[0] for m in _modules}]:
    del sys.modules[_name]
sys.meta_path.insert(0, _Carried(_modules))
'''
