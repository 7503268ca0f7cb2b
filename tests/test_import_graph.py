"""Imports point down only: the import graph of dsh_magics has no cycle,
``TYPE_CHECKING`` imports and imports inside functions included."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "dsh_magics"


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _graph() -> dict[str, set[str]]:
    modules = {_module_name(p): p for p in PACKAGE.rglob("*.py")}
    graph: dict[str, set[str]] = {name: set() for name in modules}
    for name, path in modules.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    anchor = package.split(".")
                    anchor = anchor[: len(anchor) - (node.level - 1)]
                    base = ".".join(anchor + ([base] if base else []))
                # ``from pkg import mod`` imports the submodule when there is one.
                targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in modules else base for a in node.names]
            for target in targets:
                while target and target not in modules:
                    target = target.rpartition(".")[0]
                if target and target != name:
                    graph[name].add(target)
    return graph


def _cycle(graph: dict[str, set[str]]) -> list[str] | None:
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(graph[node]):
            if state.get(nxt) == 1:
                return stack[stack.index(nxt) :] + [nxt]
            if nxt not in state:
                found = visit(nxt)
                if found:
                    return found
        stack.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state:
            found = visit(node)
            if found:
                return found
    return None


def test_the_graph_is_read() -> None:
    graph = _graph()
    assert "dsh_magics.terminal.registry" in graph
    assert "dsh_magics.terminal.local.terminal" in graph["dsh_magics.terminal.registry"]


def test_a_cycle_is_found() -> None:
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]


def test_no_import_cycle_in_the_package() -> None:
    cycle = _cycle(_graph())
    assert cycle is None, " -> ".join(cycle or [])


#: What dsh_magics.fanout may import from the package: the engine contract and
#: the plain values and checks under it (the typed requests, the deadline a wait
#: counts down), and the target parser; never engine internals (registry,
#: terminals, core), so it works over any Engine.
FANOUT_FLOOR = {
    "dsh_magics.errors",
    "dsh_magics.jobs",
    "dsh_magics.terminal.api",
    "dsh_magics.terminal.deadline",
    "dsh_magics.terminal.requests",
    "dsh_magics.terminal.result",
    "dsh_magics.terminal.validation",
    "dsh_magics.terminal.remote.targets",
}


def test_fanout_stands_on_the_engine_contract_only() -> None:
    graph = _graph()
    fanout = {name for name in graph if name == "dsh_magics.fanout" or name.startswith("dsh_magics.fanout.")}
    assert "dsh_magics.fanout.group_job" in fanout
    reached = {t for name in fanout for t in graph[name] if t not in fanout}
    assert reached <= FANOUT_FLOOR, sorted(reached - FANOUT_FLOOR)
    below = {name for name in graph if name.startswith("dsh_magics.terminal")}
    assert not any(t in fanout for name in below for t in graph[name]), "the engine imports fanout"
