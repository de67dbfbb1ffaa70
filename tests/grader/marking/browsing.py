"""What the marking page's browser tests share (their fixtures are in ``conftest``): a server
on a graded class, the moves a grader makes, and an answer changed behind the page's back."""

from __future__ import annotations

import dataclasses
import threading

from formats.key_shape import assignment_id
from grader.store.gradebook import Gradebook
from grader.marking.web import MarkingPage
from grader.store.marks import mark_of

HOSTILE = "<script>alert(1)</script> and <img src=x onerror=alert(1)> end"
PROBLEM, PART = "motivation", "static"


def serve(gradebook, key, **kw):
    server = MarkingPage(gradebook, key, grader="ta-browser", **kw)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    return server, thread


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


def set_answer(gradebook_path, key, student: str, answer: str, problem: str = PROBLEM, part: str = PART) -> None:
    """Re-record ``student``'s counted handin with ``answer`` for ``problem``/``part``: a
    resubmission graded again, as far as the marking page can tell."""
    with Gradebook(gradebook_path) as gb:
        handin = gb.handins(assignment_id(key), student)[0]
        gb.record(handin, [dataclasses.replace(r, answer=answer) if (r.problem, r.part) == (problem, part) else r
                           for r in gb.results(assignment_id(key), student)])
