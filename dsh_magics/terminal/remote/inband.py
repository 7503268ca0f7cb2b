"""The in-band transport: everything a remote terminal needs, typed on its PTY.

How commands, markers and probes are typed, and why: docs/remote.md ("How it works").
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Callable

from ..core.environment import QUIET_ENV
from ..core.markers import MARKER_FD, PREFIX, Grammar, Marker, MarkerScanner, new_nonce

__all__ = ["Marker", "Scanner", "encode_command", "job_text", "new_nonce", "setup_text", "sync_line"]

BEGIN, END, SYNC, PROMPT = "B", "E", "S", "P"
WHERE = "Y"  # at start-up: the shell's pid and its terminal, for the side channel
LINE = "L"  # a person's line from their prompt (terminal/person.py), %q-quoted where a cwd goes
KEY, SHELL_END = "K", "Z"  # ssh: the wrapper's nonce, before bash starts; the same nonce once bash has ended (ssh_start.py)
INPUT_FD = 210
NULL_FD = 211
CMD_VAR = "__dsh_magics_cmd"
# What the previous job's last command left: ($? $_), restored at the start
# of the next job so that it sees the prompt's view.
LAST_VAR = "__dsh_magics_last"
RESTORE_FN = "__dsh_magics_restore"
STATUS_VAR = "__dsh_magics_status"
PIECE_BYTES = 1024
"""Escaped bytes per typed line (the canonical limit is 4095)."""
_MAX_CWD = 16384
_MAX_PIPESTATUS = 32
_VALID = re.compile(
    rb"\x1b\]6973;(?:(?P<kind>[BESTUYLKZ]);(?P<nonce>[0-9a-f]{16})(?:;(?P<status>[0-9]{1,3}))?"
    rb"(?:;(?P<codes>[0-9 ]{1,%d}))?(?:;(?P<cwd>[^\x07\x1b]{1,%d}))?|(?P<prompt>P))\x07"
    % (4 * _MAX_PIPESTATUS, _MAX_CWD)
)
MAX_MARKER_LEN = len(PREFIX) + 2 + 16 + 1 + 3 + 1 + 4 * _MAX_PIPESTATUS + 1 + _MAX_CWD + 1
TRAP_BEGIN, TRAP_END = "T", "U"
HIST_VAR = "__dsh_magics_hist"
XTRACE_VAR = "__dsh_magics_xtrace"
TRAP_VAR = "__dsh_magics_trap"
TERM_VAR = "__dsh_magics_term"  # the shell's TERM while a tty job runs with xterm-256color

_STDIN_GUARD = f"\\builtin test -t 0 || \\command exec 0<&{INPUT_FD}"
# Bash's own history recording stays off, also while a job runs (as in the
# local shell, docs/engine.md "Limits"): each job is added once, as written,
# with ``history -s`` when the user wants history (``HIST_VAR``). Were it on
# inside the job's ``eval``, bash would history-expand the command's second
# and later lines and add them as entries of their own. A job (or an aborted
# line) that turns it on asks for the following jobs to be recorded: after
# the job, and before the next line after an abort, ``HIST_OFF_FN`` turns it
# off again, and drops the capture line (``CAPTURE``) from the history list
# if bash recorded it (the line the job turned recording on before).
CAPTURE = f'{LAST_VAR}=("$?" "$_" 1 "${{PIPESTATUS[@]}}")'
HIST_OFF_FN = "__dsh_magics_hoff"
_HIST_OFF_DEF = (
    f"{HIST_OFF_FN}() {{ {HIST_VAR}=1; \\builtin set +o history; "
    f"[[ -z ${{{LAST_VAR}[2]-}} || $(\\builtin history 1) != *' {CAPTURE}' ]] || \\builtin history -d -1; }}"
)
_HISTORY_OFF = f"[[ ! -o history ]] || {HIST_OFF_FN}"
# Line editing is on while a job's text runs, in the mode the user chose
# (``MODE_VAR``), and off between jobs: a job's own ``set -o vi`` inside the
# ``eval`` would otherwise switch bash's input to readline there and lose
# the rest of the job's lines (the local shell does the same and says why:
# terminal/local/shell.py, ``EDIT_ON``). After a line aborted while it was on,
# the prompt command hands bash a line on a here-string that turns it off at
# top level and puts the terminal back (``EDIT_BACK_FN``).
MODE_VAR = "__dsh_magics_mode"
EDIT_ON = f'\\builtin set -o "${{{MODE_VAR}:-emacs}}"'
EDIT_OFF = "\\builtin set +o emacs +o vi"
MODE_RECORD = f"if [[ -o vi ]]; then {MODE_VAR}=vi; elif [[ -o emacs ]]; then {MODE_VAR}=emacs; fi"
EDIT_BACK_FN = "__dsh_magics_back"
_EDIT_BACK = (
    f"{EDIT_BACK_FN}() {{ {MODE_RECORD}; "
    f"\\command exec 0<<<'{EDIT_OFF}; \\command exec 0<&{INPUT_FD}'; }}"
)
_ABORT_HINT = (
    f'if \\builtin test $? = 0; then {_STDIN_GUARD}; else \\builtin printf "\\033]6973;P\\007" >&{MARKER_FD}; '
    f"{EDIT_BACK_FN} || {_STDIN_GUARD}; fi"
)
RESET_PROMPT = (
    "\\builtin unset PROMPT_COMMAND;"
    f"PROMPT_COMMAND='{_ABORT_HINT}; {_HISTORY_OFF}';PS1='' PS2='' PS0='';"
    f"{EDIT_OFF}"
)


def _printf(kind: str, nonce: str, status: str | None = None) -> str:
    """Shell code printing a marker on the private fd; with ``status`` (a
    shell word) it also reports the status and ``$PWD``."""
    if status is None:
        return f"\\builtin printf '\\033]6973;{kind};{nonce}\\007' >&{MARKER_FD}"
    return f"\\builtin printf '\\033]6973;{kind};{nonce};%d;%q\\007' {status} \"$PWD\" >&{MARKER_FD}"


def setup_text(ready_nonce: str, cwd: str | None, session_id: str, *, stty: bool = True, blank: bool = True) -> str:
    """Typed once, right after the remote bash starts (its profile has run or
    is running: type-ahead waits in the terminal). Readline is still on and
    echo too, so everything up to the ready probe is discarded by the reader.
    The ready probe reports whether the ``cd`` worked and where the shell is.

    Two empty lines go first (with ``blank``), for a start-up file that
    reads the terminal (``read -t 5 answer`` in ~/.bashrc): it takes one, as
    if a person pressed Enter, and leaves the set-up to bash (``read`` takes
    one line at a time); two, for a command that runs ~/.bashrc twice.
    ssh's login start types the set-up once a bash login shell answered its
    check (``ssh_start.login_check``: no start-up file is left reading), with none:
    each would be a run of the user's ``PROMPT_COMMAND``, which the check
    (``ssh_start.QUIET_PROMPT``) and the first line unset
    (tests/remote/test_login_start.py counts the runs).

    Only the first line is read with readline (which reads ``~/.inputrc``
    first, so the user's editing mode is the one recorded): it turns line
    editing off, and bash reads the rest a line at a time, with no
    redisplay per character (issue 35 §5: 0.6 ms of the remote side's CPU a
    terminal, benchmarks/README.md "Session 36"). With ``stty`` (every
    target but ssh) the set-up turns echo on with control characters echoed
    as themselves; ssh hands the remote terminal these modes of ours
    (``Pty.spawn``'s ``echo``), so there no process runs for it.
    """
    q = shlex.quote
    env = " ".join(f"{k}={q(v)}" for k, v in QUIET_ENV.items())
    cd = cd_command(cwd) if cwd else ":"
    echo = "\\builtin command stty echo -echoctl 2>/dev/null; " if stty else ""
    lines = [
        f"{MODE_VAR}=emacs; {MODE_RECORD}; {EDIT_OFF}; \\builtin unset PROMPT_COMMAND",
        f"{HIST_VAR}=; [[ -o history ]] && {HIST_VAR}=1; "
        "\\builtin set +o history +u +e +x +v +T +o pipefail 2>/dev/null; "
        "\\builtin trap - DEBUG ERR RETURN; \\builtin unset HISTFILE PROMPT_COMMAND PS0; \\builtin unset TMOUT 2>/dev/null; "
        "PS1='' PS2='' PS4='+ '",
        f"\\builtin export {env} DSH_MAGICS_SESSION={q(session_id)}; "
        f"\\command exec {MARKER_FD}>&1 {INPUT_FD}<&0 {NULL_FD}</dev/null; \\builtin set -o ignoreeof; {echo}"
        # With recording on, `history -s` drops the last entry when bash last
        # recorded a line itself (here: the first set-up line, read while
        # history was on); recording is off when jobs add their entries, and
        # one throwaway entry resets that too.
        f"{RESTORE_FN}() {{ \\builtin return \"$1\"; }}; {_EDIT_BACK}; {_HIST_OFF_DEF}; {LAST_VAR}=(0 ''); "
        f"\\builtin history -c; \\builtin history -s :; \\builtin history -c; {XTRACE_VAR}= {TRAP_VAR}=",
        f"{cd} 2>/dev/null; {LAST_VAR}[0]=$?; \\command exec 1>/dev/null 2>&1; {RESET_PROMPT}",
        ":",
        _where(ready_nonce),
        _printf(SYNC, ready_nonce, f'"${{{LAST_VAR}[0]}}"') + f"; {LAST_VAR}=(0 '')",
    ]
    return ("\n\n" if blank else "") + "\n".join(lines) + "\n"


def _where(nonce: str) -> str:
    """The shell reports its pid and its version (checked by the engine),
    as ``PID:VERSION:`` (the third field, its terminal, was asked with
    ``tty`` here until session 35: a process at every start, for the side
    channel only, which now names it itself at its first use, from the
    descriptor the shell keeps its terminal on: ``side_channel.locate``)."""
    return (
        f"\\builtin printf '\\033]6973;{WHERE};{nonce};0;%q\\007' \"$$:${{BASH_VERSINFO[0]}}.${{BASH_VERSINFO[1]}}.${{BASH_VERSINFO[2]}}:\" >&{MARKER_FD}"
    )


def remote_path(path: str) -> str:
    """A path as a shell word for the remote side: quoted, except a leading
    ``~`` or ``~/``, which the remote shell expands to the remote home."""
    if path == "~":
        return "~"
    if path.startswith("~/"):
        return "~/" + shlex.quote(path[2:]) if path[2:] else "~/"
    return shlex.quote(path)


def line_text(nonce: str, var: str) -> str:
    """Shell code handing the text of ``$var`` (a person's line, see
    terminal/person.py) to the engine in a ``LINE`` marker: the reader takes
    it out of the stream like every marker, so no output, screen or viewer
    has it, and nothing is written to a file on either side. A line too long
    for a marker is not handed over (the person is told)."""
    q = f"{var}_q"
    return (
        f'\\builtin printf -v {q} %q "${var}"; '
        f"if (( ${{#{q}}} <= {_MAX_CWD} )); then "
        f"\\builtin printf '\\033]6973;{LINE};{nonce};0;0;%s\\007' \"${q}\" >&{MARKER_FD}; "
        f"else \\builtin echo 'dsh-magics: the line is too long to run from this prompt' >&2; fi; "
        f"\\builtin unset -v {q}"
    )


def cd_command(path: str) -> str:
    return f"\\builtin cd -- {remote_path(path)}"


def sync_line(nonce: str) -> str:
    """A probe typed after the prompt hint: answered once bash reads its own
    input again, with the shell's cwd. It changes nothing in the shell (a
    probe typed on a forged hint lands after a job that ended normally)."""
    return f"{_printf(SYNC, nonce, '130')}\n"


def _escape(data: bytes) -> str:
    out = []
    for b in data:
        if b == 0x27:
            out.append("\\'")
        elif b == 0x5C:
            out.append("\\\\")
        elif b == 0x0A:
            out.append("\\n")
        elif 0x20 <= b < 0x7F:
            out.append(chr(b))
        else:
            out.append(f"\\x{b:02x}")
    return "".join(out)


def encode_command(command: str, piece_bytes: int = PIECE_BYTES) -> list[str]:
    """The command as ``$'...'`` pieces, each at most about ``piece_bytes``
    characters once escaped (a multi-byte character may end a piece a few
    bytes over). Pieces are plain ASCII: nothing in them is special to the
    terminal's line discipline."""
    data = command.encode("utf-8", "surrogateescape")
    pieces: list[str] = []
    cur: list[str] = []
    size = 0
    for i in range(len(data)):
        e = _escape(data[i : i + 1])
        if size + len(e) > piece_bytes and cur:
            pieces.append("".join(cur))
            cur, size = [], 0
        cur.append(e)
        size += len(e)
    if cur or not pieces:
        pieces.append("".join(cur))
    return pieces


_HEREDOC = re.compile(r"(?<!<)<<(?!<)(-?)[ \t]*(['\"]?)([^\s'\"<>|&;()]+)\2")
_OPEN_END = ("|", "&&", "||", "|&", "\\")


def can_capture(command: str) -> bool:
    """May the capture line follow the command inside its ``eval``? Not when
    it would become part of the command: the body of a here-document the
    command leaves open, or the next stage of a pipeline or list it leaves
    open (``cmd |``), or a continued line. Then the status comes from
    ``eval`` and the next job's ``$_`` is empty."""
    if command.rstrip().endswith(_OPEN_END):
        return False
    for m in _HEREDOC.finditer(command):
        word = re.escape(m.group(3))
        line = rf"^\t*{word}$" if m.group(1) else rf"^{word}$"
        if not re.search(line, command[m.end() :], re.M):
            return False
    return True


def _load(var: str, text: str) -> str:
    """Shell code assigning ``text`` to ``var`` in pieces (see module doc)."""
    pieces = encode_command(text)
    if len(pieces) == 1:
        return f"{var}=$'{pieces[0]}'"
    return "{ " + f"{var}=$'{pieces[0]}'\n" + "".join(f"{var}+=$'{p}'\n" for p in pieces[1:]) + "}"


def job_text(
    nonce: str,
    command: str,
    *,
    end_nonce: str | None = None,
    resync_echo: bool = False,
    tty: bool = False,
    pipestatus: tuple[int, ...] | None = None,
    debug_trap: str | None = None,
    aborted: bool = False,
) -> str:
    """The lines typed for one job.

    The command is assigned in pieces (inside one ``{ ...; }`` group when it
    needs several lines, so bash runs no prompt in between). Then: the
    user's DEBUG trap put back (``debug_trap``, as the last job's end
    listed it); the begin marker (its nonce only says where output starts: a
    trap may see it); inside one ``eval``: the previous job's ``$?``, ``$_``
    and PIPESTATUS restored, the command added to the history (if the user
    has it on) and the command itself, with stdin from /dev/null and output
    on the PTY, then a capture of its ``$?``, ``$_`` and PIPESTATUS. Last, the
    end marker, whose nonce (``end_nonce``) no command, trap or trace sees:
    the DEBUG trap is listed to the engine (between ``T`` and ``U`` markers)
    and lifted, and ``set -x`` is paused, before the one ``printf`` that
    carries it; the trap comes back with the next job.

    With ``tty`` the command's stdin is the terminal (which echoes, so what
    is typed to it shows, as in a terminal window), and it runs with ``TERM=xterm-256color``
    (the shell's own ``TERM`` back after it; docs/engine.md, "TERM").
    """
    end_nonce = end_nonce or nonce
    # `$?`, `$_` and PIPESTATUS as the last job left them, restored inside
    # the eval right before the command. The calls are doubled in an `&&`
    # list so that a non-zero status trips no `set -e` and fires no ERR trap
    # (a failing command before the last `&&` is exempt); a pipeline leaves
    # `$_` alone, so after the first call it is the saved one either way.
    call = f'{RESTORE_FN} "${{{LAST_VAR}[0]-0}}" "${{{LAST_VAR}[1]-}}"'
    if aborted:  # the last job's line was cut short by Ctrl-C: as at a prompt
        call = f"{RESTORE_FN} 130 ''"
    if pipestatus and len(pipestatus) > 1 and not aborted:
        stages = " | ".join(f"{RESTORE_FN} {int(c)}" for c in pipestatus[:_MAX_PIPESTATUS])
        restore = f'{RESTORE_FN} 0 "${{{LAST_VAR}[1]-}}"; {stages} && {stages}'
    else:
        restore = f"{call} && {call}"
    history = f'[[ -z ${HIST_VAR} ]] || \\builtin history -s -- "${CMD_VAR}"; '
    prefix = f"'{history}{restore}; '"  # same line: the command's line numbers stay
    capture = (
        "$'\\n'" + f"'{CAPTURE}'" if can_capture(command) else ""
    )
    # The terminal echoes all the time, as a terminal window does (the
    # reader drops the echo of these lines: it carries the job's nonce). A
    # job that left echo off is noticed when the next job's lines come back
    # without their echo, and the job after that turns it on first. A
    # `stty` run per job would cost a remote round trip several times over
    # (benchmarks/README.md).
    stty = "\\builtin command stty echo </dev/tty >/dev/null 2>&1; " if resync_echo else ""
    stdin, before, after = NULL_FD, "", ""
    if tty:
        stdin, after = INPUT_FD, f'TERM="${TERM_VAR}"; \\builtin unset -v {TERM_VAR}; '
        before = f'{TERM_VAR}="${{TERM-}}"; \\builtin export TERM=xterm-256color; '
    trap_back = ""
    if debug_trap:
        trap_back = f"{_load(TRAP_VAR, debug_trap)}; \\builtin eval \"${TRAP_VAR}\"; {TRAP_VAR}=; "
    lift = (
        f"{_printf(TRAP_BEGIN, nonce)}; \\builtin trap -p DEBUG >&{MARKER_FD}; {_printf(TRAP_END, nonce)}; "
        f"\\builtin trap - DEBUG; [[ $- != *x* ]] || {{ {XTRACE_VAR}=1; \\builtin set +x; }}; "
    )
    end = (
        f"\\builtin printf '\\033]6973;{END};{end_nonce};%d;%s;%q\\007' "
        f'"${{{LAST_VAR}[0]}}" "${{{LAST_VAR}[*]:3}}" "$PWD" >&{MARKER_FD}; '
        f"[[ -z ${XTRACE_VAR} ]] || {{ {XTRACE_VAR}=; \\builtin set -x; }}; "
    )
    return (
        f"{stty}{_load(CMD_VAR, command)}; \\builtin export -n {CMD_VAR}; {trap_back}{before}"
        f"{_printf(BEGIN, nonce)}; "
        f'{EDIT_ON}; ! \\builtin eval {prefix}"${CMD_VAR}"{capture} <&{stdin} >&{MARKER_FD} 2>&{MARKER_FD}; '
        f"{STATUS_VAR}=${{PIPESTATUS[0]}}; {_HISTORY_OFF}; "
        f"[[ ${{{LAST_VAR}[2]-}} ]] || {LAST_VAR}=(\"${STATUS_VAR}\" '' 1 \"${STATUS_VAR}\"); "
        f"{LAST_VAR}[2]=; {MODE_RECORD}; {EDIT_OFF}; {after}\\builtin unset -v {CMD_VAR}; {lift}{end}"
        f"{RESET_PROMPT}\n"
    )


def close_line() -> str:
    """Typed when closing an idle terminal: bash hangs up its jobs (as a
    closing terminal window would) and exits."""
    return "\\builtin kill -HUP $$\n"


def decode_cwd(raw: str) -> str | None:
    """Undo bash's ``printf %q`` of a path."""
    if raw.startswith("$'") and raw.endswith("'"):
        return _ansi_c(raw[2:-1])
    try:
        words = shlex.split(raw)
    except ValueError:
        return None
    return words[0] if len(words) == 1 else None


_SIMPLE = {"a": 7, "b": 8, "e": 27, "E": 27, "f": 12, "n": 10, "r": 13, "t": 9, "v": 11, "\\": 92, "'": 39, '"': 34, "?": 63}


def _ansi_c(body: str) -> str:
    out = bytearray()
    i = 0
    while i < len(body):
        c = body[i]
        if c != "\\" or i + 1 == len(body):
            out += c.encode("utf-8", "surrogateescape")
            i += 1
            continue
        n = body[i + 1]
        if n in _SIMPLE:
            out.append(_SIMPLE[n])
            i += 2
        elif n == "x":
            m = re.match(r"[0-9A-Fa-f]{1,2}", body[i + 2 :])
            out.append(int(m.group(0), 16) if m else 0x5C)
            i += 2 + (len(m.group(0)) if m else 0)
        elif n in "01234567":
            m = re.match(r"[0-7]{1,3}", body[i + 1 :])
            assert m is not None
            out.append(int(m.group(0), 8) & 0xFF)
            i += 1 + len(m.group(0))
        else:
            out += ("\\" + n).encode()
            i += 2
    return out.decode("utf-8", "surrogateescape")


class ShellScanner(MarkerScanner):
    """The remote grammar's scanner. It also takes the ssh wrapper's markers
    (``ssh_start.wrapped_shell``) out of the stream: the first ``KEY`` before
    :meth:`seal` (the wrapper's: it prints it before bash starts) sets the
    nonce, and a ``SHELL_END`` with that nonce calls ``on_end`` once (on the
    reader's thread, under the terminal's lock: it must not block). Other
    ``KEY`` and ``SHELL_END`` markers are dropped, and so is a ``SHELL_END``
    after the ``KEY`` of a login start's check (:meth:`expect_check`)."""

    def __init__(self) -> None:
        super().__init__(GRAMMAR)
        self.key: str | None = None
        self.ended = False
        self.on_end: Callable[[], None] = lambda: None
        self._sealed = False
        self.check: str | None = None  # the login check's nonce (expect_check)

    def expect_check(self, nonce: str) -> None:
        """A login start typed its check (``ssh_start.login_check``) with
        ``nonce``. A ``KEY`` carrying it comes from a bash login shell, which
        runs under no wrapper: nothing there prints a ``SHELL_END``, so none
        ends the shell after it (the nonce was in ``/bin/sh``'s argv, which
        other users of the host may read; a job could print it).
        tests/remote/test_login_start.py::test_a_shell_end_with_the_checks_nonce_ends_nothing."""
        self.check = nonce

    def seal(self) -> None:
        """The shell is ready: no ``KEY`` counts any more (a job could print one)."""
        self._sealed = True

    def feed(self, data: bytes) -> list[bytes | Marker]:
        out = super().feed(data)
        if not any(isinstance(p, Marker) and p.kind in (KEY, SHELL_END) for p in out):
            return out
        kept: list[bytes | Marker] = []
        for p in out:
            if not isinstance(p, Marker) or p.kind not in (KEY, SHELL_END):
                kept.append(p)
            elif p.kind == KEY:
                if self.key is None and not self._sealed:
                    self.key = p.nonce
            elif p.nonce == self.key and self.key != self.check and not self.ended:
                self.ended = True
                self.on_end()
        return kept


def Scanner() -> ShellScanner:  # noqa: N802 - the remote grammar's scanner
    """Split the PTY byte stream into data and markers (the shared scanner,
    with the remote marker format: status, PIPESTATUS and the shell's cwd)."""
    return ShellScanner()


GRAMMAR = Grammar(_VALID, MAX_MARKER_LEN, decode_cwd)
