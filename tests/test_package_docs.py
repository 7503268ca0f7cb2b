"""Each package's ``__init__`` docstring says what it may import and what it must not
(issue 34 §1), and says it truly: a package that imports another the docstring does not
name under "May import", or one it names under "Must not import", fails here. The
imports are the structure tests' graph (tests/test_import_graph.py: imports inside
functions and under ``TYPE_CHECKING`` included)."""

from __future__ import annotations

import ast
import functools
import re

import pytest

from tests.test_import_graph import PACKAGE, _graph

PACKAGES = sorted(p.parent.name for p in PACKAGE.glob("*/__init__.py"))
#: The names a docstring may use for a part of the package: its packages and top modules.
PARTS = set(PACKAGES) | {p.stem for p in PACKAGE.glob("*.py") if p.stem != "__init__"}
MAY = re.compile(r"May\s+import:(.*?)(?=Must\s+not\s+import|\Z)", re.S)
MUST_NOT = re.compile(r"Must\s+not\s+import[^:]*:(.*?)(?=\n\s*\n|\Z)", re.S)
NAME = re.compile(r"\b([a-z_]+)(?:\.([a-z_]+))?")


def _docstring(package: str) -> str:
    return ast.get_docstring(ast.parse((PACKAGE / package / "__init__.py").read_text())) or ""


@functools.cache
def _imports(package: str) -> set[str]:
    """The modules outside ``package`` that its modules import."""
    inside = f"dsh_magics.{package}"
    graph = _whole_graph()
    return {
        t
        for name, targets in graph.items()
        if name == inside or name.startswith(inside + ".")
        for t in targets
        if t != inside and not t.startswith(inside + ".")
    }


@functools.cache
def _whole_graph() -> dict[str, set[str]]:
    return _graph()


def _part(module: str) -> str:
    return module.split(".")[1]


def _named(text: str) -> list[tuple[str, str | None]]:
    return [(m.group(1), m.group(2)) for m in NAME.finditer(text) if m.group(1) in PARTS]


@pytest.mark.parametrize("package", PACKAGES)
def test_the_docstring_says_what_the_package_imports(package: str) -> None:
    doc = _docstring(package)
    may, must_not = MAY.search(doc), MUST_NOT.search(doc)
    assert may and must_not, f"dsh_magics/{package}/__init__.py: say 'May import: ...' and 'Must not import: ...'"
    allowed = {part for part, _ in _named(may.group(1))}
    used = _imports(package)
    unnamed = sorted({_part(m) for m in used} - allowed)
    assert not unnamed, f"{package}/ imports {unnamed}, which its docstring's 'May import' does not name"
    wrong = []
    for part, module in _named(must_not.group(1)):
        if module is None:
            wrong += [m for m in used if _part(m) == part]
        else:
            dotted = f"dsh_magics.{part}.{module}"
            wrong += [m for m in used if m == dotted or m.startswith(dotted + ".")]
    assert not wrong, f"{package}/ imports {sorted(set(wrong))}, which its docstring says it must not"


def test_the_check_can_fail() -> None:
    """notebook/ imports terminal/: a docstring that does not name it would fail."""
    assert "terminal" in {_part(m) for m in _imports("notebook")}
    assert "terminal" not in {p for p, _ in _named("errors, jobs")}
