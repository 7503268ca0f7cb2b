"""An attached person's keyboard on one terminal: ``Engine.type_keys``, bound once.

A person at ``dsh-magics attach`` sends one keys request per read of their
terminal, and the time from a key to its echo is what they feel
(benchmarks/README.md, ``bench_attach.py``). On a loaded machine each Python
call on that way costs about a microsecond (the code is out of the caches
after other processes ran), so the way is made of few calls: a
:class:`PersonKeys` holds what every key of one session and one caller needs
(the registry's terminals, the person's prompts of :mod:`.person`, the
caller), checked when it is made. ``Registry.type_keys`` makes one per call
(:meth:`PersonKeys.type`); the host keeps one per attached connection and calls
:meth:`PersonKeys.press`, which answers with the job only (host/keys.py).

A key then needs only its data checked. The usual key (a job runs, no line of
the person is being handed over, no Enter in it) goes straight to the
terminal's keyboard, which looks at the running job, the hidden-entry flags
and the record as for any input (``Terminal.type_keys``; locally one call,
``keyboard.type_person``). Everything else
takes :meth:`PersonKeys.type_all`: the person's prompt is opened at an idle
terminal, an Enter at that prompt hands its line over, keys after it wait for
that hand-over (docs/internals.md, "A person at the prompt").
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from .. import jobs
from ..errors import NoSuchSession, NotRunning, SessionBusy
from . import validation as V
from .person import LineMarker, PersonPrompts, is_prompt, line_end
from .remote import RemoteTerminal

if TYPE_CHECKING:
    from .local.terminal import Terminal

    AnyTerminal = Terminal | RemoteTerminal


class PersonKeys:
    """The keys of ``caller`` for ``session_id`` (whichever terminal the
    session has when a key comes: a recreated one is found by its id)."""

    def __init__(
        self, terms: Mapping[str, AnyTerminal], person: PersonPrompts, session_id: str, caller: str | None
    ) -> None:
        self.session_id = V.session_id(session_id)
        self.caller = V.caller(caller)
        self._terms = terms
        self._person = person

    def type(self, data: str) -> dict[str, Any]:
        """Type ``data`` (see ``Engine.type_keys``); ``{"job_id", "prompt"}``."""
        job = self.press(data)
        return {"job_id": job.id, "prompt": is_prompt(job.label)}

    def press(self, data: str) -> jobs.Job:
        """Type ``data``; the (first) job that took it. What the host's keys
        lane calls: a key is answered only when it fails (host/keys.py)."""
        V.keys_data(data)
        term = self._terms.get(self.session_id)
        if term is None:
            raise NoSuchSession(f"no terminal for session {self.session_id!r}; attach or exec first")
        if "\r" not in data and "\n" not in data and term.running_job is not None and self._person.settled(self.session_id):
            try:
                return term.type_keys(data, self.caller)[0]
            except NotRunning:
                pass  # it ended meanwhile: the general way looks again
        return self.type_all(term, data)

    def type_all(self, term: AnyTerminal, data: str) -> jobs.Job:
        """Any keys: each line to the job that takes it, the person's prompt
        opened first at an idle terminal; the first job that took some."""
        first: jobs.Job | None = None
        rest = data
        for _ in range(len(data) + 3):  # each turn types at least one line or ends
            if not rest:
                break
            self._person.await_handover(self.session_id)
            running = term.running_job
            if running is None:
                try:
                    _await_prompt(term, self._person.open(self.session_id, self.caller, _line_channel(term)))
                except SessionBusy:
                    pass  # another caller's job started meanwhile: the keys are its input
                continue
            piece = rest
            if is_prompt(running.label):
                cut = line_end(rest)
                if cut >= 0:  # the line ends here; what follows is for its job
                    piece = rest[: cut + 1]
            try:
                job, _, _ = term.type_keys(piece, self.caller)
            except NotRunning:
                continue  # it ended meanwhile: look again
            if is_prompt(job.label) and line_end(piece) >= 0:
                self._person.submitted(self.session_id)
            rest = rest[len(piece) :]
            first = first or job
        if first is None:
            raise NotRunning(f"session {self.session_id!r}: no job took the keys", session_id=self.session_id)
        return first


def _await_prompt(term: AnyTerminal, job: jobs.Job, timeout: float = 5.0) -> None:
    """Until readline has drawn the person's prompt: it takes the terminal
    out of echo first, so keys typed from then on are not echoed twice."""
    deadline = time.monotonic() + timeout
    while not job.done:
        seq = term.output_seq
        if term.snapshot(job).output:
            return
        left = deadline - time.monotonic()
        if left <= 0:
            return
        term.wait_output(seq, left)


def _line_channel(term: AnyTerminal) -> LineMarker | None:
    """How a person's line comes back from the terminal's prompt: locally a
    private file (the default), remotely an in-band marker (:mod:`.person`)."""
    if isinstance(term, RemoteTerminal):
        return LineMarker(term.core.lock, term.stream.person_lines)
    return None


__all__ = ["PersonKeys"]
