"""What the marking page's browser tests share: one headless Chromium (Debian's ``chromium``,
driven by Playwright's Python API; nothing downloads a browser) for each module, a page
in it, and a server on a graded class with one hostile answer (``served``: the server tests
have their own, with no browser)."""

from __future__ import annotations

import os
import shutil

import pytest

from tests.grader.marking.browsing import HOSTILE, serve, set_answer

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"


@pytest.fixture(scope="module")
def browser():
    # per module: a test elsewhere (tests/attnkit) starts Playwright of its own, and two sync
    # Playwrights cannot run in one thread at once
    sync_api = pytest.importorskip("playwright.sync_api",
                                   reason="Playwright is not installed (pip install -e '.[dev]')")
    if not os.path.exists(CHROMIUM):
        pytest.skip("no chromium browser on this machine (Debian: apt-get install chromium; .ci/run does)")
    with sync_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox", "--disable-gpu"])
        yield b
        b.close()


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
