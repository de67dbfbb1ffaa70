"""What the marking page's browser tests share (the browser itself is tests/conftest.py's): a
page in it, and a server on a graded class with one hostile answer (``served``: the server
tests have their own, with no browser)."""

from __future__ import annotations

import shutil

import pytest

from tests.grader.marking.browsing import HOSTILE, serve, set_answer

@pytest.fixture
def served(graded_class, tmp_path):
    """(server, key, gradebook copy), one student's motivation/static answer hostile."""
    _, key, gradebook, _ = graded_class(12)
    copy = tmp_path / "gradebook.sqlite"
    shutil.copy(gradebook, copy)
    set_answer(copy, key, sorted(key["students"])[3], HOSTILE)
    server, thread = serve(copy, key)
    yield server, key, copy
    server.shutdown()
    thread.join(5)


# The tests' contexts bypass the page's CSP: Playwright's wait_for_function evaluates strings,
# which the CSP forbids — and without the CSP, the hostile-answer test proves that escaping
# alone keeps a script from running. The timing test runs under the real CSP.
@pytest.fixture
def page(browser):
    context = browser.new_context(bypass_csp=True)
    p = context.new_page()
    p.dialogs = []
    p.on("dialog", lambda d: (p.dialogs.append(d.message), d.dismiss()))
    p.errors = []
    p.on("pageerror", lambda e: p.errors.append(str(e)))
    yield p
    context.close()
