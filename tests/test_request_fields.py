"""A request's options are written once, in the table of terminal/requests.py; every
other place that names them (the Engine's signatures, the tool schemas, the host
protocol's rows, the magics' options) is generated from it or checked against it here.

Each checker returns the list of problems it finds, so the planted-drift tests at the end
can show that each of them fails on a renamed, added, re-defaulted or re-bounded option.
"""

from __future__ import annotations

import argparse
import inspect
from collections.abc import Callable, Iterator, Mapping
from typing import Any

import pytest

from dsh_magics import tools
from dsh_magics.host import protocol as P
from dsh_magics.host.client import HostClient
from dsh_magics.notebook import magic_args
from dsh_magics.notebook.magic_args import MAGIC_ONLY, OPTION_FIELDS
from dsh_magics.terminal import requests as R
from dsh_magics.terminal.api import Engine
from dsh_magics.terminal.registry import Registry

#: Python annotations a row's JSON type may have in the Engine's signatures.
_PY_TYPES = {"string": "str", "integer": "int", "boolean": "bool", "array": "list[str]"}
#: Tool arguments that set no field of a request (groups, the tools' own views).
TOOL_ONLY = frozenset(("marks", "all", "targets", "fanout", "target_timeout_ms", "group_id", "detail", "diff"))


def _methods(engine: type) -> Iterator[tuple[str, list[inspect.Parameter]]]:
    for name, fn in inspect.getmembers(engine):
        if name.startswith("_") or not callable(fn) or isinstance(inspect.getattr_static(engine, name), property):
            continue
        if name.startswith("run_"):  # run_exec(request): the request is the table's (see below)
            continue
        params = [p for p in inspect.signature(fn).parameters.values() if p.name != "self"]
        yield name, params


def engine_problems(engine: type = Engine) -> list[str]:
    """Every Engine keyword has a row; its default is the row's (or its request's);
    its annotation is the row's type."""
    out = []
    for method, params in _methods(engine):
        request = R.REQUESTS.get(method)
        for p in params:
            row = R.BY_ENGINE_NAME.get(p.name)
            if row is None:
                if method != "subscribe":
                    out.append(f"Engine.{method}({p.name}): no row in requests.FIELDS")
                continue
            if p.default is not inspect.Parameter.empty:
                want = request.__dataclass_fields__[row.name].default if request else row.default  # type: ignore[attr-defined]
                if row.engine_seconds and want is not None:
                    want = want / 1000
                if p.default != want:
                    out.append(f"Engine.{method}({p.name}={p.default!r}): the table says {want!r}")
            annotation = str(p.annotation).removeprefix("builtins.")
            py = "float" if row.engine_seconds else _PY_TYPES[row.type]
            if not annotation.startswith(py) and not (py == "int" and annotation.startswith("float")):
                out.append(f"Engine.{method}({p.name}: {annotation}): the table says {row.type} ({py})")
    for name, cls in R.REQUESTS.items():
        if name not in dict(_methods(engine)):
            out.append(f"request {cls.__name__}: Engine has no method {name}")
    return out


def backend_problems(backend: type) -> list[str]:
    """A backend subclasses Engine and takes its keyword methods (``exec``, ``wait``,
    ``send``: the one place their signatures are written) without writing them again;
    every other Engine method it writes takes the Engine's parameters, defaults included."""
    if Engine not in backend.__mro__:  # (issubclass refuses a protocol with properties)
        return [f"{backend.__name__}: not a subclass of Engine"]
    out = []
    for name in R.REQUESTS:
        if name in vars(backend):
            out.append(f"{backend.__name__}.{name}: written again; Engine.{name} builds the request")
    for method, params in _methods(Engine):
        want = [(p.name, p.default) for p in params]
        got = [
            (p.name, p.default)
            for p in inspect.signature(getattr(backend, method)).parameters.values()
            if p.name != "self"
        ]
        if got != want:
            out.append(f"{backend.__name__}.{method}{got}: Engine.{method} takes {want}")
    return out


def tool_problems(schemas: list[dict[str, Any]]) -> list[str]:
    """Each tool argument that sets a request's field has the row's JSON type and the
    row's bounds for tools; every other argument is a tool-only one."""
    by_tool_name = {row.tool_arg.name: row for row in R.FIELDS.values() if row.tool_arg is not None}
    out = []
    used = set()
    for schema in schemas:
        for name, prop in schema["parameters"]["properties"].items():
            row = by_tool_name.get(name)
            if row is None:
                if name not in TOOL_ONLY:
                    out.append(f"{schema['name']}.{name}: no row in requests.FIELDS (nor a tool-only argument)")
                continue
            used.add(row.name)
            arg = row.tool_arg
            assert arg is not None
            if prop["type"] != row.type:
                out.append(f"{schema['name']}.{name}: type {prop['type']}, the table says {row.type}")
            longest = "maxItems" if row.type == "array" else "maxLength"
            for key, want in (("minimum", arg.minimum), ("maximum", arg.maximum), (longest, arg.max_length)):
                if prop.get(key) != want:
                    out.append(f"{schema['name']}.{name}: {key} {prop.get(key)!r}, the table says {want!r}")
    for row in R.FIELDS.values():
        if row.tool_arg is not None and row.name not in used:
            out.append(f"{row.name}: the table says a tool takes it, none does")
    return out


def host_problems(operations: Mapping[str, P.Operation], engine: type = Engine) -> list[str]:
    """The host accepts exactly the Engine's keywords, each with the row's check."""
    out = []
    for method, params in _methods(engine):
        if method == "subscribe":
            continue
        op = operations.get(method)
        if op is None:
            out.append(f"host: no row for Engine.{method}")
            continue
        wire = [a for a in op.args if a != "base_cwd"]
        if wire != [p.name for p in params]:
            out.append(f"host {method}: accepts {wire}, Engine.{method} takes {[p.name for p in params]}")
        for name in wire:
            row = R.BY_ENGINE_NAME.get(name)
            if row is None:
                out.append(f"host {method}({name}): no row in requests.FIELDS")
            elif op.args[name] is not row.check and method != "exists":  # exists takes any string
                out.append(f"host {method}({name}): checked by {op.args[name].__name__}, not the row's check")
    return out


def magic_problems(parsers: Mapping[str, argparse.ArgumentParser], option_fields: Mapping[str, Mapping[str, str]]) -> list[str]:
    """Each magic option either sets a row's field (as the table's type: durations
    in seconds, flags as flags) or is a magic-only one; the magics' words for a
    default are the table's."""
    out = []
    for magic, parser in parsers.items():
        mapped = option_fields.get(magic)
        if mapped is None:
            out.append(f"%{magic}: not in magic_args.OPTION_FIELDS")
            continue
        seen = set()
        for action in parser._actions:
            word = action.option_strings[0] if action.option_strings else action.dest
            seen.add(word)
            field = mapped.get(word)
            if field is None:
                if word not in MAGIC_ONLY:
                    out.append(f"%{magic} {word}: sets no field of the table and is not magic-only")
                continue
            row = R.FIELDS[field]
            flag = action.nargs == 0
            if row.unit == "ms":
                if action.type is not magic_args.seconds:
                    out.append(f"%{magic} {word}: a duration ({field}) must take seconds (magic_args.seconds)")
                request = R.REQUESTS.get(magic.removeprefix("bash_"))
                default = request.__dataclass_fields__[field].default if request else row.default  # type: ignore[attr-defined]
                if default is not None and f"(default {default / 1000:g})" not in (action.help or ""):
                    out.append(f"%{magic} {word}: its help must say (default {default / 1000:g}), the table's default")
            elif row.type == "boolean" and not flag:
                out.append(f"%{magic} {word}: {field} is a boolean, the option takes a value")
            elif row.type == "integer" and action.type is not int:
                out.append(f"%{magic} {word}: {field} is an integer, the option is not type=int")
        for word in set(mapped) - seen:
            out.append(f"%{magic} {word}: in OPTION_FIELDS but not an option of the magic")
    return out


def _parsers() -> dict[str, argparse.ArgumentParser]:
    from dsh_magics.notebook.magics import BashMagics

    return {
        name: fn.parser
        for name, fn in inspect.getmembers(BashMagics)
        if getattr(fn, "parser", None) is not None
    }


# -- the sources agree ---------------------------------------------------------
def test_the_engine_signatures_follow_the_table() -> None:
    assert engine_problems() == []


def test_the_backends_take_the_engines_signatures() -> None:
    assert backend_problems(Registry) == []
    assert backend_problems(HostClient) == []


def test_the_tool_schemas_follow_the_table() -> None:
    assert tool_problems(tools.schemas(bounds=True)) == []


def test_the_host_accepts_what_the_table_says() -> None:
    assert host_problems(P.OPERATIONS) == []


def test_the_magics_options_follow_the_table() -> None:
    assert magic_problems(_parsers(), OPTION_FIELDS) == []


def test_every_row_says_what_it_means_and_has_a_check() -> None:
    for row in R.FIELDS.values():
        assert row.meaning and callable(row.check), row.name
        assert row.type in _PY_TYPES, row.name
        if row.name.endswith("_ms"):
            assert row.unit == "ms", row.name


# -- each checker fails on a planted drift ---------------------------------------
def _engine_with(method: str, text: str) -> type:
    """Engine with one method's signature replaced (``text`` is the parameters)."""
    namespace: dict[str, Any] = {}
    exec(f"def {method}(self, {text}): ...", {"builtins": __import__("builtins")}, namespace)  # noqa: S102
    return type("Drifted", (Engine,), {method: namespace[method]})


@pytest.mark.parametrize(
    ("what", "method", "params"),
    [
        ("a renamed keyword", "read", "session_id: str, since: int | None = None, newest: int | None = None"),
        ("an added keyword", "read", "session_id: str, since: int | None = None, last: int | None = None, grep: str = ''"),
        ("another default", "exec", "session_id: str, command: str, wait_ms: int | None = 100, tty: bool = False, "
         "source: str | None = None, caller: str | None = None"),
        ("another request default", "send", "session_id: str, text: str | None = None, key: str | None = None, "
         "enter: bool = True, wait_ms: int | None = 5000, source: str = 'person', caller: str | None = None, "
         "secret: bool = False, allow_secret: bool = True, allow_unknown_prompt: bool = False, keys: list[str] | None = None"),
        ("another type", "resize", "session_id: str, cols: str, rows: int"),
    ],
)  # fmt: skip
def test_a_drifted_engine_signature_is_caught(what: str, method: str, params: str) -> None:
    assert engine_problems(_engine_with(method, params)), what


def _schemas_with(tool: str, arg: str, change: Callable[[dict[str, Any]], None]) -> list[dict[str, Any]]:
    schemas = tools.schemas(bounds=True)
    for s in schemas:
        if s["name"] == tool:
            change(s["parameters"]["properties"].setdefault(arg, {"type": "string"}))
    return schemas


def test_a_backend_that_drifts_is_caught() -> None:
    class Again(Registry):
        def exec(self, session_id: str, command: str, wait_ms: int | None = 5) -> Any: ...  # type: ignore[override]

    class Other(Registry):
        def read(self, session_id: str, since: int | None = 0, last: int | None = None) -> Any: ...

    class Apart:
        def exec(self, session_id: str, command: str) -> Any: ...

    assert backend_problems(Again) == [
        "Again.exec: written again; Engine.exec builds the request",
        "Again.exec[('session_id', <class 'inspect._empty'>), ('command', <class 'inspect._empty'>), "
        "('wait_ms', 5)]: Engine.exec takes [('session_id', <class 'inspect._empty'>), "
        "('command', <class 'inspect._empty'>), ('wait_ms', None), ('tty', False), ('source', None), "
        "('caller', None)]",
    ]
    assert [p.split("[")[0] for p in backend_problems(Other)] == ["Other.read"]
    assert backend_problems(Apart) == ["Apart: not a subclass of Engine"]


@pytest.mark.parametrize(
    ("what", "tool", "arg", "change"),
    [
        ("another bound", "bash_exec", "wait_ms", lambda p: p.update(maximum=3_600_000)),
        ("another minimum", "bash_read", "last", lambda p: p.update(minimum=0)),
        ("another length", "bash_exec", "command", lambda p: p.update(maxLength=10)),
        ("another type", "bash_wait", "idle_ms", lambda p: p.update(type="number")),
        ("an added argument", "bash_exec", "timeout", lambda p: None),
    ],
)
def test_a_drifted_tool_schema_is_caught(what: str, tool: str, arg: str, change: Callable[[dict[str, Any]], None]) -> None:
    assert tool_problems(_schemas_with(tool, arg, change)), what


def test_a_renamed_tool_argument_is_caught() -> None:
    schemas = tools.schemas(bounds=True)
    wait = next(s for s in schemas if s["name"] == "bash_wait")["parameters"]["properties"]
    wait["idle"] = wait.pop("idle_ms")
    assert tool_problems(schemas)


def test_a_drifted_host_row_is_caught() -> None:
    import dataclasses

    from dsh_magics.terminal import validation as V

    ops = dict(P.OPERATIONS)
    ops["read"] = dataclasses.replace(ops["read"], args={**ops["read"].args, "grep": V.text})
    assert host_problems(ops)
    ops = dict(P.OPERATIONS)
    ops["read"] = dataclasses.replace(ops["read"], args={**ops["read"].args, "since": V.text})
    assert host_problems(ops)
    assert host_problems(P.OPERATIONS, _engine_with("read", "session_id: str, since: int | None = None, grep: str = ''"))


def test_a_drifted_magic_option_is_caught() -> None:
    parsers = _parsers()
    send = parsers["bash_send"]
    timeout = next(a for a in send._actions if "--timeout" in a.option_strings)
    old_help = timeout.help
    try:
        timeout.help = "Wait up to SECONDS for the job to react (default 5)."
        assert magic_problems(parsers, OPTION_FIELDS)
    finally:
        timeout.help = old_help
    added = argparse.ArgumentParser()
    added.add_argument("--grep")
    assert magic_problems({**parsers, "bash_read": added}, OPTION_FIELDS)
    renamed = {**OPTION_FIELDS, "bash_wait": {**OPTION_FIELDS["bash_wait"], "--idle-for": "idle_ms"}}
    del renamed["bash_wait"]["--idle"]
    assert magic_problems(parsers, renamed)
    as_ms = argparse.ArgumentParser()
    as_ms.add_argument("--timeout", type=int)
    assert magic_problems({**parsers, "bash_exec": as_ms}, {**OPTION_FIELDS, "bash_exec": {"--timeout": "wait_ms"}})
