"""Committed notebooks carry no absolute paths of the machine they were run on.

A saved output (a ``pwd``, a cwd column, a notebook path, a widget's state)
would publish the author's directory layout and make the file differ on every
re-run. Every string in each notebook is scanned: sources, outputs and
widget state alike.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[2]
NOTEBOOKS = sorted((REPO / "notebooks").glob("*.ipynb"))

# Roots of per-machine paths; a path must start there (not "src/home/x").
_ROOTS = r"(?:tmp|var/tmp|var/folders|private|work|root|home|Users|mnt|srv|opt/conda)"
MACHINE_PATH = re.compile(rf"(?<![\w.~/-])/{_ROOTS}/[^\s\"'<>]*")


def _strings(node: Any) -> Iterator[str]:
    if isinstance(node, str):
        yield node
    elif isinstance(node, dict):
        for value in node.values():
            yield from _strings(value)
    elif isinstance(node, list):
        for value in node:
            yield from _strings(value)


def machine_paths(text_or_json: Any) -> list[str]:
    """Absolute per-machine paths in a notebook (parsed JSON or a string)."""
    found: set[str] = set()
    local = {str(REPO), os.path.expanduser("~")} - {"", "/"}
    for s in _strings(text_or_json):
        found.update(MACHINE_PATH.findall(s))
        found.update(p for p in local if p in s)
    return sorted(found)


def test_the_check_finds_what_it_looks_for() -> None:
    assert machine_paths({"text": ["cwd: /tmp/tmp.x1\n", "~/x and src/home/y"]}) == ["/tmp/tmp.x1"]
    assert machine_paths(f"<td>{REPO}/notebooks</td>")
    assert machine_paths('"/home/alice/nb.ipynb"') == ["/home/alice/nb.ipynb"]
    assert not machine_paths("see packages/shell/src/index.ts and https://example.org/home")


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.name for p in NOTEBOOKS])
def test_committed_notebook_has_no_machine_paths(path: Path) -> None:
    found = machine_paths(json.loads(path.read_text()))
    assert not found, f"{path.name} carries paths of the machine it ran on: {found}"
