"""How a remote terminal sees bash's answers: the in-band markers in the
client's output (job begin and end, the DEBUG trap listing, probes' answers,
the prompt hint), the echo of a typed line, and the client's last words."""

from __future__ import annotations

from collections.abc import Callable

from ..core.jobcore import JobCore
from ..core.jobview import Running
from ..core.run_state import UNSENT_SIGINT_NOTE
from . import inband
from .connection import last_words
from .echo import EchoTail, echo_of, is_echo
from .inband import BEGIN, END, PROMPT, SYNC, TRAP_BEGIN, TRAP_END, Marker, new_nonce
from .ssh_start import login_check

ConfirmPrompt = Callable[[Running, Callable[[], None], Callable[[], None]], bool]
"""(run, yes, no) -> whether the side channel looks (PromptWatch.confirm_prompt)."""


class InbandStream:
    """The remote side's answers, fed to the job core. ``type_later`` types a
    probe from a helper thread (the reader never waits behind typing)."""

    def __init__(
        self,
        core: JobCore,
        type_later: Callable[[str], None],
        on_job_output: Callable[[Running], None] = lambda run: None,
        confirm_prompt: ConfirmPrompt = lambda run, yes, no: False,
    ) -> None:
        self._core = core
        self._type_later = type_later
        self._confirm_prompt = confirm_prompt
        self._hint_run: Running | None = None  # a hint of this job is being checked
        self.hints_refused = 0  # prompt hints the side channel saw forged (tests look)
        self._on_job_output = on_job_output  # the running job printed (or began): the quiet check
        self.where: tuple[int | None, str | None] = (None, None)  # the remote shell's pid and tty
        self.bash_version: str | None = None  # as the remote shell reported it
        self.ready_nonce: str | None = new_nonce()
        self.ready_status: int | None = None
        self.startup_raw = bytearray()  # what the client printed before the shell was ready
        self._typed_at_start: frozenset[str] = frozenset()  # the set-up's lines (their echo is not the client's words)
        self._login_nonce: str | None = None  # the login check's (login_text)
        self._echo_nonce: str | None = None  # typed with this nonce; held data may be its echo
        self._held: list[bytes] = []
        self._echo = b""  # the echo of the last job's typed lines (held data is matched against it)
        self._echo_tail: EchoTail | None = None  # the end of that echo, owed after the begin marker
        self._resync_echo = False
        self._pipestatus: tuple[int, ...] | None = None  # the last job's, restored at the next
        self._debug_trap: str | None = None  # the user's DEBUG trap, lifted at the last job's end
        self._trap_text: bytearray | None = None  # collecting `trap -p DEBUG` between T and U
        self._aborted = False  # the last job's line was cut short (next job's $? is 130)
        self._tail = bytearray()  # the last bytes after the last marker: the client's last words
        # A person's prompt (terminal/person.py): its nonce -> the line its LINE marker carried
        # (None until then). Only expected nonces are kept; the prompt's owner removes its own.
        self.person_lines: dict[str, str | None] = {}

    def job_text(self, run: Running, command: str, tty: bool) -> str:
        """The lines typed for ``run`` (call under the core's lock): what the
        last job left is carried into it."""
        core = self._core
        text = inband.job_text(
            run.nonce,
            command,
            end_nonce=run.end_nonce,
            resync_echo=self._resync_echo,
            tty=tty,
            pipestatus=self._pipestatus,
            debug_trap=self._debug_trap,
            aborted=self._aborted,
        )
        assert core.running is run
        self._resync_echo = self._aborted = False
        self._pipestatus = self._debug_trap = None
        self._echo_nonce = run.nonce
        self._echo = echo_of(text)
        return text

    def setup_text(self, cwd: str | None, session_id: str, *, stty: bool = True, key: str | None = None) -> str:
        """The set-up (``inband.setup_text``). ``key``: the ``KEY`` marker's
        nonce a login start saw; when it is the check's own, a bash login
        shell read the check after its start-up files, and the set-up goes
        with no empty lines first."""
        assert self.ready_nonce is not None
        self._echo_nonce = None
        after_check = key is not None and key == self._login_nonce
        text = inband.setup_text(self.ready_nonce, cwd, session_id, stty=stty, blank=not after_check)
        self._typed_at_start |= frozenset(ln.strip() for ln in text.split("\n") if ln.strip())
        return text

    def login_text(self) -> tuple[str, str]:
        """Typed first to an ssh login shell (``ssh_start.login_check``): one
        empty line (for a start-up file that reads one: the login shell
        reads its own once), then the check, whose ``KEY`` says bash reads
        what follows; returned with the check's nonce. Its echo is not the
        client's words either."""
        self._login_nonce = nonce = new_nonce()
        line = login_check(nonce)
        self._typed_at_start |= frozenset([line])
        return "\n" + line + "\n", nonce

    def startup_words(self) -> str:
        """The client's last words before the shell was ready, without the
        echo of the set-up: an ssh client's PTY echoes what is typed until ssh
        takes it over (``Target.hands_modes``), and the remote terminal echoes."""
        return last_words(bytes(self.startup_raw), typed=self._typed_at_start)

    def started(self) -> None:
        """The shell is ready: what the client printed before is not needed."""
        self.startup_raw = bytearray()

    def on_pty(self, data: bytes) -> None:
        core = self._core
        with core.lock:
            if not core.ready.is_set() and len(self.startup_raw) < 65536:
                self.startup_raw += data
            probe = False
            for piece in core.scanner.feed(data):
                if self._trap_text is not None and not (isinstance(piece, Marker) and piece.kind == TRAP_END):
                    if isinstance(piece, bytes) and len(self._trap_text) < 1 << 20:
                        self._trap_text += piece
                    continue
                if isinstance(piece, Marker):
                    self._tail.clear()
                    self._settle_echo_tail()
                    if piece.kind == PROMPT:
                        probe = True
                    else:
                        self._on_marker(piece)
                elif self._echo_nonce is not None:
                    self._held.append(piece)
                elif self._echo_tail is not None:
                    out = self._echo_tail.feed(piece)
                    if self._echo_tail.done:
                        self._echo_tail = None
                    if out:
                        self._keep(out)
                else:
                    self._keep(piece)
            core.touched()
            if probe:
                self._on_prompt_hint()
        core.emit({"type": "output", "session_id": core.session_id})
        core.deliver()

    def client_gone(self) -> str:
        """The client exited (call under the core's lock): output held back
        as a possible echo is kept; returns the client's last words."""
        if self._echo_nonce is not None:
            self._release_held("")
        self._settle_echo_tail()
        return last_words(bytes(self._tail), lines=1)

    def _keep(self, data: bytes) -> None:
        self._tail += data
        del self._tail[:-4096]
        self._core.feed(data)
        run = self._core.running
        if run is not None and run.saw_begin and run.end_line is None and data.strip(b"\x03"):
            self._on_job_output(run)  # (not the terminal's echo of a Ctrl-C alone: no output, no new look)

    def _settle_echo_tail(self) -> None:
        """A marker (or the client's end) came while the end of a job's echo
        was still owed: what was held back as its possible start is output."""
        if self._echo_tail is not None:
            out = self._echo_tail.release()
            self._echo_tail = None
            if out:
                self._keep(out)

    def _release_held(self, nonce: str, job_echo: bool = False) -> None:
        """Data that arrived between typing a line and its first marker: the
        echo of that line (the terminal echoes; dropped), else real output
        (kept; a line that came back without its echo means a command left
        echo off: the next job turns it on again). With ``job_echo`` (the
        marker is the job's begin marker) the end of the job's echo may still
        be on its way, behind the marker (terminal/remote/echo.py)."""
        held = b"".join(self._held)
        self._held.clear()
        self._echo_nonce = None
        echo, self._echo = self._echo, b""
        if nonce and held and (nonce.encode() in held or is_echo(held, echo)):
            if job_echo:
                self._echo_tail = EchoTail.after(held, echo)
            return
        if nonce:
            self._resync_echo = True
        if held:
            self._keep(held)

    def _on_prompt_hint(self) -> None:
        """The shell printed the hint it prints before reading a line after an
        aborted one: the running job's line was cut short (a Ctrl-C). A probe
        typed now settles the job; but any command can print the hint, and a
        probe typed while it runs would be its input (a password prompt's,
        maybe). So the side channel looks first: the probe is typed once it
        sees the shell itself reading its next line, and never while a job's
        command runs (tests/remote/test_remote_prompts.py::
        test_a_forged_prompt_hint_types_nothing). Without a side channel the
        hint is all there is (docs/remote.md, "What weakens remotely")."""
        core = self._core
        run = core.running
        if run is None or run.sync_nonce is not None or core.dead or self._hint_run is run:
            return
        self._hint_run = run
        if not self._confirm_prompt(run, lambda: self._type_sync(run), lambda: self._forged(run)):
            self._type_sync(run)

    def _type_sync(self, run: Running) -> None:
        core = self._core
        with core.lock:
            if core.running is not run or run.sync_nonce is not None or core.dead:
                return
            if not run.intr.requested:
                run.quiet.line_abandoned()
            nonce = core.resync(run)
            if self._echo_nonce is None:  # its echo is held until its answer (or any marker of the job)
                self._echo_nonce = nonce
            self._type_later(inband.sync_line(nonce))

    def _forged(self, run: Running) -> None:
        """The hint came while the job's command runs: nothing is typed; a
        later hint is looked at again."""
        with self._core.lock:
            self.hints_refused += 1
            if self._hint_run is run:
                self._hint_run = None

    def _on_marker(self, m: Marker) -> None:
        core = self._core
        run = core.running
        if self._echo_nonce is not None and m.nonce and (
            m.nonce == self._echo_nonce
            or (run is not None and m.nonce in (run.nonce, run.end_nonce, run.sync_nonce))
        ):
            self._release_held(
                self._echo_nonce if m.nonce == self._echo_nonce else "",
                job_echo=run is not None and m.kind == BEGIN and m.nonce == run.nonce == self._echo_nonce,
            )
        if m.kind == SYNC and m.nonce == self.ready_nonce:
            self.ready_nonce = None
            self.ready_status = m.status
            core.shell_ready(m.cwd if m.status == 0 else None)
            return
        if m.kind == inband.WHERE and m.nonce == self.ready_nonce:
            pid, _, rest = (m.cwd or "").partition(":")
            version, _, tty = rest.partition(":")
            self.where = (int(pid) if pid.isdigit() else None, tty or None)
            self.bash_version = version or None
            return
        if m.kind == inband.LINE:
            if m.nonce in self.person_lines and self.person_lines[m.nonce] is None:
                self.person_lines[m.nonce] = m.cwd or ""
            return
        if run is None:
            return
        if m.kind == TRAP_BEGIN and m.nonce == run.nonce and run.end_line is None:
            self._trap_text = bytearray()
            return
        if m.kind == TRAP_END:
            if m.nonce == run.nonce and self._trap_text is not None:
                text = bytes(self._trap_text).decode("utf-8", "surrogateescape").replace("\r\n", "\n").strip()
                run.debug_trap_listed(text or None)
            self._trap_text = None
            return
        if core.marked_job(m) is not run:
            return
        if m.kind == BEGIN:
            now = core.job_began(run)
            run.intr.begin_came(now)  # Ctrl-Cs held for it go (RemoteKeyboard.send_held_interrupts)
            self._on_job_output(run)
        elif m.kind == END:
            self._pipestatus = m.pipestatus
            self._debug_trap = run.debug_trap
            core.job_ended(run, m.status, m.cwd)
        else:  # the answer to the resync probe: the line was aborted
            note = UNSENT_SIGINT_NOTE if run.quiet.unsent_sigint else None
            self._aborted = True
            core.job_aborted(run, m.cwd, note)
