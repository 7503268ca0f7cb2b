"""What a run notebook's cell showed, as text: shared by the notebook tests."""

from __future__ import annotations

from typing import Any


def cell_text(cell: Any) -> str:
    """The cell's streams, the text/plain of its results and displays, and its error line."""
    out = []
    for o in cell.get("outputs", []):
        if o["output_type"] == "stream":
            out.append(o["text"])
        elif o["output_type"] in ("execute_result", "display_data"):
            out.append(o["data"].get("text/plain", ""))
        elif o["output_type"] == "error":
            out.append(f"{o['ename']}: {o['evalue']}")
    return "\n".join(out)
