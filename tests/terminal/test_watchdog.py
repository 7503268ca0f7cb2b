"""The owner watchdog (dsh_magics/terminal/core/watchdog.py) as a real
process: what it ends and removes when its owner's pipe closes, and what it
never touches. The owner's deaths themselves, with real terminals:
tests/reliability/test_exit_leftovers.py."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

import dsh_magics
from dsh_magics.terminal.core import watchdog
from tests.conftest import pids_with_env, wait_until

ROOT = str(Path(dsh_magics.__file__).resolve().parent.parent)


@pytest.fixture
def sleepers() -> Iterator[list[subprocess.Popen]]:
    """Processes a test starts; those still running at the end are killed."""
    started: list[subprocess.Popen] = []
    yield started
    for p in started:
        if p.poll() is None:
            p.kill()
        p.wait(10)


def _sleeper(token: str) -> subprocess.Popen:
    return subprocess.Popen(["sleep", "300"], env=dict(os.environ, DSH_MAGICS_TOKEN=token), start_new_session=True)


def test_only_a_terminals_own_directory_is_removable(tmp_path: Path) -> None:
    assert watchdog.removable(str(tmp_path / "dsh-magics-abc"))
    assert watchdog.removable(str(tmp_path / "dsh-ssh-abc"))
    for path in ("dsh-ssh-abc", str(tmp_path), str(tmp_path / "dsh-sshx"), str(tmp_path / "dsh-ssh-x" / "c"), "/"):
        assert not watchdog.removable(path), path


def test_at_the_owners_end_it_kills_the_tokens_and_removes_only_their_directories(
    tmp_path: Path, sleepers: list[subprocess.Popen]
) -> None:
    """Notes as the terminals send them, then EOF (the owner is gone): the
    watched tokens' processes end and their directories go; a forgotten
    token's process and directory stay, and so does a directory not named
    as the engine names its own, a symlink so named (not its target), or
    another user's directory so named (when the tests run as root)."""
    dirs = {name: tmp_path / name for name in ("dsh-magics-a", "dsh-ssh-b", "dsh-ssh-forgotten", "other", "kept")}
    for d in dirs.values():
        d.mkdir()
        (d / "file").write_text("x")
    link = tmp_path / "dsh-ssh-link"
    link.symlink_to(dirs["kept"])
    foreign = tmp_path / "dsh-ssh-foreign"  # another user's, so named
    foreign.mkdir()
    if os.getuid() == 0:
        os.chown(foreign, 65534, 65534)
    a, b, c, d, e, f = (f"wd-{os.getpid()}-{time.monotonic_ns()}-{n}" for n in "abcdef")
    sleepers += [_sleeper(t) for t in (a, b, c, d, e, f)]
    dog = subprocess.Popen(
        [sys.executable, "-m", watchdog.__name__, str(os.getpid())],
        stdin=subprocess.PIPE, env={"PATH": os.environ["PATH"], "PYTHONPATH": ROOT}, cwd="/",
    )  # fmt: skip
    assert dog.stdin is not None
    notes = [
        f"+{a}\t{dirs['dsh-magics-a']}", f"+{b}\t{dirs['dsh-ssh-b']}", f"+{c}\t{dirs['dsh-ssh-forgotten']}",
        f"+{d}\t{dirs['other']}", f"+{e}\t{link}", f"+{f}\t{foreign}", f"-{c}",
    ]  # fmt: skip
    dog.stdin.write("".join(n + "\n" for n in notes).encode())
    dog.stdin.close()
    assert dog.wait(30) == 0
    for token in (a, b, d, e, f):
        assert pids_with_env("DSH_MAGICS_TOKEN", token) == [], token
    assert pids_with_env("DSH_MAGICS_TOKEN", c) != []  # forgotten: closed properly, nothing to end
    kept = ["dsh-ssh-forgotten", "dsh-ssh-link", "kept", "other"] + (["dsh-ssh-foreign"] if os.getuid() == 0 else [])
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(kept)
    assert (dirs["kept"] / "file").exists() and (dirs["other"] / "file").exists()


def test_the_watchdog_runs_this_package_and_the_standard_library(tmp_path: Path) -> None:
    """The watchdog imports the very package its owner runs (here a copy
    that marks its watchdog's start), ahead of any other copy, and the
    standard library ahead of that package's directory: a ``json.py`` there
    (as enum34's ``enum`` in a site-packages) does not shadow the standard
    one. Its import path was that directory, first (PYTHONPATH): for an
    installed copy, site-packages before the standard library, and the
    watchdog died at import, unseen; before that it was the package
    directory itself, so an owner run from a checkout got an installed
    copy's watchdog or none. It holds no directory of the owner's as its
    cwd either."""
    site = tmp_path / "site"
    shutil.copytree(ROOT + "/dsh_magics", site / "dsh_magics", ignore=shutil.ignore_patterns("__pycache__"))
    copy = site / "dsh_magics/terminal/core/watchdog.py"
    main = 'if __name__ == "__main__":\n'
    assert copy.read_text().count(main) == 1
    copy.write_text(copy.read_text().replace(main, main + '    open(__file__ + ".ran", "w").close()\n'))
    (site / "json.py").write_text("raise SystemExit(7)  # (not the standard library's)\n")
    token = f"wd-copy-{os.getpid()}-{time.monotonic_ns()}"
    code = textwrap.dedent(
        """
        import json, os, sys
        sys.path.insert(0, sys.argv[1])  # (json is the standard one, imported above)
        from dsh_magics.terminal.core import watchdog
        assert watchdog.__file__.startswith(sys.argv[1]), watchdog.__file__
        watchdog.watch(sys.argv[2])
        print(watchdog.process().pid, flush=True)
        sys.stdin.readline()
        os._exit(0)
        """
    )
    sleeper = _sleeper(token)
    owner = subprocess.Popen(
        [sys.executable, "-c", code, str(site), token],
        cwd=tmp_path, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert owner.stdout is not None
        pid = int(owner.stdout.readline())
        assert os.readlink(f"/proc/{pid}/cwd") == "/"
        wait_until(lambda: Path(str(copy) + ".ran").exists(), 30, msg="the copy's watchdog started")
    finally:
        owner.communicate("\n", timeout=30)
        try:
            sleeper.wait(30)  # the watchdog ended it
        finally:
            if sleeper.poll() is None:
                sleeper.kill()
                sleeper.wait(10)
    wait_until(lambda: not os.path.exists(f"/proc/{pid}") or _zombie(pid), 10, msg="the watchdog ended with its owner")


def test_a_watchdog_dying_as_a_note_goes_is_replaced_and_told_everything(
    tmp_path: Path, sleepers: list[subprocess.Popen]
) -> None:
    """The watchdog dies between the owner's two looks at it as a second
    terminal's note goes: alive at the first (whether the next watchdog is
    a new one), dead at the second (so one is started). The new watchdog
    was taken for the old one and told only the second terminal: when the
    owner died, the first terminal's process was left. Here the first look
    kills it (a real watchdog, SIGKILLed; only the moment is chosen)."""
    first, second = (f"wd-race-{os.getpid()}-{time.monotonic_ns()}-{n}" for n in "ab")
    sleepers += [_sleeper(first), _sleeper(second)]
    code = textwrap.dedent(
        """
        import os, sys
        from dsh_magics.terminal.core import watchdog
        watchdog.watch(sys.argv[1])
        dog = watchdog.process()
        look = dog.poll
        def alive_then_dead():
            dog.poll = look
            status = look()
            dog.kill()
            dog.wait()
            return status
        dog.poll = alive_then_dead
        watchdog.watch(sys.argv[2])
        new = watchdog.process()
        print(dog.pid, new.pid, flush=True)
        os._exit(0)
        """
    )
    out = subprocess.run([sys.executable, "-c", code, first, second], capture_output=True, text=True, timeout=60)
    assert len(out.stdout.split()) == 2, (out.stdout, out.stderr)
    old, pid = map(int, out.stdout.split())
    assert old != pid
    wait_until(lambda: not os.path.exists(f"/proc/{pid}") or _zombie(pid), 30, msg="the new watchdog finished")
    wait_until(lambda: all(p.poll() is not None for p in sleepers), 10, msg="both terminals' processes ended")


def _zombie(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rpartition(")")[2].split()[0] == "Z"
    except OSError:
        return True


def test_an_end_command_runs_at_the_owners_end_unless_forgotten(tmp_path: Path) -> None:
    """``watch(..., end=argv)``: the command that ends a terminal's processes
    elsewhere (a container's: remote/dead_owner.py) runs once the owner is
    gone, with the owner's environment; a forgotten terminal's does not."""
    code = textwrap.dedent(
        """
        import os, sys
        from dsh_magics.terminal.core import watchdog
        os.environ["END_SAYS"] = "owner's"
        run = lambda name: ["sh", "-c", 'echo "$END_SAYS" > "$0"', os.path.join(sys.argv[1], name)]
        watchdog.watch(sys.argv[2] + "-kept", None, run("kept"))
        watchdog.watch(sys.argv[2] + "-forgotten", None, run("forgotten"))
        watchdog.forget(sys.argv[2] + "-forgotten")
        print(watchdog.process().pid, flush=True)
        os._exit(0)
        """
    )
    token = f"wd-end-{os.getpid()}-{time.monotonic_ns()}"
    out = subprocess.run([sys.executable, "-c", code, str(tmp_path), token], capture_output=True, text=True, timeout=60)
    pid = int(out.stdout)
    wait_until(lambda: not os.path.exists(f"/proc/{pid}") or _zombie(pid), 30, msg="the watchdog finished")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["kept"]
    assert (tmp_path / "kept").read_text() == "owner's\n"


def test_an_end_command_that_hangs_holds_up_no_other_terminals_directory(tmp_path: Path) -> None:
    """The end commands run after every kill and removal: one whose engine
    does not answer (here: one that waits on a FIFO until the test lets it
    go) does not keep a terminal watched after it from losing its directory
    (in a host, the sweeper stops waiting for the watchdog after 25 s:
    host/orphan_sweeper.py). Before, the terminals went one after another."""
    fifo, said = tmp_path / "go", tmp_path / "ended"
    os.mkfifo(fifo)
    private = tmp_path / "dsh-magics-after-the-hang"
    private.mkdir()
    code = textwrap.dedent(
        """
        import os, sys
        from dsh_magics.terminal.core import watchdog
        token, fifo, said, private = sys.argv[1:]
        watchdog.watch(token + "-hangs", None, ["sh", "-c", 'read x < "$0"; echo ended > "$1"', fifo, said])
        watchdog.watch(token + "-after", private)
        print(watchdog.process().pid, flush=True)
        os._exit(0)
        """
    )
    token = f"wd-hang-{os.getpid()}-{time.monotonic_ns()}"
    argv = [sys.executable, "-c", code, token, str(fifo), str(said), str(private)]
    pid = int(subprocess.run(argv, capture_output=True, text=True, timeout=60).stdout)
    try:
        wait_until(lambda: not private.exists(), 10, msg="the directory waited for the hung end command")
        assert not said.exists()  # (the end command still waits)
    finally:

        def let_go() -> bool:
            try:
                fd = os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)
            except OSError:  # (ENXIO: the end command does not read it yet)
                return False
            os.write(fd, b"go\n")
            os.close(fd)
            return True

        wait_until(let_go, 30, msg="the end command never read")
    wait_until(lambda: not os.path.exists(f"/proc/{pid}") or _zombie(pid), 30, msg="the watchdog finished")
    assert said.read_text() == "ended\n"


def test_a_killed_watchdog_is_replaced_and_told_every_open_terminal(tmp_path: Path) -> None:
    """The watchdog is SIGKILLed while a terminal is open; the next note (a
    second terminal's start) finds it dead and starts a new one, which is
    told of both terminals: when the owner then dies, neither leaves a
    process (a ``nohup`` child each, which the shells' hang-up does not
    end) or its scratch directory. Before, the first terminal was no
    longer watched by anyone."""
    runtime = tmp_path / "run"
    runtime.mkdir(mode=0o700)
    mark = f"watchdog-replaced-{os.getpid()}"
    code = textwrap.dedent(
        """
        import os, signal
        from dsh_magics.terminal import Registry
        from dsh_magics.terminal.core import watchdog
        reg = Registry(login=False)
        job = "nohup sleep 300 >/dev/null 2>&1 & echo up"
        assert reg.exec("first", job, wait_ms=20_000).output.endswith("up\\n")
        first = watchdog.process()
        first.kill()
        first.wait()
        assert reg.exec("second", job, wait_ms=20_000).output.endswith("up\\n")
        print(watchdog.process().pid, len(os.listdir(os.environ["XDG_RUNTIME_DIR"])), flush=True)
        os.kill(os.getpid(), signal.SIGKILL)
        """
    )
    env = dict(os.environ, XDG_RUNTIME_DIR=str(runtime), TMPDIR=str(runtime), DSH_TEST_MARK=mark, PYTHONPATH=ROOT)
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60)
    try:
        assert len(out.stdout.split()) == 2, (out.stdout, out.stderr)
        pid, dirs = map(int, out.stdout.split())
        assert dirs == 2  # (both terminals' scratch directories were there)
        wait_until(lambda: pids_with_env("DSH_TEST_MARK", mark) == [], 10, msg="every process of both terminals gone")
    finally:
        for left in pids_with_env("DSH_TEST_MARK", mark):  # (a failed run's nohup children)
            with contextlib.suppress(OSError):
                os.kill(left, signal.SIGKILL)
    wait_until(lambda: not os.path.exists(f"/proc/{pid}") or _zombie(pid), 30, msg="the new watchdog finished")
    assert sorted(p.name for p in runtime.iterdir()) == []


def test_a_path_that_is_not_utf8_is_watched_and_spoils_nothing(
    tmp_path: Path, sleepers: list[subprocess.Popen]
) -> None:
    """Five terminals, the second's directory under a name that is not
    UTF-8 (a TMPDIR with a Latin-1 byte): one watchdog, told of all five,
    ends their processes and removes their directories (the bad one too).
    Its note could not be encoded, which was taken for a dead watchdog: a
    new one, the replay failing again, and every later note started two
    watchdogs told nothing (8 for these five); the later terminals were
    watched by none, their directories left."""
    base = os.fsencode(tmp_path)
    names = [b"dsh-ssh-a", b"dsh-ssh-b\xe9", b"dsh-ssh-c", b"dsh-magics-d", b"dsh-ssh-e"]
    for name in names:
        os.mkdir(os.path.join(base, name))
    tokens = [f"wd-bytes-{os.getpid()}-{time.monotonic_ns()}-{n}" for n in range(len(names))]
    sleepers += [_sleeper(t) for t in tokens]
    code = textwrap.dedent(
        """
        import os, sys
        from dsh_magics.terminal.core import watchdog
        pairs = sys.argv[1:]
        for token, path in zip(pairs[::2], pairs[1::2]):
            watchdog.watch(token, path)
        # The owner's children (its watchdogs: it starts nothing else), by
        # their parent: a cmdline reads empty for an instant after the exec.
        mine = []
        for entry in os.listdir("/proc"):
            try:
                with open(f"/proc/{entry}/stat") as f:
                    ppid = int(f.read().rpartition(")")[2].split()[1])
            except (OSError, ValueError, IndexError):
                continue
            if ppid == os.getpid():
                mine.append(entry)
        print(len(mine), getattr(watchdog.process(), "pid", 0), flush=True)
        os._exit(0)
        """
    )
    args: list[str | bytes] = [sys.executable, "-c", code]
    for token, name in zip(tokens, names, strict=True):
        args += [token, os.path.join(base, name)]
    out = subprocess.run(args, capture_output=True, text=True, timeout=60)
    assert len(out.stdout.split()) == 2, (out.stdout, out.stderr)
    dogs, pid = map(int, out.stdout.split())
    assert (dogs, pid > 0) == (1, True)
    wait_until(lambda: not os.path.exists(f"/proc/{pid}") or _zombie(pid), 30, msg="the watchdog finished")
    for token in tokens:
        wait_until(lambda t=token: pids_with_env("DSH_MAGICS_TOKEN", t) == [], 10, msg=f"{token} ended")
    assert os.listdir(base) == []
