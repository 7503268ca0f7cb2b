"""A person answers an agent's password prompt through the MCP client (docs/mcp.md).

When a tool result shows the agent's job waiting for hidden input, and the
client declared URL-mode elicitation, the server asks the client once per
prompt to send the person to a one-time page on 127.0.0.1
(:mod:`dsh_magics.answer.page`), served by the process that owns the
terminal: the terminal host (``open_page``, :meth:`HostClient.open_answer_page`)
or this process for ``--in-process`` terminals. Without URL elicitation, the result says how a person
can answer instead (``dsh-magics answer SESSION``, or the notebook panel).
The secret never passes through the client, the model or this module.
"""

from __future__ import annotations

import asyncio
import logging
import secrets
import threading
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from ..answer.page import AnswerPage, SecretPrompt, pending_secret
from ..errors import DshError
from ..terminal.api import Engine
from ..terminal.deadline import Deadline

log = logging.getLogger(__name__)

#: Longest an agent's call waits for the client's reply to a URL elicitation.
REPLY_S = 600.0
#: Said in the next job result once a person answered through the page.
ANSWERED_NOTE = "a person answered the password prompt (the answer is not shown to you)"


def url_elicitation(ctx: Any) -> bool:
    """Did the client declare URL-mode elicitation? (An empty ``elicitation``
    object means form mode only, which must not carry secrets.)"""
    try:
        caps = ctx.session.client_params.capabilities
    except AttributeError:
        return False
    elicitation = getattr(caps, "elicitation", None)
    return elicitation is not None and getattr(elicitation, "url", None) is not None


def modern(ctx: Any) -> bool:
    """Is the request on 2026-07-28 or later (no server-initiated requests)?"""
    return getattr(ctx, "protocol_version", None) in MODERN_PROTOCOL_VERSIONS


@dataclass(frozen=True)
class UrlRequest:
    """A URL-mode elicitation to return in a call's result (2026-07-28):
    ``nonce`` names it in the sealed request state, once."""

    prompt: SecretPrompt
    nonce: str
    message: str
    url: str


class Page(Protocol):
    """An open answer page, wherever it is served."""

    url: str

    @property
    def open(self) -> bool: ...

    def close(self) -> None: ...

    def settle(self) -> None: ...


#: Opens a page for a prompt; ``on_end(outcome)`` is called once when it ends.
PageOpener = Callable[[SecretPrompt, Callable[[str], None]], Page]


class PersonAnswers:
    """The prompts this server asked a person about, and what became of them.

    ``host`` is the terminal host's name, or None when the terminals live in
    this process (then no other program can reach them). ``open_page``
    opens the page where the terminal lives (the host's
    ``open_answer_page``); by default this process serves it.
    """

    def __init__(self, engine: Engine, host: str | None, open_page: PageOpener | None = None) -> None:
        self.engine = engine
        self.host = host
        self._open_page: PageOpener = open_page or (
            lambda prompt, on_end: AnswerPage(engine, prompt, on_end=on_end)
        )
        self._lock = threading.Lock()
        self._asked: dict[SecretPrompt, str] = {}  # prompt -> asked/accepted/declined/cancelled/failed
        self._pages: dict[SecretPrompt, Page] = {}
        self._answered: set[str] = set()  # job ids whose prompt a person answered, not yet reported
        self._requests: dict[str, SecretPrompt] = {}  # nonce -> prompt of a request returned in a result
        self._ending: dict[SecretPrompt, threading.Event] = {}  # set when the prompt's page ended

    def close(self) -> None:
        with self._lock:
            pages = list(self._pages.values())
        for page in pages:
            page.close()

    def how_to_answer(self, session_id: str) -> str:
        """What a person can do when the client cannot ask them (no URL elicitation)."""
        if self.host is None:
            return (
                "a person must answer it; this client offers no URL elicitation, and the "
                "terminals of this server (--in-process) are reachable from nowhere else: "
                "interrupt the job (bash_interrupt), or run the server on a terminal host"
            )
        flag = "" if self.host == "mcp" else f" --host {self.host}"
        return (
            f"a person can answer it: `dsh-magics answer {session_id}{flag}` (hidden entry) or "
            f"`dsh-magics attach {session_id}{flag}` (the terminal itself) in a terminal on this "
            f"machine, or the password box of `%bash_panel --session {session_id}` in a notebook "
            f"on host {self.host}"
        )

    def take_answered(self, job_id: str) -> bool:
        """Was the job's prompt answered by a person since the last report? (Once.)"""
        with self._lock:
            if job_id in self._answered:
                self._answered.discard(job_id)
                return True
            return False

    async def ask(self, ctx: Any, prompt: SecretPrompt, run_blocking: Any) -> str | UrlRequest:
        """Ask the client to send a person to a one-time page for ``prompt``:
        the note for the agent's result, or (on 2026-07-28, which has no
        server-initiated requests) the request to return in the call's result."""
        if not url_elicitation(ctx):
            return self.how_to_answer(prompt.session_id)
        with self._lock:
            before = self._asked.get(prompt)
            if before is None:
                self._asked[prompt] = "asked"
        if before is not None:
            return _ALREADY[before] if before in _ALREADY else self.how_to_answer(prompt.session_id)
        loop = asyncio.get_running_loop()
        back_channel = not modern(ctx)
        elicitation_id = uuid.uuid4().hex
        session = ctx.session

        page_ended = asyncio.Event()
        gone = threading.Event()
        with self._lock:
            self._ending[prompt] = gone

        def ended(outcome: str) -> None:
            with self._lock:
                self._pages.pop(prompt, None)
                self._ending.pop(prompt, None)
                if outcome == "answered":
                    self._answered.add(prompt.job_id)
            gone.set()
            try:
                loop.call_soon_threadsafe(page_ended.set)
                if outcome == "answered" and back_channel:
                    loop.call_soon_threadsafe(_complete, session, elicitation_id)
            except RuntimeError:
                return  # the loop is closed: the server is gone, nobody waits for the page

        try:
            page = await run_blocking(lambda: self._open_page(prompt, ended))
        except DshError as e:  # the prompt went away meanwhile, or the host did
            with self._lock:
                self._asked[prompt] = "failed"
                self._ending.pop(prompt, None)
            return f"no link could be opened ({e.code}: {e.message}); " + self.how_to_answer(prompt.session_id)
        with self._lock:
            if page.open:
                self._pages[prompt] = page
        message = (
            f"A job of the agent asks for a password (job {prompt.job_id} in terminal session "
            f"{prompt.session_id}, prompt {prompt.prompt[-80:]!r}). Open this link to answer it; "
            "what you type there goes straight into the terminal, never to the agent."
        )
        if not back_channel:
            nonce = secrets.token_urlsafe(16)
            with self._lock:
                self._requests[nonce] = prompt
            return UrlRequest(prompt, nonce, message, page.url)
        # The agent's call waits for the client's reply, or less: until the
        # page ends (answered there, or the prompt went away), at most REPLY_S.
        asking = asyncio.ensure_future(
            session.elicit_url(message, page.url, elicitation_id, related_request_id=ctx.request_id)
        )
        watching = asyncio.ensure_future(page_ended.wait())
        try:
            await asyncio.wait({asking, watching}, timeout=REPLY_S, return_when=asyncio.FIRST_COMPLETED)
        finally:
            watching.cancel()
        if not asking.done():
            asking.cancel()  # the reply no longer matters (or is overdue)
            return self._outcome_note(prompt, None)
        try:
            action = str(asking.result().action)
        except Exception as e:  # noqa: BLE001 - a client that fails the request
            await run_blocking(page.close)
            with self._lock:
                self._asked[prompt] = "failed"
            return f"the client could not ask a person ({type(e).__name__}); " + self.how_to_answer(
                prompt.session_id
            )
        return await self.replied(prompt, action, run_blocking, page)

    def wait_pages_of(self, job_id: str, timeout_ms: int) -> None:
        """Block until the pages opened for the job's prompts have ended
        (answered, expired or closed), at most ``timeout_ms`` in all; at
        once if there are none. A job that ends right after a person's
        answer can be seen done before its page reports the answer."""
        deadline = Deadline.after_ms(timeout_ms)
        with self._lock:
            ending = [gone for prompt, gone in self._ending.items() if prompt.job_id == job_id]
        for gone in ending:
            gone.wait(deadline.left_s())

    def take_request(self, nonce: str, job_id: str) -> SecretPrompt | None:
        """The prompt of an input request this server returned, once: a
        second retry with the same state finds nothing (a replay)."""
        with self._lock:
            prompt = self._requests.get(nonce)
            if prompt is None or prompt.job_id != job_id:
                return None
            del self._requests[nonce]
            return prompt

    async def replied(
        self,
        prompt: SecretPrompt,
        action: str,
        run_blocking: Any,
        page: Page | None = None,
        *,
        keep_answered: bool = False,
    ) -> str:
        """The client's reply to the request for ``prompt`` (its page, if
        still held): the note. ``keep_answered`` leaves a person's answer to
        be reported again in the job's next result (a task's final result)."""
        if page is None:
            with self._lock:
                page = self._pages.get(prompt)
        if page is not None:
            # Declined: nothing listens any more. Accepted: the person's browser
            # may have had the page's reply before this process heard the page
            # end (a host's page): ask once.
            await run_blocking(page.close if action != "accept" else page.settle)
        return self._outcome_note(prompt, action, consume=not keep_answered)

    def _outcome_note(self, prompt: SecretPrompt, action: str | None, consume: bool = True) -> str:
        """The note once the client replied (``action``) or the page ended first (None)."""
        with self._lock:
            if action is not None:
                self._asked[prompt] = "accepted" if action == "accept" else action
            answered = prompt.job_id in self._answered
            if answered and consume:
                self._answered.discard(prompt.job_id)
            page_open = prompt in self._pages
        if answered:
            return ANSWERED_NOTE
        if action is None:
            if page_open:
                return _ALREADY["asked"]
            return "the password prompt went away before a person answered through the link"
        return _ALREADY.get(action, _ALREADY["cancel"]) if action != "accept" else _ALREADY["accepted"]

    async def notes_for(
        self, ctx: Any, result: dict[str, Any], run_blocking: Any
    ) -> tuple[list[str], UrlRequest | None]:
        """Notes for a job result (or a SECRET_INPUT error's job): a person's
        answer since the last result, and a secret prompt to route to one;
        on 2026-07-28, the request that routes it (returned in the call's result)."""
        notes: list[str] = []
        job_id = result.get("job_id")
        if isinstance(job_id, str) and "output" in result and self.take_answered(job_id):
            notes.append(ANSWERED_NOTE)
        waiting = result.get("awaiting_input")
        session_id = result.get("session_id")
        if isinstance(waiting, dict) and waiting.get("secret") and isinstance(session_id, str):
            prompt = await run_blocking(lambda: pending_secret(self.engine, session_id))
            if prompt is not None and prompt.job_id == job_id:
                asked = await self.ask(ctx, prompt, run_blocking)
                if isinstance(asked, UrlRequest):
                    return notes, asked
                notes.append(asked)
        return notes, None


_ALREADY = {
    "asked": (
        "a person is being asked to answer the password prompt (a one-time link, valid while "
        "the job waits); bash_wait with on_input=false waits until the job goes on"
    ),
    "accepted": (
        "a person was sent to a one-time link to answer the password prompt; bash_wait with "
        "on_input=false waits until the job goes on (its result says when a person answered)"
    ),
    "decline": (
        "the person declined to answer the password prompt; the job keeps waiting "
        "(bash_interrupt stops it)"
    ),
    "cancel": (
        "the person dismissed the request to answer the password prompt; the job keeps "
        "waiting (bash_interrupt stops it)"
    ),
}


def _complete(session: Any, elicitation_id: str) -> None:
    """Tell the client the URL elicitation is done (best effort)."""

    async def send() -> None:
        try:
            await session.send_elicit_complete(elicitation_id)
        except Exception:  # noqa: BLE001 - a client gone, or one that refuses it: a hint only
            log.debug("elicitation/complete not delivered", exc_info=True)

    asyncio.ensure_future(send())


__all__ = ["ANSWERED_NOTE", "PersonAnswers", "UrlRequest", "modern", "url_elicitation"]
