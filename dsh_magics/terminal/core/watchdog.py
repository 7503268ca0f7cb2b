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
import stat
import subprocess
import sys
import threading

from .boot import boot_argv, booted

SCRATCH_PREFIX = "dsh-magics-"
"""A local terminal's scratch directory (``local/scratch.py``)."""
SSH_PREFIX = "dsh-ssh-"
"""An ssh terminal's private directory (``remote/side_channel.py``)."""
_REMOVABLE = (SCRATCH_PREFIX, SSH_PREFIX)

_lock = threading.Lock()
_proc: subprocess.Popen | None = None
_notes: dict[str, list[bytes]] = {}  # what the watchdog was told of each open terminal


def process() -> subprocess.Popen | None:
    """The current watchdog process (None before the first terminal)."""
    return _proc


def _abandon(proc: subprocess.Popen) -> None:
    """Let go of a dead watchdog: its pipe closes (else an fd, and a
    ResourceWarning, per replacement); ``subprocess`` reaps it later."""
    global _proc
    if proc.stdin is not None:
        try:
            proc.stdin.close()
        except OSError:
            pass  # (its unflushed rest is for a dead reader)
    if _proc is proc:
        _proc = None


def _ensure() -> subprocess.Popen | None:
    global _proc
    if _proc is not None:
        if _proc.poll() is None:
            return _proc
        _abandon(_proc)
    # A clean environment: the watchdog must not look like one of the
    # processes it (or a test) is looking for. UTF-8 mode: the paths it is
    # told come as the owner's bytes (surrogateescape both ways).
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "PYTHONUTF8": "1"}
    if os.environ.get("DSH_MAGICS_PROCFS"):  # the owner's process layer (proclayer)
        env["DSH_MAGICS_PROCFS"] = os.environ["DSH_MAGICS_PROCFS"]
    try:
        _proc = subprocess.Popen(
            # How it starts: core/boot.py. The owner's pid only names it in
            # ``ps`` (and for the tests, which wait for its watchdog to finish).
            boot_argv(__name__, str(os.getpid())),
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,  # not reached by signals aimed at our group
            close_fds=True,
            cwd="/",
        )
    except OSError:
        _proc = None
    return _proc


def _send(token: str, lines: list[bytes], keep: bool) -> None:
    """Tell the watchdog ``lines`` about ``token``'s terminal. What it has
    been told of each open terminal is kept (``keep``; else dropped): a new
    watchdog, started when the last one is found dead, is told all of it
    first, so a killed watchdog's terminals are watched again from the next
    note on (tests/terminal/test_watchdog.py::test_a_killed_watchdog_is_replaced_and_told_every_open_terminal).
    Only a failed write means a dead watchdog (a note is bytes already: one
    that could not be encoded was taken for one, and every later note
    started two watchdogs told nothing: test_watchdog.py::
    test_a_path_that_is_not_utf8_is_watched_and_spoils_nothing)."""
    with _lock:
        if keep:
            _notes.setdefault(token, []).extend(lines)
        else:
            _notes.pop(token, None)
        for _ in range(2):
            # (fresh: a watchdog _ensure started, even one replacing a
            # watchdog that died after an earlier look: test_watchdog.py::
            # test_a_watchdog_dying_as_a_note_goes_is_replaced_and_told_everything)
            old = _proc
            proc = _ensure()
            fresh = proc is not old
            if proc is None or proc.stdin is None:
                return
            told = [n for notes in _notes.values() for n in notes] if fresh else lines
            try:
                proc.stdin.write(b"".join(n + b"\n" for n in told))
                proc.stdin.flush()
                return
            except OSError:  # (BrokenPipeError) it died: once more, to a new watchdog told every open terminal
                _abandon(proc)


def watch(
    token: str, private_dir: str | None = None, end: list[str] | None = None, end_env: dict[str, str] | None = None
) -> None:
    """Ask the watchdog to kill ``token``'s processes (and remove the
    terminal's private directory, one :func:`removable` names) if we die
    first, then to run ``end`` (an argv, with our environment as of now and
    ``end_env``, which keeps what it says off the argv): what ends the
    terminal's processes elsewhere (``remote/dead_owner.py``).
    A relative path is the owner's: made absolute here (the watchdog's cwd
    is ``/``)."""
    line = b"+" + token.encode()
    if private_dir:
        try:
            line += b"\t" + os.fsencode(os.path.abspath(private_dir))
        except UnicodeError:
            pass  # (no such name can be on disk: nothing to remove)
    lines = [line]
    if end:
        # (JSON is ASCII: a surrogate-escaped byte in the environment goes as \udcXX and comes back)
        lines.append(b"!" + token.encode() + b"\t" + json.dumps({"argv": end, "env": {**os.environ, **(end_env or {})}}).encode())
    _send(token, lines, keep=True)


def forget(token: str) -> None:
    """The terminal was closed properly; nothing left to watch."""
    _send(token, [b"-" + token.encode()], keep=False)


def is_watchdog(pid: int, owner: int) -> bool:
    """``pid`` runs ``owner``'s watchdog (its argv as :func:`boot_argv` and
    :func:`_ensure` make it): a crashed host's sweeper lets it finish
    (``host/orphan_sweeper.py``)."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            run = booted(f.read())
    except OSError:
        return False
    return run == [__name__.encode(), str(owner).encode()]


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
        line = raw.decode("utf-8", "surrogateescape").rstrip("\n")  # (a path: the owner's bytes)
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
    # EOF: the owner is gone. Every kill and removal first, the end commands
    # (up to END_TIMEOUT_S each) last: one that hangs delays no terminal's
    # processes or directory, and a host's sweeper that stops waiting for us
    # (host/orphan_sweeper.py) cuts off only end commands.
    for token, path in tokens.items():
        kill_tree(None, token, grace=0.3)
        if path and removable(path) and _ours(path):
            shutil.rmtree(path, ignore_errors=True)
    for token in tokens:
        if token in ends:
            _run(ends[token])
    os._exit(0)


def _ours(path: str) -> bool:
    """A directory itself (not a symlink's target) that our user owns (the
    effective one: a new directory's owner): what an engine made; anything
    else so named is left alone."""
    try:
        st = os.lstat(path)
    except OSError:
        return False
    return stat.S_ISDIR(st.st_mode) and st.st_uid == os.geteuid()


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
