"""Loading instructors' files: how a file is named in messages, the one way a YAML file's
text becomes its top-level mapping, and ``LoadErrors``, which collects what is wrong in a
file as 'file:line: key: message' so that every problem is reported at once.

Templates (``schema``) and assignment specs (``assignment``) are YAML and use all of it;
rosters (``roster``) are CSV and use only ``shown_path``.
"""

from __future__ import annotations

import difflib
from pathlib import Path

from formats.textfile import InputError
from exercises.template.yaml_lines import LineDict, LineList, YAMLError, load_yaml


def shown_path(path: Path) -> str:
    """``path`` as messages show it: relative to the working folder when it is inside it."""
    try:
        return str(path.resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(path)


def key_path(prefix: str, name) -> str:
    """The dotted key of ``name`` inside ``prefix`` ("parts[0]" + "answer" → "parts[0].answer")."""
    return f"{prefix}.{name}" if prefix else str(name)


def describe(value) -> str:
    """What a YAML value is, for 'expected …, got …' messages."""
    if isinstance(value, LineDict):
        return "a mapping"
    if isinstance(value, LineList):
        return "a list"
    if value is None:
        return "nothing"
    return f"{type(value).__name__} {value!r}"


def parse_yaml_file(text: str, shown: str, error: type[InputError], expected: str) -> LineDict:
    """The top-level mapping of a YAML file's ``text``, the file shown as ``shown``. Raises
    ``error`` with one 'file:line: message' for bad syntax, an empty file, or a top level
    that is not a mapping ('file:1: {expected}, got …')."""
    try:
        data = load_yaml(text)
    except YAMLError as err:
        raise error([f"{shown}:{err.line}: {err.message}" if err.line
                     else f"{shown}: {err.message}"]) from None
    if data is None:
        raise error([f"{shown}: the file is empty"])
    require_mapping(data, shown, error, expected)
    return data


def require_mapping(data, shown: str, error: type[InputError], expected: str) -> None:
    """Raise ``error`` ('file:1: {expected}, got …') unless ``data`` is a YAML mapping."""
    if not isinstance(data, LineDict):
        raise error([f"{shown}:1: {expected}, got {describe(data)}"])


class LoadErrors:
    """The errors found while loading one file, each as 'file:line: key: message', and the
    readers of YAML values that add one when a value is wrong (and return a usable default)."""

    def __init__(self, path: str):
        self.path = path
        self.errors: list[str] = []

    def error(self, line: int, key: str, message: str) -> None:
        where = f"{self.path}:{line}" if line else self.path
        self.errors.append(f"{where}: {key}: {message}" if key else f"{where}: {message}")

    def keys(self, mapping: LineDict, spec: dict, key: str, refused: dict | None = None) -> None:
        """Unknown keys (with a did-you-mean) and missing required ones of ``mapping``.
        ``refused``: keys that belong elsewhere (key → why), each reported with its reason
        instead of the list of keys expected here."""
        for name in mapping:
            if refused and name in refused:
                self.error(mapping.line_of(name), key_path(key, name), refused[name])
            elif name not in spec:
                hint = difflib.get_close_matches(str(name), spec, n=1)
                suggestion = f"; did you mean '{hint[0]}'?" if hint else ""
                self.error(mapping.line_of(name), key_path(key, name),
                           f"unknown key '{name}' (expected one of: {', '.join(spec)}){suggestion}")
        for name, need in spec.items():
            if need == "required" and name not in mapping:
                self.error(mapping.line, key_path(key, name), "required")

    def mapping(self, value, line: int, key: str) -> LineDict | None:
        if isinstance(value, LineDict):
            return value
        self.error(line, key, f"expected a mapping (key: value lines), got {describe(value)}")
        return None

    def mappings(self, raw: LineList, name: str, spec: dict | None = None):
        """(index, key, entry) for each entry of the list ``raw`` (keys ``name[i]``) that is
        a mapping, its keys checked against ``spec`` when given; any other entry is a problem
        and is skipped."""
        for i, entry in enumerate(raw):
            key = f"{name}[{i}]"
            entry = self.mapping(entry, raw.line_of(i), key)
            if entry is None:
                continue
            if spec is not None:
                self.keys(entry, spec, key)
            yield i, key, entry

    def text(self, mapping: LineDict, name: str, key: str, default: str | None = "") -> str | None:
        value = mapping.get(name, default)
        if not isinstance(value, str):
            self.error(mapping.line_of(name), key, f"expected text, got {describe(value)}")
            return None
        return value

    def number(self, mapping: LineDict, name: str, key: str, default, minimum=None,
               integer=False):
        value = mapping.get(name, default)
        if isinstance(value, str):  # YAML 1.1 reads 1e-5 as text
            try:
                value = float(value)
            except ValueError:
                pass
        ok = isinstance(value, (int, float)) and not isinstance(value, bool)
        if ok and integer:
            ok = float(value).is_integer()
        if not ok:
            self.error(mapping.line_of(name), key,
                       f"expected {'a whole number' if integer else 'a number'}, got {describe(value)}")
            return default
        if minimum is not None and value < minimum:
            self.error(mapping.line_of(name), key, f"must be at least {minimum}, got {value}")
            return default
        return int(value) if integer else float(value)
