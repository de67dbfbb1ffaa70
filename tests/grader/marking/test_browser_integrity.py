"""The marking page in headless Chromium holding to what a grade is and who may give it: a
grade never lands on an answer that changed since it was shown, no other server on
127.0.0.1 ever receives the page's token, the shortcut keys work right after the name
switch or the grader box, a refused adjustment leaves the saved score on show, and the
conflict box counts points in words and does not appear when both graders agree.
"""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from formats.key_shape import assignment_id
from grader.store.gradebook import Gradebook
from grader.store.rows import answer_digest
from grader.store.marks import mark_of

from tests.grader.marking.browsing import PART, PROBLEM, go, marks_of, open_part, press_and_settle, set_answer


def test_a_grade_is_never_saved_onto_an_answer_that_changed_since_it_was_shown(served, page):
    server, key, gradebook = served
    student = open_part(page, server)
    shown = page.text_content("#answer")
    set_answer(gradebook, key, student, "A later handin, graded since the page opened.")
    press_and_settle(page, "1")
    assert page.is_visible("#conflict")
    assert "answer changed since you read it" in page.text_content("#conflict-text")
    assert page.text_content("#answer") == "A later handin, graded since the page opened." != shown
    assert not page.is_visible("#conflict-mine-save")        # read the new answer, then grade it afresh
    assert marks_of(gradebook, key, [student])[student] is None
    press_and_settle(page, "1")                              # graded now, having read it
    mark = marks_of(gradebook, key, [student])[student]
    assert list(mark.items) == ["same_vector"]
    assert mark.answer_digest == answer_digest("A later handin, graded since the page opened.")


def test_an_answer_changed_before_it_is_opened_is_shown_as_it_is_now(served, page):
    server, key, gradebook = served
    first = open_part(page, server)
    set_answer(gradebook, key, first, "Changed while the grader looked elsewhere.")
    go(page, "j")
    assert go(page, "k") == first                             # back: its answer is read again
    page.wait_for_function("document.getElementById('answer').textContent.startsWith('Changed while')")
    press_and_settle(page, "1")
    assert not page.is_visible("#conflict")
    mark = marks_of(gradebook, key, [first])[first]
    assert mark.answer_digest == answer_digest("Changed while the grader looked elsewhere.")


class _Spy(BaseHTTPRequestHandler):
    """Another program on 127.0.0.1: it records every request line and header it receives."""

    seen: list[str] = []

    def do_GET(self) -> None:                    # noqa: N802 — the base class's name
        self.seen.append(self.requestline + "\n" + str(self.headers))
        body = b"<!DOCTYPE html><title>elsewhere</title><img src='/pixel.png'>"
        self.send_response(200)
        self.send_header("Content-Type", "text/html")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args) -> None:
        pass


@pytest.fixture
def spy():
    _Spy.seen = []
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Spy)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield httpd.server_address[1], _Spy.seen
    httpd.shutdown()
    httpd.server_close()
    thread.join(5)


def test_no_other_server_on_the_host_receives_the_token(served, page, spy):
    server, _, _ = served
    port, seen = spy
    open_part(page, server)
    press_and_settle(page, "1")
    page.reload()                                             # a reload of the tab still opens the page
    page.wait_for_selector("body[data-state=shown]")
    page.goto(f"http://127.0.0.1:{port}/")                    # the same browser visits another port
    page.wait_for_load_state("load")
    page.goto(f"http://localhost:{port}/?again")
    page.wait_for_load_state("load")
    assert len(seen) >= 3                                     # the page, its image, the second page
    assert all(server.token not in request for request in seen)
    assert all("cookie" not in request.lower() for request in seen)
    assert page.context.cookies() == []


def test_the_shortcut_keys_work_right_after_the_name_switch_and_the_grader_box(served, page):
    server, key, gradebook = served
    student = open_part(page, server)
    page.click("#names")                                      # as a grader does: with the mouse
    assert page.is_checked("#names")
    press_and_settle(page, "1")
    assert list(marks_of(gradebook, key, [student])[student].items) == ["same_vector"]
    page.fill("#grader", "ta-two")
    page.press("#grader", "Enter")
    press_and_settle(page, "2")
    mark = marks_of(gradebook, key, [student])[student]
    assert set(mark.items) == {"same_vector", "context"} and mark.grader == "ta-two"


def test_a_refused_adjustment_leaves_the_saved_score_on_show(served, page):
    server, key, gradebook = served
    student = open_part(page, server)
    press_and_settle(page, "2")                               # saved: context, 1 point
    saved = marks_of(gradebook, key, [student])[student]
    beyond = float(page.get_attribute("#adjustment", "max")) + 1
    page.fill("#adjustment", str(beyond))
    page.keyboard.press("Tab")
    page.wait_for_function("document.body.dataset.pending === '0'")
    assert page.text_content("#status").startswith("Not saved:") and "outside" in page.text_content("#status")
    assert f"Saved: {saved.score:g} point" in page.text_content("#status")
    assert page.text_content("#score") == f"Score {saved.score:g} of {saved.max_score:g}"
    assert float(page.input_value("#adjustment")) == saved.adjustment
    assert marks_of(gradebook, key, [student])[student] == saved


def test_the_conflict_box_counts_points_in_words_and_is_not_shown_when_both_agree(served, browser):
    server, key, gradebook = served
    one, two = browser.new_context(bypass_csp=True), browser.new_context(bypass_csp=True)
    try:
        a, b = one.new_page(), two.new_page()
        student = open_part(a, server)
        assert open_part(b, server) == student
        b.fill("#grader", "ta-two")
        b.keyboard.press("Enter")
        press_and_settle(a, "2")                              # TA one: context, 1 point
        press_and_settle(b, "2")                              # TA two, from the same version: the same grade
        assert not b.is_visible("#conflict")
        assert "by ta-browser" in b.text_content("#status")   # theirs, kept: the same grade
        with Gradebook(gradebook) as gb:
            mark = mark_of(gb, assignment_id(key), student, PROBLEM, PART)
        assert (mark.version, mark.grader) == (1, "ta-browser")
        press_and_settle(a, "1")                              # TA one changes it ...
        press_and_settle(b, "3")                              # ... and TA two, not knowing: a conflict
        assert b.is_visible("#conflict")
        text = b.text_content("#conflict-text")
        assert "pts" not in text and "2 points" in text, text
    finally:
        one.close()
        two.close()
