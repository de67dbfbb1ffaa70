"""The problem bank: every template in ``problem_bank/`` (or given paths), loaded together,
with bank-wide checks (unique ids) and validation over many seeds."""

from __future__ import annotations

import os
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from .schema import Template, TemplateError, load_template
from .preview import preview
from .variant import VariantError, make_variant

PREVIEWED_SEEDS = 20  # per template, the terminal preview is rendered too

BANK_DIR = Path(os.environ.get("ATTNKIT_BANK") or Path(__file__).resolve().parent.parent / "problem_bank")


class BankError(ValueError):
    def __init__(self, problems: list[str]):
        super().__init__("\n".join(problems))
        self.problems = problems


def template_files(paths=None) -> list[Path]:
    """The template files under ``paths`` (files or directories; default: the built-in bank).
    In a directory, only its top-level *.yaml files are templates (assignments live below)."""
    found: list[Path] = []
    for path in map(Path, paths or [BANK_DIR]):
        if path.is_dir():
            found += sorted(p for p in path.iterdir() if p.suffix in (".yaml", ".yml") and p.is_file())
        elif path.exists():
            found.append(path)
        else:
            raise BankError([f"{path}: no such file or directory"])
    return found


def load_bank(paths=None, keep_going: bool = False) -> tuple[dict[str, Template], list[str]]:
    """Load every template; returns (templates by id, problems). Without ``keep_going`` any
    problem raises BankError listing all of them."""
    templates: dict[str, Template] = {}
    problems: list[str] = []
    for path in template_files(paths):
        try:
            template = load_template(path)
        except TemplateError as err:
            problems += err.problems
            continue
        except Exception as err:  # noqa: BLE001 — one odd file must not hide the others
            problems.append(f"{path}: cannot load: {type(err).__name__}: {err}")
            continue
        if template.id in templates:
            first = templates[template.id]
            problems.append(f"{template.path}:{template.line_of('id')}: id: duplicate id "
                            f"'{template.id}' (also in {first.path}:{first.line_of('id')})")
            continue
        templates[template.id] = template
    if problems and not keep_going:
        raise BankError(problems)
    return templates, problems


@dataclass
class ValidationReport:
    template: Template
    seeds: int
    valid: int = 0
    draws: int = 0
    seconds: float = 0.0
    failures: list[str] = field(default_factory=list)
    rejections: Counter = field(default_factory=Counter)

    @property
    def ok(self) -> bool:
        return not self.failures and self.valid == self.seeds

    @property
    def rejection_rate(self) -> float:
        return 1 - self.valid / self.draws if self.draws else 0.0


def validate_template(template: Template, seeds: int = 200, first_seed: int = 0,
                      stop_after: int = 3) -> ValidationReport:
    """Make the variants for seeds first_seed … first_seed+seeds−1; record failures (at most
    ``stop_after`` before giving up on the template)."""
    report = ValidationReport(template, seeds)
    start = time.perf_counter()
    for seed in range(first_seed, first_seed + seeds):
        try:
            variant = make_variant(template, seed)
        except (VariantError, TemplateError) as err:
            report.failures.append(str(err))
            report.rejections.update(getattr(err, "rejections", Counter()))
            report.draws += template.max_attempts if isinstance(err, VariantError) else 0
            if len(report.failures) >= stop_after:
                break
            continue
        report.valid += 1
        report.draws += variant.attempts
        report.rejections.update(variant.rejections)
        if seed - first_seed < PREVIEWED_SEEDS:
            # make_variant renders the Markdown; the terminal text has its own filters.
            try:
                preview(variant, solution=True, fmt="text")
            except Exception as err:  # noqa: BLE001 — a crash here is the template's text
                report.failures.append(f"{template.path}:{template.line_of('solution')}: the "
                                       f"terminal preview of seed {seed} fails: "
                                       f"{type(err).__name__}: {err}")
                if len(report.failures) >= stop_after:
                    break
    report.seconds = time.perf_counter() - start
    return report
