"""The group magics in a real ipykernel (jupyter_client) over real places: the test sshd
under 4 host aliases and a dead one, 2 podman containers (without podman, the fleet
has none and the checks on them are skipped, saying so) and 2 ``cmd:`` targets, named
by a groups file.

A group handle comes back at once with a live area that updates in place (display_data,
then update_display_data with the same display id) while the kernel is idle; the wait
shows the table and the merged output and stops *Run All* with one line when a member
failed; state persists per member; the stop button interrupts every member; bad input
is one line and starts nothing."""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from typing import Any

import pytest

from dsh_magics.fanout import fold
from dsh_magics.terminal.remote.targets import ENV_SSH_OPTIONS
from tests.conftest import Gate, ps_lines, wait_until
from tests.fanout.fleet import ssh_aliases, start_boxes
from tests.magics.kernel_support import Execution, Kernel

pytestmark = pytest.mark.kernel

HOSTS = [f"nbhost{n}" for n in range(1, 5)]
CMDS = ["cmd:bash --noprofile --norc -i", "cmd:env NB=2 bash --noprofile --norc -i"]
STEP_S = 180  # terminals over ssh on a loaded 2-core machine


@pytest.fixture(scope="module")
def boxes() -> Iterator[list[str]]:
    """``podman://`` targets of 2 running containers, or none (why is in NO_BOXES)."""
    found = start_boxes(2)
    if isinstance(found, str):
        NO_BOXES.append(found)
        yield []
        return
    try:
        yield [f"podman://{n}" for n in found.names]
    finally:
        found.remove()


NO_BOXES: list[str] = []


def _need_boxes(boxes: list[str]) -> None:
    if not boxes:
        pytest.skip(f"no podman members: {NO_BOXES[0] if NO_BOXES else 'none started'}")


@pytest.fixture(scope="module")
def kernel(sshd, boxes: list[str], tmp_path_factory: pytest.TempPathFactory) -> Iterator[Kernel]:  # noqa: F811
    home = tmp_path_factory.mktemp("nb-groups")
    groups = home / "groups.yaml"
    fleet = ", ".join(f'"{c}"' for c in [*boxes, *CMDS])
    groups.write_text(
        "groups:\n"
        "  hosts: ssh://nbhost[1-4]\n"
        f"  boxes: [{', '.join(boxes)}]\n"
        f'  fleet: ["@hosts", "ssh://nbdead", {fleet}]\n'
    )
    env = {
        ENV_SSH_OPTIONS: ssh_aliases(sshd, HOSTS, dead=("nbdead",)),
        "DSH_MAGICS_GROUPS": str(groups),
        "DSH_MAGICS_MAX_SESSIONS": "32",
    }
    k = Kernel(env=env, cwd=str(home))
    try:
        k.run("%load_ext dsh_magics")
        yield k
    finally:
        k.run("from dsh_magics.terminal import default_registry as _r\n_r().close_all()", ok=False)
        k.shutdown()


def _terminals(kernel: Kernel) -> int:
    return int(kernel.value("len(__import__('dsh_magics.terminal', fromlist=['x']).default_registry().list())"))


def _display(ex_or_msgs: Execution | list[dict[str, Any]]) -> dict[str, Any]:
    msgs = ex_or_msgs.msgs if isinstance(ex_or_msgs, Execution) else ex_or_msgs
    shown = [m for m in msgs if m["msg_type"] == "display_data" and (m["content"].get("transient") or {}).get("display_id")]
    assert shown, "no display with a display id"
    return shown[-1]["content"]


def _updates(kernel: Kernel, display_id: str) -> list[dict[str, Any]]:
    return [
        m["content"]
        for m in kernel.seen
        if m["msg_type"] == "update_display_data" and m["content"]["transient"].get("display_id") == display_id
    ]


def _error(ex: Execution) -> dict[str, Any]:
    (err,) = ex.of_type("error")
    return err["content"]


def _some(boxes: list[str]) -> tuple[str, int]:
    """``--on`` options for the hosts, a ``cmd:`` and the containers; how many members."""
    return f"--on @hosts --on '{CMDS[0]}'" + (" --on @boxes" if boxes else ""), len(HOSTS) + 1 + len(boxes)


def test_a_group_over_the_fleet_folds_identical_outputs_and_the_dead_alias_is_a_row(
    kernel: Kernel, boxes: list[str]
) -> None:
    n = len(HOSTS) + 1 + len(boxes) + len(CMDS)
    ex = kernel.run("g = %bash_exec --on @fleet echo same-$((6*7))\nprint('handle', g)", timeout=30)
    assert "handle g" in ex.stream(), ex.text()  # at once: the members connect in the background
    ex = kernel.run("r = %bash_wait $g", timeout=STEP_S, ok=False)
    err = _error(ex)
    # a member failed: one line (no traceback) that stops Run All, after the view was shown
    assert err["ename"] == "GroupFailed" and err["traceback"] == [f"GroupFailed: {err['evalue']}"], err
    assert f"1 of {n} targets failed" in err["evalue"] and "TARGET_UNREACHABLE: ssh://nbdead" in err["evalue"]
    shown = _display(ex)
    text = ([shown] + _updates(kernel, shown["transient"]["display_id"]))[-1]["data"]["text/plain"]
    assert "TARGET_UNREACHABLE: ssh://nbdead" in text, text
    box_set = fold(boxes)
    names = ",".join(filter(None, [box_set, "ssh://nbhost[1-4]", *CMDS]))
    assert f"exit 0: {names}\n" in text, text
    assert f"{names} ({n - 1})\n----------------\nsame-42\n" in text, text
    rows = kernel.value("sorted((r.target, r.status, r.code or '') for r in g.rows)")
    assert "('ssh://nbdead', 'failed', 'TARGET_UNREACHABLE')" in rows
    assert rows.count("'completed'") == n - 1
    # the group's members and the group itself in %bash_list
    gid = kernel.value("g")
    listed = kernel.run("%bash_list").text()
    assert f"{gid}: {n} targets: {n - 1} completed, 1 failed: $ echo same-$((6*7))" in listed, listed
    assert "[ssh:nbhost1]" in listed
    members = kernel.run(f"%bash_list {gid}").text()
    assert re.search(r"^ssh://nbdead +TARGET_UNREACHABLE ", members, re.M), members
    _need_boxes(boxes)
    assert "[1-2]" in box_set, box_set  # the containers' names fold as a node set
    for box in boxes:
        assert f"('{box}', 'completed', '')" in rows, rows
        assert re.search(rf"^{re.escape(box)} +completed ", members, re.M), members


def test_state_persists_per_member_between_group_commands(kernel: Kernel, boxes: list[str]) -> None:
    on, n = _some(boxes)
    # /tmp: on every member (the containers too), and no member's first cwd
    # (the containers' shells can have the same pid, each in its own namespace)
    kernel.run(f"%bash_exec {on} --wait cd /tmp && export NB_SHELL=$$.$RANDOM$RANDOM", timeout=STEP_S)
    kernel.run(f"r = %bash_exec {on} --wait pwd; [ ${{NB_SHELL%.*}} = $$ ] && echo same-shell", timeout=STEP_S)
    assert kernel.value("r.ok, len(r.blocks), len(r.rows), r.blocks[0].output") == f"True 1 {n} /tmp\nsame-shell"
    # each member its own shell and value: nothing folds (the cell form, too)
    kernel.run(f"%%bash_exec {on} --wait\necho $NB_SHELL\n", timeout=STEP_S)
    assert kernel.value("len(_.blocks), _.ok") == f"{n} True"


def test_the_live_area_updates_in_place_and_keeps_text_literal(kernel: Kernel, gate: Gate) -> None:
    ex = kernel.run(f"g = %bash_exec --on @hosts echo '<b>$x</b>' begun; {gate.shell}; echo finished", timeout=30)
    first = _display(ex)
    view = first["transient"]["display_id"]
    assert first["data"]["text/plain"].startswith("group g"), first["data"]["text/plain"]
    assert "/4 done" in first["data"]["text/plain"]
    # while the kernel is idle, the rows move: every member shows its last line
    kernel.collect_until(
        lambda m: m["msg_type"] == "update_display_data"
        and m["content"]["transient"].get("display_id") == view
        and "ssh://nbhost[1-4] (4)  running" in m["content"]["data"]["text/plain"]
        and "<b>$x</b> begun" in m["content"]["data"]["text/plain"],
        timeout=STEP_S,
    )
    running = _updates(kernel, view)[-1]["data"]
    assert "&lt;b&gt;$x&lt;/b&gt; begun" in running["text/html"] and "<b>$x</b>" not in running["text/html"]
    assert "mathjax_ignore" in running["text/html"] and "dsh-group-bar" in running["text/html"]
    # let every member through (one pass each; each reader of the pipe sees its end)
    wait_until(lambda: (gate._let_through(), kernel.value("g.done") == "True")[1], STEP_S, interval=0.2,
               msg="the members to pass the gate")
    final = kernel.collect_until(
        lambda m: m["msg_type"] == "update_display_data"
        and m["content"]["transient"].get("display_id") == view
        and "exit 0: ssh://nbhost[1-4]" in m["content"]["data"]["text/plain"],
        timeout=STEP_S,
    )["content"]["data"]
    assert "finished" in final["text/plain"] and "&lt;b&gt;$x&lt;/b&gt; begun" in final["text/html"]
    assert len(_updates(kernel, view)) >= 2


def test_the_stop_button_interrupts_every_member(kernel: Kernel, boxes: list[str]) -> None:
    on, n = _some(boxes)
    mark = f"35{os.getpid()}"
    kernel.run(f"g = %bash_exec {on} sleep {mark}", timeout=30)
    wait_until(lambda: len([ln for ln in ps_lines() if f"sleep {mark}" in ln]) >= n, STEP_S,
               msg="every member running its sleep")
    mid = kernel.submit("r = %bash_wait $g")
    kernel.collect_until(lambda m: m["parent_header"].get("msg_id") == mid and m["msg_type"] == "display_data")
    kernel.km.interrupt_kernel()
    ex = kernel.finish(mid, timeout=STEP_S)
    assert f"Interrupted: sent Ctrl-C to {n} members of group" in ex.stream(), ex.text()
    err = _error(ex)
    assert err["ename"] == "GroupFailed" and f"{n} of {n} targets failed" in err["evalue"], err
    assert kernel.value("sorted({r.status for r in g.rows})") == "['interrupted']"
    wait_until(lambda: not [ln for ln in ps_lines() if f"sleep {mark}" in ln], 30, msg="the sleeps are gone")
    # the shells survive: the next group command runs in them
    kernel.run(f"r = %bash_exec {on} --wait echo alive", timeout=STEP_S)
    assert kernel.value("r.ok, r.blocks[0].output.strip()") == "True alive"


@pytest.mark.parametrize(
    ("line", "says"),
    [
        ("--on '' echo x", "targets: each item must be a non-empty string"),
        ("--on @nosuch echo x", "no group named 'nosuch'"),
        ("--on 'ssh://nbhost[1-' echo x", "malformed range"),
        ("--on @hosts --fanout 0 echo x", "fanout: must be an integer from 1 to 1024"),
        ("--on 'ssh://n[1-10000]' echo x", "unfolds into 10000 targets"),
        ("--on @hosts --session s echo x", "not with --session or --tty"),
        ("--fanout 4 echo x", "go with --on TARGETS"),
    ],
)
def test_bad_input_is_one_line_and_starts_nothing(kernel: Kernel, line: str, says: str) -> None:
    before = _terminals(kernel)
    ex = kernel.run(f"%bash_exec {line}", ok=False)
    shown = [ln for ln in ex.stream("stderr").splitlines() if ln.strip()]
    assert len(shown) == 1 and shown[0].startswith("UsageError: INVALID_ARGUMENT: ") and says in shown[0], ex.text()
    assert "Traceback" not in ex.text()
    assert _terminals(kernel) == before
    ex = kernel.run("%bash_wait g999", ok=False)
    assert "UsageError: NO_SUCH_JOB: no group with id 'g999'" in ex.stream("stderr")
