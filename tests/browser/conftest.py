"""Session fixtures for real-browser widget tests: one JupyterLab, one Chromium.

Use from any test module in ``tests/browser/``::

    @pytest.mark.browser
    def test_something(open_notebook):
        nb = open_notebook(Path("notebooks/x.ipynb"))   # copied into the lab root
        nb.run_all()
        nb.wait_for_widget(nb.cell_with_source("show()"), css_class="my-widget")
        nb.screenshot("x-after-run")

The server and the browser are started once for tests/browser, lazily (only when a
browser test actually runs), and always stopped in ``finally`` blocks; the
session fails if anything the server started is still alive afterwards.
Screenshots go to ``$DSH_TEST_OUTPUT/screenshots`` (default
``<tmp>/dsh-magics-test-output/screenshots``: tests never write into the checkout).
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from .lab import CHROMIUM, CHROMIUM_ARGS, LabServer, NotebookPage, block_extension

REPO = Path(__file__).resolve().parents[2]


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if Path(CHROMIUM).exists():
        return
    skip = pytest.mark.skip(
        reason=f"Debian chromium is not installed at {CHROMIUM} (.ci/run installs it)"
    )
    for item in items:
        if "browser" in item.keywords:
            item.add_marker(skip)


@pytest.fixture(scope="session")
def test_output_dir() -> Path:
    out = Path(os.environ.get("DSH_TEST_OUTPUT") or Path(tempfile.gettempdir()) / "dsh-magics-test-output")
    out.mkdir(parents=True, exist_ok=True)
    return out


@pytest.fixture(scope="session")
def screenshots_dir(test_output_dir: Path) -> Path:
    shots = test_output_dir / "screenshots"
    shots.mkdir(parents=True, exist_ok=True)
    return shots


@pytest.fixture(scope="package")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LabServer]:
    """One JupyterLab for the browser tests, serving a scratch root (notebooks are copied in)."""
    root = tmp_path_factory.mktemp("lab-root")
    work = tmp_path_factory.mktemp("lab-state")
    server = LabServer.start(root, work)
    try:
        yield server
    finally:
        server.stop()
        leftovers = server.leftover_processes()
        assert not leftovers, f"JupyterLab left processes behind: {leftovers}"


@pytest.fixture(scope="package")
def browser() -> Iterator[Any]:
    """Debian's Chromium through Playwright (never a downloaded browser build).

    Package scope: Playwright's sync API keeps an asyncio loop marked running
    in the main thread while it is open, which breaks every later async test
    (pinned by tests/mcp running after tests/browser in one session)."""
    from playwright.sync_api import sync_playwright

    pw = sync_playwright().start()
    try:
        b = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        try:
            yield b
        finally:
            b.close()
    finally:
        pw.stop()


@pytest.fixture
def open_notebook(
    lab: LabServer, browser: Any, screenshots_dir: Path
) -> Iterator[Callable[..., NotebookPage]]:
    """Factory: copy a notebook into the lab root and open it in a fresh browser page.

    ``block_widgets=True`` stops the page from loading the ipywidgets frontend
    extension, which is how tests prove that a widget check fails when the
    frontend is missing.
    """
    opened: list[tuple[Any, NotebookPage]] = []

    def _open(source: Path, name: str | None = None, block_widgets: bool = False) -> NotebookPage:
        target = lab.root / (name or source.name)
        shutil.copyfile(source, target)
        context = browser.new_context(viewport={"width": 1400, "height": 1400})
        page = context.new_page()
        if block_widgets:
            block_extension(page)
        nb = NotebookPage(page, lab, target.name, screenshots_dir)
        opened.append((context, nb))
        return nb.open()

    try:
        yield _open
    finally:
        for context, nb in opened:
            try:
                nb.close()
            finally:
                context.close()
