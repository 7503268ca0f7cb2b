"""Bad input to the agent tools, generated (hypothesis).

A model is an untrusted caller. Whatever JSON it sends as a tool's arguments,
``tools.call`` must come back, in bounded time, with either that tool's
result or a structured error with one of the stable codes (never the
"internal error" code, which means the dispatcher itself broke), and the
terminals must still run commands afterwards.

Each example is a short sequence of calls on a small pool of sessions, so
calls can refer to real job ids and meet terminals in every state (idle,
busy, dead, closed). Arguments are built per tool from its real parameter
names with values of every JSON type, plus unknown keys, non-object JSON
and (as OpenAI-style calls carry it) JSON text and text that is not JSON.

Commands are the one place the generator is tamed: a fuzzer should not run
arbitrary shell code on the test machine. They come from a list of real
commands covering the engine's states, or are arbitrary text made inert
(a comment), or are strings of digits and shell punctuation without globs or
slashes (syntax errors, redirections, ``$``-expansions). Directories that
exist outside the sandbox are never passed as ``cwd``.
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dsh_magics import tools
from dsh_magics.terminal import Registry
from tests.conftest import pids_with_env

from .conftest import wait_until

# Names of this run's own: another run of this test on the machine (a second
# engineer, a rerun loop) has terminals of the same pool, and the teardown's
# process check counted them (the fixture's "fuzzed terminals gone" failed
# while a second run was going).
_RUN = f"fz{os.getpid()}"
POOL = (f"{_RUN}-own", f"{_RUN}-other")
CALL_DEADLINE_S = 20.0  # no command below runs longer than 2 s
SAFE_COMMANDS = (
    "echo hi",
    "true",
    "false",
    "exit 3",
    "sleep 2",
    "printf 'no newline'",
    "seq 1 3000",
    "cat",
    'read x; echo "[$x]"',
    "printf '\\033[31mred\\033[0m\\r\\n'",
    "cd sub 2>/dev/null; pwd",
    "export V=1; echo $V",
    "head -c 3000 /dev/urandom",
    "echo out; echo err >&2; (exit 7)",
    "for i in 1 2 3; do echo $i; done",
    "sleep 300 & echo bg",
)
_PUNCT = "0123456789 \t\n;&|<>(){}$'\"\\#!:=+-.,%^@~_`"

_scalars = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=40)
)
json_values = st.recursive(
    _scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=8,
)

_ints = st.integers(min_value=-5, max_value=3000) | st.integers() | st.sampled_from([2**53, 2**63, -(2**63)])

#: Values of the right type and in range, so calls get past validation and
#: reach the engine (terminals busy, dead, closed; real and stale job ids).
GOOD: dict[str, st.SearchStrategy[Any]] = {
    "session_id": st.sampled_from(POOL),
    "command": st.one_of(
        st.sampled_from(SAFE_COMMANDS),
        st.sampled_from(SAFE_COMMANDS),
        st.text(max_size=200).map(lambda t: "# " + t.replace("\n", " ").replace("\r", " ")),
        st.text(alphabet=_PUNCT, min_size=1, max_size=30),
    ),
    "wait_ms": st.integers(min_value=0, max_value=1500),
    "timeout_ms": st.integers(min_value=0, max_value=2500),
    "since": st.integers(min_value=0, max_value=5000) | st.just(2**53 - 1),
    "last": st.integers(min_value=1, max_value=50) | st.just(100_000),
    "cwd": st.sampled_from(["sub", ".", "~", "~/sub", "sub/../sub", "missing"]),
    "recreate": st.booleans(),
    "all": st.booleans(),
    "job_id": st.just("<known job>") | st.just("bash-" + "0" * 32) | st.just("g1"),
    "tty": st.booleans(),
    "until": st.sampled_from(["bg", r"^\d+$", "x"]),
    "idle_ms": st.integers(min_value=1, max_value=500),
    "on_input": st.booleans(),
    "text": st.sampled_from(["y", "n", "# typed", "1"]),
    "key": st.sampled_from(["ctrl-c", "ctrl-d", "tab", "enter"]),
    "enter": st.booleans(),
    # Only this machine: a remote target would start shells outside the sandbox.
    "target": st.just("local"),
    "allow_unknown_prompt": st.booleans(),
    "keys": st.lists(st.sampled_from(["down", "up", "enter", "pgdn", "ctrl-c", "f5"]), min_size=1, max_size=4),
    "until_screen": st.sampled_from([r"\$", "bg", "x"]),
    "marks": st.booleans(),
    "cols": st.integers(min_value=20, max_value=200),
    "rows": st.integers(min_value=5, max_value=60),
    # groups (docs/fanout.md): local sessions of the pool only, ranges included
    "targets": st.lists(st.sampled_from([*POOL, f"{_RUN}-[own,other]", "@nope"]), min_size=1, max_size=3),
    "fanout": st.integers(min_value=1, max_value=40),
    "target_timeout_ms": st.integers(min_value=1, max_value=3000),
    "group_id": st.sampled_from(["g1", "g2", "g999"]),
    "detail": st.booleans(),
    "diff": st.booleans(),
}
#: Anything at all, and the near misses a model produces.
BAD: dict[str, st.SearchStrategy[Any]] = {
    "session_id": st.sampled_from(["", "a/b", "x\ny", " pad", "q" * 201, "fz-new"]) | json_values,
    "command": st.sampled_from(["", "   ", "x" * 100_001]) | json_values,
    "wait_ms": _ints | json_values,
    "timeout_ms": _ints | json_values,
    "since": _ints | json_values,
    "last": _ints | json_values,
    "cwd": st.sampled_from(["", "\x00", "x" * 5000]) | json_values,
    "recreate": json_values,
    "all": json_values,
    "job_id": st.sampled_from(["", "bash-", "x" * 201]) | json_values,
    "tty": json_values,
    "until": st.sampled_from(["(", "", "x" * 1001]) | json_values,
    "idle_ms": _ints | json_values,
    "on_input": json_values,
    "text": st.sampled_from(["a\nb", "x" * 4001, ""]) | json_values,
    "key": st.sampled_from(["f13", "", "CTRL-Q"]) | json_values,
    "enter": json_values,
    "target": st.sampled_from(["", "ssh://", "gopher://x", "cmd:", "docker://"]) | json_values,
    "allow_unknown_prompt": json_values,
    "keys": st.sampled_from([[], ["f13"], ["down", "nope"], "down"]) | json_values,
    "until_screen": st.sampled_from(["(", "", "x" * 1001]) | json_values,
    "marks": json_values,
    "cols": _ints | json_values,
    "rows": _ints | json_values,
    "targets": st.sampled_from([[], ["fz-[1-"], ["fz-[1-10000]"], ["@"], [""], ["a/b"], "fz-own"]) | json_values,
    "fanout": _ints | json_values,
    "target_timeout_ms": _ints | json_values,
    "group_id": st.sampled_from(["", "g", "g0", "x" * 13]) | json_values,
    "detail": json_values,
    "diff": json_values,
}
TOOL_PARAMS = {s["name"]: list(s["parameters"]["properties"]) for s in tools.schemas()}


@st.composite
def tool_call(draw: st.DrawFn) -> tuple[Any, Any, Any]:
    """One call: mostly a real tool with well-typed arguments; otherwise one
    bad value, an unknown key, a non-object, text, or an unknown tool."""
    name = draw(st.sampled_from(tools.TOOL_NAMES)) if draw(st.integers(0, 9)) else draw(st.text(max_size=12))
    own = TOOL_PARAMS.get(name, [])
    args: dict[str, Any] = {k: draw(GOOD[k]) for k in own if draw(st.booleans())}
    if name in ("bash_exec", "bash_wait") and draw(st.integers(0, 4)):
        required = "command" if name == "bash_exec" else "job_id"
        args.setdefault(required, draw(GOOD[required]))
    mode = draw(st.integers(0, 9))
    if mode in (5, 6, 7) and own:
        key = draw(st.sampled_from(own))
        args[key] = draw(BAD[key])
    elif mode == 8:
        args[draw(st.sampled_from(sorted(BAD)) | st.text(max_size=8))] = draw(json_values)
    arguments: Any = args
    if mode == 9:
        arguments = draw(st.sampled_from(["json-text", "other-json", "not-json"]))
        if arguments == "json-text":
            arguments = json.dumps(args)
        elif arguments == "other-json":
            arguments = draw(json_values)
        else:
            arguments = draw(st.text(max_size=30))
    pick = draw(st.integers(0, 9))
    caller = POOL[0] if pick < 8 else None if pick == 8 else draw(json_values)
    return name, arguments, caller


@pytest.fixture(scope="module")
def sandbox(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    import tempfile

    root = tmp_path_factory.mktemp("fuzz")
    (root / "work" / "sub").mkdir(parents=True)
    (root / "home" / "sub").mkdir(parents=True)
    (root / "run").mkdir(mode=0o700)
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("HOME", str(root / "home"))  # "~" stays in the sandbox
        mp.setenv("XDG_RUNTIME_DIR", str(root / "run"))
        mp.setattr(tempfile, "tempdir", str(root / "run"))
        # attach resolves a relative cwd of a terminal not started yet against
        # the process's cwd; fuzzed commands like '>46' then wrote into the
        # checkout (an untracked file '46' after a full run).
        mp.chdir(root / "work")
        yield root


@pytest.fixture(scope="module")
def fuzz_reg(sandbox: Path) -> Iterator[Registry]:
    reg = Registry(login=False, cwd=str(sandbox / "work"), max_sessions=3)
    yield reg
    reg.close_all()
    wait_until(
        lambda: not any(pids_with_env("DSH_MAGICS_SESSION", s) for s in POOL), 10, msg="fuzzed terminals gone"
    )


_RESULT_VALIDATORS = {n: jsonschema.Draft202012Validator(tools.OUTPUT_SCHEMAS[n]) for n in tools.TOOL_NAMES}
_ERROR_VALIDATOR = jsonschema.Draft202012Validator(tools.ERROR_RESULT)


def _check(name: Any, result: Any) -> None:
    assert isinstance(result, dict), result
    json.dumps(result, allow_nan=False)  # strict JSON, nothing exotic inside
    if "error" in result:
        errors = list(_ERROR_VALIDATOR.iter_errors(result))
        assert not errors, f"malformed error result: {errors[0].message}: {result}"
        assert result["error"]["code"] != tools.INTERNAL_ERROR_CODE, f"the dispatcher broke: {result}"
        return
    assert name in _RESULT_VALIDATORS, f"unknown tool {name!r} gave a result: {result}"
    errors = list(_RESULT_VALIDATORS[name].iter_errors(result))
    assert not errors, f"{name} result does not match its schema: {errors[0].message}: {result}"


def _call_with_deadline(reg: Registry, name: Any, arguments: Any, caller: Any) -> dict[str, Any]:
    box: list[Any] = []

    def go() -> None:
        try:
            box.append(tools.call(name, arguments, caller_session=caller, registry=reg))
        except BaseException as e:  # noqa: BLE001 - "never raises" is the property
            box.append(e)

    t = threading.Thread(target=go, daemon=True)
    t.start()
    t.join(CALL_DEADLINE_S)
    assert not t.is_alive(), f"{name}({str(arguments)[:200]}) did not return within {CALL_DEADLINE_S}s"
    (out,) = box
    assert not isinstance(out, BaseException), f"{name} raised {out!r}"
    return out


def _guard_cwd(reg: Registry, arguments: Any, caller: Any, sandbox: Path) -> Any:
    """Keep the terminals inside the sandbox: an existing directory outside
    it becomes a missing one (the refusal path is the same)."""
    if not isinstance(arguments, dict) or not isinstance(arguments.get("cwd"), str):
        return arguments
    cwd = arguments["cwd"]
    sid = arguments.get("session_id", caller)
    base = str(sandbox / "work")
    if isinstance(sid, str) and reg.exists(sid):
        base = reg.info(sid).cwd or base
    try:
        target = os.path.realpath(os.path.join(base, os.path.expanduser(cwd)))
    except ValueError:  # NUL byte
        return arguments
    if os.path.isdir(target) and not target.startswith(str(sandbox) + os.sep):
        return {**arguments, "cwd": "missing"}
    return arguments


def _settle_and_check_usable(reg: Registry) -> None:
    for info in reg.list():
        if info.session_id not in POOL:
            reg.close(info.session_id)
    for info in reg.list():
        sid = info.session_id
        if info.status == "busy" and info.job_id:
            reg.interrupt(sid)
            res = reg.wait(info.job_id, timeout=10)
            assert res.status != "running", f"job in {sid} did not stop after Ctrl-C: {res.to_dict()}"
        res = tools.call(
            "bash_exec", {"command": "echo ok-$((1 + 1))", "wait_ms": 10_000, "session_id": sid}, registry=reg
        )
        _check("bash_exec", res)
        assert res.get("status") == "completed" and res.get("output") == "ok-2\n", res


@settings(
    max_examples=int(os.environ.get("DSH_FUZZ_EXAMPLES", "100")),
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(calls=st.lists(tool_call(), min_size=1, max_size=4), data=st.data())
def test_arbitrary_tool_calls_give_results_or_structured_errors(
    fuzz_reg: Registry, sandbox: Path, calls: list[tuple[Any, Any, Any]], data: st.DataObject
) -> None:
    reg = fuzz_reg
    try:
        for name, arguments, caller in calls:
            if isinstance(arguments, dict) and arguments.get("job_id") == "<known job>":
                recent = [j.id for j in reg.jobs.all()][-5:]
                arguments = {**arguments, "job_id": data.draw(st.sampled_from(recent)) if recent else "bash-0"}
            arguments = _guard_cwd(reg, arguments, caller, sandbox)
            result = _call_with_deadline(reg, name, arguments, caller)
            _check(name, result)
    finally:
        _settle_and_check_usable(reg)
