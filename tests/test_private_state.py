"""No function reaches into another object's private state: ``x._name``
(also ``getattr(x, "_name")``), where ``x`` is not ``self`` or ``cls``,
names something the same module defines on ``self``/``cls`` or at its top
(a module is Python's unit of privacy: a class's helper view, a module
function beside the class), a Python protocol name (``_repr_mimebundle_``,
``_ipython_display_``) or one of :data:`ALLOWED`; and no module imports
another's private name (``from .values import _X``). Names are matched as
names: ``other._lock`` passes in a module with a ``self._lock`` of its own."""

from __future__ import annotations

import ast
import re

from .test_import_graph import PACKAGE

#: Names meant to be reached from outside though they start with ``_``.
PROTOCOL = re.compile(r"_(repr|ipython)_\w*_$")
ALLOWED = {
    "os._exit",  # the standard library's documented exit without clean-up
    # the kernel app's singleton, read without creating one; in terminal
    # IPython it is the terminal app's (notebook/identity.py says why)
    'getattr(IPKernelApp, "_instance")',
    # psutil's parent map, 3-4x faster, with a fallback if a release drops it
    'getattr(psutil, "_ppid_map")',
}
_REFLECT = ("getattr", "setattr", "hasattr", "delattr")


def _defined(tree: ast.AST) -> set[str]:
    """Every name the module defines: functions, classes, assigned names and
    attributes of ``self`` or ``cls`` (``self._x = ...``), at any depth. A
    store into another object (``w._value = 1``) defines nothing."""
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
        elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store) and _on_self(node):
            names.add(node.attr)
    return names


def _on_self(node: ast.Attribute) -> bool:
    return isinstance(node.value, ast.Name) and node.value.id in ("self", "cls")


def _private(name: str, own: set[str]) -> bool:
    return name.startswith("_") and not name.startswith("__") and name not in own and not PROTOCOL.match(name)


def foreign_private(tree: ast.AST) -> list[str]:
    """``line: text`` of each private name the module takes from another."""
    own = _defined(tree)
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute):
            if not _private(node.attr, own) or _on_self(node):
                continue
            text = ast.unparse(node)
            if text not in ALLOWED:
                found.append(f"{node.lineno}: {text}")
        elif (
            isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in _REFLECT
            and len(node.args) >= 2 and isinstance(node.args[1], ast.Constant) and isinstance(node.args[1].value, str)
        ):  # fmt: skip
            target = node.args[0]
            if not _private(node.args[1].value, own) or (isinstance(target, ast.Name) and target.id in ("self", "cls")):
                continue
            text = f"{node.func.id}({ast.unparse(target)}, {node.args[1].value!r})".replace("'", '"')
            if text not in ALLOWED:
                found.append(f"{node.lineno}: {text}")
        elif isinstance(node, ast.ImportFrom):
            for alias in node.names:
                if alias.name.startswith("_") and not alias.name.startswith("__"):
                    found.append(f"{node.lineno}: from {'.' * node.level}{node.module or ''} import {alias.name}")
    return sorted(found, key=lambda hit: int(hit.split(':', 1)[0]))


def test_no_module_reaches_into_another_ones_private_state() -> None:
    found = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        hits = foreign_private(ast.parse(path.read_text(), str(path)))
        if hits:
            found[str(path.relative_to(PACKAGE.parent))] = hits
    assert not found, found


def test_a_reach_into_private_state_is_found() -> None:
    code = (
        "from .values import _Once\n"  # 1: another module's private name
        "import os\n"
        "class Box:\n"
        "    def __init__(self):\n"
        "        self._own = 1\n"
        "    def _helper(self):\n"
        "        return self._own\n"
        "def view(box, other):\n"
        "    box._helper()\n"  # defined here: a module's own
        "    other._stop_thread()\n"  # 10: not defined here
        "    other.widget._repr_mimebundle_()\n"  # a protocol name
        "    os._exit(0)\n"
        "    other._value = 2\n"  # 13: a store into another object defines nothing
        "    getattr(other, '_hidden', None)\n"  # 14: the same, through getattr
        "    return other.__dict__\n"
    )
    assert foreign_private(ast.parse(code)) == [
        "1: from .values import _Once", "10: other._stop_thread", "13: other._value", '14: getattr(other, "_hidden")',
    ]
