"""An approximate token estimator, and the size of a tool as the model sees it.

Approximate on purpose (to compare configurations, tied to no vendor); the rule: docs/inspector.md.
"""

from __future__ import annotations

import json
import re
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .schema_types import Tool

_PIECE = re.compile(r"[A-Za-z]+|[0-9]+|\s+|.", re.DOTALL)


def estimate_tokens(text: str) -> int:
    """Approximate number of tokens in ``text`` (the rule: docs/inspector.md, "Internals")."""
    total = 0
    space: str | None = None  # whitespace run not yet charged
    for m in _PIECE.finditer(text):
        piece = m.group()
        if piece.isspace():
            space = piece  # consecutive whitespace is one run by construction
            continue
        word = piece[0].isascii() and piece[0].isalnum()
        if space is not None and not (space == " " and word):
            total += 1
        space = None
        if piece[0].isascii() and piece[0].isalpha():
            total += 1 + (len(piece) - 1) // 6
        elif piece[0].isascii() and piece[0].isdigit():
            total += -(-len(piece) // 3)
        else:
            total += 1
    if space is not None:
        total += 1
    return total


def json_text_length(text: str) -> int:
    """Length of ``text`` inside a JSON string literal (quotes excluded)."""
    return len(json.dumps(text, ensure_ascii=False)) - 2


def compact_json(obj: Any) -> str:
    """The compact JSON used for sizes (no whitespace, non-ASCII kept)."""
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":"))


def skeleton(tool_json: dict[str, Any]) -> dict[str, Any]:
    """``{name, description, parameters}`` with every description emptied."""
    from .schema_json import blank_descriptions

    return {
        "name": tool_json["name"],
        "description": "",
        "parameters": blank_descriptions(tool_json["parameters"], placeholder=""),
    }


def description_texts(tool_json: dict[str, Any]) -> list[str]:
    """Every description text of a tool: its own, then each property's, in order."""
    from .schema_json import iter_descriptions

    return [tool_json["description"], *iter_descriptions(tool_json["parameters"])]


def exact_size(tool_json: dict[str, Any]) -> tuple[int, int]:
    """``(chars, tokens)`` of a tool whose texts are exact (live or catalog)."""
    chars = len(compact_json(tool_json))
    tokens = estimate_tokens(compact_json(skeleton(tool_json)))
    tokens += sum(estimate_tokens(t) for t in description_texts(tool_json))
    return chars, tokens


def tool_size(tool: Tool) -> tuple[int | None, int | None]:
    """``(chars, tokens)`` of ``tool`` as the model sees it.

    Exact-text tools are measured directly.  Model tools are measured from
    the skeleton plus the stored facts of each text; if any text's facts are
    unknown (old eras, the pwsh twin) the size is ``(None, None)``.
    """
    if not tool.description_is_summary:
        return exact_size(tool.model_json())
    facts = [tool.description_facts, *(p.text for p in tool.params)]
    if any(f is None for f in facts):
        return None, None
    skel = compact_json(skeleton(tool.model_json()))
    chars = len(skel) + sum(f.json_length for f in facts if f is not None)
    tokens = estimate_tokens(skel) + sum(f.tokens for f in facts if f is not None)
    return chars, tokens
