"""formats.indented_json: byte for byte json.dumps(sort_keys=True, indent=1, ensure_ascii=False)."""

import json
import math

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from formats import indented_json


def expected(value) -> bytes:
    return json.dumps(value, sort_keys=True, indent=1, ensure_ascii=False).encode("utf-8")


def floats_of_every_size():
    """Floats of every magnitude, the edges orjson writes otherwise included."""
    return st.one_of(
        st.floats(allow_nan=True, allow_infinity=True),
        st.sampled_from([0.0, -0.0, 1e-4, -1e-4, 9.999999999999999e-05, 1e-05, 2.5e-07, 1e16,
                         9999999999999998.0, 1e300, 5e-324, math.inf, -math.inf, math.nan]),
        st.builds(lambda m, e: m * 10.0 ** e, st.floats(1, 10), st.integers(-8, 18)))


texts = st.text(st.characters(blacklist_categories=("Cs",)), max_size=12)   # (UTF-8 has no lone surrogate)
leaves = st.one_of(st.none(), st.booleans(), st.integers(-2**70, 2**70), floats_of_every_size(),
                   texts)
documents = st.recursive(
    leaves,
    lambda inner: st.one_of(st.lists(inner, max_size=5), st.dictionaries(texts, inner, max_size=5)),
    max_leaves=40)


def test_a_source_line_that_is_only_a_comma_and_a_space_stays_one_line():
    """'", "' is what separates source lines in the one-call way of writing them: an item
    that is ", " itself must not be split there (a float orjson writes otherwise takes the
    document down that way)."""
    for document in ([1e16, [", "]], [1e16, ["a", ", ", "b"]], {"x": [2.5e-07], "s": [", ", ", "]}):
        assert indented_json.dumps(document) == expected(document)


@settings(max_examples=600, deadline=None)
@given(documents)
def test_every_document_is_written_as_json_writes_it(document):
    assert indented_json.dumps(document) == expected(document)


@settings(max_examples=200, deadline=None)
@given(st.lists(texts, min_size=1, max_size=8))
def test_lines_of_source_with_leading_spaces_quotes_and_breaks(lines):
    source = ["    " + line + '  "x"\\\n' for line in lines]
    document = {"cells": [{"source": source, "outputs": [], "metadata": {"points": 2.5}}]}
    assert indented_json.dumps(document) == expected(document)


def test_what_orjson_writes_otherwise_takes_the_python_path():
    for value in (1e-05, 2.5e-07, math.nan, math.inf, -math.inf, 2**64, np.float64(0.5),
                  {"a": [1, {"b": np.float64(3e-9)}]}, "controls \x00\x1f\x7f\u2028 tab\t"):
        document = {"metadata": {"value": value}, "cells": []}
        assert indented_json.dumps(document) == expected(document)


def test_fast_path_is_taken_for_a_plain_notebook(monkeypatch):
    """The fast path, not the fallback, writes an ordinary document: the test above would pass
    with the fallback alone."""
    monkeypatch.setattr(indented_json, "indented", lambda *a, **k: (_ for _ in ()).throw(AssertionError))
    document = {"cells": [{"source": ["x = 1\n", "y"], "outputs": []}], "nbformat": 4,
                "metadata": {"points": 8.0, "t": "é – ok"}}
    assert indented_json.dumps(document) == expected(document)
