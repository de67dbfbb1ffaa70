"""The docs tell the truth about the code: the README and docs/ name only commands, options,
modules and files that exist, and the counts they state (the bank's families, the malformed
templates) are the code's.

The command line is read the way a user meets it — through the `attnkit` entry point that
pyproject.toml declares — so this test follows the code wherever its modules move."""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import json
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
BANK_GUIDE = ROOT / "problem_bank" / "README.md"
DOCS = [README, BANK_GUIDE, ROOT / "CHANGELOG.md", *sorted((ROOT / "docs").glob("*.md"))]
README_MAX_LINES = 300


def _text(path: Path) -> str:
    return path.read_text(encoding="utf-8")


def _prose_and_code(text: str) -> tuple[str, list[str]]:
    """(the text outside fenced code blocks, the fenced code blocks)."""
    blocks = re.findall(r"^```[^\n]*\n(.*?)^```", text, re.S | re.M)
    prose = re.sub(r"^```[^\n]*\n.*?^```", "", text, flags=re.S | re.M)
    return prose, blocks


# --- the attnkit command line -------------------------------------------------------------------

def _entry_point():
    """The function pyproject.toml's [project.scripts] names for `attnkit`."""
    match = re.search(r'^attnkit\s*=\s*"([\w.]+):(\w+)"', _text(ROOT / "pyproject.toml"), re.M)
    assert match, "pyproject.toml declares no attnkit script"
    return importlib.import_module(match[1]), match[2]


def _parser() -> argparse.ArgumentParser:
    module, _main = _entry_point()
    return module.build_parser()


def _subcommands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    found: dict[str, argparse.ArgumentParser] = {}
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            found.update(action.choices)
    return found


def _options(parser: argparse.ArgumentParser) -> set[str]:
    return set(parser._option_string_actions)


def _command_lines() -> list[tuple[Path, str]]:
    """Every `attnkit …` command the docs show: in code blocks (continuation lines joined) and
    in inline code spans; comments after `#` left out."""
    found = []
    for path in DOCS:
        prose, blocks = _prose_and_code(_text(path))
        for block in blocks:
            lines: list[str] = []
            for line in block.splitlines():
                if lines and lines[-1].endswith("\\"):
                    lines[-1] = lines[-1][:-1] + " " + line.strip()
                elif lines and "attnkit " in lines[-1] and re.match(r"\s+[\[-]", line):
                    lines[-1] += " " + line.strip()
                else:
                    lines.append(line)
            found += [(path, line) for line in lines if re.search(r"(?<![\w/.-])attnkit [a-z]", line)]
        found += [(path, span) for span in re.findall(r"`(attnkit [^`]+)`", prose)]
    return [(path, re.split(r"\s#\s", line)[0]) for path, line in found]


def _commands_named() -> list[tuple[Path, str, list[str]]]:
    """(file, the command's text, its words after `attnkit`)."""
    named = []
    for path, line in _command_lines():
        for match in re.finditer(r"(?<![\w/.-])attnkit ((?:[^|;&()]|\|(?=\S))+)", line):
            named.append((path, match[0], match[1].split()))
    return named


def test_every_attnkit_command_in_the_docs_is_a_real_subcommand_with_real_options():
    commands = _subcommands(_parser())
    checked = 0
    for path, shown, words in _commands_named():
        if not re.fullmatch(r"[a-z][a-z-]*", words[0]):
            continue                                    # `attnkit COMMAND --help`, `attnkit --help`
        assert words[0] in commands, f"{path.relative_to(ROOT)}: `{shown}`: no such command {words[0]!r}"
        parser = commands[words[0]]
        subs = _subcommands(parser)
        if subs:
            if len(words) > 1 and re.fullmatch(r"[a-z]+", words[1]) and words[1] not in subs and "|" not in words[1]:
                raise AssertionError(f"{path.relative_to(ROOT)}: `{shown}`: no such subcommand {words[1]!r}")
            if len(words) > 1 and words[1] in subs:
                parsers = [subs[words[1]]]
            elif len(words) > 1 and "|" in words[1]:     # `attnkit mark export|import ...`
                parsers = [subs[w] for w in words[1].split("|")]
                assert all(w in subs for w in words[1].split("|")), f"{path.relative_to(ROOT)}: `{shown}`"
            else:                                          # the default subcommand (mark serve)
                parsers = list(subs.values())
        else:
            parsers = [parser]
        known = set().union(*map(_options, parsers)) | {"-h", "--help"}
        for option in re.findall(r"(?<![\w-])(--?[A-Za-z][\w-]*)", " ".join(words[1:])):
            assert option in known, f"{path.relative_to(ROOT)}: `{shown}`: {words[0]} has no option {option}"
        checked += 1
    assert checked >= 30, f"only {checked} attnkit commands found in the docs"


def test_the_readme_shows_every_command_of_the_course_loop():
    shown = {words[0] for path, _, words in _commands_named() if path == README}
    assert {"build", "check", "grade", "report", "mark"} <= shown
    assert set(_subcommands(_parser())) <= shown, "a command the README's command list lacks"


# --- python -m … and make … ---------------------------------------------------------------------

def _python_modules() -> set[tuple[str, str]]:
    found = set()
    for path in DOCS:
        for module in re.findall(r"python -m ([A-Za-z_][\w.]*)", _text(path)):
            found.add((str(path.relative_to(ROOT)), module))
    return found


def test_every_python_dash_m_in_the_docs_names_a_module_that_exists():
    modules = _python_modules()
    assert any(m.startswith("bench.") for _, m in modules)
    for name, module in sorted(modules):
        assert importlib.util.find_spec(module) is not None, f"{name}: python -m {module}: no such module"


def test_every_bench_module_of_make_bench_is_in_the_performance_doc():
    makefile = _text(ROOT / "Makefile")
    in_make = set(re.findall(r"-m (bench\.\w+)", makefile))
    performance = _text(ROOT / "docs" / "performance.md")
    assert in_make and all(f"python -m {m}" in performance for m in in_make)


def test_the_bench_commands_use_options_the_benchmarks_have():
    for path in DOCS:
        for module, rest in re.findall(r"python -m (bench\.\w+)((?:[ \t]+[^\s`|#][^\s`|]*)*)", _text(path)):
            options = re.findall(r"(?<![\w-])(--[a-z][\w-]*)", rest)
            if not options:
                continue
            spec = importlib.util.find_spec(module)
            assert spec is not None and spec.origin, f"{path.relative_to(ROOT)}: python -m {module}: no such module"
            source = Path(spec.origin).read_text(encoding="utf-8")
            for option in options:
                assert re.search(rf"""["']{re.escape(option)}["']""", source), \
                    f"{path.relative_to(ROOT)}: python -m {module}: no option {option}"


def test_every_make_target_the_docs_name_is_in_the_makefile():
    targets = set(re.findall(r"^([\w-]+):", _text(ROOT / "Makefile"), re.M))
    readme = _text(README)
    assert "make demo" in readme and "make test" in readme
    for path in DOCS:
        for target in re.findall(r"(?:`|^)make ([a-z][\w-]*)", _text(path), re.M):
            assert target in targets, f"{path.relative_to(ROOT)}: make {target}: no such target"


# --- counts against the code --------------------------------------------------------------------

@pytest.fixture(scope="module")
def bank() -> list[dict]:
    """The built-in bank as `attnkit bank list --json` loads it."""
    import contextlib
    import io

    module, main = _entry_point()
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = getattr(module, main)(["bank", "list", "--json", "--bank", str(ROOT / "problem_bank")])
    assert code == 0
    return json.loads(out.getvalue())


def test_the_number_of_families_the_docs_state_is_the_banks(bank):
    stated = [(str(path.relative_to(ROOT)), int(n)) for path in DOCS
              for n in re.findall(r"(\d+) (?:exercise )?families", _text(path))]
    assert stated, "no doc states how many families the bank holds"
    assert all(n == len(bank) for _, n in stated), (stated, len(bank))
    assert len(bank) == len(list((ROOT / "problem_bank").glob("*.yaml")))


def test_the_families_table_lists_every_template_of_the_bank_under_its_objective(bank):
    rows = re.findall(r"^\| (\w+) \(.*?\) \| (.*) \|$", _text(BANK_GUIDE), re.M)
    listed = {tid: objective for objective, families in rows for tid in re.findall(r"`(\w+)`", families)}
    assert listed == {t["id"]: t["objective"] for t in bank}


def test_the_malformed_template_corpus_is_as_large_as_the_docs_say():
    corpus = len(list((ROOT / "tests" / "fixtures" / "bad_templates").glob("*.yaml")))
    for path in DOCS:
        for n in re.findall(r"corpus of (\d+) malformed templates", _text(path)):
            assert int(n) == corpus, f"{path.relative_to(ROOT)}: {n} malformed templates, the corpus has {corpus}"


# --- files and modules the docs name -------------------------------------------------------------

PACKAGES = ("solutions", "formats", "exercises", "grader", "attnkit", "synthetic", "bench", "tests",
            "problem_bank", "docs")
NAMING_CHECKED = DOCS


def _exists(dotted: str) -> bool:
    """A module, or a name in a module."""
    try:
        if importlib.util.find_spec(dotted) is not None:
            return True
    except ImportError:
        pass
    parent, _, name = dotted.rpartition(".")
    try:
        return hasattr(importlib.import_module(parent), name)
    except ImportError:
        return False


def test_every_file_and_module_the_docs_name_in_code_exists():
    roots = "|".join(PACKAGES)
    for path in NAMING_CHECKED:
        for span in re.findall(r"`([^`\s]+)`", _text(path)):
            if re.fullmatch(rf"(?:{roots})/[\w./*-]*", span):
                assert list(ROOT.glob(span.rstrip("/"))), f"{path.relative_to(ROOT)}: `{span}`: no such file"
            elif re.fullmatch(rf"(?:{roots})(?:\.[a-z_]+)+", span):
                assert _exists(span), f"{path.relative_to(ROOT)}: `{span}`: no such module or name"


# --- the README's size and the links ------------------------------------------------------------

def test_the_readme_is_a_short_guide():
    lines = _text(README).splitlines()
    assert len(lines) <= README_MAX_LINES, f"README.md is {len(lines)} lines"
    assert not re.search(r"^#+ .*\bissue \d+", _text(README), re.M | re.I)
    assert not re.search(r"\b[0-9a-f]{7,40}\b(?=\))", _text(README)), "a commit hash in the README"


def _slug(heading: str) -> str:
    """GitHub's anchor for a heading."""
    text = re.sub(r"[`*_]|<[^>]+>", "", heading.strip()).lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def _anchors(path: Path) -> set[str]:
    prose, _ = _prose_and_code(_text(path))
    return {_slug(h) for h in re.findall(r"^#{1,6} (.+)$", prose, re.M)}


def test_every_relative_link_in_the_docs_points_to_a_file_and_heading_that_exist():
    checked = 0
    for path in DOCS:
        prose, _ = _prose_and_code(_text(path))
        for target in re.findall(r"\]\(([^)\s]+)\)", prose):
            if re.match(r"[a-z]+:", target):
                continue
            file, _, anchor = target.partition("#")
            resolved = (path.parent / file).resolve() if file else path
            assert resolved.exists(), f"{path.relative_to(ROOT)}: link to {target}: no such file"
            if anchor:
                assert anchor in _anchors(resolved), f"{path.relative_to(ROOT)}: link to {target}: no such heading"
            checked += 1
    assert checked > 20


def test_every_doc_says_who_it_is_for():
    for path in [*sorted((ROOT / "docs").glob("*.md")), BANK_GUIDE, ROOT / "CHANGELOG.md"]:
        opening = _text(path).split("\n## ")[0]
        assert "**For**" in opening, f"{path.relative_to(ROOT)} does not open with whom it is for"


def test_architecture_lives_in_docs_and_nothing_points_to_the_old_place():
    assert (ROOT / "docs" / "architecture.md").exists() and not (ROOT / "ARCHITECTURE.md").exists()
    for path in DOCS:
        assert "ARCHITECTURE.md" not in _text(path), f"{path.relative_to(ROOT)} still names ARCHITECTURE.md"
