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
    """A mapping from YAML; ``line`` is where it starts, ``key_lines[key]`` where each key is."""

    line: int = 0
    key_lines: dict = {}  # noqa: RUF012 — replaced per instance by the loader

    def line_of(self, key) -> int:
        return self.key_lines.get(key, self.line)


class LineList(list):
    """A list from YAML; ``line`` is where it starts, ``item_lines[i]`` where item i is."""

    line: int = 0
    item_lines: tuple = ()

    def line_of(self, index: int) -> int:
        return self.item_lines[index] if 0 <= index < len(self.item_lines) else self.line


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
        return mapping

    def construct_sequence(self, node, deep=False):
        items = LineList(self.construct_object(child, deep=True) for child in node.value)
        items.line = node.start_mark.line + 1
        items.item_lines = [child.start_mark.line + 1 for child in node.value]
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
        mark = err.problem_mark or err.context_mark
        line = mark.line + 1 if mark else 0
        problem = err.problem or "invalid YAML"
        context = f" ({err.context})" if err.context else ""
        raise YAMLError(line, f"invalid YAML: {problem}{context}") from None
    except yaml.YAMLError as err:
        raise YAMLError(0, f"invalid YAML: {err}") from None
