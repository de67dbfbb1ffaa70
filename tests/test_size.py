"""The size rules of docs/architecture.md, enforced: no source file over 500 lines, no
function over 60 (from its ``def`` to its last line; a function nested in another counts on
its own too). Data tables are the exceptions, each named below with why."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("solutions", "formats", "exercises", "grader", "attnkit", "synthetic", "bench")
FILE_LINES = 500
FUNCTION_LINES = 60

# path → why it may be longer: a table, read as one
LONG_FILES: dict[str, str] = {}
# "path:function" → why it may be longer: a table, read as one
LONG_FUNCTIONS: dict[str, str] = {}


def sources(root: Path = ROOT) -> list[Path]:
    return sorted(p for package in PACKAGES for p in (root / package).rglob("*.py"))


def long_files(paths, root: Path = ROOT) -> list[str]:
    """``path (N lines)`` of every file over FILE_LINES not named in LONG_FILES."""
    out = []
    for path in paths:
        lines = len(path.read_text(encoding="utf-8").splitlines())
        name = path.relative_to(root).as_posix()
        if lines > FILE_LINES and name not in LONG_FILES:
            out.append(f"{name} ({lines} lines)")
    return out


def long_functions(paths, root: Path = ROOT) -> list[str]:
    """``path:function (N lines)`` of every function over FUNCTION_LINES not in LONG_FUNCTIONS."""
    out = []
    for path in paths:
        name = path.relative_to(root).as_posix()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                lines = node.end_lineno - node.lineno + 1
                where = f"{name}:{node.name}"
                if lines > FUNCTION_LINES and where not in LONG_FUNCTIONS:
                    out.append(f"{where} ({lines} lines)")
    return out


def test_no_source_file_is_over_500_lines():
    assert long_files(sources()) == []


def test_no_function_is_over_60_lines():
    assert long_functions(sources()) == []


def test_the_exceptions_are_still_there_and_still_long():
    """A table named as an exception that was shortened or removed leaves the list."""
    for name in LONG_FILES:
        assert len((ROOT / name).read_text(encoding="utf-8").splitlines()) > FILE_LINES, name
    for where in LONG_FUNCTIONS:
        path, _, function = where.partition(":")
        tree = ast.parse((ROOT / path).read_text(encoding="utf-8"))
        lengths = [n.end_lineno - n.lineno + 1 for n in ast.walk(tree)
                   if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.name == function]
        assert lengths and max(lengths) > FUNCTION_LINES, where


@pytest.mark.parametrize("file_lines, function_lines, found", [
    (500, 60, ([], [])),
    (501, 60, (["grader/big.py (501 lines)"], [])),
    (100, 61, ([], ["grader/big.py:long (61 lines)"])),
])
def test_the_size_check_finds_what_is_too_long(tmp_path, file_lines, function_lines, found):
    body = "".join(f"    x{i} = {i}\n" for i in range(function_lines - 2))
    text = f"def long():\n{body}    return 0\n"
    text += "\n" * (file_lines - len(text.splitlines()))
    (tmp_path / "grader").mkdir()
    path = tmp_path / "grader" / "big.py"
    path.write_text(text, encoding="utf-8")
    assert len(text.splitlines()) == file_lines
    assert (long_files([path], tmp_path), long_functions([path], tmp_path)) == found
