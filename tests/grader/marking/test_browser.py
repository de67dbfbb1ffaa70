"""The marking page in a real headless Chromium (Debian's ``chromium``, driven by Playwright's
Python API; nothing downloads a browser): keyboard-only grading, a group graded at once, a
reload that keeps everything, two TAs on one grade, hostile answers shown as text, no
token no page, and the time to open a part of 1,000 answers (printed, never asserted).
"""

from __future__ import annotations

import dataclasses
import time


from formats.key_shape import assignment_id
from grader.store.gradebook import Gradebook
from grader.marking.queue import part_queue
from grader.store.marks import history

from tests.grader.marking.browsing import HOSTILE, PART, PROBLEM, go, marks_of, open_part, press_and_settle, serve


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


def test_a_save_answering_while_the_grader_types_does_not_undo_the_typing(served, page):
    """The comment's save is held in flight while the adjustment is typed; when it answers,
    the page redraws the editor — and must leave the field being typed in alone."""
    server, key, gradebook = served
    student = open_part(page, server)
    held = []
    page.route("**/api/mark", lambda route: route.continue_() if held else held.append(route))
    page.fill("#comment", "Saved while typing.")
    page.locator("#adjustment").focus()               # the comment's save starts, and is held
    page.wait_for_function("document.body.dataset.pending === '1'")
    page.fill("#adjustment", "-0.5")
    while not held:
        page.wait_for_timeout(20)                     # (until the held request reached the route)
    held[0].continue_()                               # the comment's save answers now
    page.wait_for_function("document.body.dataset.pending === '0'")
    assert page.input_value("#adjustment") == "-0.5"
    page.keyboard.press("Tab")                        # leaving the field saves it
    page.wait_for_function("document.body.dataset.pending === '0'")
    mark = marks_of(gradebook, key, [student])[student]
    assert (mark.comment, mark.adjustment, mark.version) == ("Saved while typing.", -0.5, 2)


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
    response = page.goto(f"http://127.0.0.1:{server.port}/")      # a new tab: no token, none kept
    assert response.status == 200                                   # the page holds no secret ...
    page.wait_for_selector("#fatal:not([hidden])")
    assert "address attnkit mark printed" in page.text_content("#fatal")
    assert page.text_content("#answer") == "" and page.locator("#part option").count() == 0   # ... and shows nothing
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


def test_the_token_leaves_the_address_bar_and_a_reload_still_opens_the_page(served, page):
    server, _, _ = served
    open_part(page, server)
    assert "token=" not in page.url and server.token not in page.url
    assert page.url.startswith(f"http://127.0.0.1:{server.port}/#{PROBLEM}/{PART}/")
    page.reload()                                   # the tab's sessionStorage keeps the token
    page.wait_for_selector("body[data-state=shown]")
    assert server.token not in page.url
    assert page.context.cookies() == []             # no cookie: other ports of 127.0.0.1 would get it


def test_a_malformed_hash_opens_the_first_part(served, page):
    server, _, _ = served
    page.goto(f"{server.url}#%E0%A4%A")
    page.wait_for_selector("body[data-state=shown]")
    assert page.errors == []


def test_hostile_text_in_every_field_and_view_stays_text(served, browser, tmp_path):
    """A hostile student name, auto message, misconception (so the group label), grader name,
    comment, reason, a history line and the conflict box: none becomes markup."""
    import json
    import urllib.request

    from formats.key_shape import entry_for

    _, key, gradebook = served
    evil = {f: f"<img src=x onerror=alert('{f}')><script>alert('{f}')</script>"
            for f in ("name", "message", "grader", "comment", "reason", "other")}
    with Gradebook(gradebook) as gb:
        q = part_queue(gb, key, PROBLEM, PART)
        target = q.answers[0].student
        diagnosed = [a.student for a in part_queue(gb, key, "dog_ran_fast", "slide_scaled").answers[:2]]
        a_target = diagnosed[0]
        for student in diagnosed:                  # a group of two; its label quotes the message
            handin = gb.handins(assignment_id(key), student)[0]
            gb.record(handin, [dataclasses.replace(r, status="failed", score=0.0, message=evil["message"],
                                                   misconception="no_scale")
                               if (r.problem, r.part) == ("dog_ran_fast", "slide_scaled") else r
                               for r in gb.results(assignment_id(key), student)])
    # a shallow copy (the key holds a lock): only this student's entry is a new dict
    hostile_key = {**key, "students": {**key["students"], target: {**entry_for(key, target), "name": evil["name"]}}}
    server, thread = serve(gradebook, hostile_key)
    context = browser.new_context(bypass_csp=True)  # escaping alone must hold
    p = context.new_page()
    dialogs, errors = [], []
    p.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
    p.on("pageerror", lambda e: errors.append(str(e)))
    try:
        open_part(p, server)
        p.check("#names")
        assert evil["name"] in p.text_content("#who")
        p.fill("#grader", evil["grader"])
        p.keyboard.press("Tab")
        p.fill("#comment", evil["comment"])
        p.keyboard.press("Tab")
        p.wait_for_function("document.body.dataset.pending === '0'")
        press_and_settle(p, "1")
        p.reload()
        p.wait_for_selector("body[data-state=shown]")
        assert evil["grader"] in p.text_content("#history") and evil["comment"] in p.text_content("#history")
        assert p.locator("#reuse-list button").first.get_attribute("title") == evil["comment"]
        # another TA saves over it (hostile comment): the conflict box quotes it
        a = next(x for x in json.loads(urllib.request.urlopen(urllib.request.Request(
            f"http://127.0.0.1:{server.port}/api/part?problem={PROBLEM}&part={PART}",
            headers={"X-Attnkit-Token": server.token})).read())["answers"] if x["student"] == target)
        body = {"problem": PROBLEM, "part": PART, "items": [], "adjustment": 0, "comment": evil["other"],
                "reason": "", "grader": "ta-other",
                "students": [{"id": target, "version": a["version"], "answer": a["answer_digest"]}]}
        urllib.request.urlopen(urllib.request.Request(
            f"http://127.0.0.1:{server.port}/api/mark", data=json.dumps(body).encode(), method="POST",
            headers={"X-Attnkit-Token": server.token, "Content-Type": "application/json"}))
        press_and_settle(p, "2")
        assert p.is_visible("#conflict") and evil["other"] in p.text_content("#conflict-text")
        assert evil["comment"] in p.text_content("#conflict-mine")
        # the auto-graded part: the message, the group label, a hostile reason
        with Gradebook(gradebook) as gb:
            position = next(x.position for x in part_queue(gb, hostile_key, "dog_ran_fast", "slide_scaled").answers
                            if x.student == a_target)
        open_part(p, server, f"dog_ran_fast/slide_scaled/answers/{position}")
        assert evil["message"] in p.text_content("#auto")
        assert "diagnosed: " + evil["message"] in p.text_content("#group-note")
        p.fill("#reason", evil["reason"])
        p.keyboard.press("Tab")
        p.fill("#adjustment", "-0.5")
        p.keyboard.press("Tab")
        p.wait_for_function("document.body.dataset.pending === '0'")
        p.reload()
        p.wait_for_selector("body[data-state=shown]")
        assert p.input_value("#reason") == evil["reason"]
        p.keyboard.press("g")                          # the groups view, its label in #who
        p.wait_for_function("document.body.dataset.state === 'shown'")
        for _ in range(30):
            if evil["message"] in p.text_content("#who"):
                break
            go(p, "j")
        assert evil["message"] in p.text_content("#who")
        assert p.evaluate("document.querySelectorAll('img, script:not([src]), [onerror]').length") == 0
        time.sleep(0.3)                                # give a script that got in the time to run
        assert dialogs == [] and errors == []
    finally:
        context.close()
        server.shutdown()
        thread.join(5)
