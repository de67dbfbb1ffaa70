"""YAML that remembers where things are: every mapping and list knows its line numbers.

Template errors must name file:line, so loading keeps the line of each key and list item.
Only YAML's safe subset is read (no tags that build Python objects), and a key given twice
is an error instead of PyYAML's silent "last one wins".
"""

from __future__ import annotations

import yaml


class YAMLError(ValueError):
    """Unreadable YAML; ``line`` is 1-based (0 when unknown)."""

    def __init__(self, line: int, message: str):
        super().__init__(message)
        self.line = line
        self.message = message


class LineDict(dict):
    """A mapping from YAML; ``line`` is where it starts, ``key_lines[key]`` where each key is,
    ``text_line(key, n)`` where line n of a text value is."""

    line: int = 0
    key_lines: dict = {}  # noqa: RUF012 — replaced per instance by the loader
    value_texts: dict = {}  # noqa: RUF012 — key → (first line of the value, lines map 1:1)

    def line_of(self, key) -> int:
        return self.key_lines.get(key, self.line)

    def text_line(self, key, n: int = 1) -> int:
        """The file line of line ``n`` (1-based) of the text under ``key``."""
        return _text_line(self.value_texts.get(key), n, self.line_of(key))


class LineList(list):
    """A list from YAML; ``line`` is where it starts, ``item_lines[i]`` where item i is."""

    line: int = 0
    item_lines: tuple = ()
    item_texts: tuple = ()

    def line_of(self, index: int) -> int:
        return self.item_lines[index] if 0 <= index < len(self.item_lines) else self.line

    def text_line(self, index: int, n: int = 1) -> int:
        """The file line of line ``n`` (1-based) of the text that is item ``index``."""
        text = self.item_texts[index] if 0 <= index < len(self.item_texts) else None
        return _text_line(text, n, self.line_of(index))


def _text_start(node) -> tuple[int, bool]:
    """(the file line where a value's text starts, whether its lines are the file's lines):
    a literal block (|) starts on the line after its indicator and keeps every line; a
    folded block (>) or a quoted or plain text over several lines is joined into fewer
    lines, so only its first line is known."""
    start, end = node.start_mark.line + 1, node.end_mark.line + 1
    style = getattr(node, "style", None)
    if style in ("|", ">"):
        return start + 1, style == "|"
    return start, start == end


def _text_line(text: tuple[int, bool] | None, n: int, fallback: int) -> int:
    if text is None:
        return fallback
    first, exact = text
    return first + max(n, 1) - 1 if exact else first


class _Loader(yaml.SafeLoader):
    def compose_node(self, parent, index):
        # Aliases (*name) can expand exponentially ("billion laughs"); templates never need them.
        if self.check_event(yaml.AliasEvent):
            event = self.peek_event()
            raise YAMLError(event.start_mark.line + 1, "YAML aliases (*name) are not supported "
                                                       "in templates; write the value out")
        return super().compose_node(parent, index)

    def construct_mapping(self, node, deep=False):
        self.flatten_mapping(node)
        mapping = LineDict()
        mapping.line = node.start_mark.line + 1
        mapping.key_lines = {}
        mapping.value_texts = {}
        for key_node, value_node in node.value:
            key = self.construct_object(key_node, deep=True)
            try:
                hash(key)
            except TypeError:
                raise YAMLError(key_node.start_mark.line + 1, "a mapping key must be a plain "
                                "value, not a list or mapping") from None
            if key in mapping:
                raise YAMLError(key_node.start_mark.line + 1,
                                f"{key}: key given twice (first on line {mapping.key_lines[key]})")
            mapping[key] = self.construct_object(value_node, deep=True)
            mapping.key_lines[key] = key_node.start_mark.line + 1
            mapping.value_texts[key] = _text_start(value_node)
        return mapping

    def construct_sequence(self, node, deep=False):
        items = LineList(self.construct_object(child, deep=True) for child in node.value)
        items.line = node.start_mark.line + 1
        items.item_lines = [child.start_mark.line + 1 for child in node.value]
        items.item_texts = [_text_start(child) for child in node.value]
        return items


_Loader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _Loader.construct_mapping)
_Loader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_SEQUENCE_TAG, _Loader.construct_sequence)


def load_yaml(text: str):
    """Parse one YAML document into LineDict/LineList/scalars; YAMLError on bad syntax."""
    try:
        return yaml.load(text, Loader=_Loader)  # noqa: S506 — _Loader derives from SafeLoader
    except YAMLError:
        raise
    except yaml.MarkedYAMLError as err:
        raise _located(err, text) from None
    except yaml.YAMLError as err:
        raise YAMLError(0, f"invalid YAML: {err}") from None


def _located(err: yaml.MarkedYAMLError, text: str) -> YAMLError:
    """The error at the line a reader must fix. An unclosed quote is reported where it
    opened, not where YAML gave up: at the end of the file, or at the next quote (which
    YAML took for the closing one) when what follows it does not parse."""
    if err.context == "while scanning a quoted scalar" and err.context_mark is not None:
        opened = err.context_mark
        quote = _character(text, opened)
        found = ("the end of the file" if "end of stream" in (err.problem or "")
                 else err.problem.removeprefix("found ") if err.problem else "the end of the text")
        return YAMLError(opened.line + 1, f"invalid YAML: the quote {quote} opened on this line "
                                          f"is never closed (YAML found {found} first)")
    mark = err.problem_mark or err.context_mark
    line = mark.line + 1 if mark else 0
    problem = err.problem or "invalid YAML"
    context = f" ({err.context})" if err.context else ""
    quoted = _runaway_quote(text, line) if line else None
    if quoted is not None:
        quote = quoted.style
        return YAMLError(quoted.start_mark.line + 1,
                         f"invalid YAML: the quote {quote} opened on this line is not closed on "
                         f"it: YAML reads on to the next {quote}, on line {line}, and then fails "
                         f"there: {problem}{context}")
    return YAMLError(line, f"invalid YAML: {problem}{context}")


def _character(text: str, mark) -> str:
    lines = text.splitlines()
    if 0 <= mark.line < len(lines) and 0 <= mark.column < len(lines[mark.line]):
        return lines[mark.line][mark.column]
    return "quote"


def _runaway_quote(text: str, problem_line: int):
    """The quoted text that starts on an earlier line and ends on ``problem_line`` (where
    the YAML fails), if the last quoted text before the failure is one: its opening quote
    is then most likely the one left unclosed."""
    last = None
    try:
        for token in yaml.scan(text, Loader=yaml.SafeLoader):
            if token.start_mark.line + 1 > problem_line:
                break
            if isinstance(token, yaml.ScalarToken) and token.style in ('"', "'"):
                last = token
    except yaml.YAMLError:
        pass
    if last is not None and last.start_mark.line < last.end_mark.line \
            and last.end_mark.line + 1 == problem_line:
        return last
    return None
