"""Assignments: which templates a class gets, worth what, and where the course secret lives.

An assignment spec is a small YAML file that instructors share and commit, so it names the
secret's source (an environment variable or a file), never the secret itself. It picks
templates from the bank by id (or template files of its own, by path) and may change their
points and tolerances; loading applies those overrides (``overrides``), so builds and the
grader see the effective values in ``Problem.template``. As with templates, every problem of
the spec is reported at once as 'file:line: key: message'.
"""

from __future__ import annotations

import difflib
import hashlib
import os
import re
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

from formats.deadline import Deadline

from exercises.template.follow import load_credit
from exercises.course.deadline_spec import read_deadline
from exercises.course.overrides import amount, overridden, scaled
from exercises.template.loading import LoadErrors, describe, key_path, parse_yaml_file, shown_path
from formats.textfile import InputError, read_utf8
from exercises.template.yaml_lines import LineDict, LineList

if TYPE_CHECKING:        # (the bank and the template engine are imported when templates are read:
    from exercises.template.model import Template      # `attnkit grade` reads an assignment without
                                     # them, and so starts sooner)

TOP_KEYS = {"id": "required", "title": "required", "instructions": "optional",
            "secret": "required", "bank": "optional", "problems": "required",
            "due": "optional", "timezone": "optional", "late": "optional", "extensions": "optional",
            "counts": "optional"}
PROBLEM_KEYS = {"template": "required", "pool": "optional", "id": "optional", "title": "optional",
                "points": "optional", "parts": "optional", "tests": "optional",
                "rtol": "optional", "atol": "optional", "follow_credit": "optional"}
# A pool: several templates of the same objective and points, one drawn per student
# (exercises.course.pools); its members have parts of their own, so only whole-problem settings.
POOL_KEYS = {"pool": "required", "id": "required", "title": "optional", "points": "optional",
             "follow_credit": "optional"}
POOL_REFUSED = {name: f"a pool's members have parts (and tests) of their own: '{name}' cannot "
                      f"apply to all of them; give the whole problem's 'points', or override "
                      f"the member in a template file of its own"
                for name in ("parts", "tests", "rtol", "atol")}
POOL_REFUSED["template"] = "give either 'template' (one template) or 'pool' (several), not both"
SECRET_KEYS = {"env": "optional", "file": "optional"}
ASSIGNMENT_MAPPING = "an assignment is a mapping of keys (id, title, secret, problems, …)"
MIN_SECRET_BYTES = 16
_ASSIGNMENT_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$")   # a folder name in nbgrader
_PROBLEM_ID = re.compile(r"^[a-z][a-z0-9_]*$")
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_NEW_SECRET = "python -c 'import secrets; print(secrets.token_hex(32))'"


class AssignmentError(InputError):
    """One or more problems in an assignment spec; each line reads file:line: key: message."""


@dataclass(frozen=True)
class Problem:
    id: str
    template: Template                # with the spec's overrides applied (a pool: its first member)
    title: str
    line: int
    pool: tuple[Template, ...] = ()   # a pool's members, in the spec's order; () for one template
    own_titles: bool = False          # a pool without a title: each member shows its own

    @property
    def points(self) -> float:
        return self.template.points

    @property
    def members(self) -> tuple[Template, ...]:
        """The templates a student may get: the pool's members, or the one template."""
        return self.pool or (self.template,)

    def title_of(self, template: Template) -> str:
        """The title a student with this member sees."""
        return template.title if self.own_titles else self.title


@dataclass(frozen=True)
class Assignment:
    path: str                         # as shown in messages (relative to the working folder)
    id: str
    title: str
    instructions: str
    secret_source: tuple[str, str, int]   # ("env", NAME, line) or ("file", "/abs/path", line)
    problems: tuple[Problem, ...]
    source_digest: str                # SHA-256 of the spec file's bytes
    deadline: Deadline | None = None  # due date, late policy, extensions (exercises.course.deadline_spec)

    @property
    def points(self) -> float:
        return sum(p.points for p in self.problems)

    def secret(self) -> bytes:
        """The course secret, read now (not at load time): a spec can be checked, previewed
        and validated on a machine that does not hold the secret."""
        kind, where, line = self.secret_source
        prefix = f"{self.path}:{line}: secret.{kind}"
        if kind == "env":
            value = os.environ.get(where, "")
            if not value:
                raise AssignmentError([f"{prefix}: the environment variable {where} is not set "
                                       f"(or is empty)"])
            secret, source = value.encode("utf-8"), f"the environment variable {where}"
        else:
            try:
                secret = Path(where).read_bytes().rstrip()
            except FileNotFoundError:
                raise AssignmentError([f"{prefix}: {where}: no such file"]) from None
            except OSError as err:
                raise AssignmentError([f"{prefix}: cannot read {where}: {err.strerror}"]) from None
            source = where
        if len(secret) < MIN_SECRET_BYTES:
            raise AssignmentError([f"{prefix}: the secret in {source} is {len(secret)} bytes; it "
                                   f"must be at least {MIN_SECRET_BYTES} bytes; e.g. `{_NEW_SECRET}`"])
        return secret


def load_assignment(path: str | Path, templates: bool = True) -> Assignment:
    """Read and check an assignment spec and load the templates it names, overrides applied.

    ``templates=False`` reads only the spec's own keys (id, title, secret) and leaves
    ``problems`` empty: grading needs the secret, and the answer key holds the rest."""
    path = Path(path)
    shown = shown_path(path)
    text, raw = read_utf8(path, shown, AssignmentError)
    data = parse_yaml_file(text, shown, AssignmentError, ASSIGNMENT_MAPPING)
    load = LoadErrors(shown)
    load.keys(data, TOP_KEYS, "")
    folder = path.resolve().parent
    aid = data.get("id")
    if "id" in data and not isinstance(aid, str):
        load.error(data.line_of("id"), "id", f"expected text, got {describe(aid)} (write it in "
                                             f"quotes: id: \"{aid}\")")
    elif "id" in data and not _ASSIGNMENT_ID.match(aid):
        load.error(data.line_of("id"), "id", f"'{aid}' is not a valid assignment id (1 to 64 "
                   f"letters, digits, _ and -, starting with a letter or digit; it names a folder)")
    title = load.text(data, "title", "title") or ""
    instructions = load.text(data, "instructions", "instructions") or ""
    secret_source = _secret_source(load, data, folder)
    deadline = read_deadline(load, data, folder, AssignmentError)
    problems = (_problems(load, data, _Templates(load, folder, _bank(load, data, folder)))
                if templates else ())
    if load.errors:
        raise AssignmentError(load.errors)
    return Assignment(path=shown, id=aid, title=title, instructions=instructions,
                      secret_source=secret_source, problems=problems,
                      source_digest=hashlib.sha256(raw).hexdigest(), deadline=deadline)


# --- the secret and the bank -----------------------------------------------------------------

def _secret_source(load: LoadErrors, data: LineDict, folder: Path) -> tuple[str, str, int] | None:
    if "secret" not in data:
        return None
    raw, line = data["secret"], data.line_of("secret")
    if not isinstance(raw, LineDict):
        # Never echo a string here: it may be the secret itself.
        got = "text" if isinstance(raw, str) else describe(raw)
        load.error(line, "secret", f"expected {{env: VARIABLE}} or {{file: path}}, got {got} "
                                   f"(the secret itself must not be in the spec)")
        return None
    load.keys(raw, SECRET_KEYS, "secret")
    given = [k for k in SECRET_KEYS if k in raw]
    if len(given) != 1:
        if given or len(raw) == 0:   # unknown keys alone already have their did-you-mean
            load.error(raw.line, "secret", "give exactly one of 'env' (an environment "
                                           "variable) or 'file' (relative to this spec)")
        return None
    kind = given[0]
    value, here = raw[kind], raw.line_of(kind)
    if kind == "env":
        if not isinstance(value, str) or not _ENV_NAME.match(value):
            load.error(here, "secret.env",
                       f"'{value}' is not an environment variable name (letters, digits, _)")
            return None
        return ("env", value, here)
    if not isinstance(value, str) or not value.strip():
        load.error(here, "secret.file", f"expected a file path, got {describe(value)}")
        return None
    return ("file", str((folder / value).resolve()), here)


def _bank(load: LoadErrors, data: LineDict, folder: Path) -> Path | None:
    from exercises.course.bank import BANK_DIR

    if "bank" not in data:
        if not BANK_DIR.is_dir():
            load.error(data.line, "bank", f"the default bank {BANK_DIR} is not a folder "
                                          f"(is ATTNKIT_BANK set wrong?)")
            return None
        return BANK_DIR
    value = data["bank"]
    if not isinstance(value, str) or not (folder / value).is_dir():
        load.error(data.line_of("bank"), "bank",
                   f"no such folder {value!r} (relative to this spec's folder)")
        return None
    return (folder / value).resolve()


class _Templates:
    """Finds and loads the templates a spec names, each once: bank ids through a cheap
    id → file index (only the named templates are loaded, so a broken template elsewhere
    in the bank does not block this assignment), files by path relative to the spec."""

    def __init__(self, load: LoadErrors, folder: Path, bank: Path | None):
        self.load, self.folder, self.bank = load, folder, bank
        self._index: dict[str, list[Path]] | None = None
        self._loaded: dict[Path, Template | None] = {}

    def index(self) -> dict[str, list[Path]]:
        from exercises.course.bank import template_files
        from exercises.template.model import TemplateError
        from exercises.template.schema import TEMPLATE_MAPPING

        if self._index is None:
            self._index = {}
            for file in template_files([self.bank]) if self.bank else []:
                try:
                    tid = parse_yaml_file(file.read_text(encoding="utf-8"), str(file),
                                          TemplateError, TEMPLATE_MAPPING).get("id")
                except Exception:  # noqa: BLE001 — a broken file is reported if it is named
                    tid = None
                self._index.setdefault(tid if isinstance(tid, str) else file.stem, []).append(file)
        return self._index

    def get(self, entry: LineDict, key: str) -> Template | None:
        if "template" not in entry:
            return None
        return self.named(entry["template"], entry.line_of("template"), key_path(key, "template"))

    def named(self, value, line: int, key: str) -> Template | None:
        """The template a spec names by bank id or by path (None after reporting why not)."""
        if not isinstance(value, str) or not value.strip():
            self.load.error(line, key, f"expected a template id or a path ending in .yaml, "
                                       f"got {describe(value)}")
            return None
        if value.endswith((".yaml", ".yml")):
            return self._file(value, line, key)
        return self._bank_id(value, line, key)

    def _file(self, value: str, line: int, key: str) -> Template | None:
        file = self.folder / value
        if not file.is_file():
            stem = Path(value).stem
            hint = (f"; did you mean the bank's template '{stem}' (an id, without .yaml)?"
                    if self.bank and stem in self.index() else "")
            self.load.error(line, key, f"no such template file '{value}' (paths are relative "
                                       f"to this spec's folder){hint}")
            return None
        return self._read(file)

    def _bank_id(self, value: str, line: int, key: str) -> Template | None:
        if self.bank is None:
            return None   # the bank's own problem is reported
        files = self.index().get(value, [])
        if not files:
            hint = difflib.get_close_matches(value, self.index(), n=1)
            suggestion = f"; did you mean '{hint[0]}'?" if hint else ""
            self.load.error(line, key, f"unknown template '{value}' (not an id in the bank "
                                       f"{shown_path(self.bank)}, nor a path ending in .yaml)"
                                       f"{suggestion}")
            return None
        if len(files) > 1:
            self.load.error(line, key, f"'{value}' is the id of {len(files)} templates in the "
                                       f"bank: {', '.join(shown_path(f) for f in files)}")
            return None
        return self._read(files[0])

    def _read(self, file: Path) -> Template | None:
        from exercises.template.model import TemplateError
        from exercises.template.schema import load_template

        file = file.resolve()
        if file not in self._loaded:
            try:
                self._loaded[file] = load_template(file)
            except TemplateError as err:
                self.load.errors += err.errors
                self._loaded[file] = None
        return self._loaded[file]


# --- problems and pools ----------------------------------------------------------------------

def _problems(load: LoadErrors, data: LineDict, templates: _Templates) -> tuple[Problem, ...]:
    if "problems" not in data:
        return ()
    raw = data["problems"]
    if not isinstance(raw, LineList) or not raw:
        got = "an empty list" if isinstance(raw, LineList) else describe(raw)
        load.error(data.line_of("problems"), "problems",
                   f"expected a list of at least one problem, got {got}")
        return ()
    out: list[Problem] = []
    seen: dict[str, int] = {}   # problem id → line
    for i, key, entry in load.mappings(raw, "problems"):
        if "pool" in entry:
            load.keys(entry, POOL_KEYS, key, refused=POOL_REFUSED)
            problem = _pool_problem(load, entry, key, templates, seen)
            if problem is not None:
                out.append(problem)
            continue
        load.keys(entry, PROBLEM_KEYS, key)
        template = templates.get(entry, key)
        pid = _problem_id(load, entry, key, template, seen)
        title = load.text(entry, "title", key_path(key, "title"),
                          default=template.title if template else "")
        if template is not None:
            template = overridden(load, entry, key, template)
        credit = load_credit(load, entry, key_path(key, "follow_credit"))
        if template is not None and credit is not None:
            template = replace(template, follow_credit=credit)
        if template is not None and pid is not None and title is not None:
            out.append(Problem(pid, template, title, entry.line))
    return tuple(out)


def _pool_problem(load: LoadErrors, entry: LineDict, key: str, templates: _Templates,
                  seen: dict[str, int]) -> Problem | None:
    """A pool: at least two different templates of one objective and the same points (or
    scaled to the entry's ``points``), each with the entry's follow-through credit."""
    before = len(load.errors)
    pid = _problem_id(load, entry, key, None, seen) if "id" in entry else None
    raw, line, pkey = entry["pool"], entry.line_of("pool"), key_path(key, "pool")
    if not isinstance(raw, LineList) or len(raw) < 2:
        load.error(line, pkey, f"expected a list of at least two templates (bank ids or paths), "
                               f"got {describe(raw)}")
        return None
    members = [templates.named(value, raw.line_of(i), f"{pkey}[{i}]") for i, value in enumerate(raw)]
    if None in members:
        return None
    ids = [t.id for t in members]
    if len(set(ids)) < len(ids):
        twice = next(t for t in ids if ids.count(t) > 1)
        load.error(line, pkey, f"'{twice}' is in the pool twice (a pool draws among different templates)")
    objectives = {t.objective for t in members}
    if len(objectives) > 1:
        load.error(line, pkey, "a pool's members must serve the same objective: "
                   + ", ".join(f"{t.id} ({t.objective})" for t in members))
    total = amount(load, entry, "points", key_path(key, "points")) if "points" in entry else None
    if total is not None and total == 0:
        load.error(entry.line_of("points"), key_path(key, "points"), "must be more than 0")
    elif "points" not in entry and len({t.points for t in members}) > 1:
        load.error(line, pkey, "a pool's members must be worth the same: "
                   + ", ".join(f"{t.id} ({t.points:g} points)" for t in members)
                   + "; give the problem's 'points' to scale each member to it")
    hand = {}
    for t in members:
        for part in (t.parts if t.kind == "free_response" else ()):
            if part.id in hand:
                load.error(line, pkey, f"'{hand[part.id]}' and '{t.id}' both have a hand-graded part "
                           f"'{part.id}': a pool's hand-graded parts need ids of their own (one "
                           f"rubric sheet column each); rename one in a copy of its template")
            hand.setdefault(part.id, t.id)
    credit = load_credit(load, entry, key_path(key, "follow_credit"))
    title = load.text(entry, "title", key_path(key, "title")) if "title" in entry else ""
    if len(load.errors) > before or pid is None or title is None:
        return None
    if total is not None:
        members = [t if t.points == total else scaled(t, total) for t in members]
    if credit is not None:
        members = [replace(t, follow_credit=credit) for t in members]
    return Problem(pid, members[0], title or members[0].title, entry.line, pool=tuple(members),
                   own_titles=not title)


def _problem_id(load, entry: LineDict, key: str, template: Template | None,
                seen: dict[str, int]) -> str | None:
    """The problem's id (default: the template's), unique within the assignment."""
    if "id" in entry:
        pid, line = entry["id"], entry.line_of("id")
        if not isinstance(pid, str) or not _PROBLEM_ID.match(pid):
            load.error(line, key_path(key, "id"), f"'{pid}' is not a valid problem id (lower-case "
                                                  f"letters, digits, _; starting with a letter)")
            return None
    elif template is not None:
        pid, line = template.id, entry.line_of("template")
    else:
        return None
    if pid in seen:
        load.error(line, key_path(key, "id"), f"duplicate problem id '{pid}' (also on line "
                                              f"{seen[pid]}); give one of them an `id:`")
        return None
    seen[pid] = line
    return pid
