"""``notebooks/quickstart.ipynb`` executed end to end with nbclient, outputs checked.

The kernel gets ``JPY_SESSION_NAME`` set to the notebook's path, as
jupyter_server does, so the default session is the notebook's own.

Regenerate the committed outputs with::

    python -m tests.notebooks.test_quickstart_notebook --write
"""

from __future__ import annotations

import os
import re
import shutil
import sys
from pathlib import Path
from typing import Any

import nbformat
import pytest
from nbclient import NotebookClient

from dsh_magics.notebook.identity import session_id_for_path
from tests.conftest import pids_with_env, wait_until
from tests.notebooks.outputs import cell_text

REPO = Path(__file__).resolve().parents[2]
NOTEBOOK = REPO / "notebooks" / "quickstart.ipynb"

pytestmark = pytest.mark.kernel


def execute(path: Path, home: Path | None = None) -> nbformat.NotebookNode:
    """Run the notebook beside ``path``; ``home`` replaces HOME for the kernel
    (the committed run uses the notebook's own directory, so every path the
    notebook shows is ``~``-relative, never this machine's)."""
    nb = nbformat.read(path, as_version=4)
    client = NotebookClient(
        nb,
        timeout=120,
        kernel_name="python3",
        resources={"metadata": {"path": str(path.parent)}},
    )
    # the installed kernelspec says "python": run the interpreter under test
    client.km = client.create_kernel_manager()
    client.km.kernel_spec.argv[0] = sys.executable
    env = dict(os.environ, JPY_SESSION_NAME=str(path))
    if home is not None:
        env["HOME"] = str(home)
    client.execute(env=env)
    return nb


def _cell(nb: nbformat.NotebookNode, source_start: str) -> Any:
    found = [c for c in nb.cells if c.cell_type == "code" and c.source.startswith(source_start)]
    assert len(found) == 1, source_start
    return found[0]


def check(nb: nbformat.NotebookNode) -> None:
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert all(c.get("execution_count") for c in code), "every cell ran"
    for c in code:
        errors = [o for o in c.outputs if o["output_type"] == "error"]
        if "raises-exception" in c.metadata.get("tags", []):
            # IPython prints a UsageError as one stderr line, no traceback; a failed job
            # raises JobFailed, also one line
            assert cell_text(c).strip() == "UsageError: NO_SUCH_JOB: no job with id 'no-such-job'" or (
                # %bash_terminal without JupyterLab: one line saying why no tab opens
                c.source == "%bash_terminal" and re.fullmatch(r"UsageError: LAB_UNAVAILABLE: [^\n]+\n", cell_text(c))
            ) or (
                len(errors) == 1
                and errors[0]["traceback"] == [f"JobFailed: {errors[0]['evalue']}"]
                and "exit code 2" in errors[0]["evalue"]
            ), cell_text(c)
        else:
            assert not errors, cell_text(c)

    # 1. persistence
    first = cell_text(_cell(nb, "%bash_exec --wait cd"))
    assert first.strip().splitlines()[-1] == "~"
    persisted = cell_text(_cell(nb, "%%bash_exec --wait"))
    assert "cwd: ~\n" in persisted
    assert "GREETING=hello" in persisted and "hello, notebook!" in persisted
    assert "not set in the shell that ! started" in cell_text(_cell(nb, "!printenv"))

    # 2. the background job's own area ended final (one display, updated in place)
    bg = _cell(nb, "j = %bash_exec")
    displays = [o for o in bg.outputs if o["output_type"] == "display_data"]
    assert len(displays) == 1 and len(bg.outputs) == 1
    final = displays[0]["data"]["text/plain"]
    assert "ok in" in final and "finished" in final and "step 8" in final
    assert "exit 0" in displays[0]["data"]["text/html"]
    assert "job: bash-" in cell_text(_cell(nb, "total = sum"))

    # 3. polling, reading, the final result
    assert "(True, 'running', ['step " in cell_text(_cell(nb, "r = %bash_wait --timeout"))
    assert "step" in cell_text(_cell(nb, "%bash_read"))
    done = cell_text(_cell(nb, "r = %bash_wait\n"))
    assert re.search(r"completed 0 \d+\.\ds 9 lines", done) and "'completed'" in done

    # 4. interrupt, and the shell survived
    assert "interrupted" in cell_text(_cell(nb, "%bash_interrupt")) and "exit 130" in cell_text(
        _cell(nb, "%bash_interrupt")
    )
    assert "still the same shell: hello" in cell_text(_cell(nb, '%bash_exec --wait echo "still'))
    coloured = _cell(nb, "%bash_exec --wait printf")
    assert "test_a PASSED\ntest_b FAILED" in cell_text(coloured) and "\x1b" not in cell_text(coloured)
    shown = "".join(str(o.get("data", {}).get("text/html", "")) for o in coloured.outputs)
    assert '<span style="color:#cd0000;font-weight:bold">PASSED</span>' in shown, shown

    # failures stop Run All; -e puts Python values in
    assert "(False, 2, 'settled')" in cell_text(_cell(nb, "r = %bash_exec --wait --no-raise-error"))
    assert "hello, RUN ALL!\nhello from bash" in cell_text(_cell(nb, 'who = "Run All"'))

    # 5. a second terminal has its own state; the listing marks the default session
    assert "GREETING=unset" in cell_text(_cell(nb, "%bash_exec --session build"))
    listing = cell_text(_cell(nb, "%bash_list"))
    assert "default session: quickstart.ipynb-" in listing and "from the notebook path" in listing
    assert "* [quickstart.ipynb-" in listing and re.search(r"^  \[build\] +idle ", listing, re.M)

    # 7. answering prompts: a REPL, a y/N, a password only a person types
    assert "'awaiting_input', '>>> '" in cell_text(_cell(nb, "w = %bash_wait --timeout 10\nw.reason"))
    assert "42" in cell_text(_cell(nb, "%bash_send print(6 * 7)"))
    assert "you said: y" in cell_text(_cell(nb, "%bash_send y"))
    refused = cell_text(_cell(nb, "from dsh_magics import tools\n\nw = %bash_wait --timeout 10"))
    assert "'secret': True" in refused and "SECRET_INPUT" in refused
    answered = cell_text(_cell(nb, "p.select(w.session_id)"))
    assert "got 7 characters" in answered and "[secret]" in answered
    assert not [c for c in nb.cells if c.cell_type == "code" and "hunter2" in cell_text(c)]

    # full-screen: the wait after the quitting key returns the program's end
    assert "('settled', 'completed', [" in cell_text(_cell(nb, "%bash_send --no-enter q"))

    # open it as a terminal: headless, the tab cell says why in one line and hangs nothing
    assert "raises-exception" in _cell(nb, "%bash_terminal").metadata.get("tags", [])
    assert cell_text(_cell(nb, "%bash_terminal")).startswith("UsageError: LAB_UNAVAILABLE: ")

    # 8. closing
    assert "closed session 'build'" in cell_text(_cell(nb, "%bash_close --session build"))
    last = nb.cells[-1]
    assert last.source == "%bash_close" and "closed session 'quickstart.ipynb-" in cell_text(last)


def test_quickstart_runs_end_to_end(tmp_path: Path) -> None:
    work = tmp_path / "notebooks"
    work.mkdir()
    path = work / "quickstart.ipynb"
    shutil.copy(NOTEBOOK, path)
    nb = execute(path)
    check(nb)
    # nbclient shut the kernel down: nothing of either terminal is left
    for sid in (session_id_for_path(str(path)), "build"):
        wait_until(lambda sid=sid: not pids_with_env("DSH_MAGICS_SESSION", sid), 10, msg=sid)


def test_committed_notebook_has_the_outputs_of_a_real_run() -> None:
    nb = nbformat.read(NOTEBOOK, as_version=4)
    check(nb)


if __name__ == "__main__":
    if "--write" in sys.argv:
        import tempfile

        with tempfile.TemporaryDirectory() as tmp:
            copy = Path(tmp) / NOTEBOOK.name
            shutil.copy(NOTEBOOK, copy)
            nb = execute(copy, home=Path(tmp))
        check(nb)
        nbformat.write(nb, NOTEBOOK)
        print(f"wrote {NOTEBOOK}")
