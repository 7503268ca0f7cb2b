"""Spawning the shell and every byte of text typed into it: setup, the job
line, probes (docs/internals.md explains each part of the job line)."""

from __future__ import annotations

import os
import re
import shlex
import termios

from ..config import TerminalConfig
from ..core import bash_version, environment, procs
from ..core.markers import BEGIN, END, MARKER_FD, SYNC, printf_marker, printf_prompt_hint

INPUT_FD = procs.INPUT_FD  # a private duplicate of the PTY as the shell's input
NULL_FD = 211  # /dev/null (read-write), kept open: a dup is cheaper than an open per job
# The variable the command file sets; the job line evaluates it and unsets it.
CMD_VAR = "__dsh_magics_cmd"
# Evaluated when the command file could not be read (deleted between our
# write and the shell's read): say so instead of reporting a silent success.
_UNREADABLE = "\\builtin echo 'dsh-magics: the command file could not be read' >&2; (exit 126)"

# Shell state the engine keeps between jobs, so that each job starts with the
# prompt's view: the last command's status, last argument (``$_``) and
# PIPESTATUS (as words), and what adds a job to the history list (an array:
# ``history -s`` when the user wants history, else ``:``).
ST, LA, PS, HIST = "__dsh_st", "__dsh_la", "__dsh_ps", "__dsh_H"
# Scratch: the same three as the job's text left them (unset until then),
# the file that is the shell's own stdout (anything in it means a trap ran or
# was listed), the file the user's traps are parked in while the end marker
# is printed, their text, the shell flags of that moment, the empty
# variable ``KEEP`` expands, the status of an aborted line, and the prompt
# state the last check found right (``PROMPT_OK``).
ST2, LA2, PS2, SEEN, TRAPS, TRAPTEXT, OLDFLAGS, EMPTY, ABORTED, OK_VAR = (
    "__dsh_s2", "__dsh_l2", "__dsh_p2", "__dsh_y", "__dsh_f", "__dsh_t", "__dsh_o", "__dsh_E", "__dsh_q", "__dsh_ok",
)
# Engine text kept in variables at setup, so bash parses it only when it
# runs (parsing the typed line is a large part of a job's cost): ``KEEP``,
# what the command file appends (``KEEP``, or nothing under ``set -v``), the
# fallback for an unreadable command file, and the two halves of the slow
# path around the end marker (see ``_hidden``).
KEEP_TEXT, KEEP_VAR, UNREADABLE_VAR, LIFT_VAR, BACK_VAR = "__dsh_K", "__dsh_kt", "__dsh_u", "__dsh_lift", "__dsh_back"
RESTORE_FN, END_FN, PROMPT_FN, FIX_FN = "__dsh_r", "__dsh_e", "__dsh_pc", "__dsh_x"
MAX_PIPESTATUS = 8  # a longer PIPESTATUS is restored as its first 8 statuses
SEEN_FILE, TRAPS_FILE = "stdout", "traps"

# Before every prompt: if the shell's own stdin is no longer the terminal,
# put it back. A Ctrl-C that lands while bash is setting up the ``</dev/null``
# of a job's line can leave bash reading /dev/null at top level (it then
# read EOF and exited, killing the session); so can a command that runs
# ``exec </dev/null``. With this guard (after a whole line; after an aborted
# one ``EDIT_BACK`` ends the same way) the shell reads its next line from the
# PTY again. ``command exec``, not ``builtin exec``: bash keeps the redirections
# of a bare ``exec`` only when it runs as ``exec`` or through ``command``
# (pinned by tests/terminal/test_shell_setup.py::test_stdin_guard_puts_the_terminal_back).
STDIN_GUARD = f"[[ -t 0 ]] || \\command exec 0<&{INPUT_FD}"
# Every line the engine types ends with a command that succeeds, so a prompt
# after a non-zero status follows a line that bash aborted (a SIGINT the
# engine may not have sent). Bash says nothing then (its stdout and stderr go
# to /dev/null), so ``PROMPT_FN`` prints a hint that wakes the reader to
# check the shell; it also keeps the aborted line's ``$?`` and ``$_`` for the
# next job, as a prompt would show them. After a whole line (the usual case)
# no function runs: a call costs more than the two tests.
# After an aborted line ``PROMPT_FN`` itself leaves the shell's input on the
# here-string of ``EDIT_BACK`` (which ends by putting the terminal back), so
# the guard runs only after a whole line.
PROMPT_CMD = f'(( {ABORTED} = $? )) && {PROMPT_FN} "$_" || {STDIN_GUARD}'
RESET_PROMPT = (
    "\\builtin unset PROMPT_COMMAND;"
    f"PROMPT_COMMAND='{PROMPT_CMD}';PS1='' PS2='' PS0=''"
)

# Line editing while a job's text runs (docs/internals.md, "Line editing").
# Bash switches its input to readline when ``set -o vi``/``set -o emacs``
# runs at the interactive level, unless readline input is already on its
# stack of input sources; inside an ``eval`` that switch replaces the input
# the ``eval`` is parsing: the rest of the job's text, the rest of the job
# line and the end marker are lost, and the ``eval`` goes on reading the
# terminal with readline. So the job line turns editing on at top level
# (where the switch is harmless: the line is parsed already) right before
# the ``eval`` and ``END_FN`` turns it off again: the job's own ``set -o vi``
# then only changes the mode. ``MODE`` keeps the editing mode the user chose
# (vi or emacs), for the next jobs and for a person's ``read -e`` prompt.
MODE = "__dsh_m"
EDIT_ON = f'\\builtin set -o "${{{MODE}:-emacs}}"'
EDIT_OFF = "\\builtin set +o emacs +o vi"
MODE_RECORD = f"if [[ -o vi ]]; then {MODE}=vi; elif [[ -o emacs ]]; then {MODE}=emacs; fi"
# A line aborted between ``EDIT_ON`` and ``EDIT_OFF`` leaves readline as the
# shell's input, which the quiet check cannot see waiting and which would
# take the engine's next line with line editing. Prompt commands cannot
# switch it back (bash runs them as non-interactive), so ``PROMPT_FN`` gives
# the shell this line to read instead, on a here-string: read by readline
# (or by the plain reader, when the line was aborted before the switch), it
# turns editing off at top level and puts the terminal back as the input.
EDIT_BACK = f"{EDIT_OFF}; \\command exec 0<&{INPUT_FD}"
EDIT_BACK_VAR = "__dsh_rl"

# True when a job left the prompt variables, line editing, history, verbose
# (and every other option) as ``FIX_FN`` last left them: one comparison with
# the state it recorded, cheaper than testing each. The two ``|`` cannot be
# forged (no option name has one, and the flags part is only ``x``es).
PROMPT_STATE = "${PROMPT_COMMAND-}'|'${PROMPT_COMMAND[1]+x}${PS1:+x}${PS2:+x}${PS0:+x}'|'$SHELLOPTS"
PROMPT_OK = f'[[ {PROMPT_STATE} == "${OK_VAR}" ]]'

# The local shell also keeps no history file.
QUIET_ENV = {**environment.QUIET_ENV, "HISTFILE": "/dev/null"}

def shell_env(session_id: str, token: str) -> dict[str, str]:
    env = dict(os.environ)
    # An inline matplotlib backend inherited from the kernel breaks any Python
    # script run in the terminal.
    if env.get("MPLBACKEND", "").startswith("module://"):
        del env["MPLBACKEND"]
    env.update(QUIET_ENV)
    env["DSH_MAGICS_SESSION"] = session_id
    env[procs.TOKEN_VAR] = token
    return env


def argv(config: TerminalConfig) -> list[str]:
    """The shell's command line; SHELL_UNSUPPORTED for a bash too old."""
    bash_version.require(config.shell)
    return [config.shell, "-l", "-i"] if config.login else [config.shell, "--noprofile", "--norc", "-i"]


def _functions() -> str:
    """The engine's shell functions, defined once (no secret in them: the
    nonces are only ever typed on the job line). Bash runs a function body
    without DEBUG traps or per-job parsing, but each call and each command
    still costs a few microseconds: the usual path runs one call
    (``END_FN``) and nothing else.

    ``RESTORE_FN`` only returns its argument: the job's ``$?`` when it is
    neither 0 nor 1 (those come from ``:`` and ``false``, no call), and the
    stages of a PIPESTATUS. The command file adds the job to the history
    list (``HIST``; as a prompt would, bash's own recording stays off, so the
    engine's lines are never in it). ``END_FN`` runs first after the job: it
    takes what ``KEEP`` saved, or, when the job's text did not run to its
    end (a syntax error, ``set -v``), the status of ``eval``, and clears the
    job's variables. When the prompt variables or any shell option differ
    from what ``FIX_FN`` last recorded (``PROMPT_OK``), ``FIX_FN`` switches
    recording off again if the job switched it on (dropping ``KEEP``, which
    bash recorded then) and records the following jobs, turns ``KEEP`` off
    under ``set -v``, and resets the prompt variables. ``PROMPT_FN`` runs
    before a prompt that follows a line bash aborted (a Ctrl-C): it keeps
    that line's status and last argument, does the same, and prints the
    hint."""
    hint = printf_prompt_hint()
    cleanup = f"\\builtin unset -v {CMD_VAR} {ST2} {LA2} {PS2}"
    history_off = f"if [[ -o history ]]; then {HIST}=(history -s); \\builtin set +o history; "
    verbose = f"if [[ -o verbose ]]; then {KEEP_VAR}=; else {KEEP_VAR}=${KEEP_TEXT}; fi"
    return "\n".join(
        [
            f'{RESTORE_FN}() {{ \\builtin return "$1"; }}',
            f"{END_FN}() {{ {ST}=${{{ST2}-$1}} {LA}=${{{LA2}-${LA}}} {PS}=${{{PS2}-$1}}; "
            f"{PROMPT_OK} || {FIX_FN}; {EDIT_OFF}; {cleanup}; }}",
            f"{FIX_FN}() {{ {history_off}[[ -z ${{{LA2}+x}} ]] || \\builtin history -d -1; fi; "
            f"{MODE_RECORD}; {RESET_PROMPT}; {verbose}; {EDIT_ON}; {OK_VAR}=$PROMPT_COMMAND'||'$SHELLOPTS; }}",
            f"{PROMPT_FN}() {{ {ST}=${ABORTED} {LA}=$1 {PS}=${ABORTED}; {cleanup}; "
            f'{history_off}fi; {verbose}; {MODE_RECORD}; {hint}; \\command exec 0<<<"${EDIT_BACK_VAR}"; }}',
        ]
    )


def _variables(scratch: str) -> str:
    q = shlex.quote
    lift = (
        f'{OLDFLAGS}=$-; \\builtin trap -p DEBUG ERR RETURN >"${TRAPS}"; '
        "\\builtin trap - DEBUG ERR RETURN; \\builtin set +x"
    )
    back = (
        f': >"${SEEN}"; \\builtin read -r -d "" {TRAPTEXT} <"${TRAPS}" || :; \\builtin eval "${TRAPTEXT}"; '
        f"[[ ${OLDFLAGS} != *x* ]] || \\builtin set -x; {OLDFLAGS}="
    )
    return "\n".join(
        [
            f"{SEEN}={q(os.path.join(scratch, SEEN_FILE))} {TRAPS}={q(os.path.join(scratch, TRAPS_FILE))} "
            f"{TRAPTEXT}= {OLDFLAGS}= {EMPTY}= {ABORTED}=0 {OK_VAR}=",
            f"{KEEP_TEXT}={q(KEEP)} {KEEP_VAR}={q(KEEP)} {UNREADABLE_VAR}={q(_UNREADABLE)} "
            f"{LIFT_VAR}={q(lift)} {BACK_VAR}={q(back)} {EDIT_BACK_VAR}={q(EDIT_BACK)}",
        ]
    )


def setup_script(cwd: str, scratch: str, gate_open: str = "") -> str:
    """Runs after the user's profile, inside the shell, once. ``scratch`` is
    the terminal's private directory (for ``SEEN_FILE`` and ``TRAPS_FILE``);
    ``gate_open`` opens the job gate (see ``gate.Gate``)."""
    q = shlex.quote
    return "\n".join(
        [
            "set +o emacs +o vi 2>/dev/null",
            "set +o history +u +e +x +v +T +o pipefail 2>/dev/null",
            "history -c",
            "unset HISTFILE PROMPT_COMMAND PS0",
            "unset TMOUT 2>/dev/null",  # an idle shell is not logged out (a read-only one stays: docs/engine.md)
            "PS1='' PS2='' PS4='+ '",
            "export " + " ".join(f"{k}={q(v)}" for k, v in QUIET_ENV.items() if k != "HISTFILE"),
            f"exec {MARKER_FD}>&1 {INPUT_FD}<&0 {NULL_FD}</dev/null",
            "set -o ignoreeof",
            "stty -echo 2>/dev/null",
            f"\\builtin cd -- {q(cwd)} 2>/dev/null",
            _variables(scratch),
            gate_open,
            _functions(),
            # Last: from here on only jobs and markers reach the PTY.
            f'exec 1>>"${SEEN}" 2>/dev/null',
            "",
        ]
    )


def setup_line(setup_path: str, ready_nonce: str) -> str:
    """Typed (not sourced) because bash restores a DEBUG trap around ``.``,
    so a profile's DEBUG hook (starship, bash-preexec) can only be removed
    from the top level; prompt variables too, since bash 5.2 kept prompting
    with the profile's PS1 when it was only reset inside the sourced file.
    It first keeps what a fresh shell shows (``$?``, ``$_``, the history
    option) for the first job. The readiness probe comes two lines later so
    that any prompt bash had already prepared lands before it.

    It starts with an empty line, for a profile that reads the terminal
    (``read -t 5 answer``): it takes that line, as if a person pressed
    Enter, and the set-up after it is left for bash (its ``read`` takes one
    line at a time). Without such a ``read``, bash reads an empty command
    line, which runs nothing and changes neither ``$?`` nor ``$_``.
    """
    return (
        f"\n{ST}=$? {LA}=$_ {PS}=0 {HIST}=(:) {MODE}=emacs; [[ ! -o history ]] || {HIST}=(history -s); "
        f"{MODE_RECORD}; \\builtin . {shlex.quote(setup_path)}; \\builtin trap - DEBUG ERR RETURN; "
        f"{RESET_PROMPT}; {EDIT_ON}; {OK_VAR}=$PROMPT_COMMAND'||'$SHELLOPTS; {EDIT_OFF}\n"
        ":\n" + sync_line(ready_nonce)
    )


# Appended to the job's text inside its ``eval`` (when ``can_keep``): keeps
# the last command's status, PIPESTATUS and ``$_``. All of it happens in the
# expansion of a redirection of a group whose only command defines a function:
# bash shows neither to a DEBUG trap nor to ``set -x``, and ``1>&1`` costs no
# system call. The assignments sit in the pattern of a case change of an
# empty variable (bash expands that pattern even for an empty value, unlike
# the one of ``#``), so the redirection's word stays ``1``. Pinned by
# tests/contract/test_fidelity.py.
KEEP = (
    "\n\n{ __dsh_nop() { :; }; } 1>&1${"
    + f"{EMPTY}^^${{{ST2}=$?}}${{{LA2}=$_}}${{{PS2}=${{PIPESTATUS[@]}}}}}}"
)
_HEREDOC = re.compile(r"(?<!<)<<(?!<)(-?)[ \t]*(['\"]?)([^\s'\"<>|&;()]+)\2")
_OPEN_END = ("|", "&&", "||", "|&", "()")
# A command that turns on ``set -v`` would have bash echo ``KEEP`` as it reads it.
_VERBOSE_ON = re.compile(r"\bset\s+(?:-[a-zA-Z]*v|-o\s+verbose)")


def can_keep(text: str) -> bool:
    """May ``KEEP`` be appended after ``text``? Not when it would become part
    of the command: the body of a here-document left open, or the next stage
    of a pipeline or list the text leaves open (``cmd |``), or text echoed
    under ``set -v`` that the command turns on. Then the job's status comes
    from ``eval`` and ``$_`` stays as it was."""
    tail = text.rstrip()
    if tail.endswith(_OPEN_END) or tail.endswith("function") or _VERBOSE_ON.search(text):
        return False
    for m in _HEREDOC.finditer(text):
        strip, word = m.group(1), re.escape(m.group(3))
        line = rf"^\t*{word}$" if strip else rf"^{word}$"
        if not re.search(line, text[m.end():], re.M):
            return False
    return True


def normalize_newlines(command: str) -> str:
    """CR LF and a lone CR become LF, as a terminal with ``icrnl`` delivers them."""
    return command.replace("\r\n", "\n").replace("\r", "\n") if "\r" in command else command


def command_file(command: bytes, keep: bool = False) -> bytes:
    """The text of the command file: one assignment of the command, quoted,
    and whether ``KEEP`` follows it (see ``can_keep``), then the command
    added to the history list (``HIST``).

    The shell ``.``-sources this file (which runs nothing of the user's) and
    then ``eval``s the variable at top level. Running the command itself
    under ``.`` would differ from a terminal: bash suspends a DEBUG trap
    while sourcing and puts it back afterwards (so ``trap - DEBUG`` could
    never be undone), and it runs the RETURN trap when each sourced file
    ends. ``eval`` has neither effect. The variable is an array (the command,
    then ``KEEP``), and bash never exports arrays: the command stays out of
    child environments under ``set -a`` without an ``export -n``.
    """
    add = f' "${KEEP_VAR}"' if keep else ""
    return (
        CMD_VAR.encode() + b"=(" + _quote(command) + add.encode()
        + f'); \\builtin "${{{HIST}[@]}}" -- "${{{CMD_VAR}%$\'\\n\'}}"\n'.encode()
    )


def _quote(data: bytes) -> bytes:
    return b"'" + data.replace(b"'", b"'\\''") + b"'"


def _hidden(printf: str) -> str:
    """Print the end marker so that nothing the user installed sees its nonce.

    Bash shows each top-level command to a DEBUG trap (``BASH_COMMAND``) and
    to ``set -x`` (into ``BASH_XTRACEFD``, which may be a file); an ERR trap
    would see a command that fails, so the ``printf`` ends in ``|| :`` (bash
    runs no ERR trap for a command on the left of ``||``) and a RETURN trap
    only runs when a function or sourced file ends, which the ``printf`` is
    not. So the DEBUG trap is always lifted before the one ``printf`` that
    carries the nonce (each trap name costs the ``trap`` builtin a scan of
    every signal name: only the one that matters is named). Whether there
    was one to put back is cheap to know: the shell's own stdout is ``SEEN``
    (append mode), and ``trap -p`` lists it there, as a trap that prints
    while it runs writes there too; empty means none. Only then (or under
    ``set -x``) are DEBUG, ERR and RETURN parked in ``TRAPS`` (``LIFT_VAR``)
    and put back after the marker (``BACK_VAR``). A trap that tampers with
    the files can only lose itself: the lifting never depends on them.
    Pinned by tests/contract/test_fidelity.py.
    """
    return (
        f"\\builtin trap -p DEBUG; [[ ! -s ${SEEN} && $- != *x* ]] || \\builtin eval \"${LIFT_VAR}\"; "
        f"\\builtin trap - DEBUG; {printf} || :; [[ -z ${OLDFLAGS} ]] || \\builtin eval \"${BACK_VAR}\""
    )


def job_line(
    nonce: str,
    script_path: str,
    resync_tty: bool = False,
    *,
    end_nonce: str | None = None,
    status: int | None = None,
    pipestatus: list[int] | None = None,
    gate: str = "",
    gate_end: str = "",
    tty: bool = False,
) -> str:
    """One physical line per job: load the command, begin marker, restore
    the prompt's view, the command evaluated with stdin from /dev/null and
    stdout/stderr on the PTY, end marker carrying its status.

    Everything but the ``eval`` runs with the shell's stdout and stderr
    away from the PTY (see the module docstring), and the markers go to the
    private PTY fd. ``END_FN`` (and ``PROMPT_FN`` after an aborted line)
    unsets the command variable, so a command file that cannot be read never
    re-runs the previous command, and no command text lingers between jobs.

    The two markers carry different nonces. The end marker's is never in a
    variable, a file, the history, or a command that a trap or ``set -x``
    sees (``_hidden``). The begin marker's only says where the job's output
    starts (a DEBUG trap sees it; repeating it changes nothing).

    Right before the ``eval``, ``:`` (status 0), ``false`` (1) or
    ``RESTORE_FN`` leaves ``$?`` and ``$_`` as the last job left them. Its status must fire no ERR trap and trip no
    ``set -e``: when the last status is known (``status``, from the last end
    marker) the ``eval`` follows it in an ``&&`` or ``||`` list, else both
    sit in an ``if``. After a pipeline (``pipestatus``), a pipeline of as
    many stages restores PIPESTATUS (one fork per stage, only then).

    The ``eval`` is negated so that a failing job does not fire the user's
    ERR trap a second time at top level (it already fired inside) and cannot
    trip ``set -e`` outside it; ``|| :`` keeps a failed read of the file from
    ending a shell under ``set -e``.
    """
    end_nonce = end_nonce or nonce
    # A tty job reads a fresh open of the terminal (never the shell's own
    # input description: see ``input_state``); others read /dev/null.
    stdin = "</dev/tty" if tty else f"<&{NULL_FD}"
    run = (
        f'! \\builtin eval "${{{CMD_VAR}-${UNREADABLE_VAR}}}${{{CMD_VAR}[1]-}}" '
        f"{stdin} >&{MARKER_FD} 2>&{MARKER_FD}"
    )
    if pipestatus and len(pipestatus) > 1:
        # After the last argument is set: a pipeline leaves ``$_`` alone.
        stages = " | ".join(f"{RESTORE_FN} {int(code)}" for code in pipestatus[:MAX_PIPESTATUS])
        restore = f"if \\builtin : \"${LA}\"; {stages}; then {run}; else {run}; fi"
    elif status is None:
        restore = f'if {RESTORE_FN} "${ST}" "${LA}"; then {run}; else {run}; fi'
    elif status in (0, 1):
        # The two usual statuses need no function call.
        restore = f'\\builtin {"false" if status else ":"} "${LA}" {"||" if status else "&&"} {run}'
    else:
        restore = f'{RESTORE_FN} {int(status)} "${LA}" || {run}'
    end = printf_marker(END, end_nonce, status=f'"${ST}"', pipestatus=f'"${PS}"')
    # ``gate`` (``gate.Gate.shell_wait()``) holds the command after
    # its begin marker until the engine has switched echo on for the job; a
    # tty job waits there once more after its end marker, while the engine
    # throws away input nobody read. With the gate the job runs with echo on,
    # so a resync must not turn it off.
    resync = (RESYNC_TTY_ECHO if gate else RESYNC_TTY) if resync_tty else ""
    return (
        resync
        + f"\\builtin . {shlex.quote(script_path)} || :; {printf_marker(BEGIN, nonce)}; "
        + (f"{gate}; " if gate else "")
        + (TTY_TERM_ON if tty else "")
        + f'{EDIT_ON}; {restore}; {END_FN} "${{PIPESTATUS[0]}}"; '
        + (TTY_TERM_OFF if tty else "")
        + _hidden(end)
        + (f"; {gate_end}" if gate_end and tty else "")
        + "\n"
    )


#: A ``tty=True`` job runs with a capable ``TERM``; the shell's own (the
#: quiet ``dumb``) is put back after its status is taken (docs/engine.md,
#: "TERM"). Not a temporary assignment on the ``eval``: bash drops those for
#: the shell's own lookups after the command's first simple command.
TERM_VAR = "__dsh_magics_term"
TTY_TERM = "xterm-256color"
TTY_TERM_ON = f'{TERM_VAR}="${{TERM-}}"; \\builtin export TERM={TTY_TERM}; '
TTY_TERM_OFF = f'TERM="${TERM_VAR}"; \\builtin unset -v {TERM_VAR}; '


def sync_line(nonce: str) -> str:
    """A probe the shell answers once it is back at its input loop."""
    return f"{printf_marker(SYNC, nonce)}\n"


def quiet_tty(fd: int) -> bool:
    """Re-assert no echo on the PTY before typing (``stty echo``/``stty sane``
    in an earlier command would otherwise echo our next line). Returns True
    if something had to change.

    Changing the modes from outside is not enough on its own: interactive
    bash keeps its own copy of the terminal modes, refreshes it only after a
    foreground *process* exits normally, and restores it after one dies of a
    signal. So when this returns True the next line also runs ``stty`` inside
    the shell (see ``RESYNC_TTY``), which makes bash's copy agree.
    """
    try:
        attrs = termios.tcgetattr(fd)
    except termios.error:
        return False
    if attrs[3] & termios.ECHO or not attrs[3] & termios.ICANON:
        attrs[3] = (attrs[3] & ~termios.ECHO) | termios.ICANON
        try:
            termios.tcsetattr(fd, termios.TCSANOW, attrs)
        except termios.error:
            return False
        return True
    return False


RESYNC_TTY = "\\builtin command stty -echo icanon </dev/tty >/dev/null 2>&1;"
RESYNC_TTY_ECHO = "\\builtin command stty echo icanon </dev/tty >/dev/null 2>&1;"
