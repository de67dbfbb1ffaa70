"""The hostile edits of tests/scenarios/test_fuzz.py: Hypothesis strategies that describe an
edit by numbers and words, and ``apply_edit`` / ``notebook_file`` that make it on any notebook
(cells deleted, duplicated, re-typed, given wrong metadata; sources and file names holding
what a terminal or a parser trips on; answers at the edges of float64)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
from hypothesis import strategies as st

from formats.serialize import from_jsonable

STUDENTS = 6                     # a batch: the first honest (a control), five edited

# --- the strategies: edits described by numbers and words, applied to any notebook -----------

# Characters a student (or their editor, or an attacker) can put in text: combining marks,
# superscript and other non-ASCII digits, bidi controls, escape sequences (CSI, OSC), other
# control characters, lone surrogates, a BOM, line and paragraph separators, magics' % and !.
HOSTILE_PIECES = [
    "\u0301", "e\u0301", "\u0308" * 8, "²", "³1", "¹²", "٣", "߀", "\u202e", "\u202d", "\u2066",
    "\u200f", "\u200b", "\x1b[31m", "\x1b]0;title\x07", "\x1b]8;;http://x\x1b\\", "\x1b[2J",
    "\x00", "\x07", "\x08", "\x7f", "\x9b", "\r", "\r\n", "\u2028", "\u2029", "\ufeff", "\ud800",
    "\udfff", "\udc80", "\U0001f600", "%", "!", "%%time", "!ls", "\n", " ", "\t", "x", "1", "#",
    "'", '"', "\\", "(", "[", "{", "$", "$$", "*", "_", "<b>", "&amp;",
]
hostile_text = st.one_of(
    st.lists(st.sampled_from(HOSTILE_PIECES), max_size=40).map("".join),
    st.text(max_size=40),
)

# File names: no "/" or NUL, not hidden, at most 255 bytes; "\udcXX" is a byte that is not
# UTF-8 (Python's surrogateescape), so the name on disk is not UTF-8 at all.
FILE_NAMES = ["²1.ipynb", "¹².ipynb", "٣.ipynb", "hw (10).ipynb", "hw (9).ipynb", "e\u0301.ipynb",
              "\u202ebynpi.ipynb", "x\x1b[31m.ipynb", "\x1b]0;t\x07.ipynb", "a\tb\rc.ipynb",
              "\udcff\udcfe.ipynb", "\U0001f600.ipynb", " .ipynb", "-=1+1.ipynb", "99999999999999999999.ipynb"]
_name_chars = st.sampled_from(["²", "³", "1", "0", "9", "\u0301", "\u202e", "\x1b", "a", " ", "\udcff",
                               "\u200f", "٣", "(", ")", "=", "\x7f"])
file_name = st.one_of(
    st.sampled_from(FILE_NAMES),
    st.lists(_name_chars, min_size=1, max_size=12).map(lambda cs: "".join(cs) + ".ipynb"),
)

ODD_JSON = [None, True, 0, -1, 1e308, 10**30, "", "x", [], [None], {}, {"a": [1, {"b": None}]},
            "\ud800", [[[[[[[[[[]]]]]]]]]]]
ODD_TYPES = ["markdown", "raw", "code", "heading", "", "Code", 7, None, ["code"], {"type": "code"}]
ODD_METADATA = ODD_JSON + [{"nbgrader": None}, {"nbgrader": []}, {"nbgrader": "x"},
                           {"nbgrader": {"grade_id": 7}}, {"nbgrader": {"grade_id": ""}},
                           {"nbgrader": {"grade_id": ["setup"]}}, {"nbgrader": {"grade_id": "setup"}},
                           {"nbgrader": {"grade_id": "nonexistent--givens"}}]
ODD_SOURCES = [None, 12, 1e308, True, ["a = 1\n", 2], [], {"source": "x"}, [["x"]], ["\ud800"]]

# Answers: Python expressions the sandbox child evaluates (``np`` is the setup's NumPy).
EDGE_SCALARS = ["1e308", "-1e308", "1.7976931348623157e308", "5e-324", "-5e-324",
                "2.2250738585072014e-308", "float('nan')", "float('inf')", "-float('inf')", "-0.0",
                "0.0", "10**400", "-(10**400)", "2**63", "-2**63 - 1", "2**64", "True", "None"]
TEXT_ANSWERS = ["{run}", "{run}", "''", "' '", "'BC'", "'ABCD'", "'AB'", "'b '", "' D\\t'", "'Z'", "'\\u202eA'",
                "'A\\u0301'", "'\\x1b[31mB'", "'A' * 100000", "'\\ud800'", "['A']"]
SHAPES = ["()", "(0,)", "(1,)", "(4, 4)", "(5, 5)", "(1, 1, 1, 1, 1, 1, 1, 1)",
          "(1, 1, 1, 1, 1, 1, 1, 1, 1)", "(2**31 - 1, 0, 4)", "(0, 2**31 - 1)", "(65536, 0, 0)",
          "(4000, 0)", "(100000,)"]
ARRAY_FORMS = [
    "np.full({shape}, {x})",
    "np.full({expected}, {x})",
    "np.array([[1e308, -1e308, 0, 1]] * 4)",
    "np.array([[1e308, -1e308], [5e-324, -0.0]])",
    "np.array([[float('nan'), float('inf')], [-float('inf'), 1e308]])",
    "np.zeros({shape})",
    "np.ones({n}, dtype=bool)",
    "np.ones(({n},), dtype=np.float16)",
    "[{x}] * {k}",
    "{{'a': {x}, 'b': [{x}, [{x}]]}}",
    "[" * 30 + "{x}" + "]" * 30,
    "({x},) * 3",
    "np.array([{x}, {x}], dtype=object)",
    "np.array([1+2j])",
    "lambda: {x}",
]
answer_expr = st.one_of(
    st.sampled_from(EDGE_SCALARS),
    st.sampled_from(TEXT_ANSWERS),
    st.builds(lambda form, x, shape, n, k: form.format(x=x, shape=shape, n=n, k=k, expected="{expected}"),
              st.sampled_from(ARRAY_FORMS), st.sampled_from(EDGE_SCALARS[:10]), st.sampled_from(SHAPES),
              st.sampled_from([0, 1, 3_000_000, 30_000_000]), st.sampled_from([0, 1, 1000, 50_000])),
)

SIZES = [1, 100, 10_000, 100_000]
LONG_KINDS = ["newlines", "long_line", "code_lines", "magic_lines", "unicode", "blank_indents"]

edit = st.one_of(
    st.tuples(st.just("delete"), st.integers(0, 10**6)),
    st.tuples(st.just("duplicate"), st.integers(0, 10**6), st.integers(0, 10**6)),
    st.tuples(st.just("move"), st.integers(0, 10**6), st.integers(0, 10**6)),
    st.tuples(st.just("retype"), st.integers(0, 10**6), st.sampled_from(ODD_TYPES)),
    st.tuples(st.just("add"), st.integers(0, 10**6), st.sampled_from(["code", "markdown", "raw"]), hostile_text),
    st.tuples(st.just("metadata"), st.integers(0, 10**6), st.sampled_from(ODD_METADATA)),
    st.tuples(st.just("grade_id"), st.integers(0, 10**6), st.integers(0, 10**6)),
    st.tuples(st.just("source"), st.integers(0, 10**6), st.sampled_from(ODD_SOURCES)),
    st.tuples(st.just("text"), st.integers(0, 10**6), hostile_text),
    st.tuples(st.just("cell"), st.integers(0, 10**6), st.sampled_from(ODD_JSON)),
    st.tuples(st.just("field"), st.sampled_from(["nbformat", "nbformat_minor", "metadata", "attnkit",
                                                 "cells", "student", "problems"]),
              st.sampled_from(ODD_JSON + [3, "4", 4.0, 5])),
    st.tuples(st.just("many_cells"), st.sampled_from([1_000, 5_000, 30_000]),
              st.sampled_from(["code", "magic", "markdown", "empty", "answer_copy"])),
    st.tuples(st.just("long"), st.integers(0, 10**6), st.sampled_from(LONG_KINDS), st.sampled_from(SIZES)),
    st.tuples(st.just("answer"), st.integers(0, 10**6), st.sampled_from(["any", "2d", "choice"]), answer_expr),
    st.tuples(st.just("givens"), st.integers(0, 10**6), st.integers(0, 10**6),
              st.sampled_from(EDGE_SCALARS + ["np.full((4, 4), 1e308)", "np.zeros((2**31 - 1, 0))",
                                              "[" * 40 + "1" + "]" * 40, "'\\u202e'"])),
    st.tuples(st.just("givens_bomb"), st.integers(0, 10**6), st.sampled_from([1, 3]),
              st.sampled_from([10_000, 1_000_000])),
)
encoding = st.sampled_from(["plain"] * 6 + ["ascii", "bom", "surrogatepass", "truncated", "trailing",
                                             "utf16", "nul", "document"])
student_edits = st.fixed_dictionaries({
    "edits": st.lists(edit, max_size=4),
    "name": st.one_of(st.none(), st.none(), file_name),
    "copy_as": st.one_of(st.none(), st.none(), st.none(), file_name),
    "encoding": encoding,
})
batch = st.lists(student_edits, min_size=STUDENTS - 1, max_size=STUDENTS - 1)   # + one honest control

PLAIN = {"edits": [], "name": None, "copy_as": None, "encoding": "plain"}


def known_batch(**by_index) -> list[dict]:
    """A batch that is honest but for the given students' edits (the @example cases)."""
    return [{**PLAIN, **by_index.get(f"s{i}", {})} for i in range(STUDENTS - 1)]


# --- applying the edits ------------------------------------------------------------------

def source_of(cell) -> str:
    source = cell.get("source", "") if isinstance(cell, dict) else ""
    if isinstance(source, list):
        return "".join(s for s in source if isinstance(s, str))
    return source if isinstance(source, str) else ""


def grade_id_of(cell) -> str | None:
    try:
        gid = cell["metadata"]["nbgrader"]["grade_id"]
    except (KeyError, TypeError):
        return None
    return gid if isinstance(gid, str) else None


class Student:
    """One student's honest notebook and what an edit needs to know about it."""

    def __init__(self, sid: str, notebook: dict, entry: dict):
        self.sid, self.notebook, self.entry = sid, notebook, entry
        self.answers, self.answers_2d, self.choices, self.givens = [], [], [], []
        for pid, record in entry["problems"].items():
            for part, variable in record.get("answer_names", {}).items():
                expected = from_jsonable(record["answers"][part])
                item = (f"{pid}-{part}", variable, expected)
                self.answers.append(item)
                if record["kind"] == "choice":
                    self.choices.append(item)
                elif np.ndim(expected) == 2:
                    self.answers_2d.append(item)
            if record.get("givens"):
                self.givens.append((f"{pid}--givens", sorted(record["givens"])))


def _pick(items: list, i: int):
    return items[i % len(items)] if items else None


def _cells(nb) -> list | None:
    cells = nb.get("cells") if isinstance(nb, dict) else None
    return cells if isinstance(cells, list) else None


def _set_answer(nb: dict, grade_id: str, code: str) -> None:
    """Every cell carrying ``grade_id`` now holds ``code`` (so a duplicate keeps no honest copy)."""
    for cell in _cells(nb) or []:
        if isinstance(cell, dict) and grade_id_of(cell) == grade_id:
            cell["source"] = code


def _long_text(kind: str, size: int) -> str:
    if kind == "newlines":
        return "\n" * size
    if kind == "long_line":
        return "x = " + "1" * size + "\n"
    if kind == "code_lines":
        return "_z = 1\n" * max(1, size // 7)
    if kind == "magic_lines":
        return "%matplotlib inline\n!ls\n" * max(1, size // 22)
    if kind == "blank_indents":
        return " \t \n" * max(1, size // 4)
    return "e\u0301\u202e²\ud800\x1b[0m" * max(1, size // 8)


def _assignments_text(head: str, length: int, prefix: str) -> str:
    """``head`` and then ``name = n`` lines, ``length`` characters in all (or just ``head``)."""
    lines, total, n = [head], len(head), 0
    while True:
        line = f"{prefix}{n} = {n}\n"
        if total + len(line) > length:
            return "".join(lines)
        lines.append(line)
        total += len(line)
        n += 1


def apply_edit(nb, edit: tuple, student: Student):
    """``nb`` after one edit (in place where it can be; a replaced document is returned)."""
    kind, *args = edit
    cells = _cells(nb)
    if kind == "field":
        field_name, value = args
        if not isinstance(nb, dict):
            return nb
        metadata = nb.get("metadata") if isinstance(nb.get("metadata"), dict) else None
        if field_name in ("nbformat", "nbformat_minor", "metadata", "cells"):
            nb[field_name] = value
        elif field_name == "attnkit" and metadata is not None:
            metadata["attnkit"] = value
        elif metadata is not None and isinstance(metadata.get("attnkit"), dict):
            metadata["attnkit"][field_name] = value
        return nb
    if cells is None:
        return nb
    if kind == "many_cells":
        count, what = args
        honest = next((c for c in cells if isinstance(c, dict) and grade_id_of(c) == student.answers[0][0]), None)
        for n in range(count):
            if what == "answer_copy" and honest is not None:
                cells.append(json.loads(json.dumps(honest)))
                continue
            source = {"code": f"_c{n} = {n}", "magic": f"%time _c = {n}", "markdown": f"note {n}",
                      "empty": ""}.get(what, "")
            cell_type = "markdown" if what == "markdown" else "code"
            cells.append({"cell_type": cell_type, "metadata": {}, "source": source,
                          **({"outputs": [], "execution_count": None} if cell_type == "code" else {})})
        return nb
    if kind == "answer":
        index, where, expr = args
        pool = {"any": student.answers, "2d": student.answers_2d or student.answers,
                "choice": student.choices or student.answers}[where]
        grade_id, variable, expected = _pick(pool, index)
        expr = expr.replace("{expected}", repr(tuple(np.shape(expected))))
        if "{run}" in expr:      # the right letter and the ones after it: right only as a substring
            letter = int(expected) if np.ndim(expected) == 0 and np.asarray(expected).dtype.kind in "iu" else 0
            expr = expr.replace("{run}", repr("ABCD"[letter:] if letter < 3 else ""))
        _set_answer(nb, grade_id, f"{variable} = {expr}")
        return nb
    if kind in ("givens", "givens_bomb"):
        target = _pick(student.givens, args[0])
        if target is None:
            return nb
        grade_id, names = target
        where = [i for i, c in enumerate(cells) if isinstance(c, dict) and grade_id_of(c) == grade_id]
        if not where:
            return nb
        if kind == "givens":
            name = _pick(names, args[1])
            cells[where[0]]["source"] = source_of(cells[where[0]]) + f"\n{name} = {args[2]}\n"
        else:                              # copies of the givens cell, each made huge by an edit
            copies, size = args[1], args[2]
            original = cells[where[0]]
            for k in range(copies):      # just under the 1,000,000 characters intake still parses
                copy = json.loads(json.dumps(original))
                copy["source"] = _assignments_text(source_of(original) + "\n", size - 1_000, f"g{k}_")
                cells.insert(where[0] + 1, copy)
        return nb
    if not cells:
        return nb
    i = args[0] % len(cells)
    if kind == "delete":
        del cells[i]
    elif kind == "duplicate":
        cells.insert(args[1] % (len(cells) + 1), json.loads(json.dumps(cells[i])))
    elif kind == "move":
        cell = cells.pop(i)
        cells.insert(args[1] % (len(cells) + 1), cell)
    elif kind == "retype" and isinstance(cells[i], dict):
        cells[i]["cell_type"] = args[1]
    elif kind == "add":
        cell_type, text = args[1], args[2]
        cells.insert(i, {"cell_type": cell_type, "metadata": {}, "source": text,
                         **({"outputs": [], "execution_count": None} if cell_type == "code" else {})})
    elif kind == "metadata" and isinstance(cells[i], dict):
        cells[i]["metadata"] = json.loads(json.dumps(args[1]))
    elif kind == "grade_id" and isinstance(cells[i], dict):
        other = grade_id_of(cells[args[1] % len(cells)]) if isinstance(cells[args[1] % len(cells)], dict) else None
        if isinstance(cells[i].get("metadata"), dict):
            cells[i]["metadata"]["nbgrader"] = {"grade_id": other, "locked": False, "solution": True}
    elif kind == "source" and isinstance(cells[i], dict):
        cells[i]["source"] = json.loads(json.dumps(args[1]))
    elif kind == "text" and isinstance(cells[i], dict):
        cells[i]["source"] = source_of(cells[i]) + args[1]
    elif kind == "cell":
        cells[i] = json.loads(json.dumps(args[1]))
    elif kind == "long" and isinstance(cells[i], dict):
        cells[i]["source"] = _long_text(args[1], args[2]) + source_of(cells[i])
    return nb


def notebook_file(nb, how: str) -> bytes:
    """The file's bytes: JSON as Jupyter writes it, or damaged in one of the ways files are."""
    if how == "document":
        nb = [nb]
    if how == "ascii":           # every non-ASCII character escaped: lone surrogates stay valid JSON
        return json.dumps(nb, ensure_ascii=True, indent=1).encode("ascii")
    text = json.dumps(nb, ensure_ascii=False, indent=1)
    if how == "surrogatepass":   # lone surrogates written raw: the bytes are not UTF-8
        return text.encode("utf-8", "surrogatepass")
    if how == "utf16":
        return text.encode("utf-16", "surrogatepass")
    data = json.dumps(nb, ensure_ascii=True, indent=1).encode("ascii") if "\\ud" in text or any(
        0xD800 <= ord(c) <= 0xDFFF for c in text) else text.encode("utf-8")
    if how == "bom":
        return b"\xef\xbb\xbf" + data
    if how == "truncated":
        return data[: len(data) * 2 // 3]
    if how == "trailing":
        return data + b"\n{}garbage\x00"
    if how == "nul":
        return data.replace(b'"cells"', b'"ce\\u0000lls"', 1)
    return data


def write_file(path: Path, data: bytes) -> None:
    """Write to ``path`` whatever its name (a name that is not UTF-8 is made of its bytes)."""
    raw = os.fsencode(path)
    os.makedirs(os.path.dirname(raw), exist_ok=True)
    with open(raw, "wb") as f:
        f.write(data)
