"""The marking server at the HTTP level: a real server thread, requests with urllib.

What it must hold to: every route needs the token (the page and its files as ``?token=``,
the API in a header, a POST only in the header), a foreign Host is refused (DNS
rebinding), loopback only, the security headers on every response, a capped JSON body,
409 with the current grade on a conflict, 400 with the reason on a bad grade, and no byte of
a student's hostile answer in any HTML response.
"""

from __future__ import annotations

import dataclasses
import json
import re
import shutil
import sqlite3
import threading
import urllib.error
import urllib.request

import pytest

from formats.key_shape import assignment_id
from grader.store.gradebook import Gradebook
from grader.marking.web import MAX_BODY, SECURITY_HEADERS, MarkingPage
from grader.store.marks import history, mark_of

HOSTILE = "<script>alert(1)</script> and <img src=x onerror=alert(1)> end"
PROBLEM, PART = "motivation", "static"


def set_answer(gradebook_path, key, student: str, problem: str, part: str, answer: str) -> None:
    """Re-record ``student``'s counted handin with ``answer`` for ``problem``/``part``."""
    with Gradebook(gradebook_path) as gb:
        handin = gb.handins(assignment_id(key), student)[0]
        rows = [dataclasses.replace(r, answer=answer) if (r.problem, r.part) == (problem, part) else r
                for r in gb.results(assignment_id(key), student)]
        gb.record(handin, rows)


@pytest.fixture
def served(graded_class, tmp_path):
    """(server, key, gradebook path): a running server on a copy of the graded class, one
    student's answer to motivation/static hostile."""
    _, key, gradebook, _ = graded_class(12)
    copy = tmp_path / "gradebook.sqlite"
    shutil.copy(gradebook, copy)
    student = sorted(key["students"])[0]
    set_answer(copy, key, student, PROBLEM, PART, HOSTILE)
    server = MarkingPage(copy, key, grader="ta-test")
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server, key, copy
    server.shutdown()
    thread.join(5)


def request(server, path, *, method="GET", token="header", body=None, headers=None, raw=None):
    """(status, headers, body bytes) of one request; ``token``: "header", "query", None or a
    wrong value (sent in the header)."""
    url = f"http://127.0.0.1:{server.port}{path}"
    all_headers = dict(headers or {})
    if token == "header":
        all_headers["X-Attnkit-Token"] = server.token
    elif token == "query":
        url += ("&" if "?" in url else "?") + "token=" + server.token
    elif token is not None:
        all_headers["X-Attnkit-Token"] = token
    data = raw
    if body is not None:
        data = json.dumps(body).encode()
        all_headers.setdefault("Content-Type", "application/json")
    req = urllib.request.Request(url, data=data, method=method, headers=all_headers)
    try:
        with urllib.request.urlopen(req, timeout=30) as response:
            return response.status, response.headers, response.read()
    except urllib.error.HTTPError as err:
        return err.code, err.headers, err.read()


def api(server, path, body=None, **kw):
    status, _, data = request(server, path, method="POST" if body is not None else "GET", body=body, **kw)
    return status, json.loads(data)


def first_answer(server):
    status, part = api(server, f"/api/part?problem={PROBLEM}&part={PART}")
    assert status == 200
    return part["answers"][0]


# --- the token ------------------------------------------------------------------------------

PAGE_FILES = ["/", "/mark.js", "/mark.css"]
API_GET = ["/api/parts", f"/api/part?problem={PROBLEM}&part={PART}",
           f"/api/answer?problem={PROBLEM}&part={PART}&student=s2026001"]
ROUTES_GET = PAGE_FILES + API_GET


@pytest.mark.parametrize("path", API_GET)
@pytest.mark.parametrize("token", [None, "wrong-token", ""])
def test_every_api_route_refuses_a_missing_or_wrong_token(served, path, token):
    server, _, _ = served
    status, headers, body = request(server, path, token=token)
    assert status == 403
    assert body == b"forbidden\n"
    assert server.token.encode() not in body
    status, _, body = request(server, path + ("&" if "?" in path else "?") + "token=nope", token=None)
    assert status == 403


@pytest.mark.parametrize("path", PAGE_FILES)
def test_the_page_and_its_files_hold_no_secret_and_a_wrong_token_in_the_url_is_refused(served, path):
    server, _, _ = served
    for token in ("query", None):                     # the printed address, and a reload of the tab
        status, headers, body = request(server, path, token=token)
        assert status == 200, path
        assert server.token.encode() not in body and "Set-Cookie" not in headers
    assert request(server, path, token=None)[1]["Content-Type"].startswith(
        "text/html" if path == "/" else "text/")
    status, _, body = request(server, path + "?token=nope", token=None)
    assert status == 403 and body == b"forbidden\n"


def test_the_api_takes_the_token_only_in_its_header(served):
    server, _, _ = served
    assert request(server, "/api/parts", token="query")[0] == 403
    status, parts = api(server, "/api/parts")
    assert status == 200
    kinds = [p["kind"] for p in parts["parts"]]
    assert kinds[0] == "hand" and kinds == sorted(kinds, key=lambda k: k != "hand")
    assert parts["grader"] == "ta-test"


def test_a_post_with_the_token_in_the_url_only_is_refused_and_saves_nothing(served):
    server, key, gradebook = served
    a = first_answer(server)
    body = {"problem": PROBLEM, "part": PART, "students": [{"id": a["student"], "version": a["version"], "answer": a["answer_digest"]}],
            "items": ["same_vector"], "adjustment": 0, "comment": "", "reason": ""}
    status, _, _ = request(server, "/api/mark", method="POST", token="query", body=body)
    assert status == 403
    status, _, _ = request(server, "/api/mark", method="POST", token="wrong", body=body)
    assert status == 403
    with Gradebook(gradebook) as gb:
        now = mark_of(gb, assignment_id(key), a["student"], PROBLEM, PART)
    assert (now.version if now else 0) == a["version"]


def test_a_post_from_another_origin_is_refused(served):
    server, _, _ = served
    a = first_answer(server)
    body = {"problem": PROBLEM, "part": PART, "students": [{"id": a["student"], "version": a["version"], "answer": a["answer_digest"]}]}
    status, _, _ = request(server, "/api/mark", method="POST", body=body, headers={"Origin": "http://evil.example"})
    assert status == 403


# --- Host, loopback, headers -------------------------------------------------------------------

@pytest.mark.parametrize("host", ["evil.example", "evil.example:{port}", "127.0.0.1:1", "localhost",
                                  "127.0.0.1.nip.io:{port}"])
def test_a_foreign_host_header_is_refused(served, host):
    server, _, _ = served
    for path, method in (("/", "GET"), ("/api/parts", "GET"), ("/api/mark", "POST")):
        status, _, body = request(server, path + ("?token=" + server.token if path == "/" else ""),
                                  method=method, headers={"Host": host.format(port=server.port)},
                                  body={} if method == "POST" else None)
        assert status == 421, (host, path)
        assert server.token.encode() not in body


def test_localhost_with_the_port_is_accepted(served):
    server, _, _ = served
    status, _, _ = request(server, "/api/parts", headers={"Host": f"localhost:{server.port}"})
    assert status == 200


def test_it_listens_on_loopback_only(graded_class, tmp_path):
    _, key, gradebook, _ = graded_class(12)
    for host in ("0.0.0.0", "", "::", "192.168.1.1", "localhost"):
        with pytest.raises(ValueError, match="127.0.0.1 only"):
            MarkingPage(gradebook, key, host=host)
    with MarkingPage(gradebook, key) as server:
        assert server._httpd.server_address[0] == "127.0.0.1"
        assert server.url.startswith(f"http://127.0.0.1:{server.port}/?token=")
        assert len(server.token) >= 43


@pytest.mark.parametrize("path,token", [("/", "query"), ("/mark.js", "query"), ("/api/parts", "header"),
                                        ("/api/parts", None), ("/nothing", "query"), ("/", "wrong")])
def test_every_response_carries_the_security_headers(served, path, token):
    server, _, _ = served
    _, headers, _ = request(server, path, token=token)
    for name, value in SECURITY_HEADERS.items():
        assert headers[name] == value, name
    assert "default-src 'none'" in headers["Content-Security-Policy"]
    assert "unsafe-inline" not in headers["Content-Security-Policy"]


def test_the_page_loads_nothing_from_elsewhere_and_has_no_inline_script_or_style(served):
    server, _, _ = served
    _, _, page = request(server, "/", token="query")
    html = page.decode()
    assert "//" not in html                      # no absolute or protocol-relative URL
    assert "<style" not in html and " style=" not in html
    assert not re.search(r"\son[a-z]+=", html)     # no inline event handler
    scripts = re.findall(r"<script[^>]*>", html)
    assert scripts and all(re.fullmatch(r'<script src="/mark\.js" defer>', s) for s in scripts)


# --- bodies ------------------------------------------------------------------------------------

def test_a_body_over_the_cap_is_refused_with_413(served):
    server, _, _ = served
    raw = b'{"comment": "' + b"x" * (MAX_BODY + 1) + b'"}'
    status, _, _ = request(server, "/api/mark", method="POST", raw=raw,
                           headers={"Content-Type": "application/json"})
    assert status == 413


def test_a_post_must_be_json(served):
    server, _, _ = served
    status, _, _ = request(server, "/api/mark", method="POST", raw=b"problem=motivation",
                           headers={"Content-Type": "application/x-www-form-urlencoded"})
    assert status == 415
    status, _, body = request(server, "/api/mark", method="POST", raw=b"{not json",
                              headers={"Content-Type": "application/json"})
    assert status == 400 and b"not JSON" in body
    status, _, body = request(server, "/api/mark", method="POST", raw=b"[1, 2]",
                              headers={"Content-Type": "application/json"})
    assert status == 400


# --- grading over HTTP -------------------------------------------------------------------------

def mark_body(a, items, version=None, **kw):
    return {"problem": PROBLEM, "part": PART, "items": items, "adjustment": 0, "comment": "", "reason": "",
            "students": [{"id": a["student"], "version": a["version"] if version is None else version,
                          "answer": a["answer_digest"]}], **kw}


def test_a_save_answers_after_the_commit_with_the_new_version(served):
    server, key, gradebook = served
    a = first_answer(server)
    status, data = api(server, "/api/mark", mark_body(a, ["same_vector", "context"], comment="well argued",
                                                      grader="ta-one"))
    assert status == 200
    saved = data["answers"][0]
    assert saved["version"] == a["version"] + 1 and saved["mark"]["score"] == 2.0 and saved["done"]
    with Gradebook(gradebook) as gb:                       # another connection sees it: committed
        mark = mark_of(gb, assignment_id(key), a["student"], PROBLEM, PART)
    assert mark.version == saved["version"] and mark.items.keys() == {"same_vector", "context"}
    assert mark.comment == "well argued" and mark.grader == "ta-one"
    status, part = api(server, f"/api/part?problem={PROBLEM}&part={PART}")
    assert "well argued" in part["comments"]


def test_two_clients_saving_from_the_same_version_get_a_409_with_the_current_grade(served):
    server, key, gradebook = served
    a = first_answer(server)
    first = api(server, "/api/mark", mark_body(a, ["same_vector"], grader="ta-one"))
    second = api(server, "/api/mark", mark_body(a, ["context"], grader="ta-two"))
    assert first[0] == 200
    assert second[0] == 409
    current = second[1]["answers"][0]
    assert current["mark"]["grader"] == "ta-one" and current["mark"]["items"] == ["same_vector"]
    assert current["version"] == a["version"] + 1
    assert "ta-one" in second[1]["error"]
    with Gradebook(gradebook) as gb:
        assert list(mark_of(gb, assignment_id(key), a["student"], PROBLEM, PART).items) == ["same_vector"]


def test_a_group_is_saved_at_once_or_not_at_all(served):
    server, key, gradebook = served
    _, part = api(server, f"/api/part?problem={PROBLEM}&part={PART}")
    group = part["groups"][0]
    versions = {a["student"]: a["version"] for a in part["answers"]}
    digests = {a["student"]: a["answer_digest"] for a in part["answers"]}
    body = {"problem": PROBLEM, "part": PART, "items": ["context"], "adjustment": 0.5, "comment": "group",
            "students": [{"id": s, "version": versions[s], "answer": digests[s]} for s in group["members"]]}
    stale = {**body, "students": [{**body["students"][0], "version": versions[group["members"][0]] + 7},
                                  *body["students"][1:]]}
    assert api(server, "/api/mark", stale)[0] == 409
    with Gradebook(gradebook) as gb:
        before = {s: mark_of(gb, assignment_id(key), s, PROBLEM, PART) for s in group["members"]}
    assert all((m.version if m else 0) == versions[s] for s, m in before.items())
    status, data = api(server, "/api/mark", body)
    assert status == 200 and len(data["answers"]) == len(group["members"]) >= 2
    with Gradebook(gradebook) as gb:
        after = [mark_of(gb, assignment_id(key), s, PROBLEM, PART) for s in group["members"]]
    assert all(m.score == 1.5 and m.comment == "group" for m in after)


@pytest.mark.parametrize("change,message", [
    ({"items": ["no_such_item"]}, "unknown rubric item"),
    ({"adjustment": 99}, "outside"),
    ({"adjustment": "1"}, "must be a number"),
    ({"items": "same_vector"}, "list of rubric item ids"),
    ({"students": []}, "students"),
    ({"students": [{"id": "nobody", "version": 0, "answer": "0" * 16}]}, "no answer"),
    ({"grader": "x" * 500}, "grader"),
])
def test_a_bad_grade_is_a_400_with_the_reason(served, change, message):
    server, _, _ = served
    a = first_answer(server)
    status, data = api(server, "/api/mark", {**mark_body(a, []), **change})
    assert status == 400
    assert message in data["error"]


def test_an_override_needs_a_reason(served):
    server, _, _ = served
    _, parts = api(server, "/api/parts")
    auto = next(p for p in parts["parts"] if p["kind"] == "override")
    _, part = api(server, f"/api/part?problem={auto['problem']}&part={auto['part']}")
    a = part["answers"][0]
    body = {"problem": auto["problem"], "part": auto["part"], "items": [], "adjustment": 0, "comment": "",
            "reason": "", "students": [{"id": a["student"], "version": a["version"], "answer": a["answer_digest"]}]}
    status, data = api(server, "/api/mark", body)
    assert status == 400 and "reason" in data["error"]
    status, data = api(server, "/api/mark", {**body, "reason": "the key's rounding"})
    assert status == 200 and data["answers"][0]["mark"]["kind"] == "override"


def test_clear_withdraws_a_grade_and_checks_its_version(served):
    server, _, _ = served
    a = first_answer(server)
    _, data = api(server, "/api/mark", mark_body(a, ["same_vector"]))
    saved = data["answers"][0]
    clear = {"problem": PROBLEM, "part": PART, "students": [{"id": a["student"], "version": saved["version"] - 1,
                                                                "answer": a["answer_digest"]}]}
    assert api(server, "/api/clear", clear)[0] == 409
    status, data = api(server, "/api/clear", {**clear, "students": [{**clear["students"][0], "version": saved["version"]}]})
    assert status == 200 and data["answers"][0]["marked"] is False


# --- hostile text --------------------------------------------------------------------------------

def test_a_hostile_answer_never_reaches_html_unescaped(served):
    server, _, _ = served
    _, part = api(server, f"/api/part?problem={PROBLEM}&part={PART}")
    hostile = next(a for a in part["answers"] if a["text"] == HOSTILE)   # it is served, as data
    _, data = api(server, "/api/mark", mark_body(hostile, [], comment="<img src=y onerror=alert(2)>"))
    raw_bodies = []
    for path in ROUTES_GET + [f"/api/answer?problem={PROBLEM}&part={PART}&student={hostile['student']}",
                              "/nothing"]:
        for token in ("query", "header"):
            status, headers, body = request(server, path, token=token)
            raw_bodies.append((path, headers["Content-Type"], body))
    for path, kind, body in raw_bodies:
        assert b"<script>" not in body and b"<img" not in body, path     # not even inside JSON strings
        if kind.startswith("text/html"):
            assert b"onerror" not in body and b"alert(" not in body, path
    answer = next(b for p, k, b in raw_bodies if p.startswith("/api/answer") and b.startswith(b"{"))
    assert json.loads(answer)["answer"]["text"] == HOSTILE                 # …and shown as the text it is


def test_a_request_line_the_server_cannot_parse_gets_plain_text_and_the_headers(served):
    import socket

    server, _, _ = served
    with socket.create_connection(("127.0.0.1", server.port), timeout=10) as s:
        s.sendall(b"GET / HTTP/x.y\r\n\r\n")
        reply = s.recv(65536)
    assert reply.startswith(b"HTTP/") and b" 400 " in reply.split(b"\r\n")[0]
    assert b"Content-Security-Policy: default-src 'none'" in reply
    assert b"<html" not in reply.lower()


def test_the_gradebook_is_sound_after_a_session(served):
    server, _, gradebook = served
    a = first_answer(server)
    for i in range(5):
        status, data = api(server, "/api/mark", mark_body(a, ["same_vector"] if i % 2 else [], comment=str(i)))
        assert status == 200
        a = data["answers"][0]
    with sqlite3.connect(gradebook) as c:
        assert c.execute("PRAGMA integrity_check").fetchone() == ("ok",)


# --- a kill -9 mid-save ---------------------------------------------------------------------------

def test_a_server_killed_mid_save_loses_nothing_it_acknowledged(graded_class, tmp_path):
    """``attnkit mark`` in its own process, saves over HTTP from a thread, SIGKILL partway:
    every save that was answered 200 is in the gradebook with its version, and the file is sound."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[3]
    out, key, gradebook, secret = graded_class(12)
    copy = tmp_path / "gradebook.sqlite"
    shutil.copy(gradebook, copy)
    proc = subprocess.Popen(
        [sys.executable, "-m", "attnkit", "mark", str(root / "problem_bank" / "assignments" / "example.yaml"),
         "--build", str(out), "--gradebook", str(copy), "--no-browser", "--grader", "ta-kill"],
        cwd=root, env={**os.environ, "ATTNKIT_SECRET": secret}, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        text=True)
    try:
        url = next(line.strip() for line in proc.stdout if line.strip().startswith("http://127.0.0.1:"))
        port, token = int(url.split(":")[2].split("/")[0]), url.split("token=")[1]
        server = type("Remote", (), {"port": port, "token": token})()
        _, part = api(server, f"/api/part?problem={PROBLEM}&part={PART}")
        versions = {a["student"]: a["version"] for a in part["answers"]}
        digests = {a["student"]: a["answer_digest"] for a in part["answers"]}
        acknowledged, enough, done = [], threading.Event(), threading.Event()

        def saves():
            students = sorted(versions)
            try:
                for i in range(100_000):
                    s = students[i % len(students)]
                    items = [["same_vector"], ["context"], []][i % 3]
                    status, data = api(server, "/api/mark", {"problem": PROBLEM, "part": PART, "items": items,
                                       "comment": f"save {i}", "students": [{"id": s, "version": versions[s], "answer": digests[s]}]})
                    assert status == 200, data
                    versions[s] = data["answers"][0]["version"]
                    acknowledged.append((s, versions[s], sorted(items), f"save {i}"))
                    if len(acknowledged) >= 40:
                        enough.set()
            except (OSError, urllib.error.URLError):
                pass                                   # the server is gone: the saves stop there
            finally:
                done.set()

        thread = threading.Thread(target=saves, daemon=True)
        thread.start()
        assert enough.wait(120), "the saves did not get going"
        proc.kill()                                    # SIGKILL: no cleanup of any kind
        assert done.wait(60)
    finally:
        proc.kill()
        proc.wait(30)
    assert proc.returncode == -9 and len(acknowledged) >= 40
    with sqlite3.connect(copy) as c:
        assert c.execute("PRAGMA integrity_check").fetchone() == ("ok",)
    with Gradebook(copy) as gb:
        log = {(e.student, e.version): e for e in history(gb, assignment_id(key), problem=PROBLEM, part=PART)}
        for student, version, items, comment in acknowledged:
            entry = log[(student, version)]
            assert sorted(entry.mark["items"]) == items and entry.mark["comment"] == comment
            assert mark_of(gb, assignment_id(key), student, PROBLEM, PART).version >= version


# --- the security review's attacks (each test fails without its fix) --------------------------

def raw_exchange(server, data: bytes, timeout: float = 30) -> bytes:
    """Send ``data`` on a fresh connection and read until the server closes it."""
    import socket

    with socket.create_connection(("127.0.0.1", server.port), timeout=timeout) as s:
        s.sendall(data)
        out = b""
        while chunk := s.recv(65536):
            out += chunk
    return out


def raw_post(server, body: bytes) -> bytes:
    head = (f"POST /api/mark HTTP/1.1\r\nHost: 127.0.0.1:{server.port}\r\nX-Attnkit-Token: {server.token}\r\n"
            f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\nConnection: close\r\n\r\n")
    return raw_exchange(server, head.encode() + body)


def test_a_stuck_connection_is_closed_by_the_server(served, monkeypatch):
    """A client sending its headers byte by byte (or never) cannot hold a thread forever."""
    import grader.marking.web as server_module

    server, _, _ = served
    assert server_module._Handler.timeout is not None and server_module._Handler.timeout <= 60
    monkeypatch.setattr(server_module._Handler, "timeout", 0.5)
    # Half a request line and no more: the server closes; the client's 30 s would be a failure.
    assert raw_exchange(server, f"GET /api/parts HTTP/1.1\r\nHost: 127.0.0.1:{server.port}\r\n".encode()) == b""
    # A Content-Length the body never reaches: the same.
    head = (f"POST /api/mark HTTP/1.1\r\nHost: 127.0.0.1:{server.port}\r\nX-Attnkit-Token: {server.token}\r\n"
            "Content-Type: application/json\r\nContent-Length: 100\r\n\r\n{")
    assert raw_exchange(server, head.encode()) == b""


def test_deeply_nested_json_is_a_400_not_a_dropped_connection(served, capsys):
    server, _, _ = served
    reply = raw_post(server, b"[" * 200_000)
    assert reply.split(b"\r\n")[0] == b"HTTP/1.1 400 Bad Request"
    assert reply.endswith(b'{"error": "the body is not JSON"}')
    assert "Traceback" not in capsys.readouterr().err


@pytest.mark.parametrize("literal", ["NaN", "Infinity", "-Infinity", "1e999"])
def test_nan_and_infinity_are_not_json(served, literal):
    server, _, _ = served
    a = first_answer(server)
    body = json.dumps(mark_body(a, []))[:-1] + f', "adjustment": {literal}}}'
    reply = raw_post(server, body.encode())
    assert b" 400 " in reply.split(b"\r\n")[0] and reply.endswith(b'{"error": "the body is not JSON"}')


@pytest.mark.parametrize("name", ["\u202eevil", "ta\x1b[2J", "zero\u200bwidth", "two\nlines"])
def test_a_grader_name_with_control_or_format_characters_is_refused(served, name):
    server, key, gradebook = served
    a = first_answer(server)
    status, data = api(server, "/api/mark", mark_body(a, ["same_vector"], grader=name))
    assert status == 400 and "control or format" in data["error"]
    with Gradebook(gradebook) as gb:
        assert mark_of(gb, assignment_id(key), a["student"], PROBLEM, PART) is None


def test_a_crash_is_written_to_the_terminal_escaped(served, capsys, monkeypatch):
    server, _, _ = served

    def boom(_query):
        raise RuntimeError("\x1b]0;pwned\x07\x1b[2J from a request")
    monkeypatch.setattr(server.api, "parts", boom)
    status, data = api(server, "/api/parts")
    assert status == 500 and data == {"error": "internal error (see the terminal running attnkit mark)"}
    err = capsys.readouterr().err
    assert "RuntimeError" in err and "\\x1b]0;pwned\\x07" in err
    assert "\x1b" not in err and "\x07" not in err


def test_the_token_never_reaches_the_terminal(served, capsys):
    server, _, _ = served
    request(server, "/", token="query")
    request(server, "/nowhere", token="query")
    request(server, "/api/parts")
    raw_exchange(server, f"BREW /?token={server.token} HTTP/1.1\r\nHost: 127.0.0.1:{server.port}\r\n\r\n".encode())
    captured = capsys.readouterr()
    assert server.token not in captured.err and server.token not in captured.out
