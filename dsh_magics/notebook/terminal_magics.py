"""The terminal verbs of :class:`~.magics.BashMagics`: ``%bash_attach``, ``%bash_send``,
``%bash_screen`` and ``%bash_close`` (a terminal, not a job or a group, is what they act on).

A base class of the magics, with its own ``@magics_class`` table; :func:`with_base_magics`
folds the tables of the bases into the magics class's (IPython reads only the class's own).
"""

from __future__ import annotations

from typing import Any, TypeVar

from IPython.core.magic import line_magic, magics_class, no_var_expand
from IPython.core.magic_arguments import argument, magic_arguments

from ..errors import InvalidArgument
from ..terminal import Result, TerminalInfo, keys
from ..terminal.api import Engine
from ..terminal.requests import DEFAULT_SEND_WAIT_MS
from . import values as dsp
from .magic_args import (
    parse,
    parse_with_rest,
    seconds,
    session_arg,
    split_words,
    to_ms,
    usage_errors,
)
from .settings import MagicsSettings
from .typed_input import SentKeys, ask_hidden

C = TypeVar("C", bound=type)


def with_base_magics(cls: C) -> C:
    """Under ``@magics_class``: the magics the bases declare count too (the class's own win)."""
    table: dict[str, dict[str, Any]] = {"line": {}, "cell": {}}
    for base in reversed(cls.__mro__[1:]):
        for kind in table:
            table[kind].update((getattr(base, "magics", None) or {}).get(kind, {}))
    for kind in table:
        table[kind].update(cls.magics[kind])  # type: ignore[attr-defined]
    cls.magics = table  # type: ignore[attr-defined]
    return cls


@magics_class
class TerminalVerbs(MagicsSettings):
    """``%bash_attach``, ``%bash_send``, ``%bash_screen``, ``%bash_close``."""

    registry: Engine
    _sent: SentKeys

    def _session(self, given: str | None) -> str:  # pragma: no cover - the magics class's
        raise NotImplementedError

    @line_magic
    @magic_arguments()
    @session_arg()
    @argument(
        "--cwd", default=None, help="Change the terminal's directory (relative to its current one)."
    )
    @argument("--recreate", action="store_true", help="Replace the shell with a fresh one.")
    @argument(
        "--target",
        default=None,
        help="Where the shell runs: ssh://[user@]host[:port], docker://C, podman://C, "
        "kubectl://[CTX/]NS/POD[/C], cmd:ARGV (default: this machine).",
    )
    @usage_errors
    def bash_attach(self, line: str) -> TerminalInfo:
        """Open (or reuse) a persistent terminal; optionally cd it, start it afresh,
        or open it on another machine.

        Example: %bash_attach --cwd ~/project
        Example: %bash_attach --session gpu --target ssh://gpu-box
        """
        args = parse(self.bash_attach, line)
        return self.registry.attach(
            self._session(args.session), cwd=args.cwd, recreate=args.recreate, target=args.target
        )

    @line_magic
    @no_var_expand
    @magic_arguments()
    @session_arg()
    @argument("--no-enter", action="store_true", help="Type the text without pressing Enter.")
    @argument(
        "--key",
        "-k",
        action="append",
        default=None,
        help="Press a named key instead of typing text (repeat for several, pressed in order; "
        "arrows, Home and End follow the program's cursor-key mode): " + keys.describe_valid() + ".",
    )
    @argument(
        "--secret",
        action="store_true",
        help="Ask for the text with hidden entry (like getpass): it is never shown or recorded.",
    )
    @argument(
        "--timeout",
        type=seconds,
        default=None,
        metavar="SECONDS",
        help="Wait up to SECONDS for the job to react (default 2).",
    )
    @argument(
        "text",
        nargs="*",
        help="The text to type: the rest of the line, split and unquoted as a shell does "
        "(%%bash_send 'a  b' types a  b; to type a quote, quote it: %%bash_send \"it's\").",
    )
    @usage_errors
    def bash_send(self, line: str) -> Result:
        """Type into the running job's terminal, as at its keyboard; returns
        what the terminal showed after it (the job's Result so far).

        The text is split and unquoted as a shell does: %bash_send 'y' types y,
        and quotes that should be typed are quoted (%bash_send "print('hi')").

        Examples:
            %bash_exec --tty python3 -i
            %bash_send print(6 * 7)
            %bash_send "print('a  b')"   # types print('a  b')
            %bash_send --key ctrl-d
            %bash_send --key down --key down --key enter   # a menu's third item
            %bash_send --secret          # a password prompt: asks with hidden entry
        """
        args, rest = parse_with_rest(self.bash_send, line)
        session = self._session(args.session)
        text: str | None = " ".join(split_words(self.bash_send, rest))
        if args.key is not None:
            if rest.strip() or args.secret:
                raise InvalidArgument("--key presses keys: give no text (and no --secret) with it")
            text = None
        elif args.secret:
            if rest.strip():
                raise InvalidArgument(
                    "--secret asks for the text with hidden entry; do not put it on the line"
                )
            text = ask_hidden(self.registry, session)
        res = self.registry.send(
            session,
            text,
            key=args.key[0] if args.key and len(args.key) == 1 else None,
            keys=args.key if args.key and len(args.key) > 1 else None,
            enter=not args.no_enter,
            wait_ms=DEFAULT_SEND_WAIT_MS if args.timeout is None else to_ms(args.timeout),
            source="notebook",
            secret=args.secret,
        )
        self._sent.record(self.registry, session, res)
        return res

    @line_magic
    @magic_arguments()
    @session_arg()
    @argument(
        "--plain",
        action="store_true",
        help="Only the rows' text and the cursor: no colours, bold, underline or inverse.",
    )
    @usage_errors
    def bash_screen(self, line: str) -> dsp.ScreenView:
        """The terminal's screen as an xterm of its size shows it now (full-screen
        programs such as less, vim, top); shown as literal HTML, nothing typeset.
        ``.lines``, ``.cursor``, ``.alt_screen``, ``.title`` and ``.to_dict()``.

        Example: %bash_exec --tty less README.md
                 %bash_screen
        """
        args = parse(self.bash_screen, line)
        return dsp.screen_of(self.registry, self._session(args.session), styles=not args.plain)

    @line_magic
    @magic_arguments()
    @session_arg()
    @argument(
        "--all",
        action="store_true",
        help="Close every terminal listed by %%bash_list (with the terminal host: every notebook's).",
    )
    @usage_errors
    def bash_close(self, line: str) -> None:
        """Close a terminal (killing the shell and everything it started).

        Example: %bash_close --session build
        """
        args = parse(self.bash_close, line)
        if args.all and args.session is not None:
            raise InvalidArgument("use either --session or --all, not both")
        if args.all:
            n = self.registry.close_all()
            print(f"closed {n} terminal{'s' if n != 1 else ''}")
            return
        session = self._session(args.session)
        self.registry.close(session)
        print(f"closed session {session!r}")
