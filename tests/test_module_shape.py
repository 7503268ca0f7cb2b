"""The shape of the package's modules: none over 500 lines, no silently ignored error.

Issue 34 §1 and §4: every module of the package.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "dsh_magics"
MAX_LINES = 500
BROAD = {"Exception", "BaseException"}


def _modules() -> list[Path]:
    return sorted(PACKAGE.rglob("*.py"))


def _silent_handlers(path: Path) -> list[tuple[int, str, bool]]:
    """``(line, caught, commented)`` for each ``except`` whose whole body is ``pass``."""
    source = path.read_text()
    lines = source.splitlines()
    found = []
    for node in ast.walk(ast.parse(source, str(path))):
        if not isinstance(node, ast.ExceptHandler):
            continue
        if not all(isinstance(stmt, ast.Pass) for stmt in node.body):
            continue
        caught = ast.unparse(node.type) if node.type is not None else ""
        spans = range(node.lineno - 1, node.body[-1].end_lineno or node.lineno)
        commented = any("#" in lines[i] for i in spans)
        found.append((node.lineno, caught, commented))
    return found


def _is_broad(caught: str) -> bool:
    names = {n.strip() for n in caught.strip("()").split(",")}
    return not caught or bool(names & BROAD)


@pytest.mark.parametrize("path", _modules(), ids=lambda p: str(p.relative_to(PACKAGE)))
def test_no_module_is_over_the_limit(path: Path) -> None:
    n = len(path.read_text().splitlines())
    assert n <= MAX_LINES, f"{path.relative_to(PACKAGE)} has {n} lines (limit {MAX_LINES})"


@pytest.mark.parametrize("path", _modules(), ids=lambda p: str(p.relative_to(PACKAGE)))
def test_no_error_is_ignored_silently(path: Path) -> None:
    """A broad ``except`` never just passes; a narrow one says why ignoring is right."""
    bad = [
        f"line {line}: except {caught or '(bare)'}: pass"
        + ("" if commented else " (no comment)")
        for line, caught, commented in _silent_handlers(path)
        if _is_broad(caught) or not commented
    ]
    assert not bad, f"{path.relative_to(PACKAGE)}: " + "; ".join(bad)


def test_the_checks_find_what_they_look_for(tmp_path: Path) -> None:
    sample = tmp_path / "sample.py"
    sample.write_text(
        "try:\n    x = 1\nexcept Exception:  # noqa: BLE001\n    pass\n"
        "try:\n    x = 1\nexcept OSError:\n    pass\n"
        "try:\n    x = 1\nexcept OSError:\n    pass  # gone already\n"
        "try:\n    x = 1\nexcept OSError:\n    x = 2\n"
    )
    found = _silent_handlers(sample)
    assert found == [(3, "Exception", True), (7, "OSError", False), (11, "OSError", True)]
    assert [_is_broad(c) for _l, c, _c in found] == [True, False, False]
