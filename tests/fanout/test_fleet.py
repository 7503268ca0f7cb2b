"""One group over real places: the test sshd under 8 host aliases (and a dead
one), 3 podman containers and 2 ``cmd:`` targets. Identical outputs fold,
different ones do not, the dead alias is TARGET_UNREACHABLE, state persists per
member, Ctrl-C on the group ends every member."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from dsh_magics import fanout
from dsh_magics.fanout import GroupBook
from dsh_magics.terminal import Registry, TerminalConfig
from dsh_magics.terminal.remote.targets import ENV_SSH_OPTIONS
from tests.conftest import wait_until
from tests.fanout.fleet import Boxes, ssh_aliases, start_boxes

ALIASES = [f"fanhost{n}" for n in range(1, 9)]
CMDS = ["cmd:bash --noprofile --norc -i", "cmd:env FANOUT_CMD=2 bash --noprofile --norc -i"]
#: Generous: 14 terminals open at once on a 2-core machine shared with others.
STEP_S = 240


@pytest.fixture(scope="module")
def boxes() -> Iterator[Boxes]:
    found = start_boxes(3)
    if isinstance(found, str):
        pytest.skip(found)
    yield found
    found.remove()


@pytest.fixture(scope="module")
def fleet(sshd, boxes: Boxes) -> Iterator[tuple[Registry, GroupBook]]:  # noqa: F811
    mp = pytest.MonkeyPatch()
    mp.setenv(ENV_SSH_OPTIONS, ssh_aliases(sshd, ALIASES, dead=("fandead",)))
    book = GroupBook(
        {
            "hosts": ["ssh://fanhost[1-8]"],
            "boxes": [f"podman://{n}" for n in boxes.names],
            "fleet": ["@hosts", "ssh://fandead", "@boxes", *CMDS],
        },
        [],
    )
    reg = Registry(TerminalConfig(login=False, max_sessions=32, start_timeout=60.0))
    try:
        yield reg, book
    finally:
        reg.close_all()
        mp.undo()


def _run(fleet: tuple[Registry, GroupBook], command: str) -> fanout.GroupReport:
    reg, book = fleet
    group = fanout.start(reg, "@fleet", command, book=book)
    assert group.wait(timeout_ms=STEP_S * 1000), fanout.report(group).table()
    return fanout.report(group)


def test_identical_outputs_fold_and_the_dead_alias_is_unreachable(fleet, boxes: Boxes) -> None:
    rep = _run(fleet, "echo same-everywhere")
    rows = {r.target: r for r in rep.rows}
    assert rows["ssh://fandead"].status == "failed" and rows["ssh://fandead"].code == "TARGET_UNREACHABLE"
    assert rep.counts() == {"completed": 13, "failed": 1}, rep.table()
    (block,) = rep.blocks
    assert block.output == "same-everywhere\n" and len(block.labels) == 13
    box_set = fanout.fold(f"podman://{n}" for n in boxes.names)
    assert block.nodes.startswith(f"{box_set},ssh://fanhost[1-8],") and "[1-3]" in box_set
    assert "TARGET_UNREACHABLE: ssh://fandead" in rep.summary()


def test_different_outputs_do_not_fold(fleet, boxes: Boxes) -> None:
    rep = _run(fleet, "wc -l < /etc/group")  # the containers' /etc/group has one line
    found = {frozenset(b.labels): b.output for b in rep.blocks}
    assert found[frozenset(f"podman://{n}" for n in boxes.names)] == "1\n"
    others = frozenset([*(f"ssh://{a}" for a in ALIASES), *CMDS])
    assert others in found and found[others] != "1\n" and len(found) == 2


def test_state_persists_per_member(fleet) -> None:
    rep = _run(fleet, "cd /tmp && export FANX=$RANDOM$RANDOM && echo set")
    assert rep.counts()["completed"] == 13
    cwd = _run(fleet, "pwd")
    assert [b.output for b in cwd.blocks] == ["/tmp\n"]
    mine = _run(fleet, 'echo "${FANX:?lost}"')
    assert mine.counts()["completed"] == 13 and len(mine.blocks) == 13  # each member its own value
    assert all(r.exit_code == 0 for r in mine.rows if r.status == "completed")


def test_ctrl_c_on_the_group_ends_every_member(fleet) -> None:
    reg, book = fleet
    group = fanout.start(reg, "@fleet", "echo started; sleep 600; echo not-interrupted", book=book)

    def all_started() -> bool:
        rows = fanout.report(group).rows
        return all(r.output and "started" in r.output for r in rows if r.status != "failed")

    wait_until(all_started, timeout=STEP_S, interval=0.1, msg="every member's sleep started")
    hit = group.interrupt(source="person")
    assert len(hit) == 13
    assert group.wait(timeout_ms=60_000), fanout.report(group).table()
    rep = fanout.report(group)
    assert rep.counts() == {"interrupted": 13, "failed": 1}, rep.table()
    assert all("not-interrupted" not in (r.output or "") for r in rep.rows)
    after = _run(fleet, "echo alive")
    assert after.counts() == {"completed": 13, "failed": 1} and [b.output for b in after.blocks] == ["alive\n"]


def test_a_member_whose_remote_shell_dies_is_target_lost_and_comes_back(fleet, boxes: Boxes) -> None:
    """Last in this module: it ends two members' terminals."""
    reg, book = fleet
    some = ["ssh://fanhost1", f"podman://{boxes.names[0]}", "fanlocal"]
    group = fanout.start(reg, some, "echo bye; exit 3", book=book)
    assert group.wait(timeout_ms=STEP_S * 1000)
    rows = {r.target: r for r in fanout.report(group).rows}
    for target in some[:2]:
        assert rows[target].code == "TARGET_LOST" and (rows[target].output or "").startswith("bye\n"), rows[target]
    assert rows["fanlocal"].status == "shell_exited" and rows["fanlocal"].code is None  # local: nothing to lose
    assert f"TARGET_LOST: {fanout.fold(some[:2])}" in fanout.report(group).summary()
    again = fanout.start(reg, some, "echo back", book=book)
    assert again.wait(timeout_ms=STEP_S * 1000)
    assert [b.output for b in fanout.report(again).blocks] == ["back\n"]
