"""Exercises: YAML templates → validated, seeded variants → rendered problems.

Data flows one way: ``problem_bank/*.yaml`` is loaded and checked here (``schema``),
sampled per student (``seeds``, ``distributions``, ``variant``) with answers from the
reference implementation in ``solutions``, and rendered (``render``).
"""

from .bank import BANK_DIR, BankError, ValidationReport, load_bank, template_files, validate_template
from .compare import Comparison, compare
from .objectives import OBJECTIVES
from .schema import KINDS, Template, TemplateError, load_template, parse_template
from .seeds import generator, variant_seed
from .variant import TestCase, Variant, VariantError, make_variant

__all__ = ["BANK_DIR", "BankError", "Comparison", "KINDS", "OBJECTIVES", "Template",
           "TemplateError", "TestCase", "ValidationReport", "Variant", "VariantError", "compare",
           "generator", "load_bank", "load_template", "make_variant", "parse_template",
           "template_files", "validate_template", "variant_seed"]
