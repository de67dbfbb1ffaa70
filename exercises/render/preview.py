"""A variant as readable text: prompt, givens, parts and (optionally) answers and worked steps.

Used by ``attnkit preview``; ``fmt="markdown"`` gives the same with LaTeX for a Markdown viewer.
"""

from __future__ import annotations

import numpy as np

from exercises.template.texts import FORMATS, format_number, format_points, latex_to_text, render
from exercises.variant.draw import Variant

_LETTERS = "abcdefghijklmnopqrstuvwxyz"


def value_text(value, fmt: str = "text", decimals: int | None = 4) -> str:
    """A given or an answer: numbers and matrices as in the prompts, words as a sentence."""
    if isinstance(value, np.ndarray) or isinstance(value, (int, float, np.number)):
        source = "{{ x | matrix(d) }}" if fmt == "text" else "$${{ x | matrix(d) }}$$"
        if np.ndim(value) == 0:
            return format_number(value, None if float(value).is_integer() else decimals)
        if np.asarray(value).dtype == bool:
            value = np.asarray(value).astype(int)
        return render(source, {"x": value, "d": None if _integers(value) else decimals}, fmt).rstrip()
    if isinstance(value, (list, tuple)) and all(isinstance(v, str) for v in value):
        return "“" + " ".join(value) + "”"
    if isinstance(value, (list, tuple)) and any(np.ndim(v) > 0 for v in value):
        return "".join(f"\n  [{i}]" + ("" if np.ndim(v) else " ") + value_text(v, fmt, decimals)
                       for i, v in enumerate(value))
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(value_text(v, fmt, decimals) for v in value) + "]"
    return str(value)


def decimals_for(atol: float, answer) -> int:
    """Enough decimals that rounding the shown answer stays well inside the tolerance."""
    if atol <= 0:
        return 6
    needed = int(np.ceil(-np.log10(atol))) + 1
    return int(min(max(needed, 4), 10))


def compared_with_tolerance(answer) -> bool:
    """Floats are compared with the part's tolerance; integers, booleans and text exactly."""
    try:
        return np.asarray(answer).dtype.kind == "f"
    except (TypeError, ValueError):
        return False


def _brief(value) -> str:
    """An argument of a hidden test case in a few characters: shapes, not contents."""
    if isinstance(value, np.ndarray):
        return f"{value.dtype.name}{value.shape}" if value.dtype != float else str(value.shape)
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k}: {_brief(v)}" for k, v in value.items()) + "}"
    if isinstance(value, (list, tuple)) and len(value) > 6:
        return f"list of {len(value)}"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_brief(v) for v in value) + "]"
    return repr(value)


def _integers(value) -> bool:
    a = np.asarray(value, dtype=float)
    return bool(np.all(np.isfinite(a)) and np.all(a == np.round(a)))


def _heading(text: str, fmt: str, level: int = 2) -> str:
    return f"{'#' * level} {text}" if fmt == "markdown" else text + "\n" + "─" * min(len(text), 78)


def preview(variant: Variant, solution: bool = False, fmt: str = "text") -> str:
    """The whole problem as the student sees it, and with ``solution`` the answer key too."""
    if fmt not in FORMATS:
        raise ValueError(f"format must be one of {FORMATS}")
    t = variant.template
    points = f"{format_points(t.points)} point{'s' if format_points(t.points) != '1' else ''}"
    out = [_heading(f"{t.title}", fmt, 1),
           f"{t.id} · objective: {t.objective} · {t.kind} · {points} · seed {variant.seed}", "",
           variant.prompt(fmt).rstrip(), ""]
    gap = [""] if fmt == "markdown" else []  # Markdown needs blank lines between paragraphs
    if variant.givens:
        out += [_heading("Givens", fmt), *gap]
        for name, value in variant.givens.items():
            shown = value_text(value, fmt, decimals=None)  # givens exactly as drawn
            out += [f"{name} = {shown}" if "\n" not in shown else f"{name} ={shown}", *gap]
        out.append("")
    if t.kind == "implement":
        f = t.function
        out += [_heading("Implement", fmt), f"def {f.name}{f.signature}:" +
                (f"  # returns {f.returns}" if f.returns else ""), "",
                "Hidden tests: " + ", ".join(f"{fam.family} ({fam.cases} case"
                                            f"{'s' if fam.cases != 1 else ''}, {format_points(fam.points)} pt)"
                                            for fam in t.tests), ""]
    for i, part in enumerate(t.parts):
        label = f"({_LETTERS[i % 26]}) {part.id}  [{format_points(part.points)} pt]"
        text = variant.part_prompt(part, fmt).strip()
        out += [f"{label}  {text}" if text else label, *gap]
        for j, option in enumerate(variant.options.get(part.id, [])):
            out.append(f"    {_LETTERS[j]}) {latex_to_text(option['text']) if fmt == 'text' else option['text']}")
            if solution and option["feedback"]:
                feedback = latex_to_text(option["feedback"]) if fmt == "text" else option["feedback"]
                out.append(f"         ↳ if chosen: {feedback.strip()}")
        if t.kind == "free_response" and solution:
            out.append(f"    rubric: {variant.rubric_text(part, fmt).strip()}")
    if solution and (variant.answers or variant.tests):
        out += ["", _heading("Answers", fmt), *gap]
    if solution:
        for i, part in enumerate(t.parts):
            if part.id not in variant.answers:
                continue
            answer = variant.answers[part.id]
            if t.kind == "choice":
                text = variant.options[part.id][answer]['text']
                shown = f"{_LETTERS[answer]}) {latex_to_text(text) if fmt == 'text' else text}"
            else:
                shown = value_text(answer, fmt, decimals_for(part.atol, answer))
                if compared_with_tolerance(answer):
                    tol = f"   (tolerance: atol {part.atol:g}, rtol {part.rtol:g})"
                    shown = shown + tol if "\n" not in shown else shown + "\n   " + tol.strip()
            out += [f"({_LETTERS[i % 26]}) {part.id} = {shown}" if "\n" not in shown
                    else f"({_LETTERS[i % 26]}) {part.id} ={shown}", *gap]
        if t.kind == "implement":
            for case in variant.tests:
                args = ", ".join(f"{k}: {_brief(v)}" for k, v in case.args.items())
                out.append(f"  {case.family} #{case.index}: {args} → expected {_brief(case.expected)}")
        if t.solution:
            out += ["", _heading("Worked solution", fmt), variant.solution(fmt).rstrip()]
    return "\n".join(out).rstrip() + "\n"
