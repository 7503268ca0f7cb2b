"""Group jobs on real local terminals and cmd: targets: per-member jobs and state, bounded width, Ctrl-C to all, per-target timeouts and codes."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from dsh_magics import fanout
from dsh_magics.errors import InvalidArgument, TooManySessions
from dsh_magics.fanout import GroupBook
from dsh_magics.terminal import Registry, TerminalConfig
from tests.conftest import wait_until

NO_GROUPS = GroupBook({}, [])
BASH = "cmd:bash --noprofile --norc -i"


@pytest.fixture
def reg() -> Iterator[Registry]:
    r = Registry(TerminalConfig(login=False, max_sessions=8))
    yield r
    r.close_all()


def _start(reg: Registry, targets: list[str], command: str, **kw: object) -> fanout.GroupJob:
    return fanout.start(reg, targets, command, book=NO_GROUPS, **kw)  # type: ignore[arg-type]


def test_each_member_is_an_ordinary_job_and_keeps_its_state(reg: Registry, tmp_path) -> None:
    g = _start(reg, ["s[1-2]", BASH], f"cd {tmp_path} && export MARK=$((RANDOM % 1000 + 1000)) && echo ok")
    assert g.id.startswith("g") and g.wait(timeout_ms=60_000)
    first = fanout.report(g)
    assert [r.status for r in first.rows] == ["completed"] * 3
    assert [b.output for b in first.blocks] == ["ok\n"]
    for row in first.rows:
        assert reg.job(row.job_id or "").owner == row.session_id  # its own job in its own session
    g2 = _start(reg, ["s[1-2]", BASH], "echo $PWD $MARK")
    assert g2.wait(timeout_ms=60_000)
    second = fanout.report(g2)
    outs = [r.output for r in second.rows]
    assert all(o and o.startswith(str(tmp_path) + " 1") for o in outs), outs
    assert len(set(outs)) == 3  # each member kept its own MARK: three different outputs, not folded


def test_width_bounds_how_many_members_run_at_once(reg: Registry) -> None:
    g = _start(reg, ["w[1-4]"], "sleep 0.3", width=2)
    assert g.wait(timeout_ms=60_000)
    spans = [(r.result.started_at, r.result.ended_at or 0) for r in g.runs if r.result]
    at_once = max(sum(1 for s, e in spans if s <= t < e) for t, _ in spans)
    assert len(spans) == 4 and at_once <= 2


def test_ctrl_c_on_the_group_ends_every_member(reg: Registry) -> None:
    g = _start(reg, ["c[1-3]"], "echo started; sleep 300")
    wait_until(
        lambda: all("started" in (r.output or "") for r in fanout.report(g).rows), timeout=60, msg="every sleep started"
    )
    assert sorted(g.interrupt(source="agent")) == ["c1", "c2", "c3"]
    assert g.wait(timeout_ms=30_000)
    assert [r.status for r in g.runs] == ["interrupted"] * 3
    assert fanout.report(g).summary().splitlines()[1] == "interrupted: c[1-3]"


def test_durations_are_milliseconds_named_so(reg: Registry, gate) -> None:
    """fanout/ counts milliseconds, as the package does inside; the wait's unit is in its
    keyword, so an old call in seconds (``wait(60)``) fails instead of waiting 60 ms."""
    g = _start(reg, ["u1"], gate.shell)
    with pytest.raises(TypeError):
        g.wait(60)  # type: ignore[misc]
    assert g.wait(timeout_ms=0) is False
    gate.open()
    assert g.wait(timeout_ms=60_000)


def test_a_per_target_timeout_interrupts_only_the_slow_member(reg: Registry) -> None:
    reg.exec("slow", "X=slow", wait_ms=30_000)  # the members differ only in this variable
    g = _start(reg, ["fast", "slow"], 'test "$X" = slow && sleep 300; echo done', member_timeout_ms=5000)
    assert g.wait(timeout_ms=60_000)
    rows = {r.target: r for r in fanout.report(g).rows}
    assert rows["fast"].status == "completed" and rows["fast"].output == "done\n"
    assert rows["slow"].status == "interrupted" and rows["slow"].timed_out and not rows["fast"].timed_out


def test_unreachable_and_lost_targets_are_per_member_codes(reg: Registry) -> None:
    g = _start(reg, ["ok1", "cmd:false", BASH], "echo fine")
    assert g.wait(timeout_ms=60_000)
    rows = {r.target: r for r in fanout.report(g).rows}
    assert rows["ok1"].status == "completed" and rows[BASH].status == "completed"
    assert rows["cmd:false"].status == "failed" and rows["cmd:false"].code == "TARGET_UNREACHABLE"
    lost = _start(reg, [BASH, "ok1"], "echo bye; exit 3")
    assert lost.wait(timeout_ms=60_000)
    rows = {r.target: r for r in fanout.report(lost).rows}
    assert rows[BASH].code == "TARGET_LOST" and (rows[BASH].output or "").startswith("bye\n")
    assert rows["ok1"].code is None and rows["ok1"].status == "shell_exited"  # a local shell: no target to lose
    text = fanout.report(lost).summary()
    assert f"TARGET_LOST: {BASH}" in text


@pytest.mark.parametrize(
    "targets, kw, error, words",
    [
        (["a"], {"width": 0}, InvalidArgument, "fanout: must be an integer from 1"),
        (["a"], {"member_timeout_ms": 0}, InvalidArgument, "target_timeout"),
        (["a"], {"member_timeout_ms": 2.5}, InvalidArgument, "target_timeout"),  # seconds? ms are whole
        (["n[1-9]"], {}, TooManySessions, "needs 9 new terminals"),
        (["n[1-"], {}, InvalidArgument, "malformed range"),
        (["@nope"], {}, InvalidArgument, "no group named"),
    ],
)
def test_bad_input_starts_nothing(reg: Registry, targets: list[str], kw: dict, error: type, words: str) -> None:
    with pytest.raises(error) as e:
        _start(reg, targets, "echo x", **kw)
    assert words in e.value.message
    assert reg.list() == [] and len(reg.jobs) == 0


def test_group_files_are_read_only_when_a_group_is_named(reg: Registry, tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("DSH_MAGICS_INVENTORY", str(tmp_path / "missing.ini"))
    monkeypatch.setenv("DSH_MAGICS_GROUPS", str(tmp_path / "groups.yaml"))
    g = fanout.start(reg, ["plain1"], "echo ok")
    assert g.wait(timeout_ms=60_000) and fanout.report(g).rows[0].output == "ok\n"
    with pytest.raises(InvalidArgument, match="cannot read inventory"):
        fanout.start(reg, ["@any"], "echo ok")
    (tmp_path / "groups.yaml").write_text("groups:\n  pair: [plain1, plain2]\n")
    monkeypatch.delenv("DSH_MAGICS_INVENTORY")
    g = fanout.start(reg, "@pair", "echo ok")  # the file as it is now
    assert g.wait(timeout_ms=60_000) and [r.target for r in fanout.report(g).rows] == ["plain1", "plain2"]


def test_a_member_that_ignores_ctrl_c_after_its_timeout_is_no_longer_waited_for(reg: Registry, monkeypatch) -> None:
    from dsh_magics.fanout import group_job

    monkeypatch.setattr(group_job, "INTERRUPT_GRACE_MS", 1000)
    g = _start(reg, ["stubborn", "quick"], "case $DSH_MAGICS_SESSION in stubborn) trap '' INT; echo stays; sleep 60;; esac; echo end",
               member_timeout_ms=2000)  # fmt: skip
    assert g.wait(timeout_ms=60_000)
    rows = {r.target: r for r in fanout.report(g).rows}
    assert rows["quick"].status == "completed"
    assert rows["stubborn"].status == "timed_out" and rows["stubborn"].timed_out
    assert rows["stubborn"].last_line == "stays" and rows["stubborn"].exit_code is None  # its live output
    assert "timed_out (target timeout): stubborn" in fanout.report(g).summary()
