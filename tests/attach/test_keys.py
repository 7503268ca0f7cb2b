"""Keys from an attached client, sent without waiting (docs/attach.md, "What you type"):
the host types a connection's keys in order, answers them only when they fail
(``"reply": "errors"``, docs/host.md), and a client that leaves has its keys
typed first."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from pathlib import Path

from dsh_magics import jobs
from dsh_magics.host import HostClient, HostPaths, keys
from dsh_magics.host import protocol as P
from dsh_magics.host.transport import Link
from dsh_magics.terminal import Result

from ..conftest import wait_until
from .conftest import T, Tmux, attach_command


def _attached(engine: HostClient, sid: str) -> None:
    wait_until(lambda: any(a["session_id"] == sid for a in engine.status().get("attached", [])), T)


def _request(link: Link, msg_id: str, op: str, args: dict[str, object], *, errors_only: bool) -> None:
    msg: dict[str, object] = {"v": P.VERSION, "id": msg_id, "op": op, "args": args}
    if errors_only:
        msg["reply"] = P.ERRORS_ONLY
    link.sock.sendall(P.encode(msg))


def test_a_key_asks_for_a_reply_only_when_it_fails(
    engine: HostClient, attach_dir: str, fresh_session: Callable[[str], str]
) -> None:
    sid = fresh_session("k-quiet")
    job = engine.exec(sid, "read -r x; echo \"got [$x]\"", tty=True)
    assert isinstance(job, jobs.Job)
    wait_until(lambda: engine.info(sid).awaiting_input is not None, T)
    link = Link(HostPaths.for_name("att", attach_dir).socket, 0)
    try:
        _request(link, "1", "type_keys", {"session_id": sid, "data": "quiet"}, errors_only=True)
        _request(link, "2", "type_keys", {"session_id": "k-missing", "data": "x"}, errors_only=True)
        _request(link, "3", "type_keys", {"session_id": sid, "data": "-keys\r"}, errors_only=True)
        _request(link, "4", "exists", {"session_id": sid}, errors_only=False)
        replies = []
        while len(replies) < 2:
            line = link.reader.next_item()
            assert isinstance(line, bytes)
            replies.append(json.loads(line))
    finally:
        link.close()
    # The failure is answered, in its place; the keys that worked are not.
    assert [(r["id"], r["ok"]) for r in replies] == [("2", False), ("4", True)]
    assert replies[0]["error"]["code"] == "NO_SUCH_SESSION"
    assert job.wait(T) and isinstance(job.result, Result) and "got [quiet-keys]" in job.result.output


def test_a_persons_keys_line_is_the_same_request_as_the_general_one(
    engine: HostClient, attach_dir: str, fresh_session: Callable[[str], str]
) -> None:
    """The client's keys lines (host/keys.py, taken apart without the general
    dispatch) type, fail and are refused as any ``type_keys``: an error is
    answered with its code, a read-only viewer's key is refused, and a line
    of that shape the short way cannot read goes the general way."""
    sid = fresh_session("k-line")
    job = engine.exec(sid, "read -r x; echo \"got [$x]\"", tty=True)
    assert isinstance(job, jobs.Job)
    wait_until(lambda: engine.info(sid).awaiting_input is not None, T)
    socket_path = HostPaths.for_name("att", attach_dir).socket

    def line(session: str, data: str) -> bytes:
        return keys.line_prefix(session, "attach-test") + json.dumps(data).encode() + b"}}\n"

    def replies(link: Link, n: int) -> list[dict[str, object]]:
        out = []
        while len(out) < n:
            item = link.reader.next_item()
            assert isinstance(item, bytes)
            out.append(json.loads(item))
        return out

    viewer = Link(socket_path, 0)
    link = Link(socket_path, 0)
    for c in (viewer, link):
        c.sock.settimeout(T)  # a reply that never comes fails the test
    try:
        viewer.call("hello", {"client": {"purpose": "attach", "session": sid, "read_only": True}})
        viewer.sock.sendall(line(sid, "from-a-viewer") + P.request("v", "exists", {"session_id": sid}))
        refused, after = replies(viewer, 2)
        assert refused["id"] == keys.KEYS_ID and refused["ok"] is False
        assert refused["error"]["code"] == "INVALID_ARGUMENT" and refused["error"]["details"]["read_only"] is True  # type: ignore[index]
        assert after["id"] == "v"

        odd = keys.HEAD + json.dumps({"session_id": sid, "data": "x", "extra": 1}).encode() + b"}\n"
        link.sock.sendall(line(sid, "typed") + line("k-missing", "x") + odd + line(sid, "-line\r"))
        link.sock.sendall(P.request("e", "exists", {"session_id": sid}))
        missing, general, done = replies(link, 3)
    finally:
        viewer.close()
        link.close()
    assert (missing["id"], missing["ok"], missing["error"]["code"]) == (keys.KEYS_ID, False, "NO_SUCH_SESSION")  # type: ignore[index]
    # Not the keys line's shape: the general dispatch answers it (an unknown argument).
    assert general["ok"] is False and "unknown argument" in general["error"]["message"]  # type: ignore[index,operator]
    assert done["id"] == "e"
    assert job.wait(T) and isinstance(job.result, Result) and "got [typed-line]" in job.result.output
    assert [(r["source"], r["caller"], r["text"]) for r in engine.inputs(sid) if r["kind"] == "input"] == [
        ("person", "attach-test", "typed-line\r")
    ]


def test_a_keys_lane_holds_only_for_the_hello_it_was_checked_under(
    engine: HostClient, attach_dir: str, fresh_session: Callable[[str], str]
) -> None:
    """After a connection's first keys line passed the general dispatch, its
    next lines of that shape skip it (host/keys.py ``KeysLane``): their data is
    still checked, and a new ``hello`` (here: as a read-only viewer) drops the
    lane, so the same line is refused as any viewer's."""
    sid = fresh_session("k-lane")
    job = engine.exec(sid, "read -r x; echo \"got [$x]\"", tty=True)
    assert isinstance(job, jobs.Job)
    wait_until(lambda: engine.info(sid).awaiting_input is not None, T)

    def line(data: str) -> bytes:
        return keys.line_prefix(sid, "attach-lane") + json.dumps(data).encode() + b"}}\n"

    link = Link(HostPaths.for_name("att", attach_dir).socket, 0)
    link.sock.settimeout(T)  # a reply that never comes fails the test

    def reply() -> dict[str, object]:
        item = link.reader.next_item()
        assert isinstance(item, bytes)
        return json.loads(item)  # type: ignore[no-any-return]

    try:
        assert link.call("hello", {"client": {"purpose": "attach", "session": sid}})["ok"] is True
        link.sock.sendall(line("typed") + line("") + line("x" * 70_000) + line("-more") + P.request("1", "exists", {"session_id": sid}))
        empty, long, done = reply(), reply(), reply()
        assert link.call("hello", {"client": {"purpose": "attach", "session": sid, "read_only": True}})["ok"] is True
        link.sock.sendall(line("-from-a-viewer") + P.request("2", "exists", {"session_id": sid}))
        refused, after = reply(), reply()
    finally:
        link.close()
    for r in (empty, long):
        assert (r["id"], r["ok"], r["error"]["details"]["field"]) == (keys.KEYS_ID, False, "data")  # type: ignore[index]
    assert done["id"] == "1"
    assert (refused["id"], refused["ok"], refused["error"]["code"]) == (keys.KEYS_ID, False, "INVALID_ARGUMENT")  # type: ignore[index]
    assert refused["error"]["details"]["read_only"] is True  # type: ignore[index]
    assert after["id"] == "2"
    engine.type_keys(sid, "\r")
    assert job.wait(T) and isinstance(job.result, Result) and "got [typed-more]" in job.result.output


def test_a_paste_arrives_whole_and_in_order(
    engine: HostClient, attach_dir: str, tmuxes: list[Tmux], tmp_path: Path, fresh_session: Callable[[str], str]
) -> None:
    """40 KB pasted at once: the client reads it in many pieces and sends each
    without waiting for the one before; the host types them in the order sent."""
    text = "".join(f"line {i:05d} of a pasted text, all of it in order\n" for i in range(900))
    assert len(text) >= 40_000
    paste = tmp_path / "paste-src.txt"
    paste.write_text(text)
    sid = fresh_session("k-paste")
    engine.attach(sid, cwd=str(tmp_path))
    t = Tmux(attach_command(sid, attach_dir))
    tmuxes.append(t)
    _attached(engine, sid)
    wait_until(lambda: engine.screen(sid)["cols"] == 100, T)
    job = engine.exec(
        sid, f"echo PASTE-READY; stty -icanon -echo; head -c {len(text)} > pasted.txt; stty sane; echo PASTE-DONE",
        tty=True,
    )
    assert isinstance(job, jobs.Job)
    t.wait_for("PASTE-READY")  # drawn by the client: its terminal is in raw mode
    wait_until(lambda: engine.info(sid).awaiting_input is not None, T)
    t.tmux("load-buffer", str(paste))
    t.tmux("paste-buffer", "-r", "-t", "0")  # -r: newlines stay newlines
    assert job.wait(T), t.screen()
    assert (tmp_path / "pasted.txt").read_text() == text
    t.wait_for("PASTE-DONE")


def test_keys_typed_with_the_detach_key_are_typed_before_it_leaves(
    engine: HostClient, attach_dir: str, tmuxes: list[Tmux], fresh_session: Callable[[str], str]
) -> None:
    sid = fresh_session("k-detach")
    job = engine.exec(sid, "read -r -p 'Say? ' x; echo \"got [$x]\"", tty=True)
    assert isinstance(job, jobs.Job)
    t = Tmux(attach_command(sid, attach_dir))
    tmuxes.append(t)
    t.wait_for("Say?")  # drawn by the client: its terminal is in raw mode (an Enter stays \r)
    wait_until(lambda: engine.info(sid).awaiting_input is not None, T)
    # One write: the line, its Enter and the detach key come in one read.
    t.text("said-as-it-left\r\x1d")
    t.wait_for(f"[detached from session {sid}")
    assert job.wait(T) and isinstance(job.result, Result) and "got [said-as-it-left]" in job.result.output
    typed = [r["text"] for r in engine.inputs(sid) if r["kind"] == "input"]
    assert typed == ["said-as-it-left\r"]


def test_no_attach_client_is_left(attach_dir: str) -> None:
    """Every client these tests started ends with its tmux. A client ends on
    the hang-up its tmux's end sends it, a moment after the last test's
    teardown: under load that moment is long enough to be seen (2 clients
    were still ending in a full run with two other suites on the 2 cores)."""

    def clients() -> bytes:
        pattern = f"dsh_magics.cli attach k-.* --host-dir {attach_dir}"
        return subprocess.run(["pgrep", "-f", pattern], capture_output=True).stdout

    wait_until(lambda: clients() == b"", T, msg="an attach client outlived its tmux")


def test_a_short_keys_line_is_kept_by_both_ends() -> None:
    """A short key read is typed again and again: the client keeps its whole
    line (``KeyLines``) and the host's lane keeps its data (``KeysLane``), so
    the key typed again is one look-up at each end. What is kept is exactly
    what is built and read the long way, a longer read is not kept, and a
    line of another session or caller is never taken for a kept one."""
    lines = keys.KeyLines("s-kept", "attach-kept")
    lane = keys.KeysLane("s-kept", "attach-kept", None)  # type: ignore[arg-type]  # data() only
    for key in (b"x", b"\x1b[A", "é".encode()):
        line = lines.line(key)
        assert line == keys.line_prefix("s-kept", "attach-kept") + json.dumps(key.decode()).encode() + b"}}\n"
        assert lines.lines[key] is line
        assert lane.data(line[:-1]) == key.decode() and lane.data(line[:-1]) == key.decode()
    assert lines.line(b"hello") and b"hello" not in lines.lines
    other = keys.line_prefix("s-other", "attach-kept") + b'"x"}}'
    assert lane.data(other) is None and lane.data(b'{"x"}}') is None
    assert len(lines.lines) == 3
    for i in range(keys.SEEN_LINES + 10):
        lines.line(chr(0x100 + i).encode())
        lane.data(keys.line_prefix("s-kept", "attach-kept")[:] + json.dumps(chr(0x100 + i)).encode() + b"}}")
    assert len(lines.lines) == keys.SEEN_LINES
