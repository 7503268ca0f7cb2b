"""Merged output as ``dshbak -c`` / ``clubak -b`` show it: identical outputs
folded under their folded node set, differing ones apart, and a diff view
against the most common output.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping
from dataclasses import dataclass

from .targets import fold

RULE = "-" * 16


@dataclass(frozen=True)
class Block:
    """One output and the labels that printed exactly it."""

    labels: tuple[str, ...]
    output: str

    @property
    def nodes(self) -> str:
        return fold(self.labels)


def blocks(outputs: Mapping[str, str]) -> list[Block]:
    """Identical outputs together; the largest block first, ties in the
    order their first label came."""
    by_output: dict[str, list[str]] = {}
    for label, out in outputs.items():
        by_output.setdefault(out, []).append(label)
    ranked = sorted(by_output.items(), key=lambda kv: -len(kv[1]))  # stable: first seen wins ties
    return [Block(tuple(labels), out) for out, labels in ranked]


def render(found: list[Block]) -> str:
    """The blocks as dshbak -c prints them: a rule, the folded names (and
    their count), a rule, then the output."""
    parts: list[str] = []
    for b in found:
        body = b.output if b.output.endswith("\n") or not b.output else b.output + "\n"
        parts.append(f"{RULE}\n{b.nodes} ({len(b.labels)})\n{RULE}\n{body}")
    return "".join(parts)


def render_diff(found: list[Block]) -> str:
    """The most common output in full, then each other block as a unified
    diff against it (difflib), headed by its folded names."""
    if not found:
        return ""
    ref = found[0]
    parts = [render([ref])]
    ref_lines = ref.output.splitlines(keepends=True)
    for b in found[1:]:
        diff = difflib.unified_diff(
            ref_lines, b.output.splitlines(keepends=True), fromfile=ref.nodes, tofile=b.nodes, lineterm="\n"
        )
        text = "".join(line if line.endswith("\n") else line + "\n" for line in diff)
        parts.append(f"{RULE}\n{b.nodes} ({len(b.labels)}) differs from {ref.nodes}\n{RULE}\n{text}")
    return "".join(parts)
