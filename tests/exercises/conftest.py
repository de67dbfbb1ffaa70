"""Shared by the notebook and build tests: every template of the bank drawn for one
student, and a real Jupyter kernel to run notebooks in."""

import nbformat
import pytest
from nbclient import NotebookClient

from exercises.course.bank import load_bank

from exercises.variant.draw import make_variant

from exercises.variant.seeds import variant_seed
from exercises.render.notebook import Header, ProblemVariant, notebook_bytes

SECRET = b"a test course secret of 32 bytes"
HEADER = Header("hw-all", "Every family of the bank", "0" * 64, "Work *carefully*.", "s0001",
                "Zoë Ağaoğlu", "0.1.0")


@pytest.fixture(scope="session")
def bank_problems():
    """One problem per template of the bank, for student s0001."""
    templates, _ = load_bank()
    return [ProblemVariant(tid, t.title, make_variant(t, variant_seed(SECRET, "hw-all", "s0001", tid)))
            for tid, t in sorted(templates.items())]


def execute(notebook: dict) -> nbformat.NotebookNode:
    """Run every cell in a fresh python3 kernel (errors recorded, not raised)."""
    node = nbformat.reads(notebook_bytes(notebook).decode("utf-8"), as_version=4)
    NotebookClient(node, timeout=120, kernel_name="python3", allow_errors=True).execute()
    return node


def errors(node) -> list[tuple[str, str, str]]:
    """(grade id, exception name, message) of every error output."""
    return [(c.metadata["nbgrader"]["grade_id"], o.ename, o.evalue)
            for c in node.cells if c.cell_type == "code"
            for o in c.outputs if o.output_type == "error"]


def printed(cell) -> str:
    return "".join(o.get("text", "") for o in cell.outputs if o.output_type == "stream")


@pytest.fixture(scope="session")
def kernel():
    """The helpers above, for tests (conftest modules are not importable by name)."""
    from types import SimpleNamespace
    return SimpleNamespace(execute=execute, errors=errors, printed=printed, secret=SECRET,
                           header=HEADER)
