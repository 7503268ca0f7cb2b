"""Spawning the shell and the exact text we type into it.

The user's profile runs first (login shell by default, so conda, nvm and
friends are set up as in their own terminal); then our setup runs and wins:
no line editing (so nothing is echoed and bracketed paste cannot leak), no
prompt, no history file, strict modes and hooks from the profile removed,
pagers neutralised. Every job is then one typed line that sources a private
script file with stdin from /dev/null and reports through markers with a
per-job secret nonce (see ``markers``).
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
from .markers import BEGIN, END, MARKER_FD, SYNC, printf_marker

INPUT_FD = 210  # a private duplicate of the PTY as the shell's input

# Before every prompt: if the shell's own stdin is no longer the terminal,
# put it back. A Ctrl-C that lands while bash is setting up the ``</dev/null``
# of a job's line can leave bash reading /dev/null at top level (it then
# read EOF and exited, killing the session); so can a command that runs
# ``exec </dev/null``. With this guard the shell reads its next line from the
# PTY again.
STDIN_GUARD = f"\\builtin test -t 0 || \\builtin exec 0<&{INPUT_FD}"
RESET_PROMPT = (
    "\\builtin unset PROMPT_COMMAND;"
    f"PROMPT_COMMAND='{STDIN_GUARD}';PS1='' PS2='' PS0='';"
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
            f"exec {MARKER_FD}>&1 {INPUT_FD}<&0",
            "set -o ignoreeof",
            "stty -echo 2>/dev/null",
            f"\\builtin cd -- {q(cwd)} 2>/dev/null",
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


def job_line(nonce: str, script_path: str, resync_tty: bool = False) -> str:
    """One physical line per job: begin marker, the sourced script (stdin
    from /dev/null), end marker carrying the script's status on the private
    PTY fd.

    The ``.`` is negated so that a failing job does not fire the user's ERR
    trap a second time at top level (it already fired inside the script) and
    a non-zero ``return`` cannot trip ``set -e`` outside the script; the real
    status is read back from ``PIPESTATUS[0]``. Inside the script, ``set -e``
    still ends the shell as it would end a script.

    Prompt variables are reset after each job because a command that sets
    them would otherwise add noise between jobs.
    """
    return (
        (RESYNC_TTY if resync_tty else "")
        + f"{printf_marker(BEGIN, nonce, private_fd=False)};"
        f"! \\builtin . {shlex.quote(script_path)} </dev/null;"
        f"{printf_marker(END, nonce, with_status=True)};"
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
_SYSCALLS = {"x86_64": (0, 312), "aarch64": (63, 272)}  # (read, kcmp) per machine
_READ_NR, _KCMP_NR = _SYSCALLS.get(os.uname().machine, (None, None))
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
