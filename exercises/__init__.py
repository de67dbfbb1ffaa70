"""Exercises: YAML templates → validated, seeded variants → rendered problems.

Data flows one way: ``problem_bank/*.yaml`` is loaded and checked here (``schema``),
sampled per student (``seeds``, ``distributions``, ``variant``) with answers from the
reference implementation in ``solutions``, and rendered (``render``).
"""

import importlib

# Eager, because ``compare`` is both a submodule and a function: importing the submodule
# anywhere would otherwise leave the module, not the function, under ``exercises.compare``.
from .compare import Comparison, compare

# Names are imported on first use (PEP 562): a module that needs only, say, ``serialize``
# (the grader, ``attnkit check``) does not pay for Jinja2, the schema and the bank.
_HOME = {
    **dict.fromkeys(["BANK_DIR", "BankError", "ValidationReport", "load_bank", "template_files",
                     "validate_template"], "bank"),
    "OBJECTIVES": "objectives",
    **dict.fromkeys(["KINDS", "Template", "TemplateError", "load_template", "parse_template"], "schema"),
    **dict.fromkeys(["generator", "variant_seed"], "seeds"),
    **dict.fromkeys(["TestCase", "Variant", "VariantError", "make_variant"], "variant"),
}


def __getattr__(name: str):
    if name in _HOME:
        value = getattr(importlib.import_module(f".{_HOME[name]}", __name__), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["BANK_DIR", "BankError", "Comparison", "KINDS", "OBJECTIVES", "Template",
           "TemplateError", "TestCase", "ValidationReport", "Variant", "VariantError", "compare",
           "generator", "load_bank", "load_template", "make_variant", "parse_template",
           "template_files", "validate_template", "variant_seed"]
