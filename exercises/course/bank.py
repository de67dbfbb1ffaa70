"""The problem bank: every template in ``problem_bank/`` (or given paths), loaded together,
with bank-wide checks (unique ids) and validation over many seeds."""

from __future__ import annotations

import os
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from exercises.template.loading import parse_yaml_file, shown_path
from exercises.template.model import Template, TemplateError
from exercises.template.schema import TEMPLATE_MAPPING, load_template
from exercises.render.preview import preview
from exercises.variant.draw import VariantError, make_variant

PREVIEWED_SEEDS = 20  # per template, the terminal preview is rendered too

BANK_DIR = Path(os.environ.get("ATTNKIT_BANK") or Path(__file__).resolve().parents[2] / "problem_bank")


class BankError(ValueError):
    def __init__(self, errors: list[str]):
        super().__init__("\n".join(errors))
        self.errors = errors


def template_files(paths=None) -> list[Path]:
    """The template files under ``paths`` (files or directories; default: the built-in bank).
    In a directory, only its top-level *.yaml files are templates (assignments live below).
    A file named twice (or as itself and inside a folder also named) is listed once."""
    found: list[Path] = []
    seen: set[Path] = set()
    for path in map(Path, paths or [BANK_DIR]):
        if path.is_dir():
            files = sorted(p for p in path.iterdir() if p.suffix in (".yaml", ".yml") and p.is_file())
        elif path.exists():
            files = [path]
        else:
            raise BankError([f"{path}: no such file or directory"])
        for file in files:
            if file.resolve() not in seen:
                seen.add(file.resolve())
                found.append(file)
    return found


def _folder_ids(folder: Path, skip: set[Path]) -> dict[str, tuple[Path, int]]:
    """id → (file, line of its id) of the templates in ``folder`` (its top-level *.yaml),
    read as YAML only; files in ``skip`` and files that do not parse are left out."""
    ids: dict[str, tuple[Path, int]] = {}
    for file in template_files([folder]):
        if file.resolve() in skip:
            continue
        try:
            data = parse_yaml_file(file.read_text(encoding="utf-8"), str(file), TemplateError,
                                   TEMPLATE_MAPPING)
        except Exception:  # noqa: BLE001 — a broken neighbour is its own file's problem
            continue
        tid = data.get("id")
        if isinstance(tid, str):
            ids.setdefault(tid, (file, data.line_of("id")))
    return ids


def load_bank(paths=None, keep_going: bool = False) -> tuple[dict[str, Template], list[str]]:
    """Load every template; returns (templates by id, problems). Without ``keep_going`` any
    problem raises BankError listing all of them."""
    templates: dict[str, Template] = {}
    problems: list[str] = []
    files = template_files(paths)
    for path in files:
        try:
            template = load_template(path)
        except TemplateError as err:
            problems += err.errors
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
    problems += _clashes_with_neighbours(paths, files, templates)
    if problems and not keep_going:
        raise BankError(problems)
    return templates, problems


def _clashes_with_neighbours(paths, files: list[Path], templates: dict[str, Template]) -> list[str]:
    """A template file given by itself must not share its id with another template of its
    folder (the bank it belongs to): an assignment naming that id could not tell them apart.
    (Two of the files loaded with the same id are load_bank's own duplicates.)"""
    given = [Path(p) for p in paths or [] if Path(p).is_file()]
    if not given:
        return []
    loaded = {Path(t.path).resolve(): t for t in templates.values()}
    read = {f.resolve() for f in files}
    problems = []
    neighbours: dict[Path, dict[str, tuple[Path, int]]] = {}
    for file in given:
        template = loaded.get(file.resolve())
        if template is None:
            continue
        folder = file.resolve().parent
        if folder not in neighbours:
            neighbours[folder] = _folder_ids(folder, read)
        other = neighbours[folder].get(template.id)
        if other is not None:
            problems.append(f"{template.path}:{template.line_of('id')}: id: duplicate id "
                            f"'{template.id}' (also in {shown_path(other[0])}:{other[1]}, in "
                            f"the same folder)")
    return problems


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
