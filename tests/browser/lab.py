"""A real JupyterLab driven by headless Debian Chromium, for widget tests.

Why this exists: a widget test that only looks at a kernel's output messages
passes even when the browser never draws the widget (a missing or broken
frontend extension shows a ``text/plain`` repr instead). So the tests here run
the real thing: a JupyterLab server on loopback with a token, Debian's
``/usr/bin/chromium`` through Playwright (never a downloaded browser), and
assertions on the rendered DOM.

Two pieces, kept free of anything inspector-specific so other widget tests
can reuse them:

- :class:`LabServer` starts and stops one JupyterLab (isolated config,
  settings, workspaces and IPython dirs; a free port; a random token), and waits
  on ``/api/status`` instead of sleeping.
- :class:`NotebookPage` opens a notebook in a browser page, runs cells through
  JupyterLab's own commands, waits for text or widgets with deadlines, and saves
  screenshots.

Every wait polls a condition with a deadline; nothing sleeps a fixed time.
"""

from __future__ import annotations

import json
import os
import secrets
import signal
import socket
import subprocess
import sys
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import psutil

from tests.conftest import wait_until as _wait_until

T = TypeVar("T")

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--no-sandbox",  # CI runs as root
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
# The ipywidgets frontend; tests can block it to prove a render check fails.
WIDGET_MANAGER_EXTENSION = "@jupyter-widgets/jupyterlab-manager"


class LabError(AssertionError):
    """A browser-side expectation failed (subclass of AssertionError so pytest reports it as a failure)."""


class WidgetNotRendered(LabError):
    """A cell produced output, but no live ipywidgets view was drawn for it."""


def wait_until(
    predicate: Callable[[], T | None | bool],
    timeout: float,
    interval: float = 0.05,
    message: str = "condition",
) -> T:
    """The suite's ``wait_until`` (tests/conftest.py) for a page: an error
    from the browser while an element is still being drawn means "not yet"."""
    return _wait_until(predicate, timeout, interval, msg=f"waiting for {message}", retry=(Exception,))  # type: ignore[no-any-return]


def free_port() -> int:
    """A port the OS just handed out on loopback (racy in theory, fine on a test box)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class LabServer:
    """One JupyterLab server process, isolated from the user's own Jupyter state."""

    root: Path
    workdir: Path
    port: int
    token: str
    proc: subprocess.Popen[bytes]
    log_path: Path
    _descendants: set[int] = field(default_factory=set)

    @classmethod
    def start(cls, root: Path, workdir: Path, timeout: float = 90.0) -> LabServer:
        """Start JupyterLab serving ``root``; Jupyter's own dirs live under ``workdir``."""
        root = root.resolve()
        workdir = workdir.resolve()
        config_dir = workdir / "jupyter-config"
        (config_dir / "labconfig").mkdir(parents=True, exist_ok=True)
        # Announcements poll the internet and pop a toast over the notebook.
        (config_dir / "labconfig" / "page_config.json").write_text(
            json.dumps(
                {"disabledExtensions": {"@jupyterlab/apputils-extension:announcements": True}}
            )
        )
        for sub in ("runtime", "settings", "workspaces", "ipython"):
            (workdir / sub).mkdir(parents=True, exist_ok=True)
        # Lab 4 skips rendering off-screen cells (content-visibility), which makes
        # innerText of anything below the fold empty; tests want every cell drawn.
        tracker = workdir / "settings" / "@jupyterlab" / "notebook-extension"
        tracker.mkdir(parents=True, exist_ok=True)
        (tracker / "tracker.jupyterlab-settings").write_text(json.dumps({"windowingMode": "none"}))
        env = dict(os.environ)
        env.update(
            JUPYTER_CONFIG_DIR=str(config_dir),
            JUPYTER_RUNTIME_DIR=str(workdir / "runtime"),
            IPYTHONDIR=str(workdir / "ipython"),
            JUPYTER_PLATFORM_DIRS="1",
            PYTHONUNBUFFERED="1",
        )
        port = free_port()
        token = secrets.token_hex(16)
        log_path = workdir / "jupyterlab.log"
        log = open(log_path, "wb")  # noqa: SIM115 - owned by the child for its lifetime
        cmd = [
            sys.executable, "-m", "jupyter", "lab", "--no-browser",
            "--ip=127.0.0.1", f"--port={port}", "--port-retries=0",
            f"--IdentityProvider.token={token}", "--allow-root",
            f"--ServerApp.root_dir={root}",
            "--expose-app-in-browser",  # window.jupyterapp: run cells via Lab's own commands
            "--LabApp.news_url=None",
            f"--LabApp.user_settings_dir={workdir / 'settings'}",
            f"--LabApp.workspaces_dir={workdir / 'workspaces'}",
        ]  # fmt: skip
        proc = subprocess.Popen(
            cmd, stdout=log, stderr=subprocess.STDOUT, env=env, cwd=root, start_new_session=True
        )
        log.close()
        server = cls(
            root=root, workdir=workdir, port=port, token=token, proc=proc, log_path=log_path
        )
        try:
            wait_until(server._ready, timeout, interval=0.2, message="JupyterLab /api/status")
        except BaseException:
            server.stop()
            raise
        return server

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def url(self, path: str) -> str:
        sep = "&" if "?" in path else "?"
        return f"{self.base_url}/{path.lstrip('/')}{sep}token={self.token}"

    def api(self, path: str, method: str = "GET") -> Any:
        """Call the Jupyter REST API with the token; returns parsed JSON (or None)."""
        req = urllib.request.Request(self.url(f"api/{path}"), method=method)
        with urllib.request.urlopen(req, timeout=10) as resp:
            body = resp.read()
        return json.loads(body) if body else None

    def terminal_names(self) -> set[str]:
        """The names of the Lab terminals running now."""
        return {t["name"] for t in self.api("terminals") or []}

    def delete_terminals_since(self, before: set[str]) -> None:
        """End every Lab terminal not in ``before`` (a test's own tabs)."""
        for name in self.terminal_names() - before:
            self.api(f"terminals/{name}", method="DELETE")

    def _ready(self) -> bool:
        if self.proc.poll() is not None:
            raise LabError(f"JupyterLab exited early ({self.proc.returncode}); log:\n{self.log()}")
        try:
            status = self.api("status")
        except (urllib.error.URLError, ConnectionError, OSError):
            return False
        self._remember_descendants()
        return isinstance(status, dict) and "started" in status

    def _remember_descendants(self) -> None:
        try:
            kids = psutil.Process(self.proc.pid).children(recursive=True)
        except psutil.NoSuchProcess:
            return
        self._descendants.update(k.pid for k in kids)

    def log(self) -> str:
        try:
            return self.log_path.read_text(errors="replace")[-4000:]
        except OSError:
            return ""

    def kernels(self) -> list[dict[str, Any]]:
        return list(self.api("kernels") or [])

    def stop(self, timeout: float = 20.0) -> None:
        """Shut kernels down, stop the server, and make sure nothing it started survives."""
        self._remember_descendants()
        if self.proc.poll() is None:
            try:
                for k in self.kernels():
                    self.api(f"kernels/{k['id']}", method="DELETE")
            except Exception:  # noqa: BLE001 - best effort; the signal below still stops them
                pass
            self._remember_descendants()
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(5)
        for pid in sorted(self._descendants):
            try:
                p = psutil.Process(pid)
                p.kill()
                p.wait(5)
            except psutil.NoSuchProcess:
                pass

    def leftover_processes(self) -> list[int]:
        """Pids this server (or its kernels) started that are still alive."""
        alive = []
        for pid in sorted(self._descendants | {self.proc.pid}):
            try:
                if psutil.Process(pid).status() != psutil.STATUS_ZOMBIE:
                    alive.append(pid)
            except psutil.NoSuchProcess:
                pass
        return alive


_JS_CURRENT = "window.jupyterapp && window.jupyterapp.shell.currentWidget"


class NotebookPage:
    """One notebook open in a browser page of a running :class:`LabServer`."""

    _counter = 0

    def __init__(self, page: Any, lab: LabServer, path: str, shots: Path) -> None:
        self.page = page
        self.lab = lab
        self.path = path
        self.shots = shots
        self.console: list[str] = []
        page.on("console", lambda m: self.console.append(f"{m.type}: {m.text}"))
        page.on("pageerror", lambda e: self.console.append(f"pageerror: {e}"))

    # -- opening ------------------------------------------------------------------
    def open(self, timeout: float = 90.0) -> NotebookPage:
        """Load JupyterLab on the notebook and wait until its kernel is idle."""
        NotebookPage._counter += 1
        # A fresh workspace per page, so pages never fight over the default one.
        ws = f"t{os.getpid()}-{NotebookPage._counter}"
        self.page.goto(self.lab.url(f"lab/workspaces/{ws}/tree/{self.path}"))
        self.page.wait_for_selector(".jp-Notebook", timeout=timeout * 1000)
        self.js_wait(
            f"""() => {{
                const w = {_JS_CURRENT};
                if (!w || !w.context || w.context.path !== {json.dumps(self.path)}) return false;
                const k = w.sessionContext.session && w.sessionContext.session.kernel;
                return !!k && k.status === 'idle' && k.connectionStatus === 'connected';
            }}""",
            timeout,
            "notebook kernel idle",
        )
        return self

    def js_wait(self, js_predicate: str, timeout: float, message: str) -> Any:
        """Wait until a JS predicate (a function source) returns truthy in the page."""
        try:
            handle = self.page.wait_for_function(js_predicate, timeout=timeout * 1000, polling=100)
        except Exception as exc:  # playwright TimeoutError
            raise LabError(f"timed out waiting for {message}: {exc}\n{self.diagnostics()}") from exc
        return handle.json_value()

    # -- running ------------------------------------------------------------------
    def run_all(self, timeout: float = 120.0) -> None:
        """Run every cell with Lab's own command, and wait until each has finished."""
        self.page.evaluate("() => window.jupyterapp.commands.execute('notebook:run-all-cells')")
        self.wait_cells_done(timeout)

    def run_cell(self, index: int, timeout: float = 60.0) -> None:
        """Select cell ``index`` and run it (Lab's run-and-advance command)."""
        self.page.evaluate(
            f"""() => {{
                const nb = {_JS_CURRENT}.content;
                nb.activeCellIndex = {index};
                nb.deselectAll();
                return window.jupyterapp.commands.execute('notebook:run-cell');
            }}"""
        )
        self.wait_cells_done(timeout)

    def wait_cells_done(self, timeout: float = 120.0) -> None:
        """Wait until no code cell is pending (``[*]``) and the kernel is idle."""
        self.js_wait(
            f"""() => {{
                const w = {_JS_CURRENT};
                const k = w.sessionContext.session && w.sessionContext.session.kernel;
                if (!k || k.status !== 'idle') return false;
                const prompts = [...w.node.querySelectorAll('.jp-CodeCell .jp-InputArea-prompt')];
                return prompts.every(p => !p.textContent.includes('*'));
            }}""",
            timeout,
            "all cells executed",
        )

    def cell_count(self) -> int:
        return int(self.page.evaluate(f"() => {_JS_CURRENT}.content.widgets.length"))

    # -- reading ------------------------------------------------------------------
    def cell(self, index: int) -> Any:
        return self.page.locator(".jp-Notebook .jp-Cell").nth(index)

    def output(self, index: int) -> Any:
        return self.cell(index).locator(".jp-OutputArea-output")

    def cell_with_source(self, needle: str) -> int:
        """Index of the first cell whose source contains ``needle``."""
        idx = self.page.evaluate(
            f"""() => {_JS_CURRENT}.content.widgets.findIndex(
                    c => c.model.sharedModel.getSource().includes({json.dumps(needle)}))"""
        )
        if idx < 0:
            raise LabError(f"no cell contains {needle!r}")
        return int(idx)

    def wait_for_text(self, text: str, timeout: float = 30.0, within: str = ".jp-Notebook") -> None:
        """Wait until ``text`` appears in the rendered element ``within``."""
        self.js_wait(
            f"""() => {{
                const el = document.querySelector({json.dumps(within)});
                return !!el && el.innerText.includes({json.dumps(text)});
            }}""",
            timeout,
            f"text {text!r} in {within}",
        )

    def wait_for_widget(
        self, index: int, css_class: str | None = None, timeout: float = 30.0
    ) -> Any:
        """Wait for a live ipywidgets view in cell ``index``'s output and return its locator.

        Fails with :class:`WidgetNotRendered` when the cell has output but no
        widget view, which is what a missing widget frontend looks like: the
        output area then shows the ``text/plain`` repr, or an error.
        """
        sel = ".jupyter-widgets" + (f".{css_class}" if css_class else "")
        out = self.cell(index).locator(".jp-OutputArea")
        try:
            wait_until(
                lambda: out.locator(".jp-OutputArea-output").count() > 0,
                timeout,
                message=f"output in cell {index}",
            )
        except AssertionError as exc:
            raise WidgetNotRendered(
                f"cell {index} produced no output\n{self.diagnostics()}"
            ) from exc

        def settled() -> str | None:
            """'drawn' once the widget is drawn; a reason once the output settled on something else."""
            widget = out.locator(sel)
            if widget.count() and widget.first.is_visible():
                return "drawn"
            # An output that settled on a non-widget mime type will never turn into one.
            mimes = out.locator(".jp-OutputArea-output").evaluate_all(
                "els => els.map(e => e.getAttribute('data-mime-type') || '')"
            )
            if mimes and all(m and "widget-view" not in m for m in mimes):
                return f"cell {index} shows {mimes} instead of a widget: {out.inner_text()[:300]!r}"
            return None

        try:
            state = wait_until(
                settled, timeout, interval=0.1, message=f"widget {sel} in cell {index}"
            )
        except AssertionError as exc:
            raise WidgetNotRendered(f"{exc}\n{self.diagnostics()}") from exc
        if state != "drawn":
            raise WidgetNotRendered(f"{state}\n{self.diagnostics()}")
        return out.locator(sel).first

    # -- evidence -----------------------------------------------------------------
    def screenshot(self, name: str, full_page: bool = True, element: Any = None) -> Path:
        """Save ``<shots>/<name>.png``: the page, or just ``element`` (a locator) whole."""
        self.shots.mkdir(parents=True, exist_ok=True)
        path = self.shots / f"{name}.png"
        if element is not None:
            element.screenshot(path=str(path))
        else:
            self.page.screenshot(path=str(path), full_page=full_page)
        return path

    def diagnostics(self) -> str:
        tail = "\n".join(self.console[-15:])
        return f"browser console (last lines):\n{tail}"

    def close(self) -> None:
        """Shut the notebook's kernel down and close the page."""
        try:
            self.page.evaluate(f"() => {_JS_CURRENT} && {_JS_CURRENT}.sessionContext.shutdown()")
        except Exception:  # noqa: BLE001 - the server stop cleans up whatever is left
            pass
        self.page.close()


def block_extension(page: Any, name: str = WIDGET_MANAGER_EXTENSION) -> None:
    """Make ``page`` fail to load a federated lab extension, as if it were not installed."""
    page.route(f"**/lab/extensions/{name}/**", lambda route: route.abort())
