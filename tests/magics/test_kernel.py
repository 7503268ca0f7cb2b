"""The magics in a real ipykernel, driven with jupyter_client (one kernel for
the module): persistence across cells, live output areas updated from a
background thread while other cells run and while the kernel is idle,
interrupts, and one-line errors."""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

import pytest

from tests.conftest import Gate, live_pids, wait_until
from tests.magics.kernel_support import Kernel, idle_terminals, loaded_kernel
from tests.processes import ps_matching

pytestmark = pytest.mark.kernel


@pytest.fixture(scope="module")
def kernel(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Kernel]:
    with loaded_kernel(str(tmp_path_factory.mktemp("kernel-cwd"))) as k:
        yield k


@pytest.fixture(autouse=True)
def _terminals_idle_after_each_test(kernel: Kernel) -> Iterator[None]:
    """A failing test must not leave a job running into the next one."""
    yield
    idle_terminals(kernel)


def _display_ids(msgs: list[dict[str, Any]]) -> list[str]:
    return [
        m["content"]["transient"]["display_id"]
        for m in msgs
        if m["msg_type"] == "display_data"
        and (m["content"].get("transient") or {}).get("display_id")
    ]


def _updates(kernel: Kernel, display_id: str) -> list[dict[str, Any]]:
    return [
        m
        for m in kernel.seen
        if m["msg_type"] == "update_display_data"
        and m["content"]["transient"].get("display_id") == display_id
    ]


def test_default_session_comes_from_the_kernel_id(kernel: Kernel) -> None:
    kernel.run("%bash_attach")
    text = kernel.run("%bash_list").text()
    assert "default session: kernel-" in text and "from the kernel id" in text
    assert "* [kernel-" in text


def test_cd_export_and_functions_persist_across_cells(kernel: Kernel, tmp_path) -> None:
    kernel.run(
        f'%bash_exec --wait cd {tmp_path} && export DSH_K=from-cell-1 && shout() {{ echo "$1!"; }}'
    )
    kernel.run("r = %bash_exec --wait pwd; echo $DSH_K; shout hey")
    assert kernel.value("r.output") == f"{tmp_path}\nfrom-cell-1\nhey!"


def test_live_area_updates_while_another_cell_runs(kernel: Kernel, gate: Gate) -> None:
    job = kernel.run(f"j = %bash_exec echo first; {gate.shell}; for i in 1 2 3; do echo tick-$i; done")
    ids = _display_ids(job.msgs)
    assert len(ids) == 1, "%bash_exec opens exactly one output area"
    assert not job.of_type("execute_result"), "the returned handle is not displayed twice"
    did = ids[0]
    # A Python cell blocks the kernel's main thread until the job ends ...
    other = kernel.submit("r = j.wait(60)\nprint('python waited', r.exit_code)")
    # ... and the job's area keeps updating meanwhile.
    kernel.collect_until(
        lambda m: (
            m["msg_type"] == "update_display_data"
            and m["content"]["transient"].get("display_id") == did
            and "first" in m["content"]["data"]["text/plain"]
            and m["parent_header"].get("msg_id") == other
        )
    )
    gate.open()
    ex = kernel.finish(other)
    assert "python waited 0" in ex.stream()
    during = [m for m in _updates(kernel, did) if m["parent_header"].get("msg_id") == other]
    assert len(during) >= 2
    final = during[-1]["content"]["data"]
    assert "tick-3" in final["text/plain"] and "ok in" in final["text/plain"]
    assert "exit 0" in final["text/html"]
    # one area, updated in place: no appended output in the job's own cell
    assert not [
        m
        for m in kernel.seen
        if m["parent_header"].get("msg_id") == job.msg_id
        and m["msg_type"] in ("stream", "display_data")
    ][1:]


def test_live_area_finishes_while_the_kernel_is_idle(kernel: Kernel, gate: Gate) -> None:
    ex = kernel.run(f"%bash_exec {gate.shell}; echo released")
    did = _display_ids(ex.msgs)[0]
    # no cell runs from here on
    gate.open()
    final = kernel.collect_until(
        lambda m: (
            m["msg_type"] == "update_display_data"
            and m["content"]["transient"].get("display_id") == did
            and "ok in" in m["content"]["data"]["text/plain"]
        ),
        timeout=20,
    )
    assert "released" in final["content"]["data"]["text/plain"]
    idle_at = max(m["_received"] for m in ex.msgs)
    assert final["_received"] > idle_at


def test_wait_streams_into_one_display_with_elapsed_time(kernel: Kernel, gate: Gate) -> None:
    kernel.run(f"%bash_exec echo begun; {gate.shell}; echo over")
    mid = kernel.submit("r = %bash_wait")
    # The wait's own area (the job's background area updates too, in this cell).
    shown = kernel.collect_until(
        lambda m: m["parent_header"].get("msg_id") == mid and m["msg_type"] == "display_data"
    )
    kernel.collect_until(
        lambda m: (
            m["msg_type"] == "update_display_data"
            and m["content"]["transient"].get("display_id") == shown["content"]["transient"]["display_id"]
            and "begun" in m["content"]["data"]["text/plain"]
            and "running for" in m["content"]["data"]["text/plain"]
        )
    )
    gate.open()
    ex = kernel.finish(mid)
    own = _display_ids(ex.msgs)
    assert len(own) == 1 and not ex.of_type("execute_result", "stream")
    last = [
        m
        for m in ex.of_type("update_display_data")
        if m["content"]["transient"]["display_id"] == own[0]
    ][-1]
    assert (
        "over" in last["content"]["data"]["text/plain"]
        and "ok in" in last["content"]["data"]["text/plain"]
    )
    assert kernel.value("r.status, r.exit_code, r.timed_out") == "completed 0 False"


def test_wait_with_timeout_leaves_the_job_running(kernel: Kernel) -> None:
    kernel.run("%bash_exec sleep 30")
    kernel.run("r = %bash_wait --timeout 0.2")
    assert kernel.value("r.timed_out, r.status, r.exit_code") == "True running None"
    ex = kernel.run("%bash_interrupt")
    assert "interrupted" in ex.text()


@pytest.mark.parametrize(
    "form",
    [
        "r = %bash_wait --no-raise-error",
        "r = %bash_exec --wait --no-raise-error echo again-$((2*3)); sleep {mark}",
    ],
)
def test_kernel_interrupt_sends_ctrl_c_to_the_job(kernel: Kernel, form: str) -> None:
    mark = f"32{os.getpid()}"
    # The shell exists before it is listed (run alone, this test starts it;
    # after its neighbours, it is theirs).
    kernel.run("%bash_exec --timeout 10 true")
    before = kernel.run("t = %bash_list\nprint([i.pid for i in t])").stream()
    assert before != "[]\n"
    if form.startswith("r = %bash_wait"):
        kernel.run(f"%bash_exec echo again-$((2*3)); sleep {mark}")
    mid = kernel.submit(form.format(mark=mark))
    # Interrupt once the job is really running and the magic is waiting on
    # it: its own view shows the output. (Not any update sent during the
    # cell: the first form's earlier ``%bash_exec`` view is refreshed from a
    # background thread too, and its update could come before the wait had
    # begun; the interrupt then ended the cell with a KeyboardInterrupt.)
    shown = kernel.collect_until(
        lambda m: m["parent_header"].get("msg_id") == mid and m["msg_type"] == "display_data"
    )
    view = shown["content"]["transient"]["display_id"]
    kernel.collect_until(
        lambda m: (
            m["parent_header"].get("msg_id") == mid
            and m["msg_type"] in ("display_data", "update_display_data")
            and m["content"]["transient"].get("display_id") == view
            and "again-6" in m["content"]["data"]["text/plain"]
        )
    )
    assert ps_matching(f"sleep {mark}")
    kernel.km.interrupt_kernel()
    ex = kernel.finish(mid)
    assert ex.status == "ok", ex.text()
    assert "Interrupted: sent Ctrl-C" in ex.stream()
    assert kernel.value("r.status, r.exit_code") == "interrupted 130"
    wait_until(lambda: not ps_matching(f"sleep {mark}"), 10, msg="the interrupted job is gone")
    # same shell, still usable
    assert kernel.run("t = %bash_list\nprint([i.pid for i in t])").stream() == before
    assert (
        kernel.run("a = %bash_exec --timeout 10 echo alive\nprint(a.output.strip())")
        .stream()
        .strip()
        == "alive"
    )


def test_errors_are_one_line(kernel: Kernel) -> None:
    kernel.run("%bash_exec sleep 30")
    ex = kernel.run("%bash_exec echo busy", ok=False)
    text = ex.text()
    assert "SESSION_BUSY" in text and "Traceback" not in text
    assert [ln for ln in ex.stream("stderr").splitlines() if ln.strip()] == [
        ln for ln in ex.stream("stderr").splitlines() if ln.startswith("UsageError: SESSION_BUSY")
    ]
    kernel.run("%bash_interrupt")
    ex = kernel.run("%bash_wait --timeout soon", ok=False)
    assert "UsageError" in ex.text() and "Traceback" not in ex.text()


def test_named_sessions_and_close_all(kernel: Kernel) -> None:
    kernel.run("%bash_exec --session k-second --wait export WHO=second")
    kernel.run("a = %bash_exec --session k-second --timeout 10 echo $WHO")
    kernel.run("b = %bash_exec --timeout 10 echo ${WHO:-unset}")
    assert kernel.value("a.output.strip(), b.output.strip()") == "second unset"
    listing = kernel.run("%bash_list").text()
    assert "k-second" in listing
    pids = kernel.run("t = %bash_list\nprint(' '.join(str(i.pid) for i in t))").stream().split()
    out = kernel.run("%bash_close --all").stream()
    assert f"closed {len(pids)} terminals" in out
    assert "no terminals open" in kernel.run("%bash_list").text()
    wait_until(lambda: not {int(p) for p in pids} & live_pids(), 10, msg="closed shells are gone")


def test_a_quick_wait_is_drawn_once_final(kernel: Kernel) -> None:
    """issue 34 §5: a --wait job that ends within update_interval costs one
    display message, drawn final (no running view, no update of it); one that
    runs longer still gets its live area while it runs."""
    kernel.run("%config BashMagics.update_interval = 5.0")
    try:
        for cell in ("%bash_exec --wait sleep 0.05; echo quick", "%%bash_exec --wait\nsleep 0.05; echo quick"):
            ex = kernel.run(cell)
            shown = ex.of_type("display_data", "update_display_data")
            assert [m["msg_type"] for m in shown] == ["display_data"], cell
            assert "quick" in shown[0]["content"]["data"]["text/plain"]
            assert "running" not in shown[0]["content"]["data"]["text/plain"]
        kernel.run("%config BashMagics.update_interval = 0.1")
        ex = kernel.run("%bash_exec --wait echo slow; sleep 1.5")
        kinds = [m["msg_type"] for m in ex.of_type("display_data", "update_display_data")]
        assert kinds[0] == "display_data" and "update_display_data" in kinds, kinds
    finally:
        kernel.run("%config BashMagics.update_interval = 0.25")
