"""The marking page in a real headless Chromium (Debian's ``chromium``, driven by Playwright's
Python API; nothing downloads a browser): keyboard-only grading, a group graded at once, a
reload that keeps everything, two TAs on one grade, hostile answers shown as text, no
token no page, and the time to open a part of 1,000 answers (printed, never asserted).
"""

from __future__ import annotations

import dataclasses
import os
import shutil
import threading
import time

import pytest

from formats.key_shape import assignment_id
from grader.gradebook import Gradebook
from grader.marking.queue import part_queue
from grader.marking.server import MarkingServer
from grader.marks import history, mark_of

sync_api = pytest.importorskip("playwright.sync_api", reason="Playwright is not installed (pip install -e '.[dev]')")
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
if not os.path.exists(CHROMIUM):
    pytest.skip("no chromium browser on this machine (Debian: apt-get install chromium; .ci/run does)",
                allow_module_level=True)

HOSTILE = "<script>alert(1)</script> and <img src=x onerror=alert(1)> end"
PROBLEM, PART = "motivation", "static"


@pytest.fixture(scope="module")
def browser():
    with sync_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox", "--disable-gpu"])
        yield b
        b.close()


def serve(gradebook, key):
    server = MarkingServer(gradebook, key, grader="ta-browser")
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    return server, thread


@pytest.fixture
def served(graded_class, tmp_path):
    """(server, key, gradebook copy), one student's motivation/static answer hostile."""
    _, key, gradebook, _ = graded_class(12)
    copy = tmp_path / "gradebook.sqlite"
    shutil.copy(gradebook, copy)
    with Gradebook(copy) as gb:
        student = sorted(key["students"])[3]
        handin = gb.handins(assignment_id(key), student)[0]
        gb.record(handin, [dataclasses.replace(r, answer=HOSTILE) if (r.problem, r.part) == (PROBLEM, PART) else r
                           for r in gb.results(assignment_id(key), student)])
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


def open_part(page, server, where=f"{PROBLEM}/{PART}/answers/1"):
    page.goto(f"{server.url}#{where}")
    page.wait_for_selector("body[data-state=shown]")
    return page.evaluate("document.body.dataset.student")


def press_and_settle(page, key):
    """Press ``key`` and wait until every save it caused was answered."""
    page.keyboard.press(key)
    page.wait_for_function("document.body.dataset.pending === '0'")


def go(page, key):
    """Press a moving key and wait for the next answer shown; its student id."""
    before = page.evaluate("document.body.dataset.student")
    page.keyboard.press(key)
    page.wait_for_function(f"document.body.dataset.state === 'shown' && document.body.dataset.student !== '{before}'")
    return page.evaluate("document.body.dataset.student")


def marks_of(gradebook, key, students, problem=PROBLEM, part=PART):
    with Gradebook(gradebook) as gb:
        return {s: mark_of(gb, assignment_id(key), s, problem, part) for s in students}


def test_grading_a_part_by_keyboard_only(served, page):
    server, key, gradebook = served
    graded = []
    student = open_part(page, server)
    for step in range(3):
        press_and_settle(page, "1")
        press_and_settle(page, "2")
        graded.append(student)
        student = go(page, "j" if step % 2 == 0 else "ArrowRight")
    page.keyboard.press("c")                        # into the comment box, typed, Ctrl+Enter
    page.keyboard.type("Say which context words decide.")
    press_and_settle(page, "Control+Enter")
    page.keyboard.press("Escape")
    press_and_settle(page, "3")
    graded.append(student)
    back = go(page, "ArrowLeft")
    assert back == graded[2]
    assert go(page, "n") not in graded              # the next answer not graded yet
    marks = marks_of(gradebook, key, graded)
    assert all(marks[s].items.keys() == {"same_vector", "context"} for s in graded[:3])
    last = marks[graded[3]]
    assert last.items.keys() == {"claims_different"} and last.comment == "Say which context words decide."
    assert last.grader == "ta-browser"
    with Gradebook(gradebook) as gb:
        n = len(part_queue(gb, key, PROBLEM, PART).answers)
    assert page.text_content("#progress").startswith(f"4 of {n} graded")
    assert not page.errors and not page.dialogs


def test_a_group_is_graded_at_once(served, page):
    server, key, gradebook = served
    open_part(page, server)
    page.keyboard.press("g")                        # the group view
    page.wait_for_function("document.body.dataset.state === 'shown' && "
                           "document.getElementById('who').textContent.startsWith('Group 1 of')")
    members = page.locator("#members li").count()
    assert members >= 2
    assert "One grade for all" in page.text_content("#group-note")
    press_and_settle(page, "2")
    with Gradebook(gradebook) as gb:
        group = part_queue(gb, key, PROBLEM, PART).groups[0]
    marks = marks_of(gradebook, key, group.members)
    assert len(marks) == members and all(m and list(m.items) == ["context"] and m.score == 1 for m in marks.values())
    assert page.text_content("#progress").startswith(f"{members} of")


def test_a_reload_keeps_everything(served, page):
    server, key, gradebook = served
    open_part(page, server)
    student = go(page, "j")
    press_and_settle(page, "1")
    page.fill("#comment", "Kept across a reload.")
    page.locator("#adjustment").focus()              # leaving the comment box saves it
    page.fill("#adjustment", "-0.5")
    page.keyboard.press("Tab")
    page.wait_for_function("document.body.dataset.pending === '0'")
    page.reload()
    page.wait_for_selector("body[data-state=shown]")
    assert page.evaluate("document.body.dataset.student") == student
    assert page.get_attribute("#rubric li:nth-child(1) button", "aria-pressed") == "true"
    assert page.input_value("#comment") == "Kept across a reload."
    assert page.input_value("#adjustment") == "-0.5"
    assert "Kept across a reload." in page.text_content("#reuse")
    mark = marks_of(gradebook, key, [student])[student]
    assert mark.score == 0.5 and mark.comment == "Kept across a reload."


def test_two_tas_on_the_same_grade_see_a_conflict_and_lose_nothing(served, browser):
    server, key, gradebook = served
    one, two = browser.new_context(bypass_csp=True), browser.new_context(bypass_csp=True)
    try:
        a, b = one.new_page(), two.new_page()
        student = open_part(a, server)
        assert open_part(b, server) == student
        b.fill("#grader", "ta-two")
        b.keyboard.press("Tab")
        press_and_settle(a, "1")                        # TA one saves first
        press_and_settle(b, "2")                        # TA two, from the version it opened
        assert b.is_visible("#conflict")
        assert "ta-browser" in b.text_content("#conflict-text")
        assert b.get_attribute("#rubric li:nth-child(1) button", "aria-pressed") == "true"   # theirs shown
        mark = marks_of(gradebook, key, [student])[student]
        assert list(mark.items) == ["same_vector"] and mark.version == 1 and mark.grader == "ta-browser"
        b.click("#conflict-mine-save")                 # an explicit decision, never a silent overwrite
        b.wait_for_function("document.body.dataset.pending === '0'")
        mark = marks_of(gradebook, key, [student])[student]
        assert list(mark.items) == ["context"] and mark.version == 2 and mark.grader == "ta-two"
        with Gradebook(gradebook) as gb:
            log = history(gb, assignment_id(key), student, PROBLEM, PART)
        assert [(e.version, e.grader, sorted(e.mark["items"])) for e in log] == [
            (1, "ta-browser", ["same_vector"]), (2, "ta-two", ["context"])]
    finally:
        one.close()
        two.close()


def test_a_hostile_answer_is_shown_as_text(served, page):
    server, key, gradebook = served
    with Gradebook(gradebook) as gb:
        hostile = next(a for a in part_queue(gb, key, PROBLEM, PART).answers if a.text == HOSTILE)
    open_part(page, server, f"{PROBLEM}/{PART}/answers/{hostile.position}")
    page.check("#names")
    assert page.text_content("#answer") == HOSTILE
    page.fill("#comment", "<img src=q onerror=alert(3)>")
    page.keyboard.press("Tab")
    page.wait_for_function("document.body.dataset.pending === '0'")
    page.reload()
    page.wait_for_selector("body[data-state=shown]")
    assert page.text_content("#answer") == HOSTILE
    assert page.evaluate("document.querySelectorAll('img, script:not([src]), [onerror]').length") == 0
    assert page.locator("#reuse-list button").first.text_content() == "<img src=q onerror=alert(3)>"
    time.sleep(0.3)                                    # give a script that got in the time to run
    assert page.dialogs == [] and page.errors == []


def test_without_the_token_nothing_is_shown(served, page):
    server, key, _ = served
    response = page.goto(f"http://127.0.0.1:{server.port}/")
    assert response.status == 403
    body = page.text_content("body")
    assert body.strip() == "forbidden"
    response = page.goto(f"http://127.0.0.1:{server.port}/?token=not-the-token")
    assert response.status == 403
    status = page.evaluate("fetch('/api/part?problem=motivation&part=static').then(r => r.status)")
    assert status == 403
    wrong = page.evaluate("fetch('/api/parts', {headers: {'X-Attnkit-Token': 'guess'}}).then(r => r.status)")
    assert wrong == 403
    assert server.token not in page.content()


def test_timing_opening_a_part_of_1000_answers(graded_class, tmp_path, browser, capsys):
    from bench.mark_page import big_class

    _, key, _, _ = graded_class(12)
    big = big_class(key, tmp_path / "big.sqlite", 1000)
    server, thread = serve(tmp_path / "big.sqlite", big)
    context = browser.new_context()                  # the page's own CSP in force
    page = context.new_page()
    try:
        times = []
        for _ in range(5):
            page.goto("about:blank")                  # each run a full load, not a jump within the page
            start = time.perf_counter()
            open_part(page, server)
            times.append(time.perf_counter() - start)
        assert page.text_content("#progress").startswith("0 of 1000 graded")
        assert page.text_content("#who") == "Answer 1 of 1000"
    finally:
        context.close()
        server.shutdown()
        thread.join(5)
    with capsys.disabled():
        print(f"\nmarking page: a part of 1,000 answers shown {', '.join(f'{t * 1000:.0f}' for t in times)} ms "
              "after navigation (first run: the parts list not read yet)")
