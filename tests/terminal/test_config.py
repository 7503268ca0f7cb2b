import pytest

from dsh_magics.errors import InvalidArgument
from dsh_magics.terminal import TerminalConfig


def test_defaults():
    c = TerminalConfig()
    assert (c.shell, c.login, c.max_lines, c.max_sessions, c.cols, c.rows) == ("/bin/bash", True, 4000, 16, 120, 30)


def test_env_then_overrides():
    env = {"DSH_MAGICS_MAX_LINES": "123", "DSH_MAGICS_LOGIN": "0", "DSH_MAGICS_COLS": "80"}
    c = TerminalConfig.from_env(env, cols=100)
    assert c.max_lines == 123 and c.login is False and c.cols == 100


@pytest.mark.parametrize(
    "env",
    [
        {"DSH_MAGICS_MAX_LINES": "lots"},
        {"DSH_MAGICS_LOGIN": "maybe"},
        {"DSH_MAGICS_MAX_SESSIONS": "0"},
        {"DSH_MAGICS_SHELL": "/no/such/shell"},
        {"DSH_MAGICS_CWD": "/no/such/dir"},
    ],
)
def test_invalid_values_raise_clear_errors(env):
    with pytest.raises(InvalidArgument) as e:
        TerminalConfig.from_env(env)
    assert e.value.code == "INVALID_ARGUMENT"


def test_unknown_override_key():
    with pytest.raises(InvalidArgument):
        TerminalConfig.from_env({}, colour="red")


def test_relative_attach_cwd_is_relative_to_the_configured_cwd(tmp_path, monkeypatch):
    """A relative ``cwd`` for a terminal not started yet is resolved against the
    configured start directory, not the Python process's own (a fuzzed ``.``
    once put a job's ``>46`` into the process's directory)."""
    from dsh_magics.terminal import Registry

    (tmp_path / "start" / "sub").mkdir(parents=True)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    reg = Registry(login=False, cwd=str(tmp_path / "start"))
    try:
        assert reg.attach("rel", cwd="sub").cwd == str(tmp_path / "start" / "sub")
        assert reg.attach("dot", cwd=".").cwd == str(tmp_path / "start")
    finally:
        reg.close_all()
