"""Similar ``implement`` code: fingerprints of normalised tokens that survive renamed
variables, reformatting and reordered statements, compared the way MOSS and Dolos compare
programs.

**Fingerprints** (winnowing: Schleimer, Wilkerson & Aiken, "Winnowing: local algorithms for
document fingerprinting", SIGMOD 2003). The source is read with Python's ``tokenize`` only
(never run, compiled or parsed into a tree: no recursion, linear in its length, at most
``MAX_CHARS`` characters and ``MAX_TOKENS`` tokens of it). Each token is normalised to what
carries the *method* and not the names a student chose:

- a name becomes ``V`` unless it is a keyword, a builtin (``len``, ``range``, ``None``), a
  module name NumPy code uses (``np``), an attribute (``np.exp``, ``.sum``, ``.shape``, ``.T``)
  or a keyword argument (``axis=``, ``keepdims=``): those are the library calls and options a
  method is made of, which renaming cannot change;
- a number becomes its kind (``INT``, ``FLOAT``, ``IMAG``), a string ``STR``;
- comments, docstrings (a statement that is only a string), blank lines, line breaks inside
  brackets, indentation and spacing are dropped: reformatting changes none of what is left.

**Statements, so that reordering survives.** Winnowing over one token stream loses the
k-grams that straddle two statements when they are swapped. Here each logical line (one
statement, or one compound statement's header) is fingerprinted on its own: the hash of the
whole normalised statement, and the winnowed k-grams *within* it (k = ``K`` tokens, the
minimum hash of every window of ``W`` consecutive k-gram hashes, the rightmost on ties, as
robust winnowing does). Reordered statements give the same set of fingerprints; a statement
edited in part keeps the k-grams of its unchanged runs (winnowing's guarantee: a shared run of
at least W + K − 1 tokens within a statement always shares a fingerprint). What this gives up:
a statement split in two, or two merged, is new code to it; that is a rewrite, not a disguise.

**Similarity** (Dolos: Maertens et al., "Dolos: language-agnostic plagiarism detection in
source code", J. Comput. Assist. Learn. 2022): a pair's similarity is the share of both
programs' fingerprints that the other also has, (covered_a + covered_b) / (total_a +
total_b), on fingerprint sets 2|A ∩ B| / (|A| + |B|). Like MOSS's base code and its ``-m``
option (passages in more than m programs are ignored), fingerprints of the code everybody was
given (the stub) and those held by many students are subtracted before comparing; and
fingerprints of the reference solution never count as shared (see ``similar_pairs``).
"""

from __future__ import annotations

import builtins
import hashlib
import io
import keyword
import tokenize
from dataclasses import dataclass, field
from itertools import combinations

K = 5                    # tokens in a k-gram
W = 3                    # k-grams in a winnowing window
MAX_CHARS = 20_000       # of a cell's source read (an implement function is far shorter)
MAX_TOKENS = 10_000
MAX_EVIDENCE = 400       # characters of a flag's evidence

_KEEP_NAMES = frozenset(dir(builtins)) | {"np", "numpy", "math", "scipy", "self"}
_DROP = {tokenize.COMMENT, tokenize.NL, tokenize.INDENT, tokenize.DEDENT,
         tokenize.ENCODING, tokenize.ENDMARKER, tokenize.ERRORTOKEN}
_OPEN, _CLOSE = set("([{"), set(")]}")
# every control character but tab, line feed and carriage return: a NUL byte would stop the
# tokenizer of some Pythons, and none of them is code
_CONTROLS = dict.fromkeys([c for c in range(32) if c not in (9, 10, 13)] + [127], " ")


@dataclass(frozen=True)
class Fingerprints:
    """One program's fingerprints: hash → the (first, last) source lines of the statements
    that hold it. ``truncated``: the source was longer than ``MAX_CHARS``, or the tokenizer
    stopped early (invalid code): what was read before is fingerprinted."""
    where: dict[int, tuple[tuple[int, int], ...]] = field(default_factory=dict)
    statements: int = 0
    truncated: bool = False
    statement_hashes: tuple[int, ...] = ()      # each statement's whole-statement hash, in order

    @property
    def hashes(self) -> frozenset[int]:
        return frozenset(self.where)

    def lines(self, hashes) -> list[int]:
        """The source lines (1-based) of the statements holding any of ``hashes``."""
        out = set()
        for h in hashes:
            for first, last in self.where.get(h, ()):
                out.update(range(first, last + 1))
        return sorted(out)


def _hash(tag: str, tokens) -> int:
    digest = hashlib.blake2b(("\x1f".join((tag, *tokens))).encode("utf-8", "replace"), digest_size=8)
    return int.from_bytes(digest.digest(), "big")


def _number_kind(text: str) -> str:
    lowered = text.lower()
    if lowered.endswith("j"):
        return "IMAG"
    if lowered.startswith(("0x", "0o", "0b")) or not any(c in lowered for c in ".e"):
        return "INT"
    return "FLOAT"


def _normalised(statement: list[tokenize.TokenInfo]) -> list[str]:
    """The statement's tokens as fingerprints see them (see the module's docstring)."""
    out, depth = [], 0
    for i, tok in enumerate(statement):
        kind, text = tok.type, tok.string
        if kind == tokenize.NAME:
            after_dot = i > 0 and statement[i - 1].string == "."
            keyword_arg = depth > 0 and i + 1 < len(statement) and statement[i + 1].string == "="
            keep = keyword.iskeyword(text) or text in _KEEP_NAMES or after_dot or keyword_arg
            out.append(text if keep else "V")
        elif kind == tokenize.NUMBER:
            out.append(_number_kind(text))
        elif kind == tokenize.STRING:
            out.append("STR")
        elif kind == tokenize.OP:
            depth += (text in _OPEN) - (text in _CLOSE)
            out.append(text)
    return out


def statements(source: str) -> tuple[list[tuple[int, int, list[str]]], bool]:
    """(first line, last line, normalised tokens) of every logical line of ``source`` but its
    docstrings, and whether the source was cut or could not be read to its end. Bounded:
    at most ``MAX_CHARS`` characters and ``MAX_TOKENS`` tokens; never raises on bad code."""
    text = source if isinstance(source, str) else ""
    truncated = len(text) > MAX_CHARS
    text = text[:MAX_CHARS].translate(_CONTROLS)
    out, current, count = [], [], 0
    try:
        for tok in tokenize.generate_tokens(io.StringIO(text).readline):
            count += 1
            if count > MAX_TOKENS:
                truncated = True
                break
            if tok.type == tokenize.NEWLINE:
                _close_statement(current, out)
                current = []
            elif tok.type not in _DROP:
                current.append(tok)
    except (tokenize.TokenError, SyntaxError, ValueError, RecursionError, MemoryError):
        truncated = True                  # invalid code: what was read before still counts
    _close_statement(current, out)
    return out, truncated


def _close_statement(tokens: list, out: list) -> None:
    if not tokens or all(t.type == tokenize.STRING for t in tokens):
        return                            # nothing, or a docstring
    normalised = _normalised(tokens)
    if normalised:
        out.append((tokens[0].start[0], tokens[-1].end[0], normalised))


def _winnow(hashes: list[int]) -> set[int]:
    """The minimum of every window of ``W`` consecutive hashes (the rightmost on ties), or
    the minimum of all when there are fewer (Schleimer et al. 2003, robust winnowing)."""
    if len(hashes) <= W:
        return {min(hashes)} if hashes else set()
    chosen = set()
    for start in range(len(hashes) - W + 1):
        window = hashes[start:start + W]
        low = min(window)
        chosen.add((start + W - 1 - window[::-1].index(low), low))
    return {h for _, h in chosen}


def fingerprints(source: str) -> Fingerprints:
    """The program's fingerprints: per statement, the hash of the whole normalised statement
    and its winnowed k-grams (see the module's docstring for why per statement)."""
    found, truncated = statements(source)
    where: dict[int, list[tuple[int, int]]] = {}
    whole = []
    for first, last, tokens in found:
        grams = [_hash("K", tokens[i:i + K]) for i in range(len(tokens) - K + 1)]
        whole.append(_hash("S", tokens))
        for h in {whole[-1]} | _winnow(grams):
            where.setdefault(h, []).append((first, last))
    return Fingerprints({h: tuple(v) for h, v in where.items()}, len(found), truncated, tuple(whole))


def reference_share(fp: Fingerprints, reference=frozenset(), given=frozenset()) -> float:
    """The share of the program's statements (those not given) that are, normalised, a
    statement of the reference solution verbatim: how much of it is the reference."""
    mine = [h for h in fp.statement_hashes if h not in given]
    return sum(h in reference for h in mine) / len(mine) if mine else 1.0


def similarity(a, b, base=frozenset()) -> float:
    """Dolos's pair similarity, (covered_a + covered_b) / (total_a + total_b), on fingerprint
    sets 2|A ∩ B| / (|A| + |B|), with ``base`` (the given code's fingerprints) left out of
    both. ``a``, ``b``: Fingerprints or sets of hashes."""
    a = (a.hashes if isinstance(a, Fingerprints) else frozenset(a)) - base
    b = (b.hashes if isinstance(b, Fingerprints) else frozenset(b)) - base
    return 2 * len(a & b) / (len(a) + len(b)) if a or b else 0.0


@dataclass(frozen=True)
class Pair:
    """Two students' similar code: ``similarity`` (Dolos's, on their own code: the stub and
    fingerprints many students hold left out, the reference never counting as shared),
    ``shared`` the fingerprints that carry it, and the matching source lines of each side."""
    a: str
    b: str
    similarity: float
    shared: frozenset[int]
    lines_a: tuple[int, ...]
    lines_b: tuple[int, ...]


MIN_SIMILARITY = 0.5     # of the two students' own code
MIN_SHARED = 12          # fingerprints outside the stub and the reference
MIN_STATEMENTS = 3       # distinct matching statements on each side
MAX_REFERENCE = 0.45     # a side with this share of reference statements or more is the reference


def common_hashes(codes: dict, max_holders: int) -> frozenset[int]:
    """Fingerprints held by more than ``max_holders`` students: boilerplate a class shares
    (MOSS's ``-m``: a passage in more than m programs is ignored)."""
    count: dict[int, int] = {}
    for fp in codes.values():
        for h in fp.where:
            count[h] = count.get(h, 0) + 1
    return frozenset(h for h, c in count.items() if c > max_holders)


def candidate_pairs(own: dict[str, frozenset], max_holders: int) -> dict[tuple[str, str], int]:
    """(a, b) → how many fingerprints the two share, from an inverted index fingerprint →
    students: only pairs that share something are ever compared, and no posting list is
    longer than ``max_holders`` (longer ones were removed as common), so the cost is at most
    max_holders × the class's fingerprints, not n² comparisons."""
    index: dict[int, list[str]] = {}
    for sid in sorted(own):
        for h in own[sid]:
            index.setdefault(h, []).append(sid)
    shared: dict[tuple[str, str], int] = {}
    for holders in index.values():
        if 2 <= len(holders) <= max_holders:
            for pair in combinations(holders, 2):
                shared[pair] = shared.get(pair, 0) + 1
    return shared


MAX_HOLDERS = 50         # a posting list longer than this is common code, whatever the class size


@dataclass(frozen=True)
class Similar:
    """Two groups of students whose code is similar (``a == b``: the students of one group,
    whose own code is identical); the lines are those of each group's first student."""
    a: tuple[str, ...]
    b: tuple[str, ...]
    similarity: float
    shared: frozenset[int]
    lines_a: tuple[int, ...]
    lines_b: tuple[int, ...]

    @property
    def pairs(self) -> int:
        """How many pairs of students this stands for."""
        n = len(self.a)
        return n * (n - 1) // 2 if self.a == self.b else n * len(self.b)


def similar_groups(codes: dict[str, Fingerprints], given=frozenset(), reference=frozenset(),
                   max_holders: int | None = None) -> tuple[list[Similar], list[tuple[float, int]]]:
    """The similar groups of students, and every compared pair's similarity as (score, how
    many student pairs have it).

    ``codes``: student → fingerprints of their implement cell; ``given``: the stub's (the
    signature and docstring every notebook holds); ``reference``: the instructor's solution's.
    Students whose code is the same once the stub is left out form one group, compared once
    (a ring of 100 students handing in one solution costs what one student does). A
    student's *own* code is what is left of theirs without the given code and fingerprints
    held by more than ``max_holders`` groups (default: a tenth of them, at least 4, at most
    ``MAX_HOLDERS``, so the inverted index costs at most MAX_HOLDERS × the class's
    fingerprints) that are not the reference's (most of a class may hand in the reference:
    it stays their own code). Two students who both wrote the reference solution (or the
    reference with the same small edit) share it because they share its source, not each
    other: reference fingerprints are in their own code but never count as shared, so such
    a pair's similarity stays low. A pair is similar when its similarity is at least
    ``MIN_SIMILARITY``, at least ``MIN_SHARED`` fingerprints outside the reference carry it,
    and they lie in ``MIN_STATEMENTS`` distinct statements on each side (one long line
    copied is not a function copied), and neither side is mostly the reference
    (``reference_share`` below ``MAX_REFERENCE``): two edits of the reference share what they
    changed because both started from it, and that is no evidence that one copied the other
    (the synthetic misconceptions are exactly that)."""
    groups: dict[frozenset, list[str]] = {}
    for sid in sorted(codes):
        groups.setdefault(frozenset(codes[sid].hashes - given), []).append(sid)
    firsts = {members[0]: tuple(members) for members in groups.values()}
    n = len(firsts)
    if max_holders is None:
        max_holders = min(MAX_HOLDERS, max(4, n // 10))
    common = common_hashes({sid: codes[sid] for sid in firsts}, max_holders) - reference
    own = {sid: codes[sid].hashes - given - common for sid in firsts}
    distinctive = {sid: hashes - reference for sid, hashes in own.items()}
    found, seen = [], []
    candidates = [(a, b) for a, b in sorted(candidate_pairs(distinctive, max_holders))]
    candidates += [(a, a) for a, members in firsts.items() if len(members) > 1]
    for a, b in candidates:
        shared = distinctive[a] & distinctive[b]
        score = 2 * len(shared) / max(1, len(own[a]) + len(own[b]))
        similar = Similar(firsts[a], firsts[b], score, frozenset(shared),
                          tuple(codes[a].lines(shared)), tuple(codes[b].lines(shared)))
        seen.append((score, similar.pairs))
        if _similar_enough(codes[a], codes[b], shared, score, reference, given):
            found.append(similar)
    return found, seen


def _similar_enough(a: Fingerprints, b: Fingerprints, shared, score, reference, given) -> bool:
    if score < MIN_SIMILARITY or len(shared) < MIN_SHARED:
        return False
    if min(_statements_holding(a, shared), _statements_holding(b, shared)) < MIN_STATEMENTS:
        return False
    return max(reference_share(a, reference, given), reference_share(b, reference, given)) < MAX_REFERENCE


def similar_pairs(codes: dict[str, Fingerprints], given=frozenset(), reference=frozenset(),
                  max_holders: int | None = None) -> tuple[list[Pair], list[float]]:
    """``similar_groups`` pair by pair (for a few students: the list grows with the square of
    a group's size): the similar pairs, and every compared pair's similarity."""
    groups, seen = similar_groups(codes, given, reference, max_holders)
    pairs = []
    for g in groups:
        twins = combinations(g.a, 2) if g.a == g.b else ((x, y) for x in g.a for y in g.b)
        pairs += [Pair(x, y, g.similarity, g.shared, tuple(codes[x].lines(g.shared)),
                       tuple(codes[y].lines(g.shared))) for x, y in twins]
    return pairs, [score for score, count in seen for _ in range(count)]


def _statements_holding(fp: Fingerprints, hashes) -> int:
    return len({span for h in hashes for span in fp.where.get(h, ())})


def line_ranges(lines) -> str:
    """``[1, 2, 3, 7]`` → "1–3, 7": source lines as evidence shows them."""
    spans, out = [], []
    for n in lines:
        if spans and n == spans[-1][1] + 1:
            spans[-1][1] = n
        else:
            spans.append([n, n])
    for first, last in spans:
        out.append(str(first) if first == last else f"{first}–{last}")
    return ", ".join(out)


def plain(text: str, limit: int = MAX_EVIDENCE) -> str:
    """Evidence as plain text: printable characters only, at most ``limit`` of them (it
    holds nothing a student typed but line numbers; whoever shows it still escapes it)."""
    cleaned = "".join(c if c.isprintable() else " " for c in text)
    return cleaned if len(cleaned) <= limit else cleaned[:limit - 1] + "…"
