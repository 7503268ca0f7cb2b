"""A read-only ``%bash_terminal`` tab in JupyterLab under Chromium, shared with an MCP
agent: what the agent runs (a real MCP client, the Python SDK's, on the notebook's host)
appears live in the tab, and the tab's keys change nothing (the terminal's input record
shows none, the job waiting at a prompt does not get them).

Uses the JupyterLab with the dsh-magics extension of test_terminal_tab_browser.py.
"""

from __future__ import annotations

import asyncio
import os
import re
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.types import Implementation

from ..conftest import wait_until
from .lab import LabServer, NotebookPage
from .test_terminal_tab_browser import (  # noqa: F401 - lab_with_extension and page are its fixtures
    _notebook,
    _run,
    _show_tab,
    _tab_text,
    lab_with_extension,
    page,
)

pytestmark = [pytest.mark.browser, pytest.mark.kernel]

ROOT = Path(__file__).resolve().parents[2]

CELLS = [
    "%load_ext dsh_magics",
    "%bash_terminal --read-only",
    "from dsh_magics.terminal import default_registry\n"
    "e = default_registry()\n"
    "sid = [i.session_id for i in e.list()][0]\n"
    "print('WHERE', sid, e.paths.name, e.paths.dir)",
    "%bash_exec --tty read -r -p 'Answer? ' x; echo got-$x",
    "print('INPUTS', [r['text'] for r in e.inputs(sid) if r['kind'] != 'command'])\n"
    "print('SCREEN', 'typed-by-viewer' in '\\n'.join(e.screen(sid)['lines']))\n"
    "print('WAITING', e.info(sid).awaiting_input is not None)\n"
    "print('RESULT', e.send(sid, 'fine', wait_ms=20_000, source='notebook').output.strip())",
]


async def _agent_exec(host: str, host_dir: str, sid: str, command: str) -> Any:
    """One tool call by a real MCP client, on the notebook's host."""
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "dsh_magics.cli", "mcp", "--host", host, "--host-dir", host_dir],
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        cwd=str(ROOT),
    )
    async with stdio_client(params) as (read, write), ClientSession(
        read, write, client_info=Implementation(name="browser-test agent", version="0")
    ) as session:
        await asyncio.wait_for(session.initialize(), 60)
        return await asyncio.wait_for(session.call_tool("bash_exec", {"session_id": sid, "command": command}), 60)


def test_a_read_only_tab_watches_an_agent_and_cannot_type(
    lab_with_extension: LabServer,  # noqa: F811 - the imported fixture
    page: Any,  # noqa: F811
    screenshots_dir: Path,
) -> None:
    lab = lab_with_extension
    path = "terminal_viewer.ipynb"
    _notebook(lab.root / path, CELLS)
    before = lab.terminal_names()
    nb = NotebookPage(page, lab, path, screenshots_dir).open()
    try:
        _run(nb, path, 0)
        _run(nb, path, 1)
        names = [t["name"] for t in lab.api("terminals") if t["name"] not in before]
        assert len(names) == 1 and names[0].endswith("_ro"), names
        name = names[0]
        nb.js_wait(f"() => ({_tab_text(name)})() !== null", 60, f"terminal tab {name} open")
        _run(nb, path, 2)
        where = re.search(r"WHERE (\S+) (\S+) (\S+)", nb.output(2).inner_text())
        assert where, nb.output(2).inner_text()
        sid, host, host_dir = where.groups()

        # An agent's command, over MCP on the same host, appears live in the open tab.
        # (on a thread of its own: Playwright's sync API keeps an event loop on this one)
        with ThreadPoolExecutor(1) as pool:
            result = pool.submit(asyncio.run, _agent_exec(host, host_dir, sid, "echo agent-$((6*7))")).result(120)
        assert not result.is_error, result
        _show_tab(nb, name)
        nb.js_wait(f"() => (({_tab_text(name)})() || '').includes('agent-42')", 30, "the agent's output in the tab")
        nb.screenshot("terminal-tab-agent-output")

        # A job waits at a prompt; the read-only tab's keys go nowhere.
        _run(nb, path, 3)
        _show_tab(nb, name)
        nb.js_wait(f"() => (({_tab_text(name)})() || '').includes('Answer? ')", 30, "the prompt in the tab")
        page.locator(".jp-Terminal .xterm").last.click()
        page.keyboard.type("typed-by-viewer")
        page.keyboard.press("Enter")
        page.keyboard.press("Control+C")
        # The client reads its keys in order: once the detach key has ended it, the
        # keys before it were dropped (or sent, were the viewer not read-only).
        page.keyboard.press("Control+]")
        # It leaves, and with it the Lab terminal (JupyterLab closes the tab on exit by default).
        wait_until(lambda: name not in {t["name"] for t in lab.api("terminals")}, 30, msg="the viewer did not leave")
        _run(nb, path, 4)
        out = nb.output(4).inner_text()
        assert "INPUTS []" in out and "SCREEN False" in out and "WAITING True" in out, out
        assert "RESULT fine\ngot-fine" in out and "typed-by-viewer" not in out, out
    finally:
        try:
            lab.delete_terminals_since(before)
        finally:
            nb.close()
