"""The import rules of docs/architecture.md, enforced: each package imports only what it may.

Read from the source (every import statement, those inside functions too), so a rule broken
on a path no test runs is still caught.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PROJECT = {"solutions", "formats", "exercises", "grader", "attnkit", "synthetic", "bench"}

# package (or module) → the project modules it may import (a name allows it and its submodules)
MAY_IMPORT = {
    "solutions": {"solutions"},
    "formats": {"formats"},
    "exercises": {"exercises", "formats", "solutions"},
    # the grader reads the shared formats; its reports draw pages with the exercises' renderers;
    # follow-through credit evaluates the key's recipes with the exercises' expression language
    "grader": {"grader", "formats", "solutions",
               "exercises.render.html", "exercises.render.preview", "exercises.template.expressions", "exercises.template.references"},
    "grader.sandbox": {"grader.sandbox", "grader.budget"},
    # grading on a Dask cluster: the grader's own run on the workers, Dask to get there
    "grader.run.cluster": {"grader", "formats"}, "grader.run.workers": {"grader", "formats"},
    # building on a Dask cluster: the build's own functions on the workers
    "exercises.course.cluster_build": {"exercises", "formats", "solutions"},
    # the server side of the sandbox: what a student's child process holds
    "grader.sandbox.server": {"grader.sandbox.frames", "grader.sandbox.walls", "grader.sandbox.protocol",
                              "grader.sandbox.child", "grader.sandbox.child_watch", "grader.sandbox.emitter",
                              "grader.sandbox.plot_stubs", "grader.sandbox.warming"},
    "grader.sandbox.child": {"grader.sandbox.frames", "grader.sandbox.protocol", "grader.sandbox.emitter",
                             "grader.sandbox.walls"},
    "grader.sandbox.child_watch": {"grader.sandbox.protocol", "grader.sandbox.child"},
    "grader.sandbox.emitter": {"grader.sandbox.frames", "grader.sandbox.protocol"},
    "grader.sandbox.warming": {"grader.sandbox.frames", "grader.sandbox.protocol", "grader.sandbox.child",
                               "grader.sandbox.emitter"},
    "grader.sandbox.plot_stubs": set(),
    "grader.sandbox.walls": {"grader.sandbox.protocol", "grader.sandbox.libc", "grader.sandbox.landlock",
                             "grader.sandbox.seccomp", "grader.sandbox.rlimits"},
    "grader.sandbox.landlock": {"grader.sandbox.libc"}, "grader.sandbox.seccomp": {"grader.sandbox.libc"},
    "grader.sandbox.libc": set(), "grader.sandbox.rlimits": set(),
    "grader.sandbox.frames": set(),
    "grader.sandbox.protocol": set(),
    "attnkit": {"attnkit", "formats", "exercises", "grader", "solutions"},
    "synthetic": {"synthetic", "formats", "exercises", "solutions", "grader.sandbox.frames"},
    "bench": PROJECT,
}
# third-party packages beyond NumPy, where they are allowed
THIRD_PARTY = {
    # formats: orjson, in C, parses answer-key entries (one per graded submission) and writes
    # notebook files (formats.indented_json: nbformat's text) and a record's canonical text
    # (formats.compact_json), where json's pure-Python paths would be a share of every build
    "solutions": set(), "formats": {"orjson"},
    "exercises": {"yaml", "jinja2", "markdown_it", "mdit_py_plugins", "latex2mathml", "nbformat"},
    "grader": {"pytest", "_pytest"}, "grader.run.cluster": {"dask", "distributed"},
    "grader.run.workers": {"dask", "distributed"},
    "exercises.course.cluster_build": {"distributed"},           # attnkit build --cluster
    "grader.sandbox": set(), "grader.sandbox.server": set(), "grader.sandbox.walls": set(),
    "grader.sandbox.frames": set(), "grader.sandbox.protocol": set(),
    "grader.sandbox.child": set(), "grader.sandbox.child_watch": set(), "grader.sandbox.emitter": set(),
    "grader.sandbox.warming": set(), "grader.sandbox.plot_stubs": set(), "grader.sandbox.landlock": set(),
    "grader.sandbox.seccomp": set(), "grader.sandbox.libc": set(), "grader.sandbox.rlimits": set(),
    "attnkit": set(), "synthetic": {"yaml"}, "bench": None,       # None: anything
}


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports(path: Path) -> set[str]:
    """Absolute names of every module ``path`` imports (relative imports resolved)."""
    package = module_name(path) if path.name == "__init__.py" else module_name(path).rpartition(".")[0]
    names = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[:len(package.split(".")) - node.level + 1]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module
            names.add(module)
            # `from package import submodule` imports the submodule
            names.update(f"{module}.{alias.name}" for alias in node.names
                         if (ROOT / Path(*module.split("."), alias.name)).with_suffix(".py").exists()
                         or (ROOT / Path(*module.split("."), alias.name, "__init__.py")).exists())
    return names


def rule_for(module: str) -> str:
    """The most specific rule that covers ``module``."""
    parts = module.split(".")
    for n in range(len(parts), 0, -1):
        if ".".join(parts[:n]) in MAY_IMPORT:
            return ".".join(parts[:n])
    raise AssertionError(f"{module}: no rule says what it may import")


def allowed(name: str, permitted: set[str]) -> bool:
    return any(name == p or name.startswith(p + ".") for p in permitted)


def covered(name: str, permitted: set[str]) -> bool:
    """``name`` is allowed, or is a package on the way to an allowed module (its __init__)."""
    return allowed(name, permitted) or any(p.startswith(name + ".") for p in permitted)


SOURCES = sorted(p for package in PROJECT for p in (ROOT / package).rglob("*.py"))


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: str(p.relative_to(ROOT)))
def test_each_module_imports_only_what_its_layer_may(path):
    module = module_name(path)
    rule = rule_for(module)
    third_party = THIRD_PARTY[rule]
    for name in sorted(imports(path)):
        top = name.split(".")[0]
        if top in PROJECT:
            assert covered(name, MAY_IMPORT[rule]), f"{module} imports {name}: the {rule} layer may not"
        elif top not in sys.stdlib_module_names and top not in ("__future__", "numpy") \
                and third_party is not None:
            assert top in third_party, f"{module} imports {top}: not a dependency of the {rule} layer"


def test_nothing_in_the_wheel_imports_the_demo_data_or_the_benchmarks():
    for path in SOURCES:
        module = module_name(path)
        if module.split(".")[0] in ("synthetic", "bench"):
            continue
        leaked = {n for n in imports(path) if n.split(".")[0] in ("synthetic", "bench")}
        assert not leaked, f"{module} imports {sorted(leaked)}"


def test_the_rules_know_every_package():
    packages = {p.parent.name for p in ROOT.glob("*/__init__.py")} - {"tests"}
    assert packages <= PROJECT, packages - PROJECT


def test_the_server_side_imports_nothing_else_however_deep():
    """What a sandbox server loads, followed import by import (package __init__ files too):
    its own modules and nothing of the grader's, the formats' or the answer key's."""
    server_side = {"grader", "grader.sandbox", "grader.sandbox.server", "grader.sandbox.walls",
                   "grader.sandbox.frames", "grader.sandbox.protocol", "grader.sandbox.child",
                   "grader.sandbox.child_watch", "grader.sandbox.emitter", "grader.sandbox.warming",
                   "grader.sandbox.plot_stubs", "grader.sandbox.landlock", "grader.sandbox.seccomp",
                   "grader.sandbox.libc", "grader.sandbox.rlimits"}
    seen, todo = set(), ["grader.sandbox.server"]
    while todo:
        module = todo.pop()
        if module in seen:
            continue
        seen.add(module)
        parts = module.split(".")
        for n in range(1, len(parts)):                  # importing a.b.c runs a/__init__ and a/b/__init__
            todo.append(".".join(parts[:n]))
        path = ROOT / Path(*parts)
        path = path / "__init__.py" if path.is_dir() else path.with_suffix(".py")
        todo += [n for n in imports(path) if n.split(".")[0] in PROJECT]
    assert seen <= server_side, sorted(seen - server_side)


# --- no import cycles, inside a package too ------------------------------------------------------

def _module_path(name: str) -> Path | None:
    base = ROOT / Path(*name.split("."))
    for path in (base.with_suffix(".py"), base / "__init__.py"):
        if path.exists():
            return path
    return None


def import_edges(path: Path) -> set[str]:
    """The project modules ``path``'s import statements load (those inside functions too):
    ``from package import submodule`` loads the submodule, ``from module import name`` the
    module. (A package's ``__init__`` is not counted as imported by its own submodules: Python
    runs it first, but that is loading order, not a dependency one could break.)"""
    package = module_name(path) if path.name == "__init__.py" else module_name(path).rpartition(".")[0]
    targets = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            targets.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = package.split(".")[:len(package.split(".")) - node.level + 1] if node.level else []
            module = ".".join(base + ([node.module] if node.module else []))
            for alias in node.names:
                sub = f"{module}.{alias.name}"
                targets.add(sub if _module_path(sub) else module)
    out = set()
    for name in targets:
        while name and name.split(".")[0] in PROJECT and _module_path(name) is None:
            name = name.rpartition(".")[0]
        if name and name.split(".")[0] in PROJECT:
            out.add(name)
    return out


def import_cycles(sources) -> list[list[str]]:
    """Every strongly connected set of two or more modules (or a module importing itself),
    by Tarjan's algorithm over the import graph."""
    graph = {module_name(p): import_edges(p) - {module_name(p)} for p in sources}
    index, low, stack, on_stack, cycles = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            members = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                members.append(w)
                if w == v:
                    break
            if len(members) > 1:
                cycles.append(sorted(members))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return cycles


def test_no_module_imports_itself_back_however_far_round():
    assert import_cycles(SOURCES) == []


def test_the_cycle_check_finds_a_cycle(tmp_path, monkeypatch):
    """The check itself: two modules of a package importing each other, one inside a function."""
    package = tmp_path / "bench"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "a.py").write_text("from .b import g\n")
    (package / "b.py").write_text("def g():\n    from bench import a\n")
    monkeypatch.setattr(sys.modules[__name__], "ROOT", tmp_path)
    assert import_cycles(sorted(package.rglob("*.py"))) == [["bench.a", "bench.b"]]


def private_imports(sources) -> list[str]:
    """Every ``from module import _name`` of a project module's private name (an alias to a
    private name of one's own is fine: ``import x as _x``)."""
    found = []
    for path in sources:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and (node.level or (node.module or "").split(".")[0] in PROJECT):
                found += [f"{path.relative_to(ROOT)}:{node.lineno}: {alias.name}" for alias in node.names
                          if alias.name.startswith("_") and not alias.name.startswith("__")]
    return found


def test_no_shipped_module_imports_a_private_name_of_another():
    shipped = [p for p in SOURCES if p.relative_to(ROOT).parts[0] not in ("synthetic", "bench")]
    assert private_imports(shipped) == []


def test_the_private_name_check_finds_one(tmp_path, monkeypatch):
    package = tmp_path / "formats"
    package.mkdir()
    (package / "a.py").write_text("def _helper():\n    pass\n")
    (package / "b.py").write_text("def f():\n    from .a import _helper as helper\n")
    monkeypatch.setattr(sys.modules[__name__], "ROOT", tmp_path)
    assert private_imports([package / "b.py"]) == ["formats/b.py:2: _helper"]
