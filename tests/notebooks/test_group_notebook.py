"""A notebook that drives the group magics end to end, executed with nbclient (which
stops at the first failing cell, as *Run All* does; cells tagged ``raises-exception``
are the ones meant to fail). Its members: the test sshd under 3 host aliases and a dead
one, and 2 ``cmd:`` targets, named by a groups file (issue 35 §2, §4).

Checked from the saved outputs: the group handle, the wait's table and merged output
(identical outputs folded, different ones apart, ``--diff``), ``%bash_read`` and
``%bash_list`` on the group, state kept per member between group commands, Ctrl-C on
the group, a failed member stopping the cell with one line, bad input as one line; and
after the kernel's shutdown no process of any member is left."""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path
from typing import Any

import nbformat
import pytest
from nbclient import NotebookClient

from dsh_magics.terminal.remote.targets import ENV_SSH_OPTIONS
from tests.conftest import pids_with_env, wait_until
from tests.fanout.fleet import ssh_aliases
from tests.notebooks.outputs import cell_text

pytestmark = pytest.mark.kernel

HOSTS = [f"nbkhost{n}" for n in range(1, 4)]
STEP_S = 180  # a cell's wait: terminals over ssh on a loaded 2-core machine
MARK = f"NBK_MARK_{os.getpid()}"
CMDS = [f"cmd:env {MARK}=1 bash --noprofile --norc -i", f"cmd:env {MARK}=2 NBK=two bash --noprofile --norc -i"]
ON = "--on @hosts --on @cmds"

#: (name, source, tags): the name finds the cell again in the checks.
CELLS: list[tuple[str, str, list[str]]] = [
    ("load", "%load_ext dsh_magics", []),
    ("start", "g = %bash_exec --on @fleet echo same-$((6*7))\nprint('handle', g, type(g).__name__)", []),
    ("failed", "%bash_wait $g", ["raises-exception"]),
    ("rows", "print(sorted((r.target, r.status, r.code or '') for r in g.rows))", []),
    ("cd", f"%bash_exec {ON} --wait cd /tmp && export NBK_VALUE=kept-$$", []),
    (
        "kept",
        f"r = %bash_exec {ON} --wait pwd; echo ${{NBK_VALUE%-*}}\n"
        "assert r.ok and len(r.blocks) == 1, r.text()\nprint('blocks', len(r.blocks), r.counts())",
        [],
    ),
    ("differ", f"r = %bash_exec {ON} --wait --diff echo common; echo ${{NBK:-one}}", []),
    ("background", f"g2 = %bash_exec {ON} echo begun; sleep 600; echo not-interrupted", []),
    (
        "begun",
        "import time\ndeadline = time.monotonic() + 120\n"
        "while not all(x.last_line == 'begun' for x in g2.rows) and time.monotonic() < deadline:\n"
        "    g2.wait(0.2)  # returns at its end or at the timeout\n"
        "print('all begun', all(x.last_line == 'begun' for x in g2.rows), g2.done)",
        [],
    ),
    ("read", "%bash_read $g2 --lines 1", []),
    ("list", "%bash_list $g2", []),
    ("interrupt", "%bash_interrupt $g2", []),
    ("after", "r = %bash_wait $g2 --no-raise-error\nprint(r.reason, sorted({x.status for x in r.rows}))", []),
    ("listing", "%bash_list", []),
    ("bad", "%bash_exec --on 'ssh://nbkhost[1-' echo x", ["raises-exception"]),
    ("close", "from dsh_magics.terminal import default_registry\ndefault_registry().close_all()", []),
]


def _notebook() -> nbformat.NotebookNode:
    nb = nbformat.v4.new_notebook()
    for _name, source, tags in CELLS:
        cell = nbformat.v4.new_code_cell(source)
        if tags:
            cell.metadata["tags"] = tags
        nb.cells.append(cell)
    return nb


def _errors(cell: Any) -> list[Any]:
    return [o for o in cell.get("outputs", []) if o["output_type"] == "error"]


def test_a_notebook_runs_the_group_magics_end_to_end(sshd, tmp_path: Path) -> None:  # noqa: F811
    groups = tmp_path / "groups.yaml"
    groups.write_text(
        "groups:\n"
        "  hosts: ssh://nbkhost[1-3]\n"
        f"  cmds: [{', '.join(repr(c) for c in CMDS)}]\n"
        '  fleet: ["@hosts", "ssh://nbkdead", "@cmds"]\n'
    )
    env = dict(os.environ, DSH_MAGICS_GROUPS=str(groups), DSH_MAGICS_MAX_SESSIONS="32")
    env[ENV_SSH_OPTIONS] = ssh_aliases(sshd, HOSTS, dead=("nbkdead",))
    env.pop("JPY_SESSION_NAME", None)
    nb = _notebook()
    client = NotebookClient(nb, timeout=STEP_S, kernel_name="python3")
    client.km = client.create_kernel_manager()
    client.km.kernel_spec.argv[0] = sys.executable  # the interpreter under test
    try:
        client.execute(env=env, cwd=str(tmp_path))  # raises CellExecutionError at a failing cell
    finally:
        # nbclient shut the kernel down: nothing of any member is left
        wait_until(
            lambda: not pids_with_env("DSH_MAGICS_SESSION", "ssh:nbkhost", prefix=True)
            and not pids_with_env(MARK, "", prefix=True),
            30,
            msg="the members' processes to end",
        )
    cells = {name: nb.cells[i] for i, (name, _s, _t) in enumerate(CELLS)}
    assert all(c.get("execution_count") for c in nb.cells), "every cell ran"
    for name, cell in cells.items():
        if "raises-exception" not in cell.metadata.get("tags", []):
            assert not _errors(cell), (name, cell_text(cell))

    # the handle at once; its wait: the table, the merged output, then one line for the failure
    assert re.search(r"^handle g\d+ GroupHandle$", cell_text(cells["start"]), re.M), cell_text(cells["start"])
    (err,) = _errors(cells["failed"])
    assert err["ename"] == "GroupFailed" and err["traceback"] == [f"GroupFailed: {err['evalue']}"], err
    assert "1 of 6 targets failed: TARGET_UNREACHABLE: ssh://nbkdead" in err["evalue"], err
    shown = cell_text(cells["failed"])
    assert re.search(r"^ssh://nbkdead +TARGET_UNREACHABLE ", shown, re.M), shown
    assert f"ssh://nbkhost[1-3],{CMDS[0]},{CMDS[1]} (5)\n----------------\nsame-42\n" in shown, shown
    assert "('ssh://nbkdead', 'failed', 'TARGET_UNREACHABLE')" in cell_text(cells["rows"])

    # state per member: the cd and the export of one cell are there in the next
    assert "blocks 1 {'completed': 5}" in cell_text(cells["kept"]), cell_text(cells["kept"])
    assert "/tmp\nkept\n" in cell_text(cells["kept"])

    # different outputs stay apart; --diff shows them against the most common one
    differ = cell_text(cells["differ"])
    assert "common\none\n" in differ and "-one\n+two" in differ, differ

    # a running group: read, list, Ctrl-C to every member, the shells survive
    assert "all begun True False" in cell_text(cells["begun"]), cell_text(cells["begun"])
    assert "begun" in cell_text(cells["read"])
    listed = cell_text(cells["list"])
    assert all(re.search(rf"^{re.escape(t)} +running ", listed, re.M) for t in ("ssh://nbkhost1", CMDS[1])), listed
    assert "5" in cell_text(cells["interrupt"]), cell_text(cells["interrupt"])
    after = cell_text(cells["after"])
    assert "settled ['interrupted']" in after and "\nnot-interrupted" not in after, after
    assert "(5)\n----------------\nbegun\n" in after, after
    assert "[ssh:nbkhost1]" in cell_text(cells["listing"])

    # bad input: one line on stderr (IPython's UsageError), no traceback
    (said,) = cells["bad"].outputs
    assert said["output_type"] == "stream" and said["name"] == "stderr", said
    assert re.fullmatch(r"UsageError: INVALID_ARGUMENT: targets: malformed range in [^\n]+\n", said["text"]), said
