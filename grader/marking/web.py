"""The local marking page's HTTP server (``attnkit mark``): the static page in ``page/`` and
the JSON API of ``grader.marking.api``, behind the rules below.

**Why CPython's own ``http.server``** (``ThreadingHTTPServer``) and not a web framework:
zero new dependencies (a grader's machine installs nothing more, and there is nothing more to
keep patched), it is maintained with the interpreter itself, the tool listens on loopback
only for one course staff at a time (no need for a production server's throughput: a part of
1,000 answers is one query and one response), and we write every response header ourselves,
so each security rule below is a few visible lines rather than a framework setting.

Security — student answers are hostile input, and any web page the TA's browser has open
could try to reach a local server:

- it binds ``127.0.0.1`` only (any other host is refused at construction);
- a random token (``secrets.token_urlsafe(32)``) is needed by every API call, in the
  ``X-Attnkit-Token`` header — the only way a request is accepted, so a form or a link from
  another site cannot read or save a grade; compared with ``hmac.compare_digest``; a 403 says
  nothing. The page and its two files hold no secret and are served to anyone on loopback;
  the printed URL carries the token as ``?token=`` (a wrong one is a 403), and the page's
  script keeps it in ``sessionStorage`` — which only this origin, this port, can read — and
  takes it out of the address bar, so a reload of the tab still works. **No cookie**: a
  browser sends a host's cookies to every port of it, so any other server on 127.0.0.1 would
  receive whatever a cookie carried;
- a request has ``request_seconds`` from its first byte to its answer (a client that trickles
  its headers a byte at a time, or never sends the body it announced, is cut there, however
  lively each read), at most ``max_connections`` are served at once (one more is answered
  503 and closed, without a thread), and the listen backlog takes a burst of saves; JSON
  nested too deep, NaN and Infinity are a 400; a crash is a bare 500, its traceback in the
  terminal with ``terminal_safe``;
- the ``Host`` header must be ``127.0.0.1:PORT`` or ``localhost:PORT`` (DNS rebinding: 421);
- a POST must be ``application/json``, at most ``MAX_BODY`` bytes (413), and an ``Origin``,
  when the browser sends one, must be this server's;
- every response carries a strict Content-Security-Policy (no inline script or style, nothing
  from elsewhere), ``nosniff``, no referrer, no caching, no framing;
- student text leaves only as JSON strings (``grader.marking.api`` says how it is shown), and
  every JSON response escapes ``<``, ``>`` and ``&`` even inside strings.

Each POST answers after ``grader.store.marks`` committed its transaction: what the page was told
is saved survives a kill of this process.
"""

from __future__ import annotations

import hmac
import json
import secrets
import socket
import sys
import threading
import time
import traceback
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

from formats.textfile import terminal_safe

from grader.store.gradebook import Gradebook
from grader.store.marks import rescore
from .api import ApiError, MarkingApi

HOST = "127.0.0.1"
PAGE = Path(__file__).with_name("page")
STATIC = {"/mark.js": "text/javascript; charset=utf-8", "/mark.css": "text/css; charset=utf-8"}
MAX_BODY = 256 * 1024             # bytes of a POST body: a grade with a 10,000-character comment fits
TOKEN_HEADER = "X-Attnkit-Token"
# How long a request may take, from the moment its connection waits for it to its answer.
# Without a bound a client that sends its headers byte by byte, or a Content-Length it never
# delivers, or a keep-alive connection a closed tab left behind, holds its thread (and socket)
# until the server stops.
REQUEST_SECONDS = 30.0
MAX_CONNECTIONS = 64              # served at once: a few tabs of a few TAs, each up to 6 connections
BACKLOG = 128                     # connections the kernel queues before accept: a burst of saves
BUSY = (b"HTTP/1.1 503 Service Unavailable\r\nContent-Type: text/plain; charset=utf-8\r\n"
        b"Content-Length: 5\r\nRetry-After: 1\r\nConnection: close\r\n\r\nbusy\n")
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


def _not_json(literal: str):
    # NaN, Infinity, -Infinity: Python's json reads them, JSON (RFC 8259) has no such values,
    # and no score or adjustment can be one.
    raise ValueError(f"{literal} is not JSON")


def _finite(literal: str) -> float:
    value = float(literal)             # 1e999 reads as inf: refused like Infinity
    if value != value or value in (float("inf"), float("-inf")):
        raise ValueError(f"{literal}: not a finite number")
    return value


# --- HTTP --------------------------------------------------------------------------------------

class _Handler(BaseHTTPRequestHandler):
    """One request: Host, token and body checked before any route runs."""

    server_version = "attnkit-mark"
    sys_version = ""
    protocol_version = "HTTP/1.1"
    routes_get = {"/api/parts": "parts", "/api/part": "part", "/api/answer": "answer"}
    routes_post = {"/api/mark": "mark", "/api/clear": "clear"}
    timeout = REQUEST_SECONDS             # a read or write alone (the request's own deadline: _Server)

    @property
    def app(self) -> "MarkingPage":
        return self.server.app                           # type: ignore[attr-defined]

    def log_message(self, format, *args) -> None:        # noqa: A002 — the base class's name
        pass    # a request line holds the token: never logged

    def handle_one_request(self) -> None:
        self.server.starts(self.connection)              # this request's deadline (keep-alive: each)
        super().handle_one_request()

    def do_GET(self) -> None:
        url = urlsplit(self.path)
        if not self._host_ok():
            return self._plain(421, "misdirected request")
        query = parse_qs(url.query)
        if url.path in self.routes_get:
            if not self._token_ok(self.headers.get(TOKEN_HEADER)):
                return self._plain(403, "forbidden")
            return self._api(lambda: getattr(self.app.api, self.routes_get[url.path])(query))
        in_url = query.get("token")
        if in_url is not None and not self._token_ok(in_url[0]):
            return self._plain(403, "forbidden")          # a wrong address: said at once, not by the API
        if url.path == "/":
            return self._send(200, self.app.index, "text/html; charset=utf-8")
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

    def _send(self, status: int, body: bytes, kind: str, close: bool = False) -> None:
        self.send_response(status)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        for name, value in SECURITY_HEADERS.items():
            self.send_header(name, value)
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
    """A thread per connection, at most ``max_connections`` of them, each request within
    ``request_seconds`` of its start: a watch thread shuts the socket of one past its deadline,
    which ends whatever read or write its thread was blocked in."""

    daemon_threads = True
    allow_reuse_address = False
    request_queue_size = BACKLOG
    app: "MarkingPage"

    def __init__(self, address, handler, max_connections: int, request_seconds: float):
        super().__init__(address, handler)
        self.max_connections, self.request_seconds = max_connections, request_seconds
        self.deadlines: dict[socket.socket, float] = {}   # each open connection → its request's deadline
        self._guard = threading.Lock()
        self._stopped = threading.Event()
        threading.Thread(target=self._watch, name="attnkit-mark-deadlines", daemon=True).start()

    def process_request(self, request, client_address) -> None:
        with self._guard:
            full = len(self.deadlines) >= self.max_connections
            if not full:
                self.deadlines[request] = time.monotonic() + self.request_seconds
        if not full:
            return super().process_request(request, client_address)
        try:
            request.sendall(BUSY)               # a few bytes into an empty send buffer: never blocks
        except OSError:
            pass
        self.shutdown_request(request)

    def starts(self, request) -> None:
        """A request begins on ``request``'s connection: its time runs from now."""
        with self._guard:
            if request in self.deadlines:
                self.deadlines[request] = time.monotonic() + self.request_seconds

    def shutdown_request(self, request) -> None:
        with self._guard:
            self.deadlines.pop(request, None)
        super().shutdown_request(request)

    def _watch(self) -> None:
        tick = min(0.1, self.request_seconds / 5)
        while not self._stopped.wait(tick):
            now = time.monotonic()
            with self._guard:
                late = [r for r, t in self.deadlines.items() if t < now]
                for r in late:
                    self.deadlines[r] = float("inf")       # shut once; its thread removes it
            for r in late:
                try:
                    r.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass

    def server_close(self) -> None:
        self._stopped.set()
        super().server_close()

    def handle_error(self, request, client_address) -> None:
        # A request still running while the server stops meets a closed gradebook: not a bug;
        # nor is a connection its deadline shut.
        if self.app.closing or isinstance(sys.exc_info()[1], OSError):
            return
        _report_crash()


class MarkingPage:
    """The marking page for one assignment, on http://127.0.0.1:PORT/ (``port`` 0: any free
    port), until ``shutdown``. ``url`` carries the access token."""

    def __init__(self, gradebook_path, key: dict, deadline=None, grader: str = "ta", port: int = 0,
                 token: str | None = None, host: str = HOST, max_connections: int = MAX_CONNECTIONS,
                 request_seconds: float = REQUEST_SECONDS):
        if host != HOST:
            raise ValueError(f"the marking page listens on {HOST} only, not {host!r}")
        self.token = token or secrets.token_urlsafe(32)
        self.gradebook = Gradebook(gradebook_path)
        try:
            # grades made under an older version of a rubric, re-scored before anyone sees them
            self.rescored = rescore(self.gradebook, key)
            self.api = MarkingApi(self.gradebook, key, deadline, grader)
            self._httpd = _Server((HOST, port), _Handler, max_connections, request_seconds)
        except BaseException:
            self.gradebook.close()
            raise
        self._httpd.app = self
        self.port = self._httpd.server_address[1]
        self._serving = threading.Event()
        self.closing = False
        self.index = (PAGE / "index.html").read_bytes()

    @property
    def connections(self) -> int:
        """Connections being served now."""
        return len(self._httpd.deadlines)

    @property
    def url(self) -> str:
        return f"http://{HOST}:{self.port}/?token={self.token}"

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

    def __enter__(self) -> "MarkingPage":
        return self

    def __exit__(self, *exc) -> None:
        self.shutdown()
