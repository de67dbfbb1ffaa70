"""The marking server holding to what a grade is for and who may save it, over real loopback
sockets: a grade only for the answer its grader read, no value any cookie carries that grants
grading, every one of many concurrent saves answered, a request's whole time bounded and the
connections served at once capped, an over-long reason refused like a comment, hidden
characters of an answer shown, and no conflict when the other grader saved the same grade.
"""

from __future__ import annotations

import json
import shutil
import socket
import threading
import time
import urllib.error
import urllib.request

import pytest

from formats.key_shape import assignment_id
from grader.store.gradebook import Gradebook
from grader.store.rows import answer_digest
from grader.marking.web import MarkingPage
from grader.store.marks import COMMENT_LIMIT, mark_of

from tests.grader.marking.browsing import set_answer

PROBLEM, PART = "motivation", "static"
FREE_PARTS = ("static", "bottleneck", "common_cause")


def start(gradebook, key, **kw) -> tuple[MarkingPage, threading.Thread]:
    server = MarkingPage(gradebook, key, grader="ta-test", **kw)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    return server, thread


@pytest.fixture
def course(graded_class, tmp_path):
    """(key, gradebook copy) of the graded class of 12."""
    _, key, gradebook, _ = graded_class(12)
    copy = tmp_path / "gradebook.sqlite"
    shutil.copy(gradebook, copy)
    return key, copy


@pytest.fixture
def served(course):
    key, gradebook = course
    server, thread = start(gradebook, key)
    yield server, key, gradebook
    server.shutdown()
    thread.join(5)


def request(server, path, *, body=None, headers=None, token=True):
    """(status, headers, body bytes); the API token in its header unless ``token`` is False."""
    all_headers = {**({"X-Attnkit-Token": server.token} if token else {}), **(headers or {})}
    data = None
    if body is not None:
        data = json.dumps(body).encode()
        all_headers["Content-Type"] = "application/json"
    req = urllib.request.Request(f"http://127.0.0.1:{server.port}{path}", data=data, headers=all_headers)
    try:
        with urllib.request.urlopen(req, timeout=30) as response:
            return response.status, response.headers, response.read()
    except urllib.error.HTTPError as err:
        return err.code, err.headers, err.read()


def api(server, path, body=None, **kw):
    status, _, data = request(server, path, body=body, **kw)
    return status, json.loads(data)


def shown(server, student, part=PART):
    status, data = api(server, f"/api/answer?problem={PROBLEM}&part={part}&student={student}")
    assert status == 200
    return data


def first_student(server):
    return api(server, f"/api/part?problem={PROBLEM}&part={PART}")[1]["answers"][0]["student"]


# --- a grade is for the answer its grader read ------------------------------------------------

def test_a_grade_for_an_answer_that_changed_since_it_was_read_is_refused(served):
    server, key, gradebook = served
    student = first_student(server)
    seen = shown(server, student)
    assert seen["answer"]["version"] == 0
    assert seen["save_with"] == {"problem": PROBLEM, "part": PART, "students": [
        {"id": student, "version": 0, "answer": seen["answer"]["answer_digest"]}]}
    set_answer(gradebook, key, student, "A later handin, graded since.")
    status, data = api(server, "/api/mark", {**seen["save_with"], "items": ["same_vector"]})
    assert status == 409
    assert "answer changed" in data["error"] and data["changed"] == [student]
    assert data["answers"][0]["text"] == "A later handin, graded since."     # the page shows the new one
    with Gradebook(gradebook) as gb:
        assert mark_of(gb, assignment_id(key), student, PROBLEM, PART) is None
    again = shown(server, student)                    # read again: saved onto the answer that counts
    status, data = api(server, "/api/mark", {**again["save_with"], "items": ["same_vector"]})
    assert status == 200 and data["answers"][0]["look"] == ""
    with Gradebook(gradebook) as gb:
        mark = mark_of(gb, assignment_id(key), student, PROBLEM, PART)
    assert mark.answer_digest == answer_digest("A later handin, graded since.")


def test_a_save_must_say_which_answer_it_grades(served):
    server, _, _ = served
    student = first_student(server)
    body = {"problem": PROBLEM, "part": PART, "items": [], "students": [{"id": student, "version": 0}]}
    status, data = api(server, "/api/mark", body)
    assert status == 400 and "answer" in data["error"]


# --- no cookie grants anything -------------------------------------------------------------------

def test_no_response_sets_a_cookie_and_no_cookie_opens_anything(served):
    server, _, _ = served
    status, headers, page = request(server, f"/?token={server.token}", token=False)
    assert status == 200 and "Set-Cookie" not in headers
    assert server.token.encode() not in page                     # the page itself holds no token
    old = {"Cookie": f"attnkit-mark-{server.port}={server.token}"}
    status, _, page = request(server, "/", headers=old, token=False)
    assert status == 200 and server.token.encode() not in page   # a reload's page: no token in it
    assert request(server, "/api/parts", headers=old, token=False)[0] == 403
    assert request(server, "/api/mark", headers=old, token=False, body={})[0] == 403
    for path in ("/mark.js", "/mark.css"):                       # the page's own files: nothing secret
        status, _, body = request(server, path, token=False)
        assert status == 200 and server.token.encode() not in body
    assert request(server, "/?token=not-the-token", token=False)[0] == 403


# --- many at once, slow ones bounded ---------------------------------------------------------------

def test_thirty_concurrent_saves_are_all_answered(served):
    server, key, _ = served
    students = sorted(key["students"])
    targets = [(s, p) for p in FREE_PARTS for s in students][:30]
    bodies = [{**shown(server, s, p)["save_with"], "items": ["same_vector"] if p == PART else []}
              for s, p in targets]
    ready, results = threading.Barrier(len(bodies)), [None] * len(bodies)

    def save(i):
        ready.wait()
        try:
            results[i] = api(server, "/api/mark", bodies[i])[0]
        except OSError as err:                     # a reset connection: what the cap on the backlog caused
            results[i] = repr(err)
    threads = [threading.Thread(target=save, args=(i,)) for i in range(len(bodies))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert results == [200] * 30


def slow_connection(server) -> socket.socket:
    s = socket.create_connection(("127.0.0.1", server.port), timeout=10)
    s.sendall(b"GET /api/parts HTTP/1.1\r\nHost: 127.0.0.1:")     # and nothing more, for now
    return s


def wait_until(condition, seconds=20.0) -> bool:
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if condition():
            return True
        time.sleep(0.02)
    return False


def test_connections_beyond_the_cap_are_refused_at_once(course):
    key, gradebook = course
    server, thread = start(gradebook, key, max_connections=4, request_seconds=60)
    held, extra = [], []
    try:
        held = [slow_connection(server) for _ in range(4)]
        assert wait_until(lambda: server.connections == 4)
        extra = [slow_connection(server) for _ in range(8)]
        for s in extra:                 # each ends well before the held ones' 60 s: refused, not held
            try:
                reply = s.recv(4096)
            except ConnectionResetError:
                reply = b""
            assert reply == b"" or reply.startswith(b"HTTP/1.1 503 "), reply
        assert server.connections == 4
        for s in held:
            s.close()
        assert wait_until(lambda: server.connections == 0)
        assert request(server, "/api/parts")[0] == 200            # and the server serves again
    finally:
        for s in held + extra:
            s.close()
        server.shutdown()
        thread.join(5)


def test_a_request_trickled_byte_by_byte_is_cut_at_its_deadline(course):
    """A byte every 50 ms never waits long on one read; the request's own deadline ends it."""
    key, gradebook = course
    server, thread = start(gradebook, key, request_seconds=0.5)
    try:
        with socket.create_connection(("127.0.0.1", server.port), timeout=10) as s:
            line = f"GET /api/parts HTTP/1.1\r\nHost: 127.0.0.1:{server.port}\r\nX-Pad: " + "x" * 10_000
            closed = False
            for c in line.encode():          # 10 s of trickling at most: far past the deadline
                try:
                    s.sendall(bytes([c]))
                    s.settimeout(0.05)
                    closed = s.recv(1) == b""
                except socket.timeout:
                    continue
                except OSError:
                    closed = True
                if closed:
                    break
        assert closed
        assert wait_until(lambda: server.connections == 0)
    finally:
        server.shutdown()
        thread.join(5)


# --- a reason is refused like a comment ---------------------------------------------------------------

def test_an_over_long_reason_is_refused_with_a_clear_message(served):
    server, _, _ = served
    _, parts = api(server, "/api/parts")
    auto = next(p for p in parts["parts"] if p["kind"] == "override")
    _, part = api(server, f"/api/part?problem={auto['problem']}&part={auto['part']}")
    a = part["answers"][0]
    body = {"problem": auto["problem"], "part": auto["part"], "items": [], "adjustment": 0, "comment": "",
            "students": [{"id": a["student"], "version": a["version"], "answer": a["answer_digest"]}]}
    status, data = api(server, "/api/mark", {**body, "reason": "r" * (COMMENT_LIMIT + 1)})
    assert status == 400
    assert f"reason is {COMMENT_LIMIT + 1} characters (at most {COMMENT_LIMIT})" in data["error"]
    status, data = api(server, "/api/mark", {**body, "reason": "r" * COMMENT_LIMIT})
    assert status == 200 and data["answers"][0]["mark"]["reason"] == "r" * COMMENT_LIMIT


# --- hidden characters are shown ----------------------------------------------------------------

def test_control_and_format_characters_of_an_answer_are_shown_visibly(served):
    server, key, gradebook = served
    student = first_student(server)
    set_answer(gradebook, key, student, "safe\u202eevil\x1b[2J\u200bx\u2028y ⟨U+0041⟩\tt\r\nz")
    expected = "safe⟨U+202E⟩evil⟨U+001B⟩[2J⟨U+200B⟩x⟨U+2028⟩y ⟨U+27E8⟩U+0041⟩\tt\r\nz"
    _, part = api(server, f"/api/part?problem={PROBLEM}&part={PART}")
    assert next(a for a in part["answers"] if a["student"] == student)["text"] == expected
    assert shown(server, student)["answer"]["text"] == expected


# --- the same grade saved twice is no conflict ----------------------------------------------------

def test_a_second_grader_saving_the_same_grade_gets_no_conflict(served):
    server, key, gradebook = served
    student = first_student(server)
    seen = shown(server, student)
    first = api(server, "/api/mark", {**seen["save_with"], "items": ["context", "same_vector"], "grader": "ta-one",
                                      "comment": "Good."})
    status, data = api(server, "/api/mark", {**seen["save_with"], "items": ["same_vector", "context"],
                                             "grader": "ta-two", "comment": "Good."})
    assert first[0] == 200 and status == 200
    assert data["same_by"] == ["ta-one"] and data["answers"][0]["version"] == 1
    with Gradebook(gradebook) as gb:
        mark = mark_of(gb, assignment_id(key), student, PROBLEM, PART)
    assert (mark.version, mark.grader) == (1, "ta-one")               # theirs kept, not rewritten
    status, data = api(server, "/api/mark", {**seen["save_with"], "items": ["same_vector"], "grader": "ta-two",
                                             "comment": "Good."})
    assert status == 409 and "same_by" not in data                    # a different grade still is one
