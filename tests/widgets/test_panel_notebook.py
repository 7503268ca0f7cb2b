"""The panel's section of ``notebooks/quickstart.ipynb``: committed outputs of a real run.

``tests/notebooks/test_quickstart_notebook.py`` executes the whole notebook
with nbclient (so these cells must run without error); this checks what the
panel cells left in the committed file: a live widget view with its static
HTML and text fallbacks, and the command sent through the panel's API.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import nbformat

NOTEBOOK = Path(__file__).resolve().parents[2] / "notebooks" / "quickstart.ipynb"


def _code(nb: Any, start: str) -> Any:
    found = [c for c in nb.cells if c.cell_type == "code" and c.source.startswith(start)]
    assert len(found) == 1, start
    return found[0]


def test_quickstart_shows_the_panel_with_fallbacks() -> None:
    nb = nbformat.read(NOTEBOOK, as_version=4)
    shown = _code(nb, "p = %bash_panel")
    (result,) = [o for o in shown.outputs if o.output_type == "execute_result"]
    data = result.data
    assert "application/vnd.jupyter.widget-view+json" in data
    assert data["text/plain"].startswith("Terminals (2)")
    assert 'data-session="build" data-status="idle"' in data["text/html"]
    assert "Static snapshot" in data["text/html"]


def test_quickstart_drives_the_panel_from_code() -> None:
    nb = nbformat.read(NOTEBOOK, as_version=4)
    text = "".join(o.get("text", "") for o in _code(nb, 'p.select("build")').outputs)
    assert "started job bash-" in text and "in 'build'" in text
    assert "Output: build · 2 lines retained · 0 dropped" in text
    assert "  hello from the panel" in text
    # The section sits before the closing cells, which close the terminals it shows.
    sources = [c.source for c in nb.cells]
    assert sources.index("p = %bash_panel\np") < sources.index("%bash_close --session build")
