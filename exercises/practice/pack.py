"""A practice pack: per template, a notebook of practice variants that checks each answer at
once, with NumPy alone — the grader's own judging code travels in it (``bundle``), with the
variants' expected values, twins and follow-through recipes. Nothing of a course's answer key
enters it: the variants are practice ones (``variants``), their givens never a graded one's."""

from __future__ import annotations

import base64
import json
import zlib
from dataclasses import dataclass
from pathlib import Path

import nbformat

from formats.literals import assignment
from formats.version import KIT_VERSION
from formats.textfile import write_atomic

from exercises.practice import bundle
from exercises.practice.variants import PracticeVariant
from exercises.render.notebook import markdown_text, points_text
from exercises.template.model import Template
from exercises.variant.twin_values import constant_parts

PACK_FORMAT = 1
CHECKED = ("numeric", "choice", "implement")     # free responses are marked by hand


@dataclass(frozen=True)
class PracticeNotebook:
    template: str
    path: Path
    variants: int
    follow_left_out: tuple[str, ...]       # parts whose follow-through only the grader gives


def protected_functions(bank: dict[str, Template]) -> frozenset[str]:
    """The reference functions that answer an implement problem of the bank."""
    return frozenset(t.reference for t in bank.values() if t.kind == "implement" and t.reference)


def _follow_calls(template: Template) -> dict[str, set[str]]:
    import solutions
    return {p.id: {c for c in p.follow.calls if hasattr(solutions, c)} for p in template.parts if p.follow}


def _twin_texts(records: list[dict]) -> dict[str, tuple[str, str, str]]:
    from solutions import TWINS
    names = {n for r in records for g in r.get("grading", ()) for n in g.get("misconceptions", ())}
    names |= {n for r in records for n in list(r.get("twins", {})) + list(r.get("lookalikes", {}))}
    return {n: (TWINS[n].shadows, TWINS[n].summary, TWINS[n].explanation) for n in names if n in TWINS}


def _squeezed(value) -> str:
    return base64.b64encode(zlib.compress(json.dumps(value, sort_keys=True).encode("utf-8"), 9)).decode("ascii")


def _variant_text(v: PracticeVariant, same: frozenset[str]) -> str:
    variant, template = v.variant, v.variant.template
    parts = "\n\n".join(f"**({chr(97 + i)})** `{p.id}` ({points_text(p.points)}): {variant.part_prompt(p).strip()}"
                        for i, p in enumerate(template.parts) if p.id not in same)
    shown = "\n".join(assignment(name, value) for name, value in variant.givens.items())
    givens = f"\n\nYour givens (now set as variables):\n\n```python\n{shown}\n```" if shown else ""
    return (f"### {markdown_text(template.title)} — practice variant {v.index}\n\n"
            f"{variant.prompt().strip()}{givens}\n\n{parts}")


def _setup_cell(template: Template, drawn: list[PracticeVariant], records: list[dict], modules: str,
                same: frozenset[str]) -> str:
    data = [{"index": v.index, "record": r, "text": _variant_text(v, same)} for v, r in zip(drawn, records)]
    return SETUP.format(packed=modules, variants=_squeezed(data), template=template.id,
                        loader=bundle.LOADER)


def _without(record: dict, parts: frozenset[str]) -> dict:
    """A record without ``parts``: their answers, twins' and look-alikes' values and recipes."""
    if not parts:
        return record
    def kept(table: dict) -> dict:
        return {name: {**entry, "dict": {p: v for p, v in entry["dict"].items() if p not in parts}}
                for name, entry in table.items()}
    return {**record, "grading": [g for g in record["grading"] if g.get("id") not in parts],
            "answers": {p: v for p, v in record["answers"].items() if p not in parts},
            "twins": kept(record.get("twins", {})), "lookalikes": kept(record.get("lookalikes", {})),
            "follow": {p: r for p, r in (record.get("follow") or {}).items()
                       if p not in parts and not set(r["parts"]) & parts}}


def practice_notebook(template: Template, drawn: list[PracticeVariant], protected: frozenset[str]) -> tuple[dict, tuple]:
    """The notebook (a JSON-ready dict) and the parts whose follow-through it leaves out. Parts
    whose answer is the same on every variant (the lecture's own numbers) are left out: their
    answers are every student's graded ones."""
    if template.kind not in CHECKED:
        raise ValueError(f"{template.id}: a {template.kind} problem is marked by hand, not practised")
    same = constant_parts(template)
    calls = _follow_calls(template)
    functions, refused = bundle.carried_functions(set().union(*calls.values()) if calls else set(), protected)
    left_out = tuple(sorted(part for part, names in calls.items() if names & set(refused) and part not in same))
    records = []
    for v in drawn:
        record = _without(dict(v.variant.record()), same)
        record["follow"] = {p: r for p, r in (record.get("follow") or {}).items() if p not in left_out}
        records.append(record)
    modules = bundle.packed(bundle.sources(_twin_texts(records), functions))
    nb = nbformat.v4.new_notebook()
    nb.metadata["attnkit"] = {"format": PACK_FORMAT, "kit_version": KIT_VERSION,
                              "practice": {"template": template.id, "template_digest": template.source_digest,
                                           "variants": [v.index for v in drawn]}}
    nb.cells = [nbformat.v4.new_markdown_cell(_header(template, len(drawn), left_out, same)),
                nbformat.v4.new_code_cell(_setup_cell(template, drawn, records, modules, same)),
                nbformat.v4.new_code_cell("next_variant()   # run again for a fresh variant of this problem")]
    if template.kind == "implement":
        nb.cells += _function_cells(template)
    for i, part in enumerate(template.parts):
        if part.id in same:
            continue
        nb.cells.append(nbformat.v4.new_markdown_cell(
            f"**({chr(97 + i)})** `{part.id}` — the question is printed above ({points_text(part.points)})."))
        hint = '"B"   # the letter of your choice' if template.kind == "choice" else "...   # your answer"
        nb.cells.append(nbformat.v4.new_code_cell(f"{part.id} = {hint}"))
        nb.cells.append(nbformat.v4.new_code_cell(f'check("{part.id}", {part.id})'))
    nb.cells.append(nbformat.v4.new_markdown_cell("**Your progress** on this problem so far:"))
    nb.cells.append(nbformat.v4.new_code_cell("summary()"))
    for n, cell in enumerate(nb.cells):
        cell["id"] = f"practice-{n}"
    return nb, left_out


def _function_cells(template: Template) -> list:
    f = template.function
    return [nbformat.v4.new_markdown_cell(f"Write `{f.name}{f.signature}` (the task is printed above); "
                                          "its check runs it on this variant's cases."),
            nbformat.v4.new_code_cell(f"def {f.name}{f.signature}:\n    ...   # your code"),
            nbformat.v4.new_code_cell(f"check_function({f.name})")]


def _header(template: Template, count: int, left_out: tuple, same: frozenset[str]) -> str:
    text = (f"# Practice: {markdown_text(template.title)}\n\n"
            f"{count} practice variants of this problem: none of them is any student's graded variant, "
            "and nothing here is graded. Run the next cell once (it needs only NumPy), then "
            "`next_variant()` for a problem; answer each part and run its `check` cell to know at once "
            "whether it is right, which known mistake it matches, or that it is right given your "
            "earlier answer. `next_variant()` again gives a fresh variant; `summary()` shows your "
            "progress. Your attempts are written to a small log beside this notebook "
            f"(`{template.id}.practice-log.json`; set `LOG = False` to stop it) that you may give "
            "your instructor.")
    if same:
        text += (f"\n\nParts {', '.join(f'`{p}`' for p in sorted(same))} are the same for every student "
                 "(the lecture's own numbers): they are not practised here, since their answers are "
                 "everyone's graded ones.")
    if left_out:
        text += (f"\n\nFollow-through for {', '.join(f'`{p}`' for p in left_out)} is not checked here "
                 "(recomputing it needs code that answers an implementation problem); the grader gives it.")
    return text


def write_pack(notebooks: list[tuple[Template, dict]], out: Path) -> list[Path]:
    """Write each notebook as ``out/TEMPLATE.practice.ipynb``."""
    paths = []
    for template, nb in notebooks:
        path = Path(out) / f"{template.id}.practice.ipynb"
        write_atomic(path, nbformat.writes(nb).encode("utf-8"))
        paths.append(path)
    return paths


SETUP = '''# The practice checker (run this cell first; it needs only NumPy). It carries the kit's own
# code that judges an answer, so a practice verdict is the grader's verdict.
_PACKED = "{packed}"
{loader}
import datetime as _datetime, json as _json
from grader.verdicts.practice import Practice as _Practice, said as _said
from solutions import TWINS as _TWINS

_VARIANTS = _json.loads(zlib.decompress(base64.b64decode("{variants}")))
_practice = _Practice("{template}", [(v["index"], v["record"]) for v in _VARIANTS])
_TEXTS = {{v["index"]: v["text"] for v in _VARIANTS}}
LOG = True


def _show(text):
    try:
        from IPython.display import Markdown, display
        display(Markdown(text))
    except ImportError:
        print(text)


def _log():
    if not LOG:
        return
    try:
        with open("{template}.practice-log.json", "w", encoding="utf-8") as f:
            _json.dump({{"format": 1, "template": "{template}", "written": _datetime.datetime.now().isoformat(),
                        "attempts": _practice.attempts}}, f, indent=1)
    except OSError:
        pass


def next_variant():
    """A fresh practice variant of this problem: its text, and its givens set as variables."""
    record = _practice.next_variant()
    globals().update(record["givens"])
    _show(_TEXTS[_practice.index])


def check(part, value):
    """Your answer to one part, judged at once as the grader would judge it."""
    if value is ...:
        print(f"({{part}}) not answered yet: replace the ... in its cell with your answer")
        return
    verdict = _practice.check(part, value)
    _log()
    print(f"({{part}}) " + _said(verdict))


def check_function(function):
    """Your function, run on this variant's cases and judged as the grader would judge it."""
    for family, verdict in _practice.check_function(function).items():
        print(f"({{family}}) " + _said(verdict))
    _log()


def summary():
    """Per part: attempts, variants tried, first-time right, the mistakes you met."""
    progress = _practice.progress()
    if not progress:
        print("nothing checked yet")
    for part, p in progress.items():
        met = "; ".join(f"{{_TWINS[n].summary}} ({{k}}×)" if n in _TWINS else f"{{n}} ({{k}}×)"
                        for n, k in p["misconceptions"].items())
        tried = f"{{p['attempts']}} attempt{{'s' * (p['attempts'] != 1)}} on {{p['variants']}} variant{{'s' * (p['variants'] != 1)}}"
        print(f"{{part}}: {{tried}}, right at the first attempt on {{p['first_time_right']}}"
              + (f"; mistakes met: {{met}}" if met else ""))
'''


@dataclass(frozen=True)
class Skipped:
    template: str
    why: str


def build_pack(templates: list[Template], count: int, avoid: set[str], protected: frozenset[str],
               progress=None) -> tuple[list[tuple[Template, dict, tuple]], list[Skipped]]:
    """A notebook per template that a practice notebook can check ((template, notebook, parts
    without follow-through)), and the templates left out with why."""
    from exercises.practice.variants import PracticeError, practice_variants

    built, skipped = [], []
    for template in templates:
        if progress:
            progress()
        if template.kind not in CHECKED:
            skipped.append(Skipped(template.id, "marked by hand"))
            continue
        try:
            drawn = practice_variants(template, count, avoid=avoid)
        except PracticeError as err:
            skipped.append(Skipped(template.id, str(err).removeprefix(f"{template.id}: ")))
            continue
        notebook, left_out = practice_notebook(template, drawn, protected)
        built.append((template, notebook, left_out))
    return built, skipped
