"""vim and a curses menu driven through the agent tools on the other
backends: through the terminal host and over ``ssh://`` (tests/tools runs
them, with less and top, on the local backend)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from dsh_magics.terminal import Engine

from ..tools.conftest import Agent
from ..tools.test_screen_programs import test_curses_menu_down_down_enter_picks_the_third_item as _menu
from ..tools.test_screen_programs import test_vim_insert_text_and_write_quit as _vim


@pytest.fixture
def agent(engine: Engine, request: pytest.FixtureRequest) -> Iterator[Agent]:
    backend = request.node.callspec.params["engine"]
    if backend in ("local", "podman"):
        pytest.skip(f"{backend}: tests/tools covers local; the container image has no vim or curses menu")
    yield Agent(engine, f"c-prog-{request.node.originalname[5:20]}")  # type: ignore[arg-type]


def test_vim_through_the_tools(agent: Agent, tmp_path: Path) -> None:
    _vim(agent, tmp_path)


def test_curses_menu_through_the_tools(agent: Agent, tmp_path: Path) -> None:
    _menu(agent, tmp_path)
