"""solutions/ is the answer key: it may import NumPy and the standard library, nothing else."""

import ast
import sys
from pathlib import Path

import solutions

PACKAGE = Path(solutions.__file__).parent


def imported_top_level_modules(path: Path) -> set[str]:
    names = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0:
            names.add(node.module.split(".")[0])
    return names


def test_only_numpy_and_the_standard_library():
    for path in sorted(PACKAGE.rglob("*.py")):
        third_party = {name for name in imported_top_level_modules(path)
                       if name not in sys.stdlib_module_names and name != "__future__"}
        assert third_party <= {"numpy"}, f"{path.name} imports {sorted(third_party - {'numpy'})}"
