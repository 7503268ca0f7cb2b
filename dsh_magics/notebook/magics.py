"""The magics class over the engine contract: the job verbs ``%bash_exec``, ``%bash_wait``,
``%bash_read``, ``%bash_interrupt``, ``%bash_list``, which also take groups (:mod:`.group_magics`);
the terminal verbs are :mod:`.terminal_magics`'s.

Parses arguments, picks the session, decides how a job shows itself; loading is :mod:`.extension`'s.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import shlex
import time
from typing import Any

from IPython.core.magic import (
    line_cell_magic,
    line_magic,
    magics_class,
    no_var_expand,
)
from IPython.core.magic_arguments import argument, magic_arguments

from .. import fanout, jobs
from ..errors import InvalidArgument
from ..terminal import ReadResult, Result, default_registry
from ..terminal.api import Engine
from ..terminal.requests import WaitRequest
from . import values as dsp
from .following import LiveView
from .group_magics import GroupVerbs, group_args, is_group_id
from .group_values import GroupView
from .identity import NotebookIdentity, identify, kernel_connection_file
from .job_lookup import find_job, match_so_far
from .live_views import ViewManager
from .magic_args import (
    no_raise_arg,
    parse,
    parse_with_rest,
    raise_if_failed,
    seconds,
    session_arg,
    to_ms,
    usage_errors,
)
from .render import command_header
from .terminal_magics import TerminalVerbs, with_base_magics
from .typed_input import SentKeys, expand

_LINES_KEPT = 256  # distinct %bash_exec lines whose parse is kept


@with_base_magics
@magics_class
class BashMagics(GroupVerbs, TerminalVerbs):
    """Persistent bash terminals for this notebook (``%bash_exec`` and friends)."""

    def __init__(
        self, shell: Any = None, registry: Engine | None = None, views: ViewManager | None = None, **kwargs: Any
    ) -> None:
        super().__init__(shell=shell, **kwargs)
        self.registry = registry if registry is not None else default_registry()
        #: The extension's live views (it owns them: load_ipython_extension).
        self.views = views if views is not None else ViewManager(self.registry, lambda **kw: None)
        self._identity: NotebookIdentity | None = None
        self._pending_once: list[dsp.DisplayOnce] = []
        self._sent = SentKeys()
        self._exec_lines: dict[str, tuple[argparse.Namespace, str]] = {}

    # ------------------------------------------------------------------
    # identity and modes
    @property
    def identity(self) -> NotebookIdentity:
        if self.default_session:
            return NotebookIdentity(self.default_session, "config")
        if self._identity is None:
            ns: dict[str, Any] = self.shell.user_ns if self.shell is not None else {}
            self._identity = identify(ns, os.environ, kernel_connection_file(self.shell))
        return self._identity

    @property
    def session(self) -> str:
        """This notebook's default session id."""
        return self.identity.session_id

    def _session(self, given: str | None) -> str:
        return given if given is not None else self.session

    def _once(self, value: dsp.DisplayOnce, mode: str) -> None:
        dsp.set_once(value, mode)
        self._pending_once.append(value)

    def post_run_cell(self, *_args: Any) -> None:
        """A "display once" not consumed by the cell that set it is dropped:
        later displays of the value (``r`` in another cell) show it fully."""
        pending, self._pending_once = self._pending_once, []
        for value in pending:
            dsp.clear_once(value)

    # ------------------------------------------------------------------
    # live views (kept by the extension's ViewManager)
    def show_live(self, handle: dsp.JobHandle) -> LiveView:
        """Open an output area for the job and keep it updated in the background."""
        return self.views.show_live(handle.job, self.view_settings)

    def _handle(self, job: jobs.Job) -> dsp.JobHandle:
        return dsp.JobHandle(
            job,
            self.registry,
            live=(lambda h: self.show_live(h)) if self.live else None,
            on_wait=self.views.finalize,
        )

    # ------------------------------------------------------------------
    # waiting in the foreground (streams; Ctrl-C becomes a real Ctrl-C)
    def _wait_streaming(
        self,
        job: jobs.Job,
        request: WaitRequest | None = None,
        interrupt_now: bool = False,
        waited_first: bool = False,
    ) -> Result:
        """Wait for ``job`` as ``request`` says (built, and checked, by the magic;
        None: until it settles), streaming it meanwhile."""
        if request is None:
            request = WaitRequest(job_id=job.id)  # an id the engine gave: nothing to check
        after_send = self._sent.after_send(job.id)
        if job.done:
            return dataclasses.replace(dsp.snapshot(self.registry, job), reason="settled")
        if request.until is not None:
            seen = match_so_far(self.registry, job, request.until)
            if seen is not None:
                return seen
        settings = self.view_settings
        result = self.views.wait_streaming(
            job,
            request,
            settings,
            interrupt_now=interrupt_now,
            after_send=after_send,
            waited_first=waited_first,
        )
        out = dsp.StreamedResult.from_result(result, None)
        self._once(out, dsp.SKIP if settings.live else dsp.SUMMARY)
        return out

    def _exec_line(self, line: str) -> tuple[argparse.Namespace, str]:
        """``%bash_exec``'s options and command from its line, parsed once per distinct
        line (a re-run cell reads the same line again); each call gets its own copy."""
        hit = self._exec_lines.get(line)
        if hit is None:
            hit = parse_with_rest(self.bash_exec, line)  # bad input raises: never kept
            if len(self._exec_lines) >= _LINES_KEPT:
                self._exec_lines.clear()
            self._exec_lines[line] = hit
        args, rest = hit
        return argparse.Namespace(**{k: list(v) if isinstance(v, list) else v for k, v in vars(args).items()}), rest

    # ------------------------------------------------------------------
    # the magics
    @line_cell_magic
    @no_var_expand
    @magic_arguments()
    @session_arg()
    @argument(
        "--timeout",
        type=seconds,
        default=None,
        metavar="SECONDS",
        help="Wait up to SECONDS (e.g. 0.5); return the result if the job finished, else the job handle.",
    )
    @argument(
        "--wait",
        action="store_true",
        help="Block until the job is done, streaming its output live (Ctrl-C interrupts it).",
    )
    @argument(
        "--tty",
        action="store_true",
        help="Give the command the terminal as stdin (REPLs, y/N prompts; answer with %%bash_send).",
    )
    @argument(
        "--expand",
        "-e",
        action="store_true",
        help="Expand {expr} with Python values first, as IPython's ! does ({{ and }} for a "
        "literal brace); $VAR stays bash's.",
    )
    @group_args()
    @no_raise_arg()
    @argument("command", nargs="*", help="The bash command (the rest of the line, verbatim).")
    @usage_errors
    def bash_exec(self, line: str, cell: str | None = None) -> Any:
        """Run a command in the persistent terminal; returns a job handle at once.
        With --on TARGETS: one job per target, and a group handle at once.

        Line form: %bash_exec [options] command...   (everything after the
        options goes to bash unchanged: IPython's $var and {expr} are not
        expanded, bash's own $ is; use -- before a command that starts with -)
        Cell form: %%bash_exec [options], with the script in the cell body.

        Examples:
            j = %bash_exec make -j2          # job handle; the output area stays live
            %bash_exec --wait pytest -q      # streams like a shell cell
            r = %bash_exec --timeout 0.5 ls  # Result if done within 0.5 s
            g = %bash_exec --on 'ssh://web[01-16]' uname -r   # a group: %bash_wait $g
        """
        args, rest = self._exec_line(line)
        if args.wait and args.timeout is not None:
            raise InvalidArgument("use either --wait or --timeout, not both")
        if cell is not None:
            if rest.strip():
                raise InvalidArgument(
                    "%%bash_exec takes the command from the cell body; "
                    f"unexpected text on the first line: {rest.strip()!r}"
                )
            command = cell
        else:
            command = rest
        if not command.strip():
            raise InvalidArgument("no command given (usage: %bash_exec [options] command...)")
        if args.expand:
            command = expand(command, self.shell.user_ns if self.shell is not None else {})
        if args.on is not None:
            return self.exec_group(args, command)
        if args.fanout is not None or args.target_timeout is not None or args.diff:
            raise InvalidArgument("--fanout, --target-timeout and --diff go with --on TARGETS")
        self.forget_last_group()
        session = self._session(args.session)
        if args.wait:
            # A job created since asked_at is this one (no latest_job round trip per
            # cell). Live, the engine first gives it update_interval to end: a quick
            # job is drawn once, final, after one request (issue 34 §5).
            asked_at = time.time()
            first_ms = to_ms(self.update_interval) if self.live else None
            try:
                job = self.registry.exec(
                    session, command, wait_ms=first_ms, tty=args.tty, source="notebook"
                )
            except KeyboardInterrupt:
                # Ctrl-C while the command was being started: stop it if it did.
                started = self.registry.latest_job(session)
                if started is None or started.created_at < asked_at:
                    print("Interrupted before the command started.")
                    return None
                res = self._wait_streaming(started, interrupt_now=True)
                return raise_if_failed(res, args.raise_error)
            if isinstance(job, Result):
                done = dataclasses.replace(job, reason="settled")
                self.views.show_final(done)
                shown = dsp.StreamedResult.from_result(done, None)
                self._once(shown, dsp.SKIP)
                return raise_if_failed(shown, args.raise_error)
            res = self._wait_streaming(job, waited_first=first_ms is not None)
            return raise_if_failed(res, args.raise_error)
        out = self.registry.exec(
            session, command, wait_ms=to_ms(args.timeout), tty=args.tty, source="notebook"
        )
        if isinstance(out, Result):
            return raise_if_failed(dataclasses.replace(out, reason="settled"), args.raise_error)
        handle = self._handle(out)
        if self.live and self.show_background:
            self.show_live(handle)
            self._once(handle, dsp.SKIP)
        return handle

    @line_magic
    @magic_arguments()
    @argument(
        "job_id",
        nargs="?",
        default=None,
        help="Job id, or a group id (g1; default: this notebook's last group command, else the "
        "latest job of the session).",
    )
    @argument(
        "--timeout",
        type=seconds,
        default=None,
        metavar="SECONDS",
        help="Give up waiting after SECONDS (e.g. 10 or 0.5); the job keeps running.",
    )
    @argument(
        "--until",
        default=None,
        help="Return once a line of the job's output matches this regex (quote it); all of the "
        "job's output is searched, so a line already there (a re-run cell) returns at once.",
    )
    @argument(
        "--until-screen",
        default=None,
        help="Return once a row of the terminal's screen matches this regex (quote it): a "
        "full-screen program showing something (vim's '-- INSERT --', a menu item).",
    )
    @argument(
        "--idle",
        type=seconds,
        default=None,
        metavar="SECONDS",
        help="Return once no output came for SECONDS.",
    )
    @session_arg("Without a job id: wait for this session's latest job.")
    @argument("--diff", action="store_true", help="A group: each output as a diff against the most common one.")
    @no_raise_arg()
    @usage_errors
    def bash_wait(self, line: str) -> Result | GroupView:
        """Wait for a job, streaming its output; returns its Result.

        Returns early when the job waits for typed input (answer it with
        %bash_send), when --until matches a line of the job's output (also one
        printed before), or after --idle seconds without output; r.reason says
        which. A job that ended badly raises JobFailed (one line) unless
        --no-raise-error. On timeout the Result
        says timed_out=True and the job keeps running. Ctrl-C (the stop
        button) interrupts the job itself.

        Examples: r = %bash_wait --timeout 2
                  r = %bash_wait --until 'Serving HTTP'   # then r.match_text
                  %bash_wait --until-screen '-- INSERT --'  # vim in insert mode
                  %bash_wait g1 --diff     # a group: its table and merged output
        """
        args = parse(self.bash_wait, line)
        group = self._group_meant(args.job_id, args.session)
        if group is not None:
            if args.until is not None or args.until_screen is not None or args.idle is not None:
                raise InvalidArgument("--until, --until-screen and --idle wait for one job, not a group")
            return self.wait_group(group, to_ms(args.timeout), args.diff, args.raise_error)
        if args.diff:
            raise InvalidArgument("--diff is for a group (%bash_wait GROUP_ID --diff)")
        job = find_job(self.registry, args.job_id, self._session(args.session))
        # The request, built and checked once, here: the live view and the engine trust it.
        request = WaitRequest.build(
            job_id=job.id,
            timeout_ms=to_ms(args.timeout),
            until=args.until,
            idle_ms=None if args.idle is None else max(1, to_ms(args.idle) or 0),
            until_screen=args.until_screen,
        )
        res = self._wait_streaming(job, request)
        return raise_if_failed(res, args.raise_error)

    def _group_meant(self, given: str | None, session: str | None) -> fanout.GroupJob | None:
        """The group an id names (g1), or without one (nor --session) the last group command."""
        if is_group_id(given):
            assert given is not None
            return self.find_group(given)
        return self.last_group() if given is None and session is None else None

    @line_magic
    @magic_arguments()
    @argument("group_id", nargs="?", default=None, help="A group id (g1): every member's output, merged.")
    @session_arg()
    @argument("--lines", "-n", type=int, default=None, help="Only the last N lines (of each member's).")
    @argument("--diff", action="store_true", help="A group: each output as a diff against the most common one.")
    @usage_errors
    def bash_read(self, line: str) -> ReadResult | GroupView:
        """The terminal's retained output (no input is sent); .lines has every line read.
        With a group id: each member's output so far, merged, and the per-target table.

        Example: %bash_read --lines 20
        """
        args = parse(self.bash_read, line)
        if args.lines is not None and args.lines < 0:
            raise InvalidArgument("--lines must be >= 0")
        if args.group_id is not None:
            if not is_group_id(args.group_id) or args.session is not None:
                raise InvalidArgument(f"%bash_read takes a group id (g1), not {args.group_id!r}; --session for a terminal")
            return self.read_group(self.find_group(args.group_id), args.lines, args.diff)
        if args.diff:
            raise InvalidArgument("--diff is for a group (%bash_read GROUP_ID --diff)")
        return self.registry.read(self._session(args.session), last=args.lines)

    @line_magic
    @magic_arguments()
    @argument("group_id", nargs="?", default=None, help="A group id (g1): Ctrl-C to every member.")
    @session_arg()
    @usage_errors
    def bash_interrupt(self, line: str) -> Result | GroupView | None:
        """Send Ctrl-C to the running job (the shell survives); returns its Result.
        With a group id: Ctrl-C to every running member; members not started are cancelled.

        Example: %bash_interrupt
        """
        args = parse(self.bash_interrupt, line)
        if args.group_id is not None:
            if not is_group_id(args.group_id) or args.session is not None:
                raise InvalidArgument(f"%bash_interrupt takes a group id (g1), not {args.group_id!r}")
            return self.interrupt_group(self.find_group(args.group_id), self.interrupt_grace)
        session = self._session(args.session)
        job = self.registry.interrupt(session, source="notebook")
        if job is None:
            print(f"session {session!r} is idle: nothing to interrupt")
            return None
        try:
            job.wait(self.interrupt_grace)
        except KeyboardInterrupt:
            pass  # a second Ctrl-C stops the waiting, not the job: what follows says how it is
        if job.done:
            self.views.finalize(job)
        else:
            print(
                f"Sent Ctrl-C to job {job.id}, but it is still running after "
                f"{self.interrupt_grace:g}s: it ignores or handles Ctrl-C. Next: "
                f"%bash_send --session {shlex.quote(session)} --key 'ctrl-\\' (SIGQUIT), "
                f"or %bash_close --session {shlex.quote(session)} (ends the shell and all it started)."
            )
        return dsp.snapshot(self.registry, job)

    @line_magic
    @magic_arguments()
    @argument("group_id", nargs="?", default=None, help="A group id (g1): its members, one row each.")
    @usage_errors
    def bash_list(self, line: str) -> dsp.TerminalTable | GroupView:
        """The open terminals; ★/* marks this notebook's default session. With a group
        id: the group's members (target, status, elapsed time, last line).

        Example: %bash_list
        """
        args = parse(self.bash_list, line)
        if args.group_id is not None:
            if not is_group_id(args.group_id):
                raise InvalidArgument(f"%bash_list takes a group id (g1), not {args.group_id!r}")
            return self.list_group(self.find_group(args.group_id))
        ident = self.identity
        groups = [
            f"{g.id}: {fanout.report(g, tail_lines=0).summary().splitlines()[0].split(': ', 1)[1]}: $ "
            + command_header(g.command, 60)
            for g in fanout.table_for(self.registry).all()
        ]
        return dsp.TerminalTable(self.registry.list(), ident.session_id, ident.describe(), groups)
