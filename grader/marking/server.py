"""The local marking page's HTTP server (``attnkit mark``): the static page in ``page/`` and
a small JSON API over ``grader.marking.queue`` (what to mark) and ``grader.marks`` (saving).

**Why CPython's own ``http.server``** (``ThreadingHTTPServer``) and not a web framework:
zero new dependencies (a grader's machine installs nothing more, and there is nothing more to
keep patched), it is maintained with the interpreter itself, the tool listens on loopback
only for one course staff at a time (no need for a production server's throughput: a part of
1,000 answers is one query and one response), and we write every response header ourselves,
so each security rule below is a few visible lines rather than a framework setting.

Security — student answers are hostile input, and any web page the TA's browser has open
could try to reach a local server:

- it binds ``127.0.0.1`` only (any other host is refused at construction);
- a random token (``secrets.token_urlsafe(32)``) is needed by every request: the page and its
  static files take it as ``?token=`` (the printed URL), every API call in the
  ``X-Attnkit-Token`` header — the only way a POST is accepted, so a form or a link from
  another site cannot save a grade; compared with ``hmac.compare_digest``; a 403 says nothing;
  the page then takes the token out of the address bar, and a reload opens the page and its
  files with an HttpOnly, SameSite=Strict cookie set with it (never the API);
- a connection idle for ``REQUEST_TIMEOUT`` is closed; JSON nested too deep, NaN and Infinity
  are a 400; a crash is a bare 500, its traceback in the terminal with ``terminal_safe``;
- the ``Host`` header must be ``127.0.0.1:PORT`` or ``localhost:PORT`` (DNS rebinding: 421);
- a POST must be ``application/json``, at most ``MAX_BODY`` bytes (413), and an ``Origin``,
  when the browser sends one, must be this server's;
- every response carries a strict Content-Security-Policy (no inline script or style, nothing
  from elsewhere), ``nosniff``, no referrer, no caching, no framing;
- student text (answers, auto messages, TAs' comments) leaves only as JSON strings, and the
  page puts it in the DOM only with ``textContent``; the only HTML sent is the key's own,
  trusted texts (prompts, rubric texts and notes, the guide), rendered here with
  ``exercises.html.markdown_to_html`` (which passes no raw HTML through) in ``*_html`` fields.

Each POST answers after ``grader.marks`` committed its transaction: what the page was told
is saved survives a kill of this process.
"""

from __future__ import annotations

import hmac
import json
import secrets
import sys
import threading
import traceback
import unicodedata
from collections import Counter
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

from exercises.html import markdown_to_html
from formats.key_shape import assignment_id
from formats.textfile import printable, terminal_safe

from ..gradebook import Gradebook
from ..marks import Conflict, Edit, MarkError, Target, clear, look, save
from .queue import Answer, answer_of, detail, part_queue, parts_to_mark

HOST = "127.0.0.1"
PAGE = Path(__file__).with_name("page")
STATIC = {"/mark.js": "text/javascript; charset=utf-8", "/mark.css": "text/css; charset=utf-8"}
MAX_BODY = 256 * 1024             # bytes of a POST body: a grade with a 10,000-character comment fits
GRADER_LIMIT = 100                # characters of a grader's name
TOKEN_HEADER = "X-Attnkit-Token"
# How long one connection may sit between two reads or writes. Without it a client that sends
# its headers byte by byte, or a Content-Length it never delivers, or a keep-alive connection a
# closed tab left behind, holds its thread (and socket) until the server stops.
REQUEST_TIMEOUT = 30.0            # seconds
COMMENTS_OFFERED = 30             # the most used comments of a part, offered for reuse
SECURITY_HEADERS = {
    "Content-Security-Policy": "default-src 'none'; script-src 'self'; style-src 'self'; "
                               "img-src 'self' data:; connect-src 'self'; base-uri 'none'; "
                               "form-action 'none'; frame-ancestors 'none'",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-store",
    "X-Frame-Options": "DENY",
    "Cross-Origin-Resource-Policy": "same-origin",
}


class ApiError(Exception):
    """A request the API refuses: its HTTP status and the message the page shows."""

    def __init__(self, status: int, message: str, extra: dict | None = None):
        super().__init__(message)
        self.status, self.message, self.extra = status, message, extra or {}


# --- JSON shapes (student text stays text: the page shows it with textContent) ------------------

def _mark_json(mark) -> dict | None:
    if mark is None:
        return None
    return {"active": mark.active, "kind": mark.kind, "items": sorted(mark.items),
            "adjustment": mark.adjustment, "comment": printable(mark.comment),
            "reason": printable(mark.reason), "score": mark.score, "max_score": mark.max_score,
            "grader": printable(mark.grader), "marked_at": mark.marked_at, "version": mark.version}


def _answer_json(a: Answer) -> dict:
    r = a.result
    auto = None if r is None else {"score": r.score, "max_score": r.max_score, "status": r.status,
                                   "message": printable(r.message), "misconception": r.misconception}
    return {"student": a.student, "name": printable(a.name), "position": a.position,
            "text": printable(a.text), "auto": auto, "mark": _mark_json(a.mark), "look": a.look,
            "group": a.group, "version": a.version, "marked": a.marked, "done": a.done}


def _rubric_json(rubric) -> dict:
    return {"items": [{"id": i.id, "points": i.points, "text_html": markdown_to_html(i.text),
                       "note_html": markdown_to_html(i.note)} for i in rubric.items],
            "floor": rubric.floor, "ceiling": rubric.ceiling, "start": rubric.start,
            "guide_html": markdown_to_html(rubric.guide), "version": rubric.version}


def _comments(answers) -> list[str]:
    """The comments already used on this part, the most used first: the page offers them."""
    used = Counter(a.mark.comment for a in answers if a.marked and a.mark.comment.strip())
    return [printable(c) for c, _ in used.most_common(COMMENTS_OFFERED)]


def _history_json(entry) -> dict:
    m = entry.mark
    return {"version": entry.version, "event": entry.event, "grader": printable(entry.grader),
            "at": entry.at, "score": m.get("score"), "items": sorted(m.get("items") or {}),
            "adjustment": m.get("adjustment"), "comment": printable(str(m.get("comment", ""))),
            "note": printable(entry.note)}


# --- the API -------------------------------------------------------------------------------------

class MarkingApi:
    """What each route does, with the gradebook and the key (no HTTP here)."""

    def __init__(self, gradebook: Gradebook, key: dict, deadline=None, grader: str = "ta"):
        self.gb, self.key, self.deadline, self.grader = gradebook, key, deadline, grader
        self._lock = threading.Lock()
        self._writes = 0                  # saves through this server: the parts list is read again after one
        self._parts: tuple[int, list] | None = None

    def parts(self, _query) -> dict:
        """Every part with its progress. Reading it costs a part queue per part (a class of
        1,000 and 43 parts: ~0.6 s), so it is kept until the next save through this server
        (a grade saved elsewhere, by ``attnkit mark import``, shows at the next save or start)."""
        with self._lock:
            writes = self._writes
            if self._parts is None or self._parts[0] != writes:
                self._parts = writes, [
                    {"problem": s.problem, "part": s.part, "title": s.title, "points": s.points,
                     "kind": s.kind, "answers": s.answers, "graded": s.graded}
                    for s in parts_to_mark(self.gb, self.key, self.deadline)]
            parts = self._parts[1]
        return {"assignment": assignment_id(self.key), "grader": self.grader, "parts": parts}

    def _wrote(self) -> None:
        with self._lock:
            self._writes += 1

    def _queue(self, problem: str, part: str):
        try:
            return part_queue(self.gb, self.key, problem, part, self.deadline)
        except KeyError:
            raise ApiError(404, f"no part {problem}/{part} in this assignment") from None

    def part(self, query) -> dict:
        problem, part = _param(query, "problem"), _param(query, "part")
        q = self._queue(problem, part)
        rubric = None
        if q.answers:
            rubric = _rubric_json(detail(self.gb, self.key, problem, part, q.answers[0].student).rubric)
        return {"problem": q.problem, "part": q.part, "title": q.title, "points": q.points,
                "kind": q.kind, "rubric": rubric, "answers": [_answer_json(a) for a in q.answers],
                "groups": [{"key": g.key, "label": g.label, "members": list(g.members)} for g in q.groups],
                "comments": _comments(q.answers)}

    def answer(self, query) -> dict:
        problem, part, student = (_param(query, n) for n in ("problem", "part", "student"))
        try:
            current = answer_of(self.gb, self.key, problem, part, student, self.deadline)
        except KeyError:
            raise ApiError(404, f"no part {problem}/{part} in this assignment") from None
        if current is None:
            raise ApiError(404, f"no answer of {student} to {problem}/{part}")
        d = detail(self.gb, self.key, problem, part, student)
        return {"answer": _answer_json(current), "kind": d.kind,
                "problem_prompt_html": markdown_to_html(d.problem_prompt),
                "part_prompt_html": markdown_to_html(d.part_prompt),
                "givens": [[name, printable(text)] for name, text in d.givens.items()],
                "rubric": _rubric_json(d.rubric), "history": [_history_json(e) for e in d.history]}

    def mark(self, body: dict) -> dict:
        problem, part = _field(body, "problem", str), _field(body, "part", str)
        answers = self._targets(problem, part, body)
        grader = _grader(body, self.grader)
        edit = Edit(tuple(_items(body)), _number(body, "adjustment"), _text(body, "comment"),
                    _text(body, "reason"))
        targets = [Target(a.student, v, a.result) for a, v in answers]
        try:
            saved = save(self.gb, self.key, problem, part, targets, edit, grader)
        except MarkError as err:
            raise ApiError(400, str(err)) from None
        except Conflict as err:
            raise self._conflict(problem, part, answers, err) from None
        self._wrote()
        return {"answers": [_answer_json(_with(a, m)) for (a, _), m in zip(answers, saved)]}

    def clear(self, body: dict) -> dict:
        problem, part = _field(body, "problem", str), _field(body, "part", str)
        answers = self._targets(problem, part, body)
        if len(answers) != 1:
            raise ApiError(400, "clear one answer at a time")
        (a, version), = answers
        try:
            mark = clear(self.gb, self.key, problem, part, Target(a.student, version, a.result),
                         _grader(body, self.grader))
        except Conflict as err:
            raise self._conflict(problem, part, answers, err) from None
        self._wrote()
        return {"answers": [_answer_json(_with(a, mark))]}

    def _targets(self, problem: str, part: str, body: dict) -> list[tuple[Answer, int]]:
        """(the answer as the queue has it now, the version the grader's edit started from)."""
        students = body.get("students")
        if not isinstance(students, list) or not students:
            raise ApiError(400, "students: give a list of {id, version}")
        current = {a.student: a for a in self._queue(problem, part).answers}
        out = []
        for s in students:
            if not isinstance(s, dict) or not isinstance(s.get("id"), str) \
                    or not isinstance(s.get("version"), int) or isinstance(s.get("version"), bool):
                raise ApiError(400, "students: each is {id: text, version: whole number}")
            if s["id"] not in current:
                raise ApiError(400, f"{s['id']}: no answer to {problem}/{part}")
            out.append((current[s["id"]], s["version"]))
        if len({a.student for a, _ in out}) != len(out):
            raise ApiError(400, "students: a student is named twice")
        return out

    def _conflict(self, problem: str, part: str, answers, err: Conflict) -> ApiError:
        """409, with the grades as they stand now, so the page shows them (never overwrites)."""
        now = {a.student: a for a in self._queue(problem, part).answers}
        return ApiError(409, str(err), {"answers": [_answer_json(now[a.student]) for a, _ in answers]})


def _not_json(literal: str):
    # NaN, Infinity, -Infinity: Python's json reads them, JSON (RFC 8259) has no such values,
    # and no score or adjustment can be one.
    raise ValueError(f"{literal} is not JSON")


def _finite(literal: str) -> float:
    value = float(literal)             # 1e999 reads as inf: refused like Infinity
    if value != value or value in (float("inf"), float("-inf")):
        raise ValueError(f"{literal}: not a finite number")
    return value


def _with(a: Answer, mark) -> Answer:
    return Answer(a.student, a.name, a.position, a.text, a.result, mark, look(mark, a.result), a.group)


def _param(query: dict, name: str) -> str:
    values = query.get(name)
    if not values or not values[0]:
        raise ApiError(400, f"missing parameter {name!r}")
    return values[0]


def _field(body: dict, name: str, kind: type):
    value = body.get(name)
    if not isinstance(value, kind) or (kind is str and not value):
        raise ApiError(400, f"{name}: missing or not a {kind.__name__}")
    return value


def _items(body: dict) -> list[str]:
    items = body.get("items", [])
    if not isinstance(items, list) or not all(isinstance(i, str) for i in items):
        raise ApiError(400, "items: give a list of rubric item ids")
    return items


def _number(body: dict, name: str) -> float:
    value = body.get(name, 0)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ApiError(400, f"{name}: must be a number")
    return float(value)


def _text(body: dict, name: str) -> str:
    value = body.get(name, "")
    if not isinstance(value, str):
        raise ApiError(400, f"{name}: must be text")
    return value


def _grader(body: dict, default: str) -> str:
    name = body.get("grader") or default
    if not isinstance(name, str) or len(name.strip()) == 0 or len(name) > GRADER_LIMIT:
        raise ApiError(400, f"grader: a name of 1 to {GRADER_LIMIT} characters")
    # A name is shown in every history line, the conflict box and the reports: control and
    # format characters (ESC, bidi overrides, zero-width ones) there would only disguise who
    # saved a grade, so they are refused rather than stored.
    if any(unicodedata.category(c) in ("Cc", "Cf", "Cs", "Zl", "Zp") for c in name):
        raise ApiError(400, "grader: a name without control or format characters")
    return name.strip()


# --- HTTP --------------------------------------------------------------------------------------

class _Handler(BaseHTTPRequestHandler):
    """One request: Host, token and body checked before any route runs."""

    server_version = "attnkit-mark"
    sys_version = ""
    protocol_version = "HTTP/1.1"
    routes_get = {"/api/parts": "parts", "/api/part": "part", "/api/answer": "answer"}
    routes_post = {"/api/mark": "mark", "/api/clear": "clear"}
    timeout = REQUEST_TIMEOUT             # StreamRequestHandler sets it on the connection's socket

    @property
    def app(self) -> "MarkingServer":
        return self.server.app                           # type: ignore[attr-defined]

    def log_message(self, format, *args) -> None:        # noqa: A002 — the base class's name
        pass    # a request line holds the token: never logged

    def do_GET(self) -> None:
        url = urlsplit(self.path)
        if not self._host_ok():
            return self._plain(421, "misdirected request")
        query = parse_qs(url.query)
        if url.path in self.routes_get:
            if not self._token_ok(self.headers.get(TOKEN_HEADER)):
                return self._plain(403, "forbidden")
            return self._api(lambda: getattr(self.app.api, self.routes_get[url.path])(query))
        in_url = (query.get("token") or [None])[0]
        if not self._token_ok(in_url or self.headers.get(TOKEN_HEADER) or self._cookie_token()):
            return self._plain(403, "forbidden")
        if url.path == "/":
            # The page takes the token out of the address bar (history.replaceState: no
            # screen share, bookmark or history entry shows it); a reload then proves it with
            # this cookie — HttpOnly (no script reads it), SameSite=Strict (no other site's
            # link or form sends it), named by the port (cookies are not kept apart by port).
            # It opens the page and its files only: the API still wants the header.
            cookie = None if in_url is None else \
                f"{self.app.cookie_name}={self.app.token}; Path=/; HttpOnly; SameSite=Strict"
            return self._send(200, self.app.index_html(), "text/html; charset=utf-8", cookie=cookie)
        if url.path in STATIC:
            return self._send(200, (PAGE / url.path[1:]).read_bytes(), STATIC[url.path])
        return self._plain(404, "not found")

    def do_POST(self) -> None:
        url = urlsplit(self.path)
        if not self._host_ok():
            return self._plain(421, "misdirected request", close=True)
        if not self._token_ok(self.headers.get(TOKEN_HEADER)) or not self._origin_ok():
            return self._plain(403, "forbidden", close=True)
        if url.path not in self.routes_post:
            return self._plain(404, "not found", close=True)
        body = self._body()
        if body is not None:
            self._api(lambda: getattr(self.app.api, self.routes_post[url.path])(body))

    def _cookie_token(self) -> str | None:
        # Split by hand: http.cookies stops at the first cookie it cannot parse, and every
        # other program on 127.0.0.1 (any port) shares this cookie jar.
        for header in self.headers.get_all("Cookie") or []:
            for pair in header.split(";"):
                name, _, value = pair.strip().partition("=")
                if name == self.app.cookie_name:
                    return value
        return None

    def _body(self) -> dict | None:
        """The POST's JSON object, or None after answering why not (411, 413, 415, 400)."""
        kind = (self.headers.get("Content-Type") or "").split(";")[0].strip().lower()
        if kind != "application/json":
            return self._plain(415, "send application/json", close=True)
        try:
            length = int(self.headers.get("Content-Length", ""))
        except ValueError:
            return self._plain(411, "Content-Length required", close=True)
        if length < 0 or length > MAX_BODY:
            return self._plain(413, f"at most {MAX_BODY} bytes", close=True)
        try:
            body = json.loads(self.rfile.read(length).decode("utf-8"),
                              parse_constant=_not_json, parse_float=_finite)
        except (UnicodeDecodeError, ValueError, RecursionError):
            # RecursionError: 256 KB of "[" nests deeper than the parser recurses; uncaught, it
            # left the request unanswered and a traceback in the TA's terminal.
            return self._json(400, {"error": "the body is not JSON"})
        if not isinstance(body, dict):
            return self._json(400, {"error": "the body must be a JSON object"})
        return body

    def _api(self, call) -> None:
        try:
            self._json(200, call())
        except ApiError as err:
            self._json(err.status, {"error": err.message, **err.extra})
        except ConnectionError:
            self.close_connection = True      # the browser went away (a reload, another page)
        except Exception:  # noqa: BLE001 — a bug answers 500, and says nothing of the gradebook
            _report_crash()                   # in the terminal first, then the page is told
            self._json(500, {"error": "internal error (see the terminal running attnkit mark)"})

    def _host_ok(self) -> bool:
        host = (self.headers.get("Host") or "").lower()
        return host in (f"127.0.0.1:{self.app.port}", f"localhost:{self.app.port}")

    def _origin_ok(self) -> bool:
        origin = self.headers.get("Origin")
        return origin is None or origin.lower() in (f"http://127.0.0.1:{self.app.port}",
                                                    f"http://localhost:{self.app.port}")

    def _token_ok(self, given: str | None) -> bool:
        return given is not None and hmac.compare_digest(given.encode("utf-8", "surrogatepass"),
                                                         self.app.token.encode())

    def _json(self, status: int, payload: dict) -> None:
        # <, > and & escaped even inside JSON strings: no byte of a response reads as markup.
        text = json.dumps(payload, ensure_ascii=True, allow_nan=False)
        text = text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
        self._send(status, text.encode("ascii"), "application/json; charset=utf-8")

    def _plain(self, status: int, text: str, close: bool = False) -> None:
        self._send(status, (text + "\n").encode(), "text/plain; charset=utf-8", close)

    def send_error(self, code, message=None, explain=None) -> None:
        # http.server's own errors (a malformed request line, an unknown method): our headers, no
        # HTML; with a status line even when the request line was too broken to name a version.
        self.request_version = self.protocol_version
        self._plain(code, HTTPStatus(code).phrase.lower(), close=True)

    def _send(self, status: int, body: bytes, kind: str, close: bool = False,
              cookie: str | None = None) -> None:
        self.send_response(status)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        for name, value in SECURITY_HEADERS.items():
            self.send_header(name, value)
        if cookie:
            self.send_header("Set-Cookie", cookie)
        if close:
            self.send_header("Connection", "close")
            self.close_connection = True
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)


def _report_crash() -> None:
    # socketserver prints a traceback raw; an exception's message can quote a request (a
    # student id, a comment): shown with terminal_safe, so no escape sequence in it runs.
    print("attnkit mark: a request failed:\n" + terminal_safe(traceback.format_exc()),
          file=sys.stderr, flush=True)


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = False
    app: "MarkingServer"

    def handle_error(self, request, client_address) -> None:
        # A request still running while the server stops meets a closed gradebook: not a bug.
        if self.app.closing or isinstance(sys.exc_info()[1], (ConnectionError, TimeoutError)):
            return
        _report_crash()


class MarkingServer:
    """The marking page for one assignment, on http://127.0.0.1:PORT/ (``port`` 0: any free
    port), until ``shutdown``. ``url`` carries the access token."""

    def __init__(self, gradebook_path, key: dict, deadline=None, grader: str = "ta", port: int = 0,
                 token: str | None = None, host: str = HOST):
        if host != HOST:
            raise ValueError(f"the marking page listens on {HOST} only, not {host!r}")
        self.token = token or secrets.token_urlsafe(32)
        self.gradebook = Gradebook(gradebook_path)
        self.api = MarkingApi(self.gradebook, key, deadline, grader)
        try:
            self._httpd = _Server((HOST, port), _Handler)
        except BaseException:
            self.gradebook.close()
            raise
        self._httpd.app = self
        self.port = self._httpd.server_address[1]
        self._serving = threading.Event()
        self.closing = False
        self._index = (PAGE / "index.html").read_text(encoding="utf-8")

    @property
    def cookie_name(self) -> str:
        return f"attnkit-mark-{self.port}"

    @property
    def url(self) -> str:
        return f"http://{HOST}:{self.port}/?token={self.token}"

    def index_html(self) -> bytes:
        """The page, with the token its script and static links need (URL-safe characters only)."""
        return self._index.replace("__TOKEN__", self.token).encode("utf-8")

    def serve_forever(self) -> None:
        self._serving.set()
        try:
            self._httpd.serve_forever(poll_interval=0.2)
        finally:
            self._serving.clear()

    def shutdown(self) -> None:
        """Stop serving (from another thread, or after ``serve_forever`` returned) and close
        the socket and the gradebook."""
        self.closing = True
        if self._serving.is_set():
            self._httpd.shutdown()
        self._httpd.server_close()
        self.gradebook.close()

    def __enter__(self) -> "MarkingServer":
        return self

    def __exit__(self, *exc) -> None:
        self.shutdown()
