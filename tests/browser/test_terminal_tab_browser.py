"""``%bash_terminal`` in JupyterLab under Chromium: the tab opens through the dsh-magics
labextension, a command typed into xterm.js is a person's job in ``%bash_list``, and a
notebook job's output appears in the tab.

Its own JupyterLab (the extension must be on its ``JUPYTER_PATH``; the package's shared
server has none), with xterm.js's screen-reader mode on, so the tab's rows can be read as text.
"""

from __future__ import annotations

import json
import os
import re
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from unittest import mock

import pytest

from .lab import LabServer, NotebookPage, block_extension

pytestmark = [pytest.mark.browser, pytest.mark.kernel]

CELLS = [
    "%load_ext dsh_magics",
    "%bash_terminal",
    "%bash_exec --wait echo nb-$((6*7))",
    "%bash_list",
    "r = %bash_wait --timeout 20\nprint('latest', r.job_id, r.source, r.output.strip())",
]


def _notebook(path: Path, sources: list[str] = CELLS) -> None:
    cells = [
        {"cell_type": "code", "metadata": {}, "source": src, "outputs": [], "execution_count": None}
        for src in sources
    ]
    nb = {
        "cells": cells,
        "metadata": {
            "kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}
        },
        "nbformat": 4,
        "nbformat_minor": 5,
    }
    path.write_text(json.dumps(nb))


@pytest.fixture(scope="module")
def lab_with_extension(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LabServer]:
    from dsh_magics.lab import extension

    if shutil.which("npm") is None or shutil.which("node") is None:
        pytest.skip("node and npm build the JupyterLab extension (.ci/run installs them)")
    built = extension.build()
    jpath = tmp_path_factory.mktemp("jupyter-path")
    extension.install(jpath / "labextensions" / extension.NAME)
    root = tmp_path_factory.mktemp("lab-root")
    work = tmp_path_factory.mktemp("lab-state")
    settings = work / "settings" / "@jupyterlab" / "terminal-extension"
    settings.mkdir(parents=True)
    (settings / "plugin.jupyterlab-settings").write_text(json.dumps({"screenReaderMode": True}))
    hosts = tmp_path_factory.mktemp("hosts")
    env = {"JUPYTER_PATH": str(jpath), "DSH_MAGICS_HOST_DIR": str(hosts)}
    with mock.patch.dict(os.environ, env):
        server = LabServer.start(root, work)
    assert built.is_dir()
    try:
        yield server
    finally:
        try:
            for t in server.api("terminals") or []:
                server.api(f"terminals/{t['name']}", method="DELETE")
        finally:
            server.stop()
        leftovers = server.leftover_processes()
        assert not leftovers, f"JupyterLab left processes behind: {leftovers}"
        assert not list(hosts.glob("*.sock")), "the terminal host outlived its Jupyter server"


@pytest.fixture
def page(lab_with_extension: LabServer, browser: Any) -> Iterator[Any]:
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    try:
        yield context.new_page()
    finally:
        context.close()


def _notebook_js(path: str) -> str:
    """JS expression: the notebook panel of ``path`` (the terminal tab takes the front)."""
    return f"""[...window.jupyterapp.shell.widgets('main')].find(
        w => w.context && w.context.path === {json.dumps(path)})"""


def _run(nb: NotebookPage, path: str, index: int, timeout: float = 60) -> None:
    """Run cell ``index`` of the notebook ``path`` and wait until it finished."""
    panel = _notebook_js(path)
    nb.page.evaluate(
        f"""() => {{
            const w = {panel};
            window.jupyterapp.shell.activateById(w.id);
            w.content.activeCellIndex = {index};
            w.content.deselectAll();
            return window.jupyterapp.commands.execute('notebook:run-cell');
        }}"""
    )
    nb.js_wait(
        f"""() => {{
            const w = {panel};
            const k = w.sessionContext.session && w.sessionContext.session.kernel;
            if (!k || k.status !== 'idle') return false;
            const cell = w.content.widgets[{index}];
            const prompt = cell.node.querySelector('.jp-InputArea-prompt').textContent;
            return /\\[\\d+\\]/.test(prompt);
        }}""",
        timeout,
        f"cell {index} executed",
    )


def _show_tab(nb: NotebookPage, name: str) -> None:
    nb.page.evaluate(
        f"""() => {{
            for (const w of window.jupyterapp.shell.widgets('main')) {{
                const s = w.content && w.content.session;
                if (s && s.name === {json.dumps(name)}) window.jupyterapp.shell.activateById(w.id);
            }}
        }}"""
    )


def _tab_text(name: str) -> str:
    """JS: the rendered text of the terminal tab running Lab terminal ``name``."""
    return f"""() => {{
        for (const w of window.jupyterapp.shell.widgets('main')) {{
            const s = w.content && w.content.session;
            if (s && s.name === {json.dumps(name)}) {{
                const rows = w.node.querySelector('.xterm-accessibility-tree');
                return rows ? rows.innerText : '';
            }}
        }}
        return null;
    }}"""


def test_bash_terminal_opens_a_tab_on_the_same_shell(
    lab_with_extension: LabServer, page: Any, screenshots_dir: Path
) -> None:
    lab = lab_with_extension
    path = "terminal_tab.ipynb"
    _notebook(lab.root / path)
    nb = NotebookPage(page, lab, path, screenshots_dir).open()
    try:
        _run(nb, path, 0)
        _run(nb, path, 1)
        # the extension rendered the output and opened the tab by itself
        names = [t["name"] for t in lab.api("terminals")]
        assert len(names) == 1 and names[0].startswith("dsh_"), names
        name = names[0]
        nb.js_wait(f"() => ({_tab_text(name)})() !== null", 60, f"terminal tab {name} open")
        assert page.locator(".dsh-magics-terminal-open").count() == 1

        # a notebook job's output appears in the tab
        _run(nb, path, 2)
        _show_tab(nb, name)
        nb.js_wait(
            f"() => (({_tab_text(name)})() || '').includes('nb-42')",
            30,
            "the notebook job in the tab",
        )
        nb.screenshot("terminal-tab-opened")

        # a person types into xterm.js: a job of its own, source person
        page.locator(".jp-Terminal .xterm").last.click()
        page.keyboard.type("read -p 'name? ' n; echo person-$n")
        page.keyboard.press("Enter")
        nb.js_wait(
            f"() => (({_tab_text(name)})() || '').includes('name? ')",
            30,
            "the person's job in the tab",
        )
        _run(nb, path, 3)
        listing = nb.output(3).inner_text()
        running = re.search(r"\bbusy\b.*?\b(bash-[0-9a-f]+)", listing)
        assert running, f"%bash_list shows no running job:\n{listing}"
        job_id = running.group(1)

        _show_tab(nb, name)
        page.locator(".jp-Terminal .xterm").last.click()
        page.keyboard.type("42")
        page.keyboard.press("Enter")
        nb.js_wait(
            f"() => (({_tab_text(name)})() || '').includes('person-42')",
            30,
            "the job's answer in the tab",
        )
        _run(nb, path, 4)
        latest = nb.output(4).inner_text()
        assert f"latest {job_id} person " in latest and "person-42" in latest, latest
        nb.screenshot("terminal-tab-after")

        # again: the same Lab terminal, and its tab is brought to the front, not doubled
        _run(nb, path, 1)
        assert [t["name"] for t in lab.api("terminals")] == [name]
        nb.js_wait(
            f"""() => {{
                const tabs = [...window.jupyterapp.shell.widgets('main')].filter(
                    w => w.content && w.content.session && w.content.session.name === {json.dumps(name)});
                return tabs.length === 1 && window.jupyterapp.shell.currentWidget === tabs[0];
            }}""",
            30,
            "one tab for the terminal, in front",
        )
    finally:
        nb.close()


def test_without_the_extension_the_output_names_the_terminal(
    browser: Any, lab: LabServer, screenshots_dir: Path
) -> None:
    """Without the dsh-magics extension (the package's shared JupyterLab, and the page
    refuses to load it should the user have installed it), the named Lab terminal is
    still started, no tab opens, and the output says where the terminal is."""
    path = "terminal_plain.ipynb"
    _notebook(lab.root / path, ["%load_ext dsh_magics", "%bash_terminal"])
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    page = context.new_page()
    block_extension(page, "dsh-magics")
    nb = NotebookPage(page, lab, path, screenshots_dir).open()
    mine: list[str] = []
    try:
        nb.run_all()
        mine = [
            t["name"] for t in lab.api("terminals") if t["name"].startswith("dsh_terminal_plain")
        ]
        assert len(mine) == 1, mine
        text = nb.output(1).inner_text()
        assert f"JupyterLab terminal {mine[0]} runs" in text and "Running panel" in text, text
        assert "dsh-magics attach terminal_plain.ipynb-" in text
        tabs = nb.page.evaluate(
            "() => [...window.jupyterapp.shell.widgets('main')].filter(w => w.content && w.content.session).length"
        )
        assert tabs == 0
    finally:
        try:
            for name in mine:
                lab.api(f"terminals/{name}", method="DELETE")
        finally:
            nb.close()
            context.close()


def test_the_panel_button_opens_the_tab(
    lab_with_extension: LabServer, page: Any, screenshots_dir: Path
) -> None:
    lab = lab_with_extension
    path = "terminal_panel.ipynb"
    _notebook(lab.root / path, ["%load_ext dsh_magics", "%bash_panel"])
    nb = NotebookPage(page, lab, path, screenshots_dir).open()
    before = lab.terminal_names()
    try:
        _run(nb, path, 0)
        _run(nb, path, 1)
        button = page.locator(".dsh-panel-terminal-tab")
        button.wait_for(timeout=60_000)
        button.click()
        nb.js_wait(
            """() => {
                const w = window.jupyterapp.shell.currentWidget;
                return !!(w && w.content && w.content.session
                          && w.content.session.name.startsWith('dsh_terminal_panel_ipynb'));
            }""",
            60,
            "the panel's terminal tab in front",
        )
        nb.screenshot("terminal-tab-from-panel")
    finally:
        try:
            lab.delete_terminals_since(before)
        finally:
            nb.close()
