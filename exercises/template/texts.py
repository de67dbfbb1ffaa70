"""Jinja2 text for prompts, options and worked solutions, in two flavours:

- ``markdown``: Markdown with LaTeX (``$…$``, ``$$…$$``), for notebooks and HTML;
- ``text``: plain Unicode for the terminal (``attnkit preview``): LaTeX is turned into
  √, ᵀ, ·, Greek letters …, matrices into aligned grids.

Templates run in Jinja's sandbox with StrictUndefined, so a misspelt name is never a blank:
``text_names`` lists the names a text reads, so loading a template reports an unknown one
once, with file:line, and rendering raises on anything that still slips through.
"""

from __future__ import annotations

import html
import math
import re
from fractions import Fraction
from functools import lru_cache

import numpy as np
from jinja2 import StrictUndefined, TemplateError as JinjaError, meta, nodes
from jinja2.exceptions import SecurityError
from jinja2.sandbox import ImmutableSandboxedEnvironment, SandboxedEnvironment

FORMATS = ("markdown", "text")


def format_number(x, decimals: int | None = None) -> str:
    """Whole numbers without decimals; others to ``decimals`` places (default: up to 4)."""
    if isinstance(x, (bool, np.bool_)):
        return "True" if x else "False"
    if isinstance(x, (int, np.integer)) and decimals is None:
        return str(int(x)).replace("-", "−")  # counts stay exact, however large
    x = float(x) + 0.0  # −0.0 → 0.0
    if math.isnan(x):
        return "nan"
    if math.isinf(x):
        return "−∞" if x < 0 else "∞"
    if abs(x) >= 1e15:  # e^52 and friends: significant digits, not 23 of them
        return f"{x:.6g}".replace("-", "−")
    if decimals is None and x == round(x):
        return str(int(round(x))).replace("-", "−")
    if decimals is None:
        text = f"{x:.4f}".rstrip("0").rstrip(".")
        if text == "-0":
            text = f"{x:.2e}"
        if text in ("0", "-0") and x != 0:
            text = f"{x:.2e}"
    else:
        text = f"{x:.{int(decimals)}f}"
        if float(text) == 0:
            text = text.lstrip("-")
    return text.replace("-", "−")


def format_points(x) -> str:
    """Points as people write them: whole numbers bare (``2``), up to two decimals as they are
    (``2.5``, ``0.25``), thirds and other small fractions as fractions (``5/3``, ``1/6``),
    anything else to two decimals (``1.23``) — never ``1.66667``."""
    x = float(x) + 0.0
    if not math.isfinite(x):
        return format_number(x)
    close = 1e-9 * max(1.0, abs(x))          # 0.1 + 0.2 is 0.3, 3 × (1/3) is 1
    if abs(x - round(x)) <= close:
        return f"{int(round(x))}".replace("-", "−")
    if abs(x - round(x, 2)) <= close:
        return f"{x:.2f}".rstrip("0").replace("-", "−")
    fraction = Fraction(x).limit_denominator(12)
    if abs(float(fraction) - x) <= close:
        return f"{fraction.numerator}/{fraction.denominator}".replace("-", "−")
    return f"{x:.2f}".replace("-", "−")


def _latex_number(x, decimals):
    text = format_number(x, decimals).replace("−", "-")
    return {"∞": r"\infty", "-∞": r"-\infty"}.get(text, text)


def _as_2d(x):
    x = np.asarray(x)
    return x.reshape(1, -1) if x.ndim == 1 else x


def _matrix_markdown(x, decimals=None):
    x = np.asarray(x)
    if x.ndim == 0:
        return _latex_number(x, decimals)
    if x.ndim > 2:  # one labelled matrix per leading index: [0], [1], …
        return r" \quad ".join(rf"\underset{{[{i}]}}{{{_matrix_markdown(m, decimals)}}}"
                                for i, m in enumerate(x))
    rows = [" & ".join(_latex_number(v, decimals) for v in row) for row in _as_2d(x)]
    return r"\begin{bmatrix} " + r" \\ ".join(rows) + r" \end{bmatrix}"


def _grid(cells: list[list[str]], row_labels=None, col_labels=None) -> str:
    if col_labels is not None:
        cells = [[str(c) for c in col_labels]] + cells
        row_labels = [""] + list(row_labels) if row_labels is not None else None
    widths = [max(len(r[j]) for r in cells) for j in range(len(cells[0]))]
    label_width = max((len(str(r)) for r in row_labels), default=0) if row_labels is not None else 0
    lines = []
    for i, row in enumerate(cells):
        label = f"{str(row_labels[i]):>{label_width}} " if row_labels is not None else ""
        body = "  ".join(f"{c:>{w}}" for c, w in zip(row, widths))
        framed = f"[ {body} ]" if not (col_labels is not None and i == 0) else f"  {body}  "
        lines.append("    " + label + framed)
    return "\n" + "\n".join(lines) + "\n"


def _matrix_text(x, decimals=None):
    x = np.asarray(x)
    if x.ndim == 0:
        return format_number(x, decimals)
    if x.ndim > 2:  # one labelled grid per leading index
        return "".join(f"\n    [{i}]" + _matrix_text(m, decimals) for i, m in enumerate(x))
    return _grid([[format_number(v, decimals) for v in row] for row in _as_2d(x)])


def _table_markdown(x, rows=None, cols=None, decimals=None):
    x = _as_2d(x)
    cols = list(cols) if cols is not None else [str(j + 1) for j in range(x.shape[1])]
    rows = list(rows) if rows is not None else [str(i + 1) for i in range(x.shape[0])]
    head = "| | " + " | ".join(map(_cell, cols)) + " |"
    rule = "|---|" + "---:|" * len(cols)
    body = ["| **" + _cell(r) + "** | " + " | ".join(format_number(v, decimals) for v in row) + " |"
            for r, row in zip(rows, x)]
    return "\n" + "\n".join([head, rule, *body]) + "\n"


def _cell(label) -> str:
    """A table label as Markdown text: <bos> must not vanish as an HTML tag, | not split a cell.
    A label already in `code` is shown as is (Markdown does not read tags inside code)."""
    pieces = _CODE.split(str(label))  # escape outside `code` only: Markdown reads no tags in code
    return "".join(p if i % 2 else html.escape(p, quote=False) for i, p in enumerate(pieces)).replace("|", "\\|")


def _table_text(x, rows=None, cols=None, decimals=None):
    x = _as_2d(x)
    cols = list(cols) if cols is not None else [str(j + 1) for j in range(x.shape[1])]
    rows = list(rows) if rows is not None else [str(i + 1) for i in range(x.shape[0])]
    return _grid([[format_number(v, decimals) for v in row] for row in x], rows, cols)


def _words(x, quote=True) -> str:
    text = " ".join(str(w) for w in x)
    return f"“{text}”" if quote else text


_GREEK = {name: chr(code) for name, code in (
    ("alpha", 0x3B1), ("beta", 0x3B2), ("gamma", 0x3B3), ("delta", 0x3B4), ("epsilon", 0x3B5),
    ("eta", 0x3B7), ("theta", 0x3B8), ("lambda", 0x3BB), ("mu", 0x3BC), ("pi", 0x3C0),
    ("sigma", 0x3C3), ("tau", 0x3C4), ("phi", 0x3C6), ("Sigma", 0x3A3), ("Delta", 0x394))}
_SYMBOLS = {r"\top": "ᵀ", r"\cdot": "·", r"\times": "×", r"\approx": "≈", r"\in": "∈",
            r"\le": "≤", r"\leq": "≤", r"\ne": "≠", r"\ge": "≥", r"\geq": "≥", r"\neq": "≠", r"\infty": "∞",
            r"\to": "→", r"\ldots": "…", r"\dots": "…", r"\cdots": "⋯", r"\odot": "⊙",
            r"\sum": "Σ", r"\exp": "exp", r"\log": "log", r"\tanh": "tanh", r"\max": "max",
            r"\min": "min", r"\quad": "  ", r"\qquad": "    ", r"\mid": "|", r"\lVert": "‖",
            r"\rVert": "‖", r"\left": "", r"\right": "", r"\mathbb{R}": "ℝ", r"\partial": "∂",
            r"\nabla": "∇", r"\sim": "~", r"\pm": "±", r"\,": " ", r"\;": " ", r"\!": "",
            r"\\": "\n", r"\{": "{", r"\}": "}", r"\%": "%", r"\Big": "", r"\big": "",
            r"\Bigg": "", r"\bigg": "", r"\varepsilon": "ε", r"\epsilon": "ε", r"\ell": "ℓ",
            r"\displaystyle": "", r"\lfloor": "⌊", r"\rfloor": "⌋", r"\langle": "⟨",
            r"\rangle": "⟩", r"\circ": "∘", r"\propto": "∝", r"\Rightarrow": "⇒"}
_SUPERSCRIPT = {"T": "ᵀ", "2": "²", "−1": "⁻¹", "\\top": "ᵀ"}


_CODE = re.compile(r"(```.*?```|`[^`\n]*`)", re.S)


def latex_to_text(text: str) -> str:
    """Readable Unicode for the LaTeX a prompt uses (√, ᵀ, Greek letters, fractions).
    Code (```…``` blocks and `…` spans) is left exactly as written."""
    pieces = _CODE.split(text)
    return "".join(piece if i % 2 else _latex_piece_to_text(piece) for i, piece in enumerate(pieces))


_MATH = re.compile(r"\$\$(.+?)\$\$|\$(.+?)\$", re.S)


def _latex_piece_to_text(text: str) -> str:
    # Inside math a hyphen is a minus sign, as the numbers print it.
    text = _MATH.sub(lambda m: (m[1] if m[1] is not None else m[2]).replace("-", "−"), text)
    text = re.sub(r"\\sqrt\s+(\w)", r"√\1", text)
    text = re.sub(r"\^(?:\{(\\top|T|2|−1)\}|(\\top|T|2)(?![\w{]))",
                  lambda m: _SUPERSCRIPT[m[1] or m[2]], text)
    for _ in range(4):  # innermost braces first: nested \frac, \sqrt, ^{…}, _{…}
        text = re.sub(r"\\(?:mathrm|text|texttt|textbf|textit|operatorname|mathbf|mathit|mathcal|boldsymbol|bar|hat|tilde)\{([^{}]*)\}", r"\1", text)
        text = re.sub(r"\^\{([^{}]*)\}", lambda m: "^" + _group(m[1]), text)
        text = re.sub(r"\\sqrt\{([^{}]*)\}", lambda m: "√" + (m[1] if len(m[1]) <= 1 or re.fullmatch(r"[\w.]+", m[1]) else f"({m[1]})"), text)
        text = re.sub(r"\\[dt]?frac\{([^{}]*)\}\{([^{}]*)\}", lambda m: f"{_group(m[1])}/{_group(m[2])}", text)
        text = re.sub(r"_\{([^{}]*)\}", lambda m: "_" + _group(m[1]), text)
    for name, symbol in sorted(_SYMBOLS.items(), key=lambda kv: -len(kv[0])):
        # A command made of letters must not swallow the start of a longer one (\in vs \infty).
        boundary = r"(?![A-Za-z])" if name[-1].isalpha() else ""
        text = re.sub(re.escape(name) + boundary, lambda _m, s=symbol: s, text)
    text = re.sub(r"\\([A-Za-z]+)", lambda m: _GREEK.get(m[1], m[1]), text)
    return text.replace("{", "").replace("}", "")


def _group(x: str) -> str:
    """x as one unit after ^ _ or /: bare if it is one token or already parenthesised."""
    if re.fullmatch(r"[\w.√ᵀ]+", x) or (x.startswith("(") and x.endswith(")")
                                        and x.count("(") == 1 and x.count(")") == 1):
        return x
    return f"({x})"


_MAX_TEXT = 200_000
_ARRAY_ATTRIBUTES = {"shape", "T", "ndim", "size"}


class _Sandbox(ImmutableSandboxedEnvironment):
    """Jinja's immutable sandbox, narrowed further: text can read values, never change them
    (no list.append, dict.update, ndarray.fill) and never reach a file (ndarray.tofile/dump)."""

    intercepted_binops = frozenset(["*", "**"])

    def is_safe_attribute(self, obj, attr, value):
        if not super().is_safe_attribute(obj, attr, value):
            return False
        if isinstance(obj, (np.ndarray, np.generic)):
            return attr in _ARRAY_ATTRIBUTES
        if type(obj).__module__.startswith("solutions") and callable(value):
            return False
        return True

    def call_binop(self, context, operator, left, right):
        if operator == "**" and isinstance(left, int) and isinstance(right, int) \
                and right > 0 and left.bit_length() * right > 4096:
            raise SecurityError("integer power too large")
        if operator == "*" and any(isinstance(x, (str, list, tuple)) for x in (left, right)):
            count = right if isinstance(left, (str, list, tuple)) else left
            sequence = left if isinstance(left, (str, list, tuple)) else right
            if isinstance(count, int) and count * len(sequence) > _MAX_TEXT:
                raise SecurityError("repeated text too long")
        return super().call_binop(context, operator, left, right)


def _environment(fmt: str) -> SandboxedEnvironment:
    env = _Sandbox(undefined=StrictUndefined, autoescape=False, trim_blocks=True,
                   lstrip_blocks=True, keep_trailing_newline=False)
    # Python's global random and friends would make two renders of one variant differ.
    for name in ("random",):
        env.filters.pop(name, None)
    for name in ("lipsum", "cycler", "joiner"):
        env.globals.pop(name, None)
    markdown = fmt == "markdown"
    env.filters.update(
        matrix=_matrix_markdown if markdown else _matrix_text,
        table=_table_markdown if markdown else _table_text,
        num=format_number, words=_words,
        flat=lambda x: np.asarray(x).reshape(-1).tolist(),
        # The same number written for LaTeX inside $…$ (minus sign as '-').
        tex=lambda x, d=None: _latex_number(x, d) if markdown else format_number(x, d),
    )
    # range stays Jinja's bounded safe_range.
    env.globals.update(zip=zip, enumerate=enumerate, len=len, sqrt=lambda x: float(np.sqrt(x)))
    return env


_ENVIRONMENTS = {fmt: _environment(fmt) for fmt in FORMATS}


@lru_cache(maxsize=4096)
def _compiled(fmt: str, source: str):
    return _ENVIRONMENTS[fmt].from_string(source)


class RenderError(ValueError):
    """A text that cannot be rendered; ``lineno`` is the line of the text, when known."""

    def __init__(self, message: str, lineno: int | None = None):
        super().__init__(message)
        self.lineno = lineno


def text_names(source: str) -> dict[str, int]:
    """The names ``source`` reads from the values it is rendered with, each with the line of
    the text (1-based) where it is first read: not Jinja's globals (``range``, ``zip`` …),
    not the names the text sets itself (``{% for w in words %}``, ``{% set %}``).
    RenderError (with ``lineno``) when the text does not compile."""
    if not source:
        return {}
    env = _ENVIRONMENTS["markdown"]
    try:
        tree = env.parse(source)
        _compiled("markdown", source)      # unknown filters and tests fail here, not per variant
    except JinjaError as err:
        lineno = getattr(err, "lineno", None)
        raise RenderError(f"{type(err).__name__}: {str(err.message or err)[:300]}",
                          lineno) from None
    read = meta.find_undeclared_variables(tree) - set(env.globals)
    first: dict[str, int] = {}
    for node in tree.find_all(nodes.Name):
        if node.name in read and node.ctx == "load":
            first[node.name] = min(first.get(node.name, node.lineno), node.lineno)
    return dict(sorted(first.items(), key=lambda item: (item[1], item[0])))


def render(source: str, context: dict, fmt: str = "markdown") -> str:
    """Render Jinja ``source`` with ``context``; RenderError says what went wrong."""
    if not source:
        return ""
    if _reads_no_name(fmt, source):
        return _constant_text(fmt, source)
    return _rendered(fmt, source, context)


@lru_cache(maxsize=4096)
def _reads_no_name(fmt: str, source: str) -> bool:
    """``source`` reads no name at all (no value, and no global either), so it renders to
    the same text with any values: Jinja is deterministic here (``random``, ``lipsum`` and
    the like are removed)."""
    try:
        return not meta.find_undeclared_variables(_ENVIRONMENTS[fmt].parse(source))
    except JinjaError:
        return False        # rendered, to fail with its message


@lru_cache(maxsize=4096)
def _constant_text(fmt: str, source: str) -> str:
    """A text that reads no name, rendered once per process (many of a student's texts
    read no name, and they are the same for every student; a failure is not remembered, and
    raises again on every call)."""
    return _rendered(fmt, source, {})


def _rendered(fmt: str, source: str, context: dict) -> str:
    try:
        text = _compiled(fmt, source).render(**context)
    except JinjaError as err:
        where = f" (line {err.lineno} of the text)" if getattr(err, "lineno", None) else ""
        raise RenderError(f"{type(err).__name__}: {str(err.message or err)[:300]}{where}") from None
    except Exception as err:  # noqa: BLE001 — any failure in a template's text is the template's
        raise RenderError(f"{type(err).__name__}: {str(err)[:300]}") from None
    if len(text) > _MAX_TEXT:
        raise RenderError(f"the text is {len(text)} characters long (at most {_MAX_TEXT})")
    return latex_to_text(text) if fmt == "text" else text
