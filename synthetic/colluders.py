"""Planted colluders: some synthetic submissions rewritten as copies of a classmate's, to
measure answer forensics (``grader.forensics.flags``) through the real grader, end to end.

Given a build folder, its verified key and the folder ``python -m synthetic`` wrote,
``plant_colluders`` rewrites a few honest students' notebooks (``correct``, ``partial`` and
``misconception:*`` profiles; never a hostile or mistyped one) in place:

- ``numbers``, ``numbers-some``, ``numbers-rounded``: the copier's numeric answer cells (all,
  about a third, or all rounded to 3 decimals) take the partner's answer cells, each assigning
  the copier's own variable; the copier's givens cells are untouched, so the handin stays
  theirs;
- ``similar-code``: the partner writes an implementation of their own (``ALTERNATIVES``, not
  the reference), and the copier hands in that function with its local variables renamed,
  independent statements reordered and the whole reformatted (``disguise``);
- ``shared-wrong``: two students write the same invented numbers (nobody's answer, nobody's
  mistake) for the same part of their different variants.

Other honest students (``independent``) write another of the ``ALTERNATIVES``, each its own:
independent correct code written differently, which must not be flagged. Every planted case
is returned (``Planted``) and written to ``colluders.json`` beside ``manifest.json``; the
manifest itself is not changed (its expected grades are those of the honest notebooks).
A numbers case lists only the parts whose copied value is evidence: an array of real numbers
the partner had right, within the partner's tolerance after rounding and outside the copier's
own answer and listed mistakes. Nothing here runs a submission's code.
"""

from __future__ import annotations

import ast
import json
import random
import re
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from exercises.render.notebook import notebook_bytes
from formats import key_shape as shape
from formats.compare import telling, within
from formats.literals import assignment
from formats.serialize import decode_names, from_jsonable
from formats.textfile import write_atomic
from synthetic.notebooks import answer_cells
from synthetic.submissions import load_manifest

PLANTED = "colluders.json"
KINDS = ("numbers", "numbers-some", "numbers-rounded", "similar-code", "shared-wrong")
FLAG_KIND = {"numbers": "other-variant", "numbers-some": "other-variant",
             "numbers-rounded": "other-variant", "similar-code": "similar-code",
             "shared-wrong": "shared-wrong"}


@dataclass(frozen=True)
class Planted:
    """One planted case: ``copier`` took ``parts`` ((problem, part), the implement function
    for similar code) from ``partner``; for shared-wrong, the two share invented numbers.
    ``flag`` is the forensics kind that must report it."""
    copier: str
    partner: str
    kind: str
    parts: tuple[tuple[str, str], ...]

    @property
    def flag(self) -> str:
        return FLAG_KIND[self.kind]

    @property
    def problem(self) -> str:
        return self.parts[0][0] if self.parts else ""

    @property
    def part(self) -> str:
        return self.parts[0][1] if self.parts else ""


# Correct masked attention written six ways (none is the reference): a partner's own code,
# and independent code of honest classmates.
ALTERNATIVES = (
    '''def masked_attention(Q, K, V, mask=None):
    """Returns the output Z, shape (..., L, d_v)."""
    scale = 1.0 / np.sqrt(Q.shape[-1])
    logits = np.einsum("...ld,...sd->...ls", Q, K) * scale
    if mask is not None:
        logits = np.where(np.asarray(mask, dtype=bool), logits, -np.inf)
    peak = np.max(logits, axis=-1, keepdims=True)
    expd = np.exp(logits - peak)
    probs = expd / np.sum(expd, axis=-1, keepdims=True)
    return np.einsum("...ls,...sv->...lv", probs, V)
''',
    '''def masked_attention(Q, K, V, mask=None):
    """Returns the output Z, shape (..., L, d_v)."""
    dim = K.shape[-1]
    att = np.matmul(Q, np.swapaxes(K, -2, -1)) / dim ** 0.5
    if mask is not None:
        att = att + np.where(mask, 0.0, -np.inf)
    att = att - att.max(-1, keepdims=True)
    att = np.exp(att)
    att /= att.sum(-1, keepdims=True)
    return np.matmul(att, V)
''',
    '''def masked_attention(Q, K, V, mask=None):
    """Returns the output Z, shape (..., L, d_v)."""
    def softmax(x):
        shifted = x - np.max(x, axis=-1, keepdims=True)
        ex = np.exp(shifted)
        return ex / ex.sum(axis=-1, keepdims=True)
    kt = np.moveaxis(K, -1, -2)
    raw = (Q @ kt) / np.sqrt(np.float64(Q.shape[-1]))
    if mask is None:
        return softmax(raw) @ V
    blocked = ~np.broadcast_to(mask, raw.shape)
    raw = np.where(blocked, -np.inf, raw)
    return softmax(raw) @ V
''',
    '''def masked_attention(Q, K, V, mask=None):
    """Returns the output Z, shape (..., L, d_v)."""
    d = Q.shape[-1]
    order = list(range(K.ndim))
    order[-1], order[-2] = order[-2], order[-1]
    s = Q @ K.transpose(order) * (1 / np.sqrt(d))
    additive = 0.0 if mask is None else np.where(mask, 0.0, -np.inf)
    s = s + additive
    m = s.max(axis=-1)[..., None]
    w = np.exp(s - m)
    w = w / w.sum(axis=-1)[..., None]
    out = w @ V
    return out
''',
    '''def masked_attention(Q, K, V, mask=None):
    """Returns the output Z, shape (..., L, d_v)."""
    root = np.sqrt(Q.shape[-1])
    sc = np.matmul(Q / root, np.swapaxes(K, -1, -2))
    if mask is not None:
        sc = np.where(mask, sc, -np.inf)
    top = sc.max(-1, keepdims=True)
    lse = np.log(np.sum(np.exp(sc - top), -1, keepdims=True)) + top
    return np.exp(sc - lse) @ V
''',
    '''def masked_attention(Q, K, V, mask=None):
    """Returns the output Z, shape (..., L, d_v)."""
    dk = Q.shape[-1]
    sim = Q @ np.swapaxes(K, -1, -2)
    sim = sim / np.sqrt(dk)
    if mask is not None:
        sim[~np.broadcast_to(mask, sim.shape)] = -np.inf
    sim -= sim.max(axis=-1, keepdims=True)
    np.exp(sim, out=sim)
    sim /= sim.sum(axis=-1, keepdims=True)
    return sim @ V
''',
)
ALTERNATIVE_FUNCTION = "masked_attention"


# --- disguising a function ---------------------------------------------------------------

class _Rename(ast.NodeTransformer):
    def __init__(self, names: dict[str, str]):
        self.names = names

    def visit_Name(self, node):
        node.id = self.names.get(node.id, node.id)
        return node

    def visit_arg(self, node):
        node.arg = self.names.get(node.arg, node.arg)
        return node


def _locals(function: ast.FunctionDef) -> list[str]:
    """Names the function assigns (its parameters stay: callers pass them by name)."""
    params = {a.arg for a in ast.walk(function.args) if isinstance(a, ast.arg)}
    stored = [n.id for n in ast.walk(function) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)]
    return [n for n in dict.fromkeys(stored) if n not in params]


def _names(node, ctx) -> set[str]:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ctx)}


def _written(statement: ast.stmt) -> set[str]:
    """The names an assignment changes: its targets' names, ``x`` of ``x[i] = …`` too."""
    targets = statement.targets if isinstance(statement, ast.Assign) else [statement.target]
    return {n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)}


def _independent(a: ast.stmt, b: ast.stmt) -> bool:
    """Can ``a; b`` run as ``b; a``: simple assignments, neither reading or writing what the
    other writes."""
    simple = (ast.Assign, ast.AugAssign, ast.AnnAssign)
    if not (isinstance(a, simple) and isinstance(b, simple)):
        return False
    wa, wb = _written(a), _written(b)
    ra, rb = _names(a, ast.Load), _names(b, ast.Load)
    return not (wa & (wb | rb) or wb & ra)


def _reorder(body: list[ast.stmt]) -> int:
    """Swap every other pair of adjacent independent statements; how many were swapped."""
    swapped, i = 0, 0
    while i + 1 < len(body):
        if _independent(body[i], body[i + 1]):
            body[i], body[i + 1] = body[i + 1], body[i]
            swapped += 1
            i += 2
        else:
            i += 1
    return swapped


_NEW_NAMES = ("tmp", "acc", "buf", "val", "res", "part", "arr", "mat", "vec", "cur", "nxt", "hold")


def disguise(source: str, rng: random.Random) -> str:
    """``source``'s function with its local variables renamed, independent adjacent
    statements swapped and the whole reformatted (``ast.unparse``, a comment, blank lines
    and a line broken inside brackets): what a copier does to hide a copy. Trusted code
    only (it is our own ALTERNATIVES)."""
    tree = ast.parse(source)
    function = next(n for n in tree.body if isinstance(n, ast.FunctionDef))
    pool = list(_NEW_NAMES)
    rng.shuffle(pool)
    names = {old: f"{pool[i % len(pool)]}{i}" for i, old in enumerate(_locals(function))}
    _Rename(names).visit(tree)
    _reorder(function.body)
    for node in ast.walk(function):
        if isinstance(node, ast.FunctionDef) and node is not function:
            _reorder(node.body)
    lines = ast.unparse(tree).split("\n")
    out = [lines[0], lines[1], "    # attention, my version"]
    for line in lines[2:]:
        out.append(line.replace(", ", ",\n" + " " * 12, 1) if "(" in line and ", " in line
                   and line.index("(") < line.index(", ") else line)
        if line.lstrip().startswith("if "):
            out.insert(len(out) - 1, "")
    text = "\n".join(out) + "\n"
    try:
        ast.parse(text)
    except SyntaxError:                   # a break that fell outside brackets: none at all
        text = "\n".join(lines) + "\n"
    return text


# --- planting ------------------------------------------------------------------------------

_HONEST = ("correct", "partial")


def _honest(manifest: dict) -> list[str]:
    """Students whose notebook is honest work of their own (no hostile, mistyped or foreign
    notebook), by id."""
    return sorted(sid for sid, s in manifest["students"].items()
                  if (s["profile"] in _HONEST or s["profile"].startswith("misconception:"))
                  and not s["issues"] and s["notebook_of"] == sid)


class _Notebook:
    """One submitted notebook, its answer cells found as the synthetic drafts find them."""

    def __init__(self, subs: Path, manifest: dict, key: dict, student: str):
        self.student = student
        self.path = Path(subs) / manifest["students"][student]["path"]
        self.entry = shape.entry_for(key, student)
        self.data = json.loads(self.path.read_bytes().decode("utf-8"))
        for cell in self.data["cells"]:
            if isinstance(cell.get("source"), list):
                cell["source"] = "".join(cell["source"])
        self.cells = {(a.problem, a.part): a for a in answer_cells(self.data, self.entry)}
        self.status = manifest["students"][student]["expected"]

    def source(self, problem: str, part):
        return self.data["cells"][self.cells[(problem, part)].index]["source"]

    def set(self, problem: str, part, source: str) -> None:
        self.data["cells"][self.cells[(problem, part)].index]["source"] = source

    def variable(self, problem: str, part: str) -> str:
        return self.cells[(problem, part)].variable

    def save(self) -> None:
        write_atomic(self.path, notebook_bytes(self.data))


def _numeric_parts(entry: dict):
    """(problem, part, expected value, rtol, atol, own mistakes' values) of every numeric part."""
    for pid, record in shape.problem_records(entry):
        if record.get("kind") != "numeric":
            continue
        answers = decode_names(record["answers"])
        twins = [from_jsonable(v) for v in record.get("twins", {}).values()]
        for g in shape.gradings(record):
            part = g["id"]
            mistakes = [t[part] for t in twins if isinstance(t, dict) and part in t]
            yield pid, part, answers[part], float(g["rtol"]), float(g["atol"]), mistakes


def _close(a, b, rtol: float, atol: float) -> bool:
    try:
        x, y = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    except (TypeError, ValueError):
        return False
    return x.shape == y.shape and bool(np.isfinite(x).all()) and within(x, y, rtol, atol)


def _evidence_parts(copier: _Notebook, partner: _Notebook, chosen, rounded: bool) -> list:
    """The chosen parts whose copied value is evidence (see the module's docstring)."""
    mine = {(p, q): (v, m) for p, q, v, _, _, m in _numeric_parts(copier.entry)}
    out = []
    for pid, part, value, rtol, atol, _ in _numeric_parts(partner.entry):
        if (pid, part) not in chosen or (pid, part) not in mine:
            continue
        if partner.status.get(pid, {}).get(part, {}).get("status") != "passed":
            continue                       # the partner's own answer was not their expected one
        copied = np.round(np.asarray(value, dtype=float), 3) if rounded else value
        own, mistakes = mine[(pid, part)]
        if telling(copied) and _close(copied, value, rtol, atol) and not any(
                _close(copied, v, rtol, atol) for v in [own, *mistakes]):
            out.append((pid, part))
    return out


_FLOAT = re.compile(r"(?<![\w.])-?\d+\.\d+(?:[eE][-+]?\d+)?")


def _same_member(a: dict, b: dict, pid: str) -> bool:
    """Whether two entries have the same template for the problem (a pool's members are
    different problems: a part id they share names different cells and numbers)."""
    return (shape.problem_record(a, pid, {}).get("template")
            == shape.problem_record(b, pid, {}).get("template"))


def _rounded(source: str) -> str:
    return _FLOAT.sub(lambda m: f"{round(float(m.group()), 3):g}", source)


def _copy_numbers(copier: _Notebook, partner: _Notebook, kind: str, rng: random.Random) -> Planted:
    """The copier's numeric answer cells (all, about a third, or all rounded) take the
    partner's, assigning the copier's own variable names (the same as the partner's)."""
    parts = [(pid, part) for pid, part, *_ in _numeric_parts(copier.entry)
             if (pid, part) in copier.cells and (pid, part) in partner.cells
             and _same_member(copier.entry, partner.entry, pid)]
    if kind == "numbers-some":
        parts = rng.sample(parts, max(1, len(parts) // 3))
    for pid, part in parts:
        source = partner.source(pid, part)
        copier.set(pid, part, _rounded(source) if kind == "numbers-rounded" else source)
    copier.save()
    return Planted(copier.student, partner.student, kind,
                   tuple(_evidence_parts(copier, partner, set(parts), kind == "numbers-rounded")))


def _share_wrong(a: _Notebook, b: _Notebook, rng: random.Random) -> Planted:
    """The same invented numbers for one array part of both (their variants differ there)."""
    theirs = {(p, q): (v, rt, at) for p, q, v, rt, at, _ in _numeric_parts(b.entry)}
    for pid, part, value, rtol, atol, _ in _numeric_parts(a.entry):
        other = theirs.get((pid, part))
        if (pid, part) in a.cells and other is not None and telling(value) \
                and _same_member(a.entry, b.entry, pid) \
                and np.shape(value) == np.shape(other[0]) and not _close(value, other[0], rtol, atol):
            invented = np.round(np.asarray([rng.uniform(-3, 3) for _ in range(np.size(value))]), 3)
            invented = invented.reshape(np.shape(value))
            for nb in (a, b):
                nb.set(pid, part, assignment(nb.variable(pid, part), invented))
                nb.save()
            return Planted(a.student, b.student, "shared-wrong", ((pid, part),))
    return Planted(a.student, b.student, "shared-wrong", ())


def _implement(entry: dict):
    return next(((pid, r["function"]) for pid, r in shape.problem_records(entry)
                 if shape.kind(r) == shape.IMPLEMENT and r.get("function") == ALTERNATIVE_FUNCTION), None)


def _copy_code(copier: _Notebook, partner: _Notebook, alternative: str, rng: random.Random) -> Planted:
    """The partner writes ``alternative``; the copier hands in its disguised copy."""
    found = _implement(copier.entry)
    if found is None or (found[0], None) not in copier.cells or (found[0], None) not in partner.cells:
        return Planted(copier.student, partner.student, "similar-code", ())
    pid, function = found
    partner.set(pid, None, alternative)
    copier.set(pid, None, disguise(alternative, rng))
    partner.save()
    copier.save()
    return Planted(copier.student, partner.student, "similar-code", ((pid, function),))


def plant_colluders(build_dir, key: dict, subs, seed: int = 0, kinds=KINDS,
                    independent: int = 3) -> list[Planted]:
    """Rewrite some of ``subs``'s honest notebooks (``python -m synthetic BUILD --out SUBS``)
    as colluders, one case per kind in ``kinds``, every student in at most one case, and
    give ``independent`` other honest students code of their own; return the cases (also
    written to ``SUBS/colluders.json`` with the independent students). ``build_dir`` is
    accepted for symmetry with ``synthesize``: everything needed is in the key and ``subs``."""
    subs = Path(subs)
    manifest = load_manifest(subs)
    rng = random.Random(f"colluders/{seed}")
    pool = _honest(manifest)
    rng.shuffle(pool)
    needed = 2 * len(kinds) + independent
    if len(pool) < needed:
        raise ValueError(f"{len(pool)} honest students, {needed} needed: build for a larger roster")
    take = iter(pool)
    alternatives = list(range(5))          # ALTERNATIVES[5] is close to the reference: independent only
    rng.shuffle(alternatives)
    planted = []
    for kind in kinds:
        copier, partner = (_Notebook(subs, manifest, key, next(take)) for _ in range(2))
        if kind == "similar-code":
            planted.append(_copy_code(copier, partner, ALTERNATIVES[alternatives.pop()], rng))
        elif kind == "shared-wrong":
            planted.append(_share_wrong(copier, partner, rng))
        else:
            planted.append(_copy_numbers(copier, partner, kind, rng))
    others = [*alternatives, 5]
    bystanders = []
    for i in range(independent):
        nb = _Notebook(subs, manifest, key, next(take))
        found = _implement(nb.entry)
        if found is not None and (found[0], None) in nb.cells and i < len(others):
            nb.set(found[0], None, ALTERNATIVES[others[i]])
            nb.save()
            bystanders.append(nb.student)
    write_atomic(subs / PLANTED, (json.dumps({"cases": [asdict(p) for p in planted], "independent": bystanders},
                                             indent=1) + "\n").encode("utf-8"))
    return planted


def load_planted(subs) -> dict:
    """``SUBS/colluders.json``: {"cases": [...], "independent": [students]}."""
    return json.loads((Path(subs) / PLANTED).read_text(encoding="utf-8"))
