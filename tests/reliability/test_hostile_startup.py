"""Real-world start-up files (issue 32 §3): under each, locally and over ssh
(a login shell in a private HOME; never this machine's own profile, see
docs/testing.md about pyenv's lock), a command's output and exit status are
exact, shell state persists between commands, an interrupt ends a job and
close leaves no process. Where a file makes a working shell impossible
(``exit``, ``exec``), the start fails at once with a stable code and a
message naming the cause. What the engine changes in the user's shell and
what it leaves: docs/engine.md ("The user's start-up files")."""

from __future__ import annotations

import shutil
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from dsh_magics.errors import DshError
from dsh_magics.terminal import Registry, Result
from tests.conftest import pids_with_env, wait_until
from tests.sshd import Sshd, sshd_with_home

DEADLINE_S = 20.0
SLEEP = shutil.which("sleep") or "/bin/sleep"

NVM_SH = """\
nvm() { echo "nvm $*"; }
nvm_cd() { builtin cd "$@"; }
export NVM_BIN="$NVM_DIR/versions/node/v20/bin"
export PATH="$NVM_BIN:$PATH"
complete -W 'install use ls' nvm
"""

PREEXEC = r"""
__bp_preexec_ran=
__bp_preexec() { [[ -n $__bp_preexec_ran ]] && return; __bp_preexec_ran=1; echo "PREEXEC-NOISE $BASH_COMMAND"; }
__bp_precmd() { __bp_preexec_ran=; echo PRECMD-NOISE; }
trap '__bp_preexec' DEBUG
PROMPT_COMMAND="__bp_precmd${PROMPT_COMMAND:+;$PROMPT_COMMAND}"
"""

CONDA = r"""
# >>> conda initialize >>>
__conda_setup="$(/bin/echo 'export CONDA_EXE=/opt/conda/bin/conda CONDA_SHLVL=1; conda() { echo "conda $*"; }; PS1="(base) $PS1"')"
if [ $? -eq 0 ]; then
    eval "$__conda_setup"
else
    export PATH="/opt/conda/bin:$PATH"
fi
unset __conda_setup
# <<< conda initialize <<<
"""

BANNER = "\n".join(f"echo 'banner line {i}: {'=' * 60}'" for i in range(200)) + "\n"


@dataclass(frozen=True)
class Case:
    rc: str = ""  # ~/.bashrc (the profile sources it, as Debian's does)
    profile: str = ""  # more in ~/.bash_profile, after that
    fails: str | None = None  # start-up cannot give a working shell: this text is in the error
    fails_ssh: str | None = None  # the same, over ssh only


# Over ssh the login shell is the one sshd starts itself (no remote command
# since session 37: docs/remote.md, "The login start"); `exec cat` replaces
# it, and with `unset PATH` it still runs the engine's builtins and its first
# line's absolute `/bin/sh`, as locally (until session 37 ~/.bashrc ran first
# in the shell sshd started for `bash -l -i`, where `bash` then went unfound).


CASES: dict[str, Case] = {
    "set-e": Case("set -e"),
    "set-u": Case("set -u"),
    "set-o-pipefail-noclobber": Case("set -o pipefail -o noclobber"),
    "set-o-vi": Case("set -o vi"),
    "set-x": Case("set -x"),
    "debug-trap": Case("trap 'echo DEBUG-NOISE' DEBUG"),
    "err-trap": Case("trap 'echo ERR-NOISE' ERR"),
    "exit-trap": Case("trap 'echo EXIT-NOISE' EXIT"),
    "bash-preexec": Case(PREEXEC),
    "array-prompt-command": Case("PROMPT_COMMAND=('echo PC1-NOISE' 'echo PC2-NOISE')"),
    "tmout": Case("TMOUT=1"),
    "readonly-tmout": Case("readonly TMOUT=1; export TMOUT"),
    "echo-function": Case('echo() { builtin echo "ECHO-NOISE $*"; }'),
    "printf-function": Case('printf() { builtin printf "PRINTF-NOISE"; }'),
    "cd-ls-aliases": Case("alias cd='echo CD-NOISE; cd'\nalias ls='ls --color=always -F'"),
    "cd-function": Case('cd() { builtin cd "$@" && echo "CD-NOISE $PWD"; }'),
    "banner": Case("echo 'Welcome to the machine'; printf '\\e[1;31m*** BANNER ***\\e[0m\\n'; uname -a"),
    "stty-echo-off": Case("stty -echo"),
    "conda-init": Case(CONDA),
    "nvm-init": Case('export NVM_DIR="$HOME/.nvm"\n[ -s "$NVM_DIR/nvm.sh" ] && . "$NVM_DIR/nvm.sh"'),
    "extdebug": Case("shopt -s extdebug"),
    "ps0": Case("PS0='PS0-NOISE\\n'"),
    "ifs-colon": Case("IFS=:"),
    "umask-077": Case("umask 077"),
    "histfile-dev-null": Case("HISTFILE=/dev/null; HISTSIZE=0"),
    "nullglob-failglob": Case("shopt -s nullglob failglob"),
    "unset-path": Case("unset PATH"),
    "sleep-2s": Case("sleep 2"),
    "banner-200-lines": Case(BANNER),
    "read-from-stdin": Case("read -r -t 5 reply || true"),
    "read-from-stdin-no-timeout": Case("read -r reply"),
    "exit-3": Case("exit 3", fails="exit code 3: an `exit` in the login profile?", fails_ssh="exit code 3"),
    "exec-cat": Case("exec cat", fails="replaced by `cat`", fails_ssh="no shell answered within 3s"),
}


@dataclass
class Where:
    kind: str
    target: str | None
    home: Path


@pytest.fixture(scope="module")
def private_sshd(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Sshd, Path]]:
    """An sshd whose sessions get a private HOME (not /root: its profile runs pyenv)."""
    yield from sshd_with_home(tmp_path_factory, "hostile")


@pytest.fixture(params=["local", "ssh"])
def where(request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Where:
    if request.param == "local":
        home = tmp_path / "home"
        home.mkdir()
        monkeypatch.setenv("HOME", str(home))
        return Where("local", None, home)
    server, home = request.getfixturevalue("private_sshd")
    for f in home.iterdir():
        shutil.rmtree(f) if f.is_dir() else f.unlink()
    monkeypatch.setenv("DSH_MAGICS_SSH_OPTIONS", server.client_config("hostile"))
    return Where("ssh", server.target, home)


def _write(home: Path, case: Case) -> None:
    (home / ".bashrc").write_text(case.rc + "\n")
    (home / ".bash_profile").write_text("[ -f ~/.bashrc ] && . ~/.bashrc\n" + case.profile + "\n")
    nvm = home / ".nvm"
    nvm.mkdir(exist_ok=True)
    (nvm / "nvm.sh").write_text(NVM_SH)


def _run(reg: Registry, sid: str, command: str) -> Result:
    res = reg.exec(sid, command, wait_ms=int(DEADLINE_S * 1000))
    assert isinstance(res, Result), f"{command!r} did not finish within {DEADLINE_S}s"
    return res


READONLY_TMOUT = pytest.mark.xfail(
    strict=True,
    reason="a read-only TMOUT cannot be lifted: bash ends the shell once it idles that long at its prompt, "
    "and the next command gets a fresh shell (fresh_shell: true) without the old state (docs/engine.md)",
)


@pytest.mark.parametrize(
    "name", [pytest.param(n, marks=READONLY_TMOUT) if n == "readonly-tmout" else n for n in CASES]
)
def test_a_start_up_file(where: Where, name: str, tmp_path: Path) -> None:
    case = CASES[name]
    _write(where.home, case)
    sid = f"hostile-{where.kind}-{name}-{time.monotonic_ns()}"
    fails = case.fails_ssh if where.kind == "ssh" and case.fails_ssh else case.fails
    slow = fails is not None and "no shell answered" in fails  # fails after start_timeout only
    reg = Registry(login=True, start_timeout=3 if slow else DEADLINE_S)
    try:
        started = time.monotonic()
        if fails is not None:
            with pytest.raises(DshError) as err:
                reg.attach(sid, target=where.target)
            took = time.monotonic() - started
            code = "TARGET_UNREACHABLE" if where.kind == "ssh" else "SHELL_EXITED"
            assert err.value.code == code and fails in str(err.value), err.value
            assert slow or took < DEADLINE_S / 2, f"the start took {took:.1f}s to fail: {err.value}"
            wait_until(lambda: not pids_with_env("DSH_MAGICS_SESSION", sid), timeout=DEADLINE_S,
                       msg="processes left after a failed start")
            return
        reg.attach(sid, target=where.target, cwd=str(tmp_path))
        # exact output and status; state (a variable, the cwd) persists
        work = tmp_path / "work dir"
        work.mkdir()
        res = _run(reg, sid, f"x=42; cd '{work}' && printf '%s\\n' hello 'a  b'; (exit 3)")
        expected = "hello\na  b\n"
        if name in ("cd-ls-aliases", "cd-function"):  # the user's own cd says so, as in their terminal
            expected = ("CD-NOISE\n" if name == "cd-ls-aliases" else f"CD-NOISE {work}\n") + expected
        if name == "printf-function":
            expected = "PRINTF-NOISE"
        assert (res.status, res.exit_code, res.output) == ("completed", 3, expected), res
        if name.endswith("tmout"):
            # idle at the prompt for longer than TMOUT: this wait is the
            # workload (bash ends a shell idle that long), not a synchronisation
            time.sleep(1.5)
        res = _run(reg, sid, 'builtin echo "$x|$PWD|$?"')
        assert (res.status, res.exit_code, res.output) == ("completed", 0, f"42|{work}|3\n"), res
        # an interrupt ends a job, and the next command runs
        job = reg.exec(sid, f"builtin echo started; {SLEEP} 60")
        wait_until(lambda: "started" in reg.result(job.id).output, timeout=DEADLINE_S)
        reg.interrupt(sid)
        assert job.wait(DEADLINE_S), reg.result(job.id)
        assert (job.result.status, job.result.exit_code) == ("interrupted", 130), job.result
        res = _run(reg, sid, "builtin echo after")
        assert (res.status, res.output) == ("completed", "after\n"), res
        # close leaves no process
        reg.close(sid)
        wait_until(lambda: not pids_with_env("DSH_MAGICS_SESSION", sid), timeout=DEADLINE_S,
                   msg="processes left after close")
    finally:
        reg.close_all()


@pytest.mark.xfail(strict=True, reason="over ssh a shell replaced by `exec` in ~/.bashrc is noticed only when "
                   "start_timeout passes: the remote shell's pid is unknown until it reports it")
def test_an_exec_in_the_rc_file_fails_an_ssh_start_at_once(private_sshd, monkeypatch: pytest.MonkeyPatch) -> None:
    server, home = private_sshd
    _write(home, Case("exec cat"))
    monkeypatch.setenv("DSH_MAGICS_SSH_OPTIONS", server.client_config("hostile"))
    reg = Registry(login=True, start_timeout=3)
    try:
        with pytest.raises(DshError) as err:
            reg.attach(f"exec-cat-{time.monotonic_ns()}", target=server.target)
        assert "replaced by `cat`" in str(err.value), err.value
    finally:
        reg.close_all()
