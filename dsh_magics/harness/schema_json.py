"""Helpers over JSON Schema dicts that keep the harness's key order.

Dicts keep insertion order, so ``json.dumps`` writes keys as the harness's ``JSON.stringify`` does.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

BLANK = "…"


def blank_descriptions(node: Any, placeholder: str = BLANK) -> Any:
    """A deep copy of ``node`` with every ``description`` string replaced.

    Used to compare the exact JSON shape of two sources whose texts differ
    (our summaries vs the harness texts).  Only ``description`` keys of schema
    nodes are touched, never a property *named* ``description``.
    """
    if isinstance(node, dict):
        out: dict[str, Any] = {}
        for key, value in node.items():
            if key == "properties" and isinstance(value, dict):
                out[key] = {k: blank_descriptions(v, placeholder) for k, v in value.items()}
            elif key == "description" and isinstance(value, str):
                out[key] = placeholder
            else:
                out[key] = blank_descriptions(value, placeholder)
        return out
    if isinstance(node, list):
        return [blank_descriptions(v, placeholder) for v in node]
    return node


def iter_descriptions(node: Any) -> Iterator[str]:
    """Every ``description`` string of schema nodes under ``node``, in order."""
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "properties" and isinstance(value, dict):
                for v in value.values():
                    yield from iter_descriptions(v)
            elif key == "description" and isinstance(value, str):
                yield value
            else:
                yield from iter_descriptions(value)
    elif isinstance(node, list):
        for v in node:
            yield from iter_descriptions(v)
