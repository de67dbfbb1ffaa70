"""reference_code: the signature the student keeps and the body only the instructor sees."""

import pytest

from exercises.template.reference_code import reference_code


def block(code: str, prose: str = "Why it works.") -> str:
    return f"```python\n{code}```\n\n{prose}"


def test_a_multi_line_signature_stays_whole_and_comments_stay_in_the_body():
    header, body = reference_code(block(
        "import numpy as np\n\n"
        "def f(Q, K,\n      V, mask=None):\n"
        "    # the trick: subtract the max\n"
        "    return Q\n"), "f")
    assert header == "def f(Q, K,\n      V, mask=None):"
    assert body == "    # the trick: subtract the max\n    return Q"


@pytest.mark.parametrize("solution, message", [
    ("Just the idea, no code.", "needs its reference code, def f(...)"),
    (block("def f(x): return x\n"), "put the body of f() on the lines after its signature"),
    (block("def helper(x):\n    return x\n\ndef f(x):\n    return helper(x)\n"),
     "must define f() and nothing else"),
    (block("def g(x):\n    return x\n"), "must define f() and nothing else"),
    (block("def f(x:\n    return x\n"), "does not parse"),
])
def test_what_cannot_be_split_is_refused_with_a_reason(solution, message):
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)")):
        reference_code(solution, "f")


def test_a_block_that_does_not_parse_names_its_line_once():
    with pytest.raises(ValueError) as caught:
        reference_code(block('def f(x):\n    return "abc\n'), "f")
    assert str(caught.value) == ("the ```python block does not parse: unterminated string literal "
                                 "(line 2 of the block)")
