"""Answer pages served by the host: the process that owns the terminal serves
the one-time page where a person answers a job's password prompt.

:class:`PageTable` is the host's side (operations ``page_open``,
``page_wait``, ``page_close``); :class:`HostPage` is a client's handle on
one page: its URL, and ``on_end(outcome)`` once the host says the page
ended. The secret goes from the browser to the host and into the terminal;
it never travels on the host's socket (docs/host.md, docs/security.md).
"""

from __future__ import annotations

import logging
import secrets
import threading
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

from ..answer.page import AnswerPage, SecretPrompt, pending_secret
from ..errors import DshError, InvalidArgument, NotRunning
from ..terminal.api import Engine

log = logging.getLogger(__name__)

#: Outcomes of ended pages kept for a late ``page_wait`` (oldest dropped first).
KEEP_ENDED = 256

#: Longest one ``page_wait`` request of :class:`HostPage` asks the host to
#: block (the host caps requests anyway); it asks again until the page ends.
WAIT_SLICE_S = 25.0


class _Entry:
    def __init__(self) -> None:
        self.ended = threading.Event()
        self.outcome: str | None = None
        self.page: AnswerPage | None = None


class PageTable:
    """The pages this host serves, by a random id that only the opener knows."""

    def __init__(self, engine: Engine, alive: Callable[[int], bool]) -> None:
        self.engine = engine
        self._alive = alive
        self._lock = threading.Lock()
        self._entries: OrderedDict[str, _Entry] = OrderedDict()

    def open(self, session_id: str, job_id: str, owner_pid: int) -> dict[str, Any]:
        """A page for the password prompt ``job_id`` waits at in ``session_id``
        now; it closes with the prompt, or once ``owner_pid`` is gone."""
        prompt = pending_secret(self.engine, session_id)
        if prompt is None or prompt.job_id != job_id:
            raise NotRunning(
                f"job {job_id!r} in session {session_id!r} does not wait for a password now",
                session_id=session_id,
                job_id=job_id,
            )
        page_id = secrets.token_hex(16)
        entry = _Entry()
        with self._lock:
            self._entries[page_id] = entry
        entry.page = AnswerPage(
            self.engine,
            prompt,
            on_end=lambda outcome: self._ended(page_id, outcome),
            wanted=lambda: self._alive(owner_pid),
        )
        return {
            "page": page_id,
            "url": entry.page.url,
            "prompt": {"session_id": prompt.session_id, "job_id": prompt.job_id, "pid": prompt.pid, "prompt": prompt.prompt},
        }

    def _ended(self, page_id: str, outcome: str) -> None:
        with self._lock:
            entry = self._entries.get(page_id)
            if entry is None:
                return
            entry.outcome = outcome
            entry.page = None
            ended = [k for k, e in self._entries.items() if e.outcome is not None]
            for k in ended[: max(0, len(ended) - KEEP_ENDED)]:
                del self._entries[k]
        entry.ended.set()

    def _entry(self, page_id: str) -> _Entry:
        with self._lock:
            entry = self._entries.get(page_id)
        if entry is None:
            raise InvalidArgument(f"no answer page {page_id!r} in this host", field="page")
        return entry

    def wait(self, page_id: str, timeout: float) -> str | None:
        """The page's outcome once it ended (within ``timeout`` seconds), else None."""
        entry = self._entry(page_id)
        entry.ended.wait(timeout)
        return entry.outcome

    def close(self, page_id: str) -> bool:
        """Stop the page (it answers nothing from now on); False if it had ended."""
        entry = self._entry(page_id)
        page = entry.page
        if page is None:
            return False
        page.close()
        return True

    def close_all(self) -> None:
        with self._lock:
            pages = [e.page for e in self._entries.values() if e.page is not None]
        for page in pages:
            page.close()


class HostPage:
    """A client's handle on a page the host serves for ``prompt``.

    ``call(op, **args)`` makes a host request. A daemon thread waits for the
    page's end in slices and calls ``on_end(outcome)`` once (``"closed"``
    too if the host is lost).
    """

    def __init__(
        self,
        call: Callable[..., Any],
        prompt: SecretPrompt,
        *,
        on_end: Callable[[str], None] | None = None,
    ) -> None:
        self._call = call
        self._on_end = on_end
        self._lock = threading.Lock()
        self.outcome: str | None = None
        value = call("page_open", session_id=prompt.session_id, job_id=prompt.job_id)
        self.id = str(value["page"])
        self.url = str(value["url"])
        bound = value.get("prompt") or {}
        self.prompt = SecretPrompt(
            str(bound.get("session_id")), str(bound.get("job_id")), int(bound.get("pid") or 0), str(bound.get("prompt"))
        )
        if self.prompt != prompt:
            # The job moved on to another prompt between our look and the host's.
            self.close()
            raise NotRunning(
                f"job {prompt.job_id!r} no longer waits at the prompt it was asked about",
                session_id=prompt.session_id,
                job_id=prompt.job_id,
            )
        threading.Thread(target=self._watch, name="dsh-answer-page-wait", daemon=True).start()

    @property
    def open(self) -> bool:
        return self.outcome is None

    def _watch(self) -> None:
        while self.open:
            try:
                outcome = self._call("page_wait", page=self.id, timeout=WAIT_SLICE_S)
            except DshError:
                outcome = "closed"  # the host is gone, or forgot the page
            if outcome is not None:
                self._ended(str(outcome))
                return

    def settle(self) -> None:
        """Learn the outcome now if the page has ended (one short request):
        the person's browser may have its reply before the watcher has its."""
        if not self.open:
            return
        try:
            outcome = self._call("page_wait", page=self.id, timeout=0)
        except DshError:
            return
        if outcome is not None:
            self._ended(str(outcome))

    def close(self) -> None:
        """Stop the page in the host (idempotent; best effort if the host is gone)."""
        if not self.open:
            return
        try:
            self._call("page_close", page=self.id)
        except DshError:
            pass  # the host is gone or the page ended: it is closed either way
        self.settle()
        self._ended("closed")

    def _ended(self, outcome: str) -> None:
        with self._lock:
            if self.outcome is not None:
                return
            self.outcome = outcome
        if self._on_end is not None:
            try:
                self._on_end(outcome)
            except Exception:  # noqa: BLE001 - a listener must not break the watcher
                log.exception("an answer page's end listener failed")
