"""The login start under real login shells that are not bash: zsh, fish,
tcsh (csh) and mksh (ksh), and dash as ``/bin/sh`` in test_login_start.py.

An ssh terminal's login start types one check line into whatever login
shell sshd started (``ssh_start.login_check``), which must parse alike in every
one of them: under any shell but bash it execs the wrapped ``bash -l -i``.
Here a throwaway user per shell (``tests.sshd.throwaway_user``; root only,
skipped where the shell is not installed: ``.ci/run`` installs them) logs
in to a private sshd on 127.0.0.1 with a start-up file of that shell that
records its read and keeps a history file; the start must succeed, a job's
output, ``$?`` and cwd be right, ``cd`` and ``export`` persist, nothing of
the engine show in a job's output, and the check line stay out of the
shell's history where that shell leaves out lines typed with a leading
space (zsh's ``hist_ignore_space``, fish). docs/remote.md, "The login
start", says what is tested and the limits found here.
"""

from __future__ import annotations

import os
import pwd
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from dsh_magics.terminal.remote import RemoteTerminal
from dsh_magics.terminal.remote.job_stream import InbandStream
from tests.remote.conftest import LOGIN, open_terminal, run
from tests.sshd import (
    USER_PREFIX,
    Sshd,
    leftovers_of,
    sshd_for_users,
    sweep_dead_users,
    throwaway_user,
)

# bash's own start-up files, read by the `bash -l -i` the check execs
PROFILE = 'echo p >> "$HOME/reads"; [ -n "$BASH" ] && . "$HOME/.bashrc"\n'
BASHRC = 'echo r >> "$HOME/reads"\n'


@dataclass(frozen=True)
class Shell:
    path: str
    files: dict[str, str]  # its start-up files (relative to HOME): each records its read
    reads: list[str]  # what ~/reads holds once the start is done
    history: str  # its history file, where the check line must not be
    keeps_check: bool = False  # ... but is: the shell has no way to leave out a line (a limit)


SHELLS: dict[str, Shell] = {
    "zsh": Shell(
        "/usr/bin/zsh",
        {
            ".zshrc": 'echo zshrc >> "$HOME/reads"\n'
            'HISTFILE="$HOME/.zsh_history" HISTSIZE=100 SAVEHIST=100\n'
            # written as each line is read, so an exec loses nothing
            "setopt hist_ignore_space inc_append_history\n",
        },
        ["zshrc", "p", "r"],
        ".zsh_history",
    ),
    "fish": Shell(
        "/usr/bin/fish",
        {
            ".config/fish/config.fish": 'echo fish >> "$HOME/reads"\n',
            # there already: no create_manpage_completions.py (CPU-heavy, in the
            # background) at a fresh home's first prompt
            ".local/share/fish/generated_completions/": "",
        },
        ["fish", "p", "r"],
        ".local/share/fish/fish_history",
    ),
    # tcsh writes its history when it execs, and nothing leaves a line out
    "tcsh": Shell(
        "/usr/bin/tcsh",
        {".tcshrc": 'echo tcshrc >> "$HOME/reads"\nset history=100 savehist=100 histfile="$HOME/.tcsh_history"\n'},
        ["tcshrc", "p", "r"],
        ".tcsh_history",
        keeps_check=True,
    ),
    # mksh reads ~/.profile as a login shell (bash's part of it is skipped
    # there), then ~/.mkshrc; it writes each line to its history file at
    # once, except one typed with a leading space
    "mksh": Shell(
        "/usr/bin/mksh",
        {".mkshrc": 'echo mkshrc >> "$HOME/reads"\nHISTFILE="$HOME/.mksh_history" HISTSIZE=100\n'},
        ["p", "mkshrc", "p", "r"],
        ".mksh_history",
    ),
}


@pytest.fixture(scope="module")
def server() -> Iterator[Sshd]:
    yield from sshd_for_users()


@pytest.fixture(scope="module", params=list(SHELLS))
def user(request: pytest.FixtureRequest) -> Iterator[tuple[str, Path, Shell]]:
    shell = SHELLS[request.param]
    with throwaway_user(request.param, shell.path) as (name, home):
        yield name, home, shell


@pytest.fixture
def opened() -> Iterator[list[RemoteTerminal]]:
    terms: list[RemoteTerminal] = []
    yield terms
    for t in terms:
        t.close()


def _fresh_home(home: Path, files: dict[str, str]) -> None:
    owner = home.stat()
    for f in sorted(home.rglob("*"), reverse=True):
        f.rmdir() if f.is_dir() and not f.is_symlink() else f.unlink()
    for rel, text in {".profile": PROFILE, ".bashrc": BASHRC, **files}.items():
        path = home / rel  # (REL/: a directory)
        for d in reversed(path.relative_to(home).parents[:-1]):
            (home / d).mkdir(exist_ok=True)
            os.chown(home / d, owner.st_uid, owner.st_gid)
        if rel.endswith("/"):
            path.mkdir()
        else:
            path.write_text(text)
        os.chown(path, owner.st_uid, owner.st_gid)


def test_a_login_shell_of_each_kind_starts_a_working_bash(server, user, opened, monkeypatch) -> None:
    name, home, shell = user
    _fresh_home(home, shell.files)
    (home / "work dir").mkdir()
    os.chown(home / "work dir", home.stat().st_uid, home.stat().st_gid)
    monkeypatch.setenv("DSH_MAGICS_SSH_OPTIONS", server.client_config(f"shell-{name}"))
    term = open_terminal(opened, server.target_for(name), name, cwd=str(home), config=LOGIN)
    # the login shell's start-up file, then bash's login start-up (the check's exec)
    assert (home / "reads").read_text().split() == shell.reads
    res = run(term, "x=42; export Y=7; cd 'work dir' && printf '%s\\n' hello 'a  b'; (exit 3)")
    # exact: nothing of the engine or of the login shell's start in a job's output
    assert (res.status, res.exit_code, res.output) == ("completed", 3, "hello\na  b\n"), res
    assert term.cwd == str(home / "work dir")
    res = run(term, 'echo "$?|$x|$PWD|$(sh -c \'echo $Y\')"; echo "${BASH_VERSINFO[0]}"; read -r c </proc/$PPID/comm; echo $c')
    lines = res.output.split("\n")
    # bash (4 or later) under the wrapper `sh`, with the state of the last job
    assert lines[0] == f"3|42|{home / 'work dir'}|7" and int(lines[1]) >= 4 and lines[2] == "sh", res
    res = run(term, "history")
    assert "6973" not in res.output and "/bin/sh" not in res.output, res
    text = (home / shell.history).read_text(errors="replace") if (home / shell.history).exists() else ""
    if shell.keeps_check:
        assert " /bin/sh -c " in text or "\n/bin/sh -c " in text, text
    else:
        assert "/bin/sh" not in text and "6973" not in text, text


def test_zshs_new_user_menu_takes_the_empty_line_and_aborts(server, opened, monkeypatch) -> None:
    """A zsh user with no zsh start-up file gets ``zsh-newuser-install``'s
    menu at login, which reads one key: the empty line the engine types
    first (for a ``read`` in a start-up file) is that key, and any key but
    q, 0, 1 or 2 aborts the menu, changing nothing ("The function will be
    run again next time"). The check line then goes to zsh's prompt, and
    the start goes on; the menu's text reaches no job's output."""
    seen: list[bytes] = []
    started = InbandStream.started

    def keep(stream: InbandStream) -> None:  # (an observation: what the client printed before the shell was ready)
        seen.append(bytes(stream.startup_raw))
        started(stream)

    monkeypatch.setattr(InbandStream, "started", keep)
    with throwaway_user("zshnew", "/usr/bin/zsh") as (name, home):
        _fresh_home(home, {})
        monkeypatch.setenv("DSH_MAGICS_SSH_OPTIONS", server.client_config("zsh-new"))
        term = open_terminal(opened, server.target_for(name), name, config=LOGIN)
        try:
            assert b"zsh-newuser-install" in seen[0] and b"Aborting." in seen[0], seen
            res = run(term, "echo ok; ls -A ~")
            assert res.output.split() == ["ok", ".bashrc", ".profile", "reads"], res  # no .zshrc written
            assert (home / "reads").read_text().split() == ["p", "r"]
        finally:
            term.close()  # before the user goes, whatever failed


def test_zshs_spelling_correction_does_not_stall_the_start(server, opened, monkeypatch) -> None:
    """With ``setopt correct_all`` zsh offers to correct each argument that
    names no file but is close to one: the check line's ``unset PS0`` next
    to a file ``ps0`` would ask ``correct 'PS0' to 'ps0' [nyae]?`` and the
    start would wait for an answer. The check quotes those names, which zsh
    leaves alone."""
    with throwaway_user("zshfix", "/usr/bin/zsh") as (name, home):
        _fresh_home(home, {".zshrc": "setopt correct_all\n", **{n: "" for n in ("ps", "ps0", "ps1", "prompt_command")}})
        monkeypatch.setenv("DSH_MAGICS_SSH_OPTIONS", server.client_config("zsh-fix"))
        term = open_terminal(opened, server.target_for(name), name, cwd=str(home), config=LOGIN)
        try:
            assert run(term, "echo ok").output == "ok\n"
        finally:
            term.close()


def test_a_failed_test_with_its_terminal_open_leaves_nothing_of_its_user(server, opened, monkeypatch) -> None:
    """A test that fails inside ``throwaway_user`` with its terminal still
    open (its sshd session and bash are the user's processes, which
    ``userdel`` refuses to remove): the clean-up kills them after its wait,
    and removes the user, its home and its /tmp files all the same."""
    monkeypatch.setenv("DSH_MAGICS_SSH_OPTIONS", server.client_config("fail"))
    with pytest.raises(ZeroDivisionError):
        with throwaway_user("fail", "/bin/sh") as (name, home):
            _fresh_home(home, {})
            uid = home.stat().st_uid
            term = open_terminal(opened, server.target_for(name), name, config=LOGIN)
            assert run(term, "echo ok").output == "ok\n"
            1 / 0  # noqa: B018 - the test's failure, its terminal open
    assert not leftovers_of(name, uid) and not home.exists()


def test_the_users_of_a_run_that_died_are_swept() -> None:
    """A user (and home) whose creating pid is gone is removed by the next
    ``sweep_dead_users`` (every ``throwaway_user`` runs one first); one of a
    live run (this one) stays."""
    with throwaway_user("live", "/bin/sh") as (live, _home):
        with open("/proc/sys/kernel/pid_max") as f:
            dead = int(f.read()) + 1  # (a pid no process has: a run that has died)
        name = f"{USER_PREFIX}dead-{dead}"
        home = Path(tempfile.gettempdir()) / f"{USER_PREFIX}dead-home-{dead}"
        home.mkdir()
        try:
            subprocess.run(["useradd", "-M", "-d", str(home), "-s", "/bin/sh", "-p", "*", name], check=True)
            entry = pwd.getpwnam(name)
            os.chown(home, entry.pw_uid, entry.pw_gid)
            sweep_dead_users()
            assert not leftovers_of(name, entry.pw_uid) and not home.exists()
            pwd.getpwnam(live)  # (still there)
        finally:
            subprocess.run(["userdel", name], capture_output=True, check=False)
            shutil.rmtree(home, ignore_errors=True)
