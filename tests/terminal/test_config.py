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
