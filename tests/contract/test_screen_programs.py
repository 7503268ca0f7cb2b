"""The full-screen programs of tests/tools/test_screen_programs.py, driven
through the agent tools on the other backends: through the terminal host and
over ``ssh://`` (tests/tools runs them on the local backend; the container
image has none of these programs)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from dsh_magics.terminal import Engine

from ..tools.conftest import Agent
from ..tools.test_screen_programs import (
    test_curses_menu_down_down_enter_picks_the_third_item as _menu,
)
from ..tools.test_screen_programs import (
    test_git_rebase_interactive_with_vim_reorders_two_commits as _rebase,
)
from ..tools.test_screen_programs import (
    test_less_page_down_end_and_quit_brings_the_prompt_screen_back as _less,
)
from ..tools.test_screen_programs import (
    test_node_readline_in_raw_mode_gets_arrow_keys as _node,
)
from ..tools.test_screen_programs import test_python_repl_up_recalls_the_last_line as _repl
from ..tools.test_screen_programs import test_top_shows_its_header_then_q_quits as _top
from ..tools.test_screen_programs import test_vim_insert_text_and_write_quit as _vim


@pytest.fixture
def agent(engine: Engine, request: pytest.FixtureRequest) -> Iterator[Agent]:
    backend = request.node.callspec.params["engine"]
    if backend in ("local", "podman"):
        pytest.skip(f"{backend}: tests/tools covers local; the container image has none of these programs")
    yield Agent(engine, f"c-prog-{request.node.originalname[5:20]}")  # type: ignore[arg-type]


def test_vim_through_the_tools(agent: Agent, tmp_path: Path) -> None:
    _vim(agent, tmp_path)


def test_curses_menu_through_the_tools(agent: Agent, tmp_path: Path) -> None:
    _menu(agent, tmp_path)


def test_less_through_the_tools(agent: Agent) -> None:
    _less(agent)


def test_top_through_the_tools(agent: Agent) -> None:
    _top(agent)


def test_python_repl_through_the_tools(agent: Agent) -> None:
    _repl(agent)


def test_git_rebase_with_vim_through_the_tools(agent: Agent, tmp_path: Path) -> None:
    _rebase(agent, tmp_path)


def test_node_readline_through_the_tools(agent: Agent, tmp_path: Path) -> None:
    _node(agent, tmp_path)
