"""The shell's version is checked before a terminal starts.

A stand-in "bash" reports a chosen version for ``--version`` and otherwise
runs the real bash, so without the check the terminal would start fine.
"""

from __future__ import annotations

import os
import shutil
import stat
from pathlib import Path

import pytest

from dsh_magics import tools
from dsh_magics.errors import ShellUnsupported
from dsh_magics.terminal import Registry
from dsh_magics.terminal.core import bash_version

REAL_BASH = shutil.which("bash") or "/bin/bash"


def standin(tmp_path: Path, version_text: str, name: str = "bash") -> tuple[str, Path]:
    """A stand-in shell; each ``--version`` call appends a line to a log."""
    log = tmp_path / f"{name}.calls"
    path = tmp_path / name
    path.write_text(
        "#!/bin/sh\n"
        'if [ "$1" = --version ]; then\n'
        f"  echo called >> '{log}'\n"
        f"  printf '%s\\n' '{version_text}' 'Copyright (C) 2007 Free Software Foundation, Inc.'\n"
        "  exit 0\n"
        "fi\n"
        f'exec {REAL_BASH} "$@"\n'
    )
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return str(path), log


def _calls(log: Path) -> int:
    return len(log.read_text().splitlines()) if log.exists() else 0


def test_parse() -> None:
    assert bash_version.parse("GNU bash, version 5.2.15(1)-release (x86_64-pc-linux-gnu)") == (
        5,
        2,
        15,
    )
    assert bash_version.parse("GNU bash, version 3.2.57(1)-release (arm64-apple-darwin23)") == (
        3,
        2,
        57,
    )
    assert bash_version.parse("zsh 5.9 (x86_64-apple-darwin23.0)") is None


def test_the_real_bash_passes() -> None:
    bash_version.require(REAL_BASH)


def test_an_old_bash_is_refused_with_what_to_do(tmp_path: Path) -> None:
    path, _ = standin(tmp_path, "GNU bash, version 3.2.57(1)-release (arm64-apple-darwin23)")
    with pytest.raises(ShellUnsupported) as caught:
        bash_version.require(path)
    err = caught.value
    assert err.code == "SHELL_UNSUPPORTED"
    assert "bash 3.2.57" in err.message and "bash 5.0 or newer" in err.message, err.message
    assert "DSH_MAGICS_SHELL" in err.message and "/opt/homebrew/bin/bash" in err.message
    assert err.details == {"shell": path, "found": "3.2.57", "required": "5.0"}
    assert bash_version.parse("GNU bash, version 4.4.23") < bash_version.MIN_VERSION <= (5, 0, 0)


def test_another_shell_is_refused(tmp_path: Path) -> None:
    path, _ = standin(tmp_path, "zsh 5.9 (x86_64-apple-darwin23.0)", name="zsh")
    with pytest.raises(ShellUnsupported, match="is not GNU bash"):
        bash_version.require(path)


def test_checked_once_per_executable(tmp_path: Path) -> None:
    path, log = standin(tmp_path, "GNU bash, version 5.0.0(1)-release")
    bash_version.require(path)
    bash_version.require(path)
    assert _calls(log) == 1
    # The file is replaced (an upgrade in place): checked again.
    old = os.stat(path)
    standin(tmp_path, "GNU bash, version 3.2.57(1)-release")
    os.utime(path, ns=(old.st_atime_ns, old.st_mtime_ns + 1_000_000_000))
    with pytest.raises(ShellUnsupported):
        bash_version.require(path)
    with pytest.raises(ShellUnsupported):
        bash_version.require(path)
    assert _calls(log) == 2


def test_a_terminal_on_an_old_bash_does_not_start(tmp_path: Path) -> None:
    path, _ = standin(tmp_path, "GNU bash, version 3.2.57(1)-release (arm64-apple-darwin23)")
    reg = Registry(login=False, shell=path)
    try:
        with pytest.raises(ShellUnsupported, match=r"bash 3\.2\.57; dsh-magics needs bash 5\.0"):
            reg.attach("old")
        assert reg.list() == []
        # The agent tools say it with the stable code.
        res = tools.call("bash_attach", {"session_id": "old"}, registry=reg)
        assert res["error"]["code"] == "SHELL_UNSUPPORTED", res
        assert "DSH_MAGICS_SHELL" in res["error"]["message"]
    finally:
        reg.close_all()


def test_dsh_magics_shell_names_the_shell(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path, _ = standin(tmp_path, "GNU bash, version 4.4.23(1)-release")
    monkeypatch.setenv("DSH_MAGICS_SHELL", path)
    reg = Registry(login=False)
    try:
        with pytest.raises(ShellUnsupported, match=r"bash 4\.4\.23"):
            reg.attach("old")
    finally:
        reg.close_all()


def test_a_new_enough_bash_starts_and_is_asked_once(tmp_path: Path) -> None:
    path, log = standin(tmp_path, "GNU bash, version 5.0.17(1)-release")
    reg = Registry(login=False, shell=path)
    try:
        for i in range(3):
            reg.attach(f"new-{i}")
        res = reg.exec("new-0", "echo ok", wait_ms=20_000)
        assert (res.exit_code, res.output) == (0, "ok\n")
        assert _calls(log) == 1
    finally:
        reg.close_all()


def test_a_program_that_fails_version_is_left_to_its_start_up() -> None:
    """``/bin/false --version`` prints a version and fails: no verdict here;
    the terminal's start-up reports SHELL_EXITED (tests/tools/test_errors.py)."""
    bash_version.require("/bin/false")
