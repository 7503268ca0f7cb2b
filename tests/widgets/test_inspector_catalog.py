"""Catalog browsing: every tool of a catalog, with drift where a counterpart exists.

The fixture is ours (harness layout, our wording).  Its ``bash`` matches the
model's structure, its ``job_output`` renames one parameter on purpose, and its
``echo`` has no counterpart anywhere.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from dsh_magics.errors import InvalidArgument
from dsh_magics.widgets.inspector import Inspector, inspect

FIXTURE = Path(__file__).parent / "fixtures" / "inspector_catalog.md"


@pytest.fixture
def insp() -> Inspector:
    return inspect(source="model", live=False, catalog=FIXTURE)


def test_catalog_lists_every_tool_and_selects_bash_first(insp: Inspector) -> None:
    c = insp.view.catalog
    assert c.tool_count == 3
    assert [p[0] for p in c.packages] == [
        "@deepseek-ai/dsh-tool-bash",
        "@deepseek-ai/dsh-tool-jobs",
        "@example/fixture-tool-echo",
    ]
    assert c.selected.name == "bash" and c.selected.package == "@deepseek-ai/dsh-tool-bash"
    names = [p.name for p in c.selected.params]
    assert names == ["command", "description", "timeoutMs", "workdir", "run_in_background"]


def test_bash_drift_against_the_model_is_textual_only(insp: Inspector) -> None:
    drift = insp.view.catalog.selected.drift
    assert drift is not None and drift.source == "model" and not drift.ok
    # Same structure as the model; only our fixture's wording differs (by hash).
    assert drift.findings and all(f.startswith("text differs") for f in drift.findings)


def test_renamed_parameter_is_reported(insp: Inspector) -> None:
    insp.select_tool("@deepseek-ai/dsh-tool-jobs::job_output")
    drift = insp.view.catalog.selected.drift
    assert drift is not None
    assert "+ timeout_ms (only in the source)" in drift.findings
    assert "− timeout (only in the catalog)" in drift.findings


def test_tool_without_counterpart_says_so(insp: Inspector) -> None:
    insp.select_tool("@example/fixture-tool-echo::echo")
    assert insp.view.catalog.selected.drift is None
    assert 'data-drift="none"' in insp.section("catalog")._repr_html_()
    assert "no live or model counterpart" in repr(insp.section("catalog"))


def test_catalog_tab_and_dropdown_in_the_widget(insp: Inspector) -> None:
    assert insp.widget is not None
    assert (
        insp.tabs.titles[-1] == "Catalog" and insp.tabs.selected_index == len(insp.tabs.titles) - 1
    )
    insp.c_tool.value = "@deepseek-ai/dsh-tool-jobs::job_output"
    assert "timeout_ms" in insp.panes["catalog"].value
    assert "Catalog" in insp._repr_html_()


def test_unknown_tool_is_an_invalid_argument(insp: Inspector) -> None:
    with pytest.raises(InvalidArgument):
        insp.select_tool("nope::nothing")
