"""Run All of a notebook that drives vim and less with ``%bash_send`` then
``%bash_wait`` (issue 36): the wait after the quitting keys waits for the
program to exit, so the next cell never meets SESSION_BUSY. Ten runs, each in
a fresh kernel, through nbclient (which stops at the first failing cell, as
Run All does)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

pytestmark = pytest.mark.kernel

RUNS = 10


def _notebook(text_file: Path, session: str) -> nbformat.NotebookNode:
    cells = [
        f"%load_ext dsh_magics\n%config BashMagics.default_session = {session!r}",
        f"%bash_exec --tty vim -i NONE {text_file}",
        f"%bash_wait --until-screen '{text_file.name}' --timeout 30",
        "%bash_send :q!",
        "r = %bash_wait --timeout 30\nassert (r.reason, r.status, r.exit_code) == ('settled', 'completed', 0), r",
        f"%bash_exec --tty less {text_file}",
        "%bash_wait --until-screen 'line 2' --timeout 30",
        "%bash_send --key pgdn",
        "%bash_send --no-enter q",
        "r = %bash_wait --timeout 30\nassert (r.reason, r.status, r.exit_code) == ('settled', 'completed', 0), r",
        "r = %bash_exec --wait echo next\nassert r.output == 'next\\n'",
        f"%bash_close --session {session}",
    ]
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(c) for c in cells]
    return nb


def test_run_all_drives_vim_and_less_without_session_busy(tmp_path: Path) -> None:
    text_file = tmp_path / "notes.txt"
    text_file.write_text("".join(f"line {i}\n" for i in range(1, 200)))
    env = dict(os.environ, HOME=str(tmp_path))  # vim and less keep no state in the real HOME
    env.pop("JPY_SESSION_NAME", None)
    for run in range(RUNS):
        nb = _notebook(text_file, f"runall-{os.getpid()}-{run}")
        client = NotebookClient(nb, timeout=90, kernel_name="python3")
        client.km = client.create_kernel_manager()
        client.km.kernel_spec.argv[0] = sys.executable  # the interpreter under test
        client.execute(env=env, cwd=str(tmp_path))  # raises CellExecutionError at a failing cell
