"""No function reaches into another object's private state: ``x._name``,
where ``x`` is not ``self`` or ``cls``, names something the same module
defines (a module is Python's unit of privacy: a class's helper view, a
module function beside the class), a Python protocol name
(``_repr_mimebundle_``, ``_ipython_display_``) or ``os._exit``; and no
module imports another's private name (``from .values import _X``)."""

from __future__ import annotations

import ast
import re

from .test_import_graph import PACKAGE

#: Names meant to be reached from outside though they start with ``_``.
PROTOCOL = re.compile(r"_(repr|ipython)_\w*_$")
ALLOWED = {"os._exit"}


def _defined(tree: ast.AST) -> set[str]:
    """Every name the module defines: functions, classes, assigned names and
    attributes (``self._x = ...``), at any depth."""
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
        elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
            names.add(node.attr)
    return names


def foreign_private(tree: ast.AST) -> list[str]:
    """``line: text`` of each private name the module takes from another."""
    own = _defined(tree)
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute):
            name = node.attr
            if not name.startswith("_") or name.startswith("__") or name in own or PROTOCOL.match(name):
                continue
            if isinstance(node.value, ast.Name) and node.value.id in ("self", "cls"):
                continue
            text = ast.unparse(node)
            if text not in ALLOWED:
                found.append(f"{node.lineno}: {text}")
        elif isinstance(node, ast.ImportFrom):
            for alias in node.names:
                if alias.name.startswith("_") and not alias.name.startswith("__"):
                    found.append(f"{node.lineno}: from {'.' * node.level}{node.module or ''} import {alias.name}")
    return found


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
        "    return other.__dict__\n"
    )
    assert foreign_private(ast.parse(code)) == ["1: from .values import _Once", "10: other._stop_thread"]
