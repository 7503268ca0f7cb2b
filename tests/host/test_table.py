"""The host protocol is one table: every row maps onto the engine contract
or a host hook, the checks are the engine's own (same wording on the wire),
and a new operation needs only an engine method and a row."""

from __future__ import annotations

import inspect
from collections.abc import Iterator

import pytest

from dsh_magics import jobs
from dsh_magics.errors import InvalidArgument
from dsh_magics.host import HostClient
from dsh_magics.host import protocol as P
from dsh_magics.terminal import Engine, Registry, Result
from dsh_magics.terminal import requests as R
from dsh_magics.terminal import validation as V
from dsh_magics.terminal.person_keys import PersonKeys

from .conftest import served_host, wait_until
from .test_fuzz import Raw

# run_exec, run_wait and run_send take a checked request: on the wire they are the
# exec, wait and send rows (whose check builds the request).
_CONTRACT = {
    name
    for name, member in vars(Engine).items()
    if not name.startswith(("_", "run_")) and callable(member) and not isinstance(member, property)
}


def test_every_contract_method_has_a_row_and_every_row_a_handler() -> None:
    rows = {name for name, op in P.OPERATIONS.items() if op.engine_method is not None}
    # subscribe is the host's event stream, not a request/reply row.
    assert _CONTRACT - {"subscribe"} <= rows | {"jobs"}, _CONTRACT - rows
    for name, op in P.OPERATIONS.items():
        if op.engine_method is not None:
            assert callable(getattr(Registry, op.engine_method)), name
            params = inspect.signature(getattr(Registry, op.engine_method)).parameters
            host_only = {"base_cwd"}
            assert set(op.args) - host_only <= set(params), (name, set(op.args) - set(params))
        assert set(op.required) <= set(op.args), name
        assert op.returns in P.TO_WIRE or op.returns in ("exec", "jobs"), name


def test_each_row_takes_exactly_the_contracts_parameters() -> None:
    """The rows are built from the Protocol's signatures: a parameter added
    to, renamed in or dropped from Engine changes the row with it, and one
    without a check in requests.CHECKS fails here (and at import)."""
    for name in sorted(_CONTRACT - {"subscribe"}):
        op = P.OPERATIONS[name]
        params = [p for p in inspect.signature(getattr(Engine, name)).parameters.values() if p.name != "self"]
        assert [a for a in op.args if a != "base_cwd"] == [p.name for p in params], name
        assert op.required == tuple(p.name for p in params if p.default is inspect.Parameter.empty), name
        for p in params:
            assert p.name in R.CHECKS, (name, p.name)
            if name != "exists":  # exists takes any string: a malformed id simply does not exist
                assert op.args[p.name] is R.CHECKS[p.name], (name, p.name)


def test_a_drifted_row_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    class Wider(Engine):  # type: ignore[misc]
        def read(self, session_id: str, since: int | None = None, last: int | None = None, grep: str = "") -> object: ...

    monkeypatch.setattr(P, "Engine", Wider)
    with pytest.raises(KeyError, match="grep"):
        P.contract_args("read")
    monkeypatch.setitem(R.CHECKS, "grep", V.text)
    args, required = P.contract_args("read")
    assert list(args) == ["session_id", "since", "last", "grep"] and required == ("session_id",)
    assert list(args) != [a for a in P.OPERATIONS["read"].args]  # the table would have to follow


def test_the_client_has_every_contract_method() -> None:
    for name in _CONTRACT:
        assert callable(getattr(HostClient, name)), name
        assert list(inspect.signature(getattr(HostClient, name)).parameters) == list(
            inspect.signature(getattr(Engine, name)).parameters
        ), name


def test_table_checks_word_errors_like_the_engine() -> None:
    op = P.OPERATIONS["read"]
    with pytest.raises(InvalidArgument) as e:
        op.check({"session_id": "s", "since": -1})
    with pytest.raises(InvalidArgument) as direct:
        V.count(-1, "since")
    assert e.value.message == direct.value.message == "since must be an integer >= 0"
    with pytest.raises(InvalidArgument, match="missing argument 'session_id' for read"):
        op.check({})
    with pytest.raises(InvalidArgument, match="unknown argument.*surprise"):
        op.check({"session_id": "s", "surprise": 1})
    assert op.check({"session_id": "s", "since": None}) == {"session_id": "s"}


@pytest.mark.parametrize(
    ("op", "args", "message"),
    [
        ("exec", {"session_id": "s", "command": "  "}, "command must not be empty or only whitespace"),
        ("exec", {"session_id": "s", "command": "true", "wait_ms": True}, "wait_ms must be a number of milliseconds >= 0"),
        ("read", {"session_id": "a/b"}, "session id must not contain path separators"),
        ("read", {"session_id": "s", "last": "3"}, "last must be an integer >= 0"),
        ("result", {"job_id": "bash-x", "tail_lines": 1.5}, "tail_lines must be an integer >= 0"),
        ("attach", {"session_id": "s", "recreate": "yes"}, "recreate must be true or false"),
    ],
)
def test_the_wire_says_what_the_engine_says(client: HostClient, op: str, args: dict, message: str) -> None:
    raw = Raw(client.paths.socket)
    try:
        raw.send(P.request(3, op, args))
        reply = raw.reply()
    finally:
        raw.close()
    assert reply["ok"] is False and reply["error"]["code"] == "INVALID_ARGUMENT"
    assert reply["error"]["message"] == message


def test_hello_lists_the_operations(client: HostClient) -> None:
    assert client.host_info()["operations"] == sorted(P.OPERATIONS)


class _Doubling(Registry):
    def double(self, n: int) -> int:
        return 2 * n


@pytest.fixture
def served(module_dir: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[HostClient]:
    """A host served from a thread of this process, over a registry with one
    extra method, and the table with one extra row."""
    monkeypatch.setitem(P.OPERATIONS, "double", P.Operation("double", {"n": V.count}, ("n",)))
    with served_host(module_dir, "table", _Doubling(login=False)) as (_server, client):
        yield client


def test_a_new_operation_is_one_method_and_one_row(served: HostClient) -> None:
    assert served._op("double", n=21) == 42
    with pytest.raises(InvalidArgument, match="n must be an integer >= 0"):
        served._op("double", n=-1)


class _CountingKeys(Registry):
    """A registry that counts the keyboards made and the general keys calls."""

    def __init__(self, **kw: object) -> None:
        super().__init__(**kw)  # type: ignore[arg-type]
        self.keyboards: list[tuple[str, str | None]] = []
        self.general = 0

    def person_keys(self, session_id: str, caller: str | None = None) -> PersonKeys:
        self.keyboards.append((session_id, caller))
        return super().person_keys(session_id, caller)

    def type_keys(self, session_id: str, data: str, caller: str | None = None) -> dict[str, object]:
        self.general += 1
        return super().type_keys(session_id, data, caller)


def test_a_persons_keys_go_through_one_keyboard_per_connection(module_dir: str) -> None:
    """``type_keys`` on the wire is the contract's row; the host serves it with
    the registry's host-internal keyboard (``Registry.person_keys``, typed:
    host/requests.py ``Served.registry``), made once per connection, session
    and caller, never the general ``Registry.type_keys`` per key."""
    registry = _CountingKeys(login=False)
    with served_host(module_dir, "keys", registry) as (_server, client):
        job = client.exec("table-keys", 'read -r x; echo "got [$x]"', tty=True)
        assert isinstance(job, jobs.Job)
        wait_until(lambda: client.info("table-keys").awaiting_input is not None, timeout=20)
        for piece in ("one", "-two", "-three\r"):
            assert client.type_keys("table-keys", piece, caller="attach-t")["job_id"] == job.id
        done = client.wait(job.id, timeout=20)
        assert "got [one-two-three]" in done.output
        assert registry.keyboards == [("table-keys", "attach-t")] and registry.general == 0
        client.type_keys("table-keys", "x", caller="attach-u")  # another caller: its own keyboard
        assert registry.keyboards == [("table-keys", "attach-t"), ("table-keys", "attach-u")]


def test_a_peer_speaking_another_version_is_told_which(client: HostClient) -> None:
    raw = Raw(client.paths.socket)
    try:
        raw.send(b'{"v": 2, "id": 1, "op": "list", "args": {}}\n')
        reply = raw.reply()
    finally:
        raw.close()
    assert reply["error"]["details"]["protocol"] == "version"
    assert "this host speaks version 1" in reply["error"]["message"]


def test_a_host_from_before_tail_lines_gets_the_whole_snapshot_cut_here(
    client: HostClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    job = client.exec("table-old", "seq 1 50; sleep 30")
    assert not isinstance(job, Result)
    try:
        wait_until(lambda: client.result(job.id).output.endswith("50\n"), timeout=20)
        sent: list[tuple[str, dict]] = []
        real = client._call

        def spy(op: str, args: dict) -> object:
            sent.append((op, dict(args)))
            return real(op, args)

        monkeypatch.setattr(client, "_call", spy)
        monkeypatch.delitem(client._hello, "operations")  # what an older host's hello looks like
        r = client.result(job.id, tail_lines=2)
        assert r.output == "49\n50\n" and r.omitted_lines == 48
        assert sent == [("result", {"job_id": job.id})]
    finally:
        client.interrupt("table-old")
        client.wait(job.id, timeout=20)
