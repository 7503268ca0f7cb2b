"""Every option the docs name exists in the code.

The names are read from the code at test time (the magics' argument parsers,
``tools.schemas()``, ``TerminalConfig``, the ``Engine`` protocol and the
error classes), so a rename in the code fails here until the docs follow.
What counts as "an option named in the docs":

- ``--flag`` inside a code span that starts with a magic (``%bash_wait --until RE``);
- ``BashMagics.<setting>``;
- the keys of a tool call written as ``bash_x {"key": ...}``, and any ``*_ms`` name;
- the parameters of an engine call written as ``method(arg, kw=None)``;
- the keys of the configuration table (engine.md) and every ``DSH_MAGICS_*`` name;
- an upper-case ``CODE_NAME`` on a line that speaks of codes or errors.
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Iterator
from dataclasses import dataclass, fields
from functools import cache
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = [*sorted((ROOT / "docs").glob("*.md")), ROOT / "README.md"]

SPAN = re.compile(r"`([^`\n]+)`")
MAGIC_SPAN = re.compile(r"^%%?(bash_\w+)\b(.*)$")
OPTION = re.compile(r"(?<![\w-])(--[a-z][a-z0-9-]*)")
TOOL_CALL = re.compile(r"^(bash_\w+) (\{.*\})$")
JSON_KEY = re.compile(r'"(\w+)"\s*:')
CALL = re.compile(r"^(\w+)\(([^()]*)\)$")
MS_NAME = re.compile(r"^[a-z]+(?:_[a-z]+)*_ms$")
SETTING = re.compile(r"\bBashMagics\.(\w+)")
ENV_NAME = re.compile(r"\bDSH_MAGICS_[A-Z0-9_]+\b")
CODE_NAME = re.compile(r"^[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+$")
CODE_CONTEXT = re.compile(r"\b(codes?|errors?|raises?)\b", re.IGNORECASE)
CONFIG_ROW = re.compile(r"^\|\s*(`[^|]+`)\s*\|[^|]*\|\s*`DSH_MAGICS_")


@dataclass(frozen=True)
class Known:
    """The names the code defines, gathered once per run."""

    magics: dict[str, frozenset[str]]  # magic -> its --options
    settings: frozenset[str]
    tools: dict[str, frozenset[str]]  # tool -> its parameters
    engine: dict[str, frozenset[str]]  # Engine method -> its parameters
    config: frozenset[str]
    env: frozenset[str]  # DSH_MAGICS_* names the code reads
    codes: frozenset[str]


def _options(parser) -> frozenset[str]:  # type: ignore[no-untyped-def]
    return frozenset(s for action in parser._actions for s in action.option_strings)


def _source_text() -> str:
    return "\n".join(p.read_text(encoding="utf-8") for p in (ROOT / "dsh_magics").rglob("*.py"))


@cache
def known() -> Known:
    from dsh_magics import errors, tools
    from dsh_magics.notebook.magics import BashMagics
    from dsh_magics.terminal.api import Engine
    from dsh_magics.terminal.config import ENV_PREFIX, TerminalConfig
    from dsh_magics.widgets import inspector_magic, panel_magic, terminal_tab_magic

    magics = {
        name: _options(fn.parser)
        for name, fn in inspect.getmembers(BashMagics)
        if getattr(fn, "parser", None) is not None
    }
    magics["bash_schema"] = _options(inspector_magic._parser())
    magics["bash_panel"] = _options(panel_magic.bash_panel.parser)
    magics["bash_terminal"] = _options(terminal_tab_magic.bash_terminal.parser)
    magics.setdefault("bash_list", frozenset())
    engine = {}
    for name, fn in inspect.getmembers(Engine):
        if not name.startswith("_") and callable(fn):
            engine[name] = frozenset(inspect.signature(fn).parameters) - {"self"}
    source = _source_text()
    config = frozenset(f.name for f in fields(TerminalConfig))
    env = frozenset(ENV_NAME.findall(source)) | {ENV_PREFIX + name.upper() for name in config}
    codes = set(errors.ERROR_CODES) | set(re.findall(r"\bcode\s*=\s*\"([A-Z_]+)\"", source))
    return Known(
        magics=magics,
        settings=frozenset(BashMagics.class_traits(config=True)),
        tools={s["name"]: frozenset(s["parameters"]["properties"]) for s in tools.schemas()},
        engine=engine,
        config=config,
        env=env,
        codes=frozenset(codes),
    )


def problems(text: str, k: Known) -> Iterator[str]:
    """What ``text`` (one markdown file) names that the code does not have."""
    all_params = set().union(*k.tools.values(), *k.engine.values())
    for n, line in enumerate(text.splitlines(), 1):
        where = f"line {n}"
        for setting in SETTING.findall(line):
            if setting not in k.settings:
                yield f"{where}: BashMagics.{setting} is not a setting of BashMagics"
        for env in ENV_NAME.findall(line):
            if env not in k.env:
                yield f"{where}: {env} is read nowhere in the package"
        row = CONFIG_ROW.match(line)
        if row:
            for key in re.findall(r"`(\w+)`", row.group(1)):
                if key not in k.config:
                    yield f"{where}: config key {key!r} is not a TerminalConfig field"
        for span in SPAN.findall(line):
            span = span.strip()
            magic = MAGIC_SPAN.match(span)
            if magic:
                name, rest = magic.groups()
                if name not in k.magics:
                    yield f"{where}: %{name} is not a magic"
                    continue
                for opt in OPTION.findall(rest):
                    if opt not in k.magics[name]:
                        yield f"{where}: %{name} has no option {opt}"
                continue
            call = TOOL_CALL.match(span)
            if call:
                tool, body = call.groups()
                if tool not in k.tools:
                    yield f"{where}: {tool} is not a tool"
                    continue
                for key in JSON_KEY.findall(body):
                    if key not in k.tools[tool]:
                        yield f"{where}: tool {tool} has no parameter {key!r}"
                continue
            sig = CALL.match(span)
            if sig and sig.group(1) in k.engine:
                method, args = sig.groups()
                for arg in filter(None, (a.split("=")[0].strip(" *") for a in args.split(","))):
                    if arg.isidentifier() and arg not in k.engine[method]:
                        yield f"{where}: Engine.{method} has no parameter {arg!r}"
                continue
            if MS_NAME.match(span) and span not in all_params:
                yield f"{where}: {span} is a parameter of no tool and no engine call"
            if CODE_NAME.match(span) and not span.startswith("DSH_") and CODE_CONTEXT.search(line):
                if span not in k.codes and span.lower() not in _OTHER_NAMES:
                    yield f"{where}: {span} is not an error code"


# Upper-case names that share a line with the word "error" or "code" but are
# not error codes (bash variables, kernel constants, engine states).
_OTHER_NAMES = frozenset(
    n.lower()
    for n in (
        "PROMPT_COMMAND", "BASH_COMMAND", "PR_SET_PDEATHSIG", "PR_SET_CHILD_SUBREAPER", "SO_PEERCRED",
        "JPY_SESSION_NAME", "JPY_PARENT_PID", "GIT_PAGER", "DSH_PERMISSION_MODE", "QUIET_S",
        "BUSY_OR_UNKNOWN", "AWAIT_BEGIN", "PLUGIN_LOAD_ERROR",
    )
)  # fmt: skip


@pytest.mark.parametrize("path", DOCS, ids=[p.name for p in DOCS])
def test_every_option_the_docs_name_exists(path: Path) -> None:
    found = list(problems(path.read_text(encoding="utf-8"), known()))
    assert not found, f"{path.relative_to(ROOT)}:\n" + "\n".join(found)


# -- the checker itself can fail ------------------------------------------------
WRONG = {
    "magic option": "`%bash_wait --session S --no-such-flag`",
    "magic": "`%bash_nonexistent --session S`",
    "setting": "Set `BashMagics.no_such_setting = 1`.",
    "tool parameter": 'Call `bash_exec {"command": "ls", "wait_for": 10}`.',
    "ms name": "Pass `wait_millis_ms` to it.",
    "engine parameter": "| `wait(job_id, timeout=None, no_such_arg=1)` | waits |",
    "config key": "| `no_such_key` | 1 | `DSH_MAGICS_SHELL` |",
    "environment": "Set `DSH_MAGICS_NO_SUCH_VARIABLE=1`.",
    "error code": "It raises `NO_SUCH_CODE_EVER`.",
}
RIGHT = (
    "`%bash_wait --session S --until RE --timeout 0.005` and `%%bash_exec --wait`\n"
    "`BashMagics.live_tail`; `DSH_MAGICS_LOGIN`; errors: `SESSION_BUSY`, `PROMPT_COMMAND`\n"
    '`bash_exec {"command": "ls", "wait_ms": 10}`, `timeout_ms`\n'
    "| `wait(job_id, timeout=None)` | waits |\n"
    "| `shell` | `/bin/bash` | `DSH_MAGICS_SHELL` |\n"
)


@pytest.mark.parametrize("kind", WRONG)
def test_the_checker_finds_a_wrong_name(kind: str) -> None:
    found = list(problems(WRONG[kind], known()))
    assert len(found) == 1, (kind, found)


def test_the_checker_passes_right_names() -> None:
    assert list(problems(RIGHT, known())) == []


# -- the reference tables name everything the code has -------------------------
def _doc(name: str) -> str:
    return (ROOT / "docs" / name).read_text(encoding="utf-8")


def _rows(text: str, header: str) -> list[list[str]]:
    """The rows of the markdown table whose header line starts with ``header``."""
    lines = text.splitlines()
    start = next(i for i, ln in enumerate(lines) if ln.startswith(header))
    rows = []
    for ln in lines[start + 2 :]:
        if not ln.startswith("|"):
            break
        rows.append([c.strip() for c in re.split(r"(?<!\\)\|", ln.strip().strip("|"))])
    return rows


def _words(cell: str) -> set[str]:
    return set(re.findall(r"[a-z_][a-z0-9_]*", cell))


def test_the_engine_contract_table_has_every_method_and_argument() -> None:
    cells = " ".join(r[0] for r in _rows(_doc("engine.md"), "| operation |"))
    missing = [
        f"{m}({a})" if a else m
        for m, params in known().engine.items()
        for a in (sorted(params) or [""])
        if f"`{m}" not in cells and f" {m}(" not in cells or a and a not in _words(cells)
    ]
    assert not missing, f"docs/engine.md's contract table lacks {missing}"


def test_the_host_protocol_table_has_every_operation_and_argument() -> None:
    from dsh_magics.host.protocol import OPERATIONS

    rows = {r[0].strip("`"): r for r in _rows(_doc("host.md"), "| op |")}
    missing = []
    for op in OPERATIONS.values():
        row = rows.get(op.name)
        if row is None:
            missing.append(op.name)
            continue
        for arg in op.args:
            bold = f"**{arg}**" in row[2]
            if arg not in _words(row[2]) or bold != (arg in op.required):
                missing.append(f"{op.name}: {arg}" + (" (bold: required)" if arg in op.required else ""))
    assert not missing, f"docs/host.md's protocol table lacks or mis-marks {missing}"


def test_the_config_table_has_every_key() -> None:
    keys = set().union(*(_words(r[0]) for r in _rows(_doc("engine.md"), "| key |")))
    assert known().config <= keys, f"docs/engine.md's config table lacks {sorted(known().config - keys)}"


def test_every_magic_setting_and_option_is_in_magics_md() -> None:
    text = _doc("magics.md")
    settings = {s for s in known().settings if f"BashMagics.{s}" not in text and f"{s} =" not in text}
    assert not settings, f"docs/magics.md does not name the settings {sorted(settings)}"
    synopsis = {
        r[0].strip("`").split()[0].lstrip("%"): r[0] for r in _rows(text, "| Magic |") if not r[0].startswith("`%%")
    }
    missing = [
        f"%{m} {opt}"
        for m, opts in known().magics.items()
        if m in synopsis and "[...]" not in synopsis[m]  # [...]: documented on its own page
        for opt in opts
        if opt.startswith("--") and opt != "--help" and opt not in synopsis[m]
    ]
    assert not missing, f"docs/magics.md's synopsis lacks {missing}"


@pytest.mark.parametrize(
    "doc, left_out",
    [("engine.md", {"UNKNOWN_TOOL", "BRIDGE_UNAVAILABLE"}), ("tools.md", {"BRIDGE_UNAVAILABLE"})],
)
def test_the_error_lists_have_every_code(doc: str, left_out: set[str]) -> None:
    from dsh_magics.errors import ERROR_CODES

    text = _doc(doc)
    missing = [c for c in ERROR_CODES if c not in left_out and f"`{c}`" not in text]
    assert not missing, f"docs/{doc} does not list the error codes {missing}"
