"""``%bash_terminal`` without JupyterLab: its one-line errors, its help, and the Lab
terminal names (the tab itself: tests/browser/test_terminal_tab_browser.py)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from IPython.core.error import UsageError

from dsh_magics.lab.tab import MIME, bundle
from dsh_magics.lab.terminals import LabUnavailable, attach_argv, find_server, terminal_name
from dsh_magics.terminal.core.boot import booted
from tests.decoys import imported, plant


def test_in_process_terminals_get_one_line_naming_the_setting(ip: Any) -> None:
    with pytest.raises(UsageError) as e:
        ip.run_line_magic("bash_terminal", "")
    text = str(e.value)
    assert "\n" not in text
    assert text.startswith("HOST_UNAVAILABLE: ")
    assert "DSH_MAGICS_HOST=1" in text and "BashMagics.host" in text


def test_help_and_unknown_options(ip: Any, capsys: pytest.CaptureFixture[str]) -> None:
    ip.run_line_magic("bash_terminal", "--help")
    out = capsys.readouterr().out
    assert "--read-only" in out and "--session" in out
    with pytest.raises(UsageError) as e:
        ip.run_line_magic("bash_terminal", "--read")
    assert "\n" not in str(e.value) and "--read-only" in str(e.value)


def test_terminal_names_are_words_and_stay_apart() -> None:
    names = {
        terminal_name(s, ro)
        for s in ("build", "my-build", "my_build", "nb.ipynb-1a2b3c", "a b")
        for ro in (False, True)
    }
    assert len(names) == 10
    assert all(re.fullmatch(r"\w+", n) for n in names)
    assert terminal_name("build") == "dsh_build"
    assert terminal_name("build", read_only=True) == "dsh_build_ro"


def test_the_terminal_runs_the_attach_client() -> None:
    argv = attach_argv("nb-1", "jupyter-42", "/run/d", read_only=True)
    assert argv[0] == sys.executable
    assert booted(b"".join(os.fsencode(a) + b"\0" for a in argv)) == [
        b"dsh_magics.cli", b"attach", b"nb-1", b"--host", b"jupyter-42", b"--host-dir", b"/run/d", b"--read-only",
    ]  # fmt: skip


def test_the_attach_client_runs_this_package_in_a_notebooks_directory(tmp_path: Path) -> None:
    """The Jupyter server runs the tab's attach client in its own working
    directory (often the notebooks' folder), with the kernel's PYTHONPATH: a
    ``json.py``, ``signal.py``, ``termios.py``, ... and a ``dsh_magics/``
    there, and another ``dsh_magics/`` on that path, are not what it imports.
    Asked for a host that does not run, it gives our one-line error. Started
    with ``-m``, it ended in a decoy's error."""
    notebooks, pp, used, run = (tmp_path / n for n in ("notebooks", "pp", "used", "run"))
    plant(notebooks, used)
    plant(pp, used, ("dsh_magics/",))
    run.mkdir(mode=0o700)
    path = os.pathsep.join([str(pp), *filter(None, [os.environ.get("PYTHONPATH")])])
    out = subprocess.run(
        attach_argv("nb-1", "absent", str(run)), cwd=notebooks, env=dict(os.environ, PYTHONPATH=path),
        stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert (out.returncode, out.stderr) == (1, "dsh-magics: HOST_UNAVAILABLE: host absent is not running; running: none\n")
    assert imported(used) == []


def test_no_server_is_a_clear_error() -> None:
    with pytest.raises(LabUnavailable) as e:
        find_server({})
    assert e.value.code == "LAB_UNAVAILABLE" and "JPY_PARENT_PID" in e.value.message


def test_the_output_says_where_the_terminal_is_without_the_extension() -> None:
    out = bundle("dsh_x", "x", "jupyter-7", read_only=False)
    assert out[MIME]["name"] == "dsh_x" and out[MIME]["nonce"]
    assert "dsh-magics attach x --host jupyter-7" in out["text/plain"]
    assert (
        "Running panel" in out["text/plain"]
        and "python -m dsh_magics.lab install" in out["text/plain"]
    )
    assert "<code>dsh_x</code>" in out["text/html"]


def test_the_panel_button_says_the_same_error_inline() -> None:
    from dsh_magics.terminal import default_registry
    from dsh_magics.widgets.panel import panel

    p = panel(registry=default_registry(), default_session=f"tab-panel-{id(object())}")
    try:
        notice = p.terminal_tab()
        assert notice.kind == "error" and notice.code == "HOST_UNAVAILABLE"
        assert "DSH_MAGICS_HOST=1" in notice.text
    finally:
        p.close()
