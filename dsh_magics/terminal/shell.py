"""Spawning the shell and the exact text we type into it.

The user's profile runs first (login shell by default, so conda, nvm and
friends are set up as in their own terminal); then our setup runs and wins:
no line editing (so nothing is echoed and bracketed paste cannot leak), no
prompt, no history file, strict modes and hooks from the profile removed,
pagers neutralised. Every job is then one typed line that evaluates the
command (read from a private file) with stdin from /dev/null and reports
through markers with a per-job secret nonce (see ``markers``).

The shell's own stdout and stderr point at /dev/null; only a job's ``eval``
and the markers write to the PTY. Whatever bash prints at top level around
the engine's line (a user's DEBUG trap firing before each of our commands,
``set -x``/``set -v`` traces of our line, prompts) therefore never lands in
a job's output or in the terminal's retained output.
"""

from __future__ import annotations

import ctypes
import os
import shlex
import signal
import termios
from concurrent.futures import ThreadPoolExecutor

from ptyprocess import PtyProcess

from .config import TerminalConfig
from .markers import BEGIN, END, MARKER_FD, SYNC, printf_marker, printf_prompt_hint

INPUT_FD = 210  # a private duplicate of the PTY as the shell's input
NULL_FD = 211  # /dev/null, kept open: a dup is cheaper than an open per job
# The variable the command file sets; the job line evaluates it and unsets it.
CMD_VAR = "__dsh_magics_cmd"
# Evaluated when the command file could not be read (deleted between our
# write and the shell's read): say so instead of reporting a silent success.
_UNREADABLE = "\\builtin echo 'dsh-magics: the command file could not be read' >&2; (exit 126)"

# Before every prompt: if the shell's own stdin is no longer the terminal,
# put it back. A Ctrl-C that lands while bash is setting up the ``</dev/null``
# of a job's line can leave bash reading /dev/null at top level (it then
# read EOF and exited, killing the session); so can a command that runs
# ``exec </dev/null``. With this guard the shell reads its next line from the
# PTY again.
STDIN_GUARD = f"\\builtin test -t 0 || \\builtin exec 0<&{INPUT_FD}"
# Every line the engine types ends with a command that succeeds, so a prompt
# after a non-zero status follows a line that bash aborted (a SIGINT the
# engine may not have sent). Bash says nothing then (its stdout and stderr go
# to /dev/null), so this hint is what wakes the reader to check the shell.
ABORT_HINT = f"\\builtin test $? = 0 || {printf_prompt_hint()}"
RESET_PROMPT = (
    "\\builtin unset PROMPT_COMMAND;"
    f"PROMPT_COMMAND='{ABORT_HINT}; {STDIN_GUARD}';PS1='' PS2='' PS0='';"
    "\\builtin set +o emacs +o vi"
)

# Variables that make the shell and programs inside it safe to drive without
# a human: no pager ever takes over the PTY, and git never prompts on the tty.
QUIET_ENV = {
    "PAGER": "cat",
    "GIT_PAGER": "cat",
    "MANPAGER": "cat",
    "SYSTEMD_PAGER": "cat",
    "TERM": "dumb",
    "GIT_TERMINAL_PROMPT": "0",
    "HISTFILE": "/dev/null",
}

# A single long-lived thread spawns every shell: PR_SET_PDEATHSIG fires when
# the *thread* that forked the child exits, so spawning from a short-lived
# widget or request thread would kill the shell with that thread.
_spawner = ThreadPoolExecutor(max_workers=1, thread_name_prefix="dsh-spawner")


def _child_setup() -> None:
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        PR_SET_PDEATHSIG = 1
        # If our process dies without cleaning up (SIGKILL), the shell gets a
        # hangup, and an interactive bash passes SIGHUP on to its jobs.
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGHUP, 0, 0, 0)
    except Exception:  # noqa: BLE001 - best effort, Linux only
        pass


def run_on_spawner(fn, *args) -> None:  # type: ignore[no-untyped-def]
    """Run housekeeping (the watchdog) off the caller's path, in order.

    At interpreter exit the executor refuses new work; then run it here, so
    a close that happens during shutdown still completes."""
    try:
        _spawner.submit(fn, *args)
    except RuntimeError:
        fn(*args)


def shell_env(session_id: str, token: str) -> dict[str, str]:
    env = dict(os.environ)
    # An inline matplotlib backend inherited from the kernel breaks any Python
    # script run in the terminal.
    if env.get("MPLBACKEND", "").startswith("module://"):
        del env["MPLBACKEND"]
    env.update(QUIET_ENV)
    env["DSH_MAGICS_SESSION"] = session_id
    env["DSH_MAGICS_TOKEN"] = token
    return env


def spawn(config: TerminalConfig, cwd: str, env: dict[str, str]) -> PtyProcess:
    argv = [config.shell, "-l", "-i"] if config.login else [config.shell, "--noprofile", "--norc", "-i"]

    def go() -> PtyProcess:
        return PtyProcess.spawn(
            argv,
            cwd=cwd,
            env=env,
            echo=False,
            dimensions=(config.rows, config.cols),
            preexec_fn=_child_setup,
        )

    return _spawner.submit(go).result()


def setup_script(cwd: str) -> str:
    """Runs after the user's profile, inside the shell, once."""
    q = shlex.quote
    return "\n".join(
        [
            "set +o emacs +o vi 2>/dev/null",
            "set +o history +u +e +x +v +T +o pipefail 2>/dev/null",
            "unset HISTFILE PROMPT_COMMAND PS0",
            "PS1='' PS2='' PS4='+ '",
            "export " + " ".join(f"{k}={q(v)}" for k, v in QUIET_ENV.items() if k != "HISTFILE"),
            f"exec {MARKER_FD}>&1 {INPUT_FD}<&0 {NULL_FD}</dev/null",
            "set -o ignoreeof",
            "stty -echo 2>/dev/null",
            f"\\builtin cd -- {q(cwd)} 2>/dev/null",
            # Last: from here on only jobs and markers reach the PTY.
            "exec 1>/dev/null 2>&1",
            "",
        ]
    )


def setup_line(setup_path: str, ready_nonce: str) -> str:
    """Typed (not sourced) because bash restores a DEBUG trap around ``.``,
    so a profile's DEBUG hook (starship, bash-preexec) can only be removed
    from the top level; prompt variables too, since bash 5.2 kept prompting
    with the profile's PS1 when it was only reset inside the sourced file.
    The readiness probe comes two lines later so that any prompt bash had
    already prepared lands before it.
    """
    return (
        f"\\builtin . {shlex.quote(setup_path)}; \\builtin trap - DEBUG ERR RETURN; "
        f"{RESET_PROMPT}\n"
        ":\n" + sync_line(ready_nonce)
    )


def command_file(command: bytes) -> bytes:
    """The text of the command file: one assignment of the command, quoted.

    The shell ``.``-sources this file (which runs nothing of the user's) and
    then ``eval``s the variable at top level. Running the command itself
    under ``.`` would differ from a terminal: bash suspends a DEBUG trap
    while sourcing and puts it back afterwards (so ``trap - DEBUG`` could
    never be undone), and it runs the RETURN trap when each sourced file
    ends. ``eval`` has neither effect. The ``export -n`` keeps the command
    out of child environments under ``set -a``.
    """
    quoted = b"'" + command.replace(b"'", b"'\\''") + b"'"
    return CMD_VAR.encode() + b"=" + quoted + b"; \\builtin export -n " + CMD_VAR.encode() + b"\n"


def job_line(nonce: str, script_path: str, resync_tty: bool = False) -> str:
    """One physical line per job: load the command, begin marker, the
    command evaluated with stdin from /dev/null and stdout/stderr on the
    PTY, end marker carrying its status.

    Everything but the ``eval`` runs with the shell's stdout and stderr on
    /dev/null (see the module docstring), and the markers go to the private
    PTY fd. The variable is unset first, so a command file that cannot be
    read never re-runs the previous command, and again afterwards, so no
    command text lingers between jobs.

    The ``eval`` is negated so that a failing job does not fire the user's
    ERR trap a second time at top level (it already fired inside) and cannot
    trip ``set -e`` outside it; the real status is read back from
    ``PIPESTATUS[0]``. ``|| :`` keeps a failed read of the file from ending a
    shell under ``set -e``.

    Prompt variables are reset after each job because a command that sets
    them would otherwise add work (and DEBUG-trap firings) between jobs.
    """
    return (
        (RESYNC_TTY if resync_tty else "")
        + f"\\builtin unset -v {CMD_VAR}; \\builtin . {shlex.quote(script_path)} || :; "
        f"{printf_marker(BEGIN, nonce)}; "
        f'! \\builtin eval "${{{CMD_VAR}-{_UNREADABLE}}}" <&{NULL_FD} >&{MARKER_FD} 2>&{MARKER_FD}; '
        f"{printf_marker(END, nonce, with_status=True)}; \\builtin unset -v {CMD_VAR}; "
        f"{RESET_PROMPT}\n"
    )


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


# ----------------------------------------------------------------------------
# Looking at the shell process from outside (only after a quiet spell in a
# running job, never on a job's normal path).
_SYSCALLS = {"x86_64": (0, 312, 61), "aarch64": (63, 272, 260)}  # (read, kcmp, wait4) per machine
_READ_NR, _KCMP_NR, _WAIT4_NR = _SYSCALLS.get(os.uname().machine, (None, None, None))
_KCMP_FILE = 0
_libc: ctypes.CDLL | None = None

TOP_LEVEL, TTY_READ_ELSEWHERE, BUSY_OR_UNKNOWN = "top_level", "tty_read_elsewhere", "busy"


def identity(pid: int) -> tuple[str, bytes] | None:
    """What the shell process is running (executable and argv), to notice
    later that a command ``exec``-ed something else into its place: the pid
    stays, so neither the pidfd nor a status change tells."""
    try:
        exe = os.readlink(f"/proc/{pid}/exe")
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return exe, f.read()
    except OSError:
        return None


def _children(pid: int) -> list[int]:
    try:
        with open(f"/proc/{pid}/task/{pid}/children", "rb") as f:
            return [int(c) for c in f.read().split()]
    except (OSError, ValueError):
        return []


def command_launched(pid: int, pgrp: int) -> bool | None:
    """Has the shell finished starting its foreground command?

    True once bash blocks in ``wait4`` (it waits only after every process of
    a pipeline is forked and in its group) and none of its children in the
    foreground group ``pgrp`` is still an un-``exec``-ed copy of the shell
    (such a child still runs bash's own SIGINT handler, and loses the signal
    when it then ``exec``-s). Until then a SIGINT to the foreground group can
    miss a member: ``sleep`` in ``sleep 30 | cat`` dies, the ``cat`` forked a
    moment later reads EOF and exits 0, and the line carries on. A subshell
    stays a copy of the shell for good; callers wait for it only briefly.
    None when the machine is unknown or /proc cannot tell.
    """
    if _WAIT4_NR is None:
        return None
    try:
        with open(f"/proc/{pid}/syscall", "rb") as f:
            if f.read().split(maxsplit=1)[:1] != [str(_WAIT4_NR).encode()]:
                return False
        shell_exe = os.readlink(f"/proc/{pid}/exe")
    except OSError:
        return None
    for child in _children(pid):
        try:
            if os.getpgid(child) == pgrp and os.readlink(f"/proc/{child}/exe") == shell_exe:
                return False
        except OSError:
            continue  # gone already
    return True


def _reads_a_terminal(pid: int) -> bool:
    """Blocked in ``read`` on a terminal device (never on stdin: a job's
    stdin is /dev/null, so this is something that opened the tty itself)."""
    try:
        with open(f"/proc/{pid}/syscall", "rb") as f:
            fields = f.read().split()
        if len(fields) < 2 or fields[0] != str(_READ_NR).encode():
            return False
        target = os.readlink(f"/proc/{pid}/fd/{int(fields[1], 16)}")
    except (OSError, ValueError):
        return False
    return target == "/dev/tty" or target.startswith("/dev/pts/")


def command_name(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/comm") as f:
            return f.read().strip() or "?"
    except OSError:
        return "?"


def terminal_reader(shell_pid: int, pgrp: int) -> int | None:
    """A process of the terminal's foreground group ``pgrp`` (below the
    shell) that sits in ``read`` on the terminal: a password or confirmation
    prompt (``sudo``, ``ssh``, ``passwd``, ``read </dev/tty``). Nothing types
    into a job's terminal, so such a job waits until it is interrupted; the
    engine says so instead of leaving its user to guess why it is quiet.
    """
    if _READ_NR is None:
        return None
    queue, seen = _children(shell_pid), 0
    while queue and seen < 256:
        pid = queue.pop(0)
        seen += 1
        try:
            in_group = os.getpgid(pid) == pgrp
        except OSError:
            continue
        if in_group and _reads_a_terminal(pid):
            return pid
        queue.extend(_children(pid))
    return None


def input_state(pid: int) -> str:
    """Is the shell blocked reading its own terminal input at top level?

    /proc/<pid>/syscall tells that it sleeps in ``read`` on fd 0. That alone
    is not enough: a job running the builtin ``read x </dev/tty`` also reads
    fd 0 of the same terminal, and a probe typed then would become that
    read's input. Bash's top-level fd 0 is the very open file description
    that fd ``INPUT_FD`` duplicates (set up once; the prompt guard restores
    fd 0 from it), whereas ``</dev/tty`` opens a new one; ``kcmp`` compares
    exactly that. Without ``kcmp`` (or on an unknown machine) the answer is
    ``BUSY_OR_UNKNOWN``, so no probe is ever typed on a guess.
    """
    global _libc
    if _READ_NR is None:
        return BUSY_OR_UNKNOWN
    try:
        with open(f"/proc/{pid}/syscall", "rb") as f:
            fields = f.read().split()
    except OSError:
        return BUSY_OR_UNKNOWN
    if len(fields) < 2 or fields[0] != str(_READ_NR).encode() or int(fields[1], 16) != 0:
        return BUSY_OR_UNKNOWN
    try:
        if _libc is None:
            _libc = ctypes.CDLL(None, use_errno=True)
        same = _libc.syscall(_KCMP_NR, pid, pid, _KCMP_FILE, 0, INPUT_FD)
    except Exception:  # noqa: BLE001 - no kcmp: never guess
        return BUSY_OR_UNKNOWN
    if same == 0:
        return TOP_LEVEL
    return TTY_READ_ELSEWHERE if same > 0 else BUSY_OR_UNKNOWN
