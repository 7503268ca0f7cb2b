"""A one-time page on 127.0.0.1 where a person types the answer to a job's password prompt.

The process that owns the terminal serves it: the terminal host
(:mod:`dsh_magics.host.pages`, opened by the ``page_open`` operation) or an
``--in-process`` MCP server (docs/mcp.md, "Password prompts"). The secret goes
from the person's browser to that process and from there into the terminal
(``Engine.send`` with ``secret=True``, recorded as ``[secret]``, source
``person``); it is never written to the MCP stream, the host's socket, a log
or a result. The page listens only while its prompt is pending: it stops on
the answer, on ``close()``, as soon as the job stops waiting for that prompt
or ends, and when the process that asked for it is gone.

Refused: another path or token (404), a token already used or expired (410),
a ``Host`` header other than this address (DNS rebinding, 421), a foreign
``Origin`` on the answer (403), any method but GET (the form) and POST (the
answer) (405). No CORS header is ever sent, so no other site's script can
read a response.
"""

from __future__ import annotations

import hmac
import html
import logging
import secrets
import threading
from collections.abc import Callable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, HTTPServer
from typing import Any
from urllib.parse import parse_qs

from ..errors import DshError
from ..terminal.api import Engine

log = logging.getLogger(__name__)

#: The only address the page listens on.
LOOPBACK = "127.0.0.1"
#: The longest answer body accepted (a form field with a passphrase).
MAX_BODY = 16_384
#: How often the page looks again whether its prompt still waits, when the
#: terminal shows no new output meanwhile.
RECHECK_S = 1.0


@dataclass(frozen=True)
class SecretPrompt:
    """A job that waits for hidden entry: the page is bound to exactly this."""

    session_id: str
    job_id: str
    pid: int
    prompt: str


def pending_secret(engine: Engine, session_id: str) -> SecretPrompt | None:
    """The session's job that waits for a password now, or None."""
    try:
        info = engine.info(session_id)
    except DshError:
        return None
    waiting = info.awaiting_input
    if not info.running or not info.job_id or not waiting or not waiting.get("secret"):
        return None
    return SecretPrompt(session_id, info.job_id, int(waiting["pid"]), str(waiting["prompt"]))


class AnswerPage:
    """One prompt, one token, one answer. ``url`` is what the person opens.

    ``on_end(outcome)`` is called once when the page stops: ``"answered"``,
    ``"expired"`` (the job stopped waiting or ended) or ``"closed"``.
    ``wanted()`` says whether whoever asked for the page is still there (the
    host checks that the MCP server that opened it lives); once it is False
    the page closes.
    """

    def __init__(
        self,
        engine: Engine,
        prompt: SecretPrompt,
        *,
        on_end: Callable[[str], None] | None = None,
        wanted: Callable[[], bool] | None = None,
    ) -> None:
        self.engine = engine
        self.prompt = prompt
        self._on_end = on_end
        self._wanted = wanted
        self._token = secrets.token_urlsafe(16)  # 128 random bits
        self._lock = threading.Lock()
        self.outcome: str | None = None  # set once, when the page stops
        self._claimed = False
        self._httpd = _Server((LOOPBACK, 0), _Handler, page=self)
        self.port = int(self._httpd.server_address[1])
        self.origin = f"http://{LOOPBACK}:{self.port}"
        self.path = f"/answer/{self._token}"
        self.url = self.origin + self.path
        self._threads = [
            threading.Thread(target=self._httpd.serve_forever, name="dsh-answer-page", daemon=True),
            threading.Thread(target=self._watch, name="dsh-answer-watch", daemon=True),
        ]
        for t in self._threads:
            t.start()

    # -- life ------------------------------------------------------------------
    @property
    def open(self) -> bool:
        return self.outcome is None

    def close(self, outcome: str = "closed") -> None:
        """Stop listening (idempotent); the token is dead from now on."""
        with self._lock:
            if self.outcome is not None:
                return
            self.outcome = outcome
        # shutdown() waits for serve_forever, which may be our caller's thread.
        threading.Thread(target=self._stop, name="dsh-answer-stop", daemon=True).start()
        if self._on_end is not None:
            try:
                self._on_end(outcome)
            except Exception:  # noqa: BLE001 - a listener must not keep the page alive
                # Said, not swallowed; the listener never sees the answer itself.
                log.warning("answer page: the on_end listener failed (%s)", outcome, exc_info=True)

    def _stop(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()

    def settle(self) -> None:
        """Nothing to learn: here ``on_end`` runs as the page ends (a host's
        page is learnt of over its socket, :class:`dsh_magics.host.pages.HostPage`)."""

    def still_pending(self) -> bool:
        return pending_secret(self.engine, self.prompt.session_id) == self.prompt

    def _watch(self) -> None:
        """Expire the page as soon as its prompt no longer waits."""
        sid = self.prompt.session_id
        try:
            seq = self.engine.output_seq(sid)
        except DshError:
            seq = 0  # (the terminal is gone: the first wait below says so and the page expires)
        while self.open:
            if self._wanted is not None and not self._wanted():
                self.close("closed")
                return
            if not self.still_pending():
                self._expire()
                return
            try:
                # Wakes on new output or a note that the job waits; looks
                # again at least every RECHECK_S (a prompt can go silently).
                seq = self.engine.wait_output(sid, seq, timeout=RECHECK_S)
            except DshError:
                self._expire()
                return

    def _expire(self) -> None:
        """The prompt went away. Once an answer is claimed, its delivery
        decides the outcome: the prompt goes away *because* it was answered
        (tests/mcp/test_secret_prompt.py::test_the_agent_is_not_held_by_a_client_that_has_not_replied
        lost that race 1 run in CI)."""
        with self._lock:
            if self._claimed:
                return
        self.close("expired")

    # -- requests ----------------------------------------------------------------
    def token_matches(self, path: str) -> bool:
        return hmac.compare_digest(path.encode("utf-8", "replace"), self.path.encode())

    def answer(self, secret: str) -> tuple[int, str]:
        """Type ``secret`` into the job, once: (HTTP status, text for the person)."""
        with self._lock:
            if self.outcome is not None or self._claimed:
                return 410, _GONE[self.outcome or "answered"]
            self._claimed = True  # single use: claimed before anything else happens
        if not self.still_pending():
            self.close("expired")
            return 410, _GONE["expired"]
        p = self.prompt
        try:
            self.engine.send(
                p.session_id, secret, wait_ms=0, source="person", secret=True, allow_secret=True
            )
        except DshError as e:
            self.close("expired")
            return 409, f"Not delivered ({e.code}); the job may have stopped waiting."
        except BaseException:
            self.close("expired")  # the watcher leaves a claimed page to us
            raise
        finally:
            del secret
        self.close("answered")
        return 200, f"Sent to job {p.job_id}. You can close this page."

    @property
    def used(self) -> bool:
        """Answered, or an answer is being delivered."""
        return self._claimed


_GONE = {
    "answered": "This link was already used.",
    "expired": "The job no longer waits for this answer.",
    "closed": "This link is no longer valid.",
}


class _Server(HTTPServer):
    def __init__(self, address: tuple[str, int], handler: type[BaseHTTPRequestHandler], *, page: AnswerPage) -> None:
        self.page = page
        super().__init__(address, handler)


class _Handler(BaseHTTPRequestHandler):
    server: _Server
    timeout = 30  # a connection that sends nothing does not hold the page
    protocol_version = "HTTP/1.0"

    # Nothing is logged: the request line holds the token.
    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the base's name
        pass  # no request log: the path holds the page's token

    def do_GET(self) -> None:
        if not self._checked():
            return
        p = self.server.page.prompt
        self._send(200, _form(p))

    def do_POST(self) -> None:
        if not self._checked():
            return
        page = self.server.page
        origin = self.headers.get("Origin")
        if origin is not None and origin != page.origin:
            self._send(403, _message("Refused: the answer must come from this page."))
            return
        if not (self.headers.get("Content-Type") or "").startswith("application/x-www-form-urlencoded"):
            self._send(415, _message("Refused: send the form."))
            return
        try:
            length = int(self.headers.get("Content-Length") or "")
        except ValueError:
            length = -1
        if not 0 <= length <= MAX_BODY:
            self._send(413, _message("Refused: the answer is too long."))
            return
        body = self.rfile.read(length).decode("utf-8", "replace")
        fields = parse_qs(body, keep_blank_values=True)
        del body
        values = fields.pop("secret", None)
        if not values or len(values) != 1:
            self._send(400, _message("Refused: no answer in the form."))
            return
        status, text = page.answer(values.pop())
        self._send(status, _message(text))

    def _refuse_method(self) -> None:
        self._send(405, _message("Only GET (the form) and POST (the answer)."), allow=True)

    do_PUT = do_DELETE = do_PATCH = do_OPTIONS = do_HEAD = do_TRACE = do_CONNECT = _refuse_method

    def _checked(self) -> bool:
        """The Host header names this address (DNS rebinding), the path is
        this page's, and the page is still open."""
        page = self.server.page
        if self.headers.get("Host") != f"{LOOPBACK}:{page.port}":
            self._send(421, _message("Refused: wrong Host."))
            return False
        if not page.token_matches(self.path):
            self._send(404, _message("No such page."))
            return False
        if page.outcome is not None or page.used:
            self._send(410, _message(_GONE[page.outcome or "answered"]))
            return False
        if not page.still_pending():
            page.close("expired")
            self._send(410, _message(_GONE["expired"]))
            return False
        return True

    def _send(self, status: int, body: str, *, allow: bool = False) -> None:
        data = body.encode("utf-8")
        self.send_response(status)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(data)))
        self.send_header("Cache-Control", "no-store")
        self.send_header(
            "Content-Security-Policy",
            "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; "
            "frame-ancestors 'none'; base-uri 'none'",
        )
        self.send_header("X-Content-Type-Options", "nosniff")
        self.send_header("X-Frame-Options", "DENY")
        # same-origin, not no-referrer: with no-referrer Chromium posts the form with
        # "Origin: null", which the Origin check refuses (pinned by
        # tests/mcp/test_secret_prompt.py::test_a_person_types_the_password_in_chromium).
        self.send_header("Referrer-Policy", "same-origin")
        if allow:
            self.send_header("Allow", "GET, POST")
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(data)


_STYLE = (
    "body{font-family:sans-serif;max-width:36em;margin:3em auto;padding:0 1em}"
    "pre{background:#f4f4f4;padding:.5em;white-space:pre-wrap;word-break:break-all}"
    "input{font-size:1.1em}"
)


def _page(body: str) -> str:
    return (
        '<!doctype html><html lang="en"><head><meta charset="utf-8">'
        '<meta name="robots" content="noindex"><title>dsh-magics: answer a password prompt</title>'
        f"<style>{_STYLE}</style></head><body>{body}</body></html>"
    )


def _message(text: str) -> str:
    return _page(f'<p id="message">{html.escape(text)}</p>')


def _form(p: SecretPrompt) -> str:
    e = html.escape
    return _page(
        "<h1>A job asks for a password</h1>"
        f"<p>Job <code>{e(p.job_id)}</code> in terminal session <code>{e(p.session_id)}</code> "
        "waits for hidden input. Its prompt:</p>"
        f'<pre id="prompt">{e(p.prompt) or "(no prompt text)"}</pre>'
        "<p>What you type goes straight into that terminal, once; it is not shown to the agent "
        "or its model, and not recorded (the job's record says <code>[secret]</code>).</p>"
        '<form method="post" autocomplete="off">'
        '<label for="secret">Answer</label> '
        '<input type="password" id="secret" name="secret" autocomplete="off" autofocus> '
        '<button type="submit" id="send">Send</button></form>'
    )
