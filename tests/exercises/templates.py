"""Helpers the exercises tests share: small templates written inline, and where a key sits."""

import json
import textwrap
import time

from exercises.template.schema import parse_template
from exercises.template.yaml_lines import load_yaml


def inline(source: str):
    return parse_template(load_yaml(textwrap.dedent(source)), "inline.yaml")


def line_of(source: str, needle: str) -> int:
    """1-based line of the first line of the (dedented) YAML that contains ``needle``."""
    lines = textwrap.dedent(source).splitlines()
    return next(i for i, line in enumerate(lines, 1) if needle in line)


def numeric(parameters: str, answer: str = "1.0", derived: str = "", extra: str = "",
            prompt: str = "Compute it.", part: str = "") -> str:
    """A small numeric template; ``parameters``/``derived`` are YAML mapping bodies."""
    source = ("id: probe\ntitle: Probe\nobjective: scaling\nkind: numeric\n"
              f"parameters:\n{textwrap.indent(textwrap.dedent(parameters), '  ')}")
    if derived:
        source += f"derived:\n{textwrap.indent(textwrap.dedent(derived), '  ')}"
    source += f"prompt: {json.dumps(prompt)}\n"
    source += f"parts:\n  - id: ans\n    answer: {json.dumps(answer)}\n    points: 1\n"
    source += textwrap.indent(textwrap.dedent(part), "    ")
    return source + textwrap.dedent(extra)


def fast(seconds: float = 2.0):
    """Context manager asserting the block finishes within ``seconds``."""
    class _Fast:
        def __enter__(self):
            self.start = time.perf_counter()

        def __exit__(self, *exc):
            elapsed = time.perf_counter() - self.start
            assert elapsed < seconds, f"took {elapsed:.2f} s (limit {seconds} s)"
            return False
    return _Fast()
