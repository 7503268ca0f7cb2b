"""The owner watchdog: a small process that ends a dead owner's terminals
(however it died): it kills every process carrying a watched terminal's
token and removes the terminal's private directory. Both transports use it:
a local shell's scratch directory, a remote terminal's ``dsh-ssh-*``
directory (its control socket and ssh's logs) and a ``cmd:`` target's local
descendants. Why it exists: docs/internals.md ("When the owner dies"); its
sibling for Ctrl-C is ``ctrl_c``."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading

SCRATCH_PREFIX = "dsh-magics-"
"""A local terminal's scratch directory (``local/scratch.py``)."""
SSH_PREFIX = "dsh-ssh-"
"""An ssh terminal's private directory (``remote/side_channel.py``)."""
_REMOVABLE = (SCRATCH_PREFIX, SSH_PREFIX)

_lock = threading.Lock()
_proc: subprocess.Popen | None = None
_notes: dict[str, list[str]] = {}  # what the watchdog was told of each open terminal


def _ensure() -> subprocess.Popen | None:
    global _proc
    if _proc is not None and _proc.poll() is None:
        return _proc
    # A clean environment: the watchdog must not look like one of the
    # processes it (or a test) is looking for. Its import path is the
    # directory that holds this package (tests/terminal/test_watchdog.py::
    # test_the_watchdog_runs_this_package): it was the package directory
    # itself, so an owner run from a checkout by PYTHONPATH got another
    # copy's watchdog (an installed one) or none, but from the checkout's cwd.
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "PYTHONPATH": root}
    if os.environ.get("DSH_MAGICS_PROCFS"):  # the owner's process layer (proclayer)
        env["DSH_MAGICS_PROCFS"] = os.environ["DSH_MAGICS_PROCFS"]
    try:
        _proc = subprocess.Popen(
            # The owner's pid only names it in ``ps`` (and for the tests,
            # which wait for its watchdog to finish).
            [sys.executable, "-m", __name__, str(os.getpid())],
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,  # not reached by signals aimed at our group
            close_fds=True,
            cwd="/",  # (its imports come from PYTHONPATH alone, not from the owner's cwd)
        )
    except OSError:
        _proc = None
    return _proc


def _send(token: str, lines: list[str], keep: bool) -> None:
    """Tell the watchdog ``lines`` about ``token``'s terminal. What it has
    been told of each open terminal is kept (``keep``; else dropped): a new
    watchdog, started when the last one is found dead, is told all of it
    first, so a killed watchdog's terminals are watched again from the next
    note on (tests/terminal/test_watchdog.py::test_a_killed_watchdog_is_replaced_and_told_every_open_terminal)."""
    global _proc
    with _lock:
        if keep:
            _notes.setdefault(token, []).extend(lines)
        else:
            _notes.pop(token, None)
        for _ in range(2):
            fresh = _proc is None or _proc.poll() is not None
            proc = _ensure()
            if proc is None or proc.stdin is None:
                return
            told = [n for notes in _notes.values() for n in notes] if fresh else lines
            try:
                proc.stdin.write("".join(n + "\n" for n in told).encode())
                proc.stdin.flush()
                return
            except (BrokenPipeError, ValueError, OSError):
                _proc = None  # it died: once more, to a new watchdog told every open terminal


def watch(token: str, private_dir: str | None = None, end: list[str] | None = None) -> None:
    """Ask the watchdog to kill ``token``'s processes (and remove the
    terminal's private directory, one :func:`removable` names) if we die
    first, then to run ``end`` (an argv, with our environment as of now):
    what ends the terminal's processes elsewhere (``remote/dead_owner.py``).
    A relative path is the owner's: made absolute here (the watchdog's cwd
    is ``/``)."""
    lines = ["+" + token + ("\t" + os.path.abspath(private_dir) if private_dir else "")]
    if end:
        lines.append("!" + token + "\t" + json.dumps({"argv": end, "env": dict(os.environ)}))
    _send(token, lines, keep=True)


def forget(token: str) -> None:
    """The terminal was closed properly; nothing left to watch."""
    _send(token, ["-" + token], keep=False)


def removable(path: str) -> bool:
    """Only a terminal's own directory is ever removed: an absolute path
    whose name is one of the engine's (``dsh-magics-*``, ``dsh-ssh-*``)."""
    return os.path.isabs(path) and os.path.basename(path).startswith(_REMOVABLE)


def _main() -> None:
    """The watchdog itself. Its stdin carries ``+<token>[<TAB><directory>]``,
    ``!<token><TAB><end command as JSON>`` and ``-<token>`` lines; at EOF
    (the owner is gone) it kills every process still carrying a watched
    token, removes the private directories and runs the end commands (each
    up to ``END_TIMEOUT_S``)."""
    import shutil

    from .procs import kill_tree

    tokens: dict[str, str | None] = {}
    ends: dict[str, dict] = {}
    stdin = sys.stdin.buffer
    for raw in stdin:
        line = raw.decode(errors="replace").rstrip("\n")
        if line.startswith("+"):
            token, _, path = line[1:].partition("\t")
            tokens[token] = path or None
        elif line.startswith("!"):
            token, _, end = line[1:].partition("\t")
            try:
                ends[token] = json.loads(end)
            except ValueError:
                continue  # (never written so by watch): the other terminals still get their end
        elif line.startswith("-"):
            tokens.pop(line[1:], None)
            ends.pop(line[1:], None)
    # EOF: the owner is gone.
    for token, path in tokens.items():
        kill_tree(None, token, grace=0.3)
        if path and removable(path):
            shutil.rmtree(path, ignore_errors=True)
        if token in ends:
            _run(ends[token])
    os._exit(0)


END_TIMEOUT_S = 20.0
"""How long an end command may take (a container engine that hangs)."""


def _run(end: dict) -> None:
    try:
        subprocess.run(
            end["argv"], env=end["env"], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL, timeout=END_TIMEOUT_S, check=False,
        )  # fmt: skip
    except (OSError, subprocess.SubprocessError, KeyError, TypeError):
        pass  # no container engine, or none that answers: nothing more the watchdog can end there


if __name__ == "__main__":
    _main()
