"""Static fallbacks: without a widget frontend the same information shows as HTML and text.

nbconvert and GitHub's viewer strip styles, so highlights must survive as
markup (+/− signs, <ins>/<del>, ▶), and nothing may be blank in any era or
configuration.
"""

from __future__ import annotations

import re
from html.parser import HTMLParser

import pytest

from dsh_magics.harness import ERAS
from dsh_magics.widgets.inspector import Inspector
from dsh_magics.widgets.inspector_backend import HarnessBackend
from dsh_magics.widgets.inspector_html import render_html, render_text
from dsh_magics.widgets.inspector_state import InspectorState


class _Rows(HTMLParser):
    """Collect ``data-param``/``data-status`` of parameter rows and matrix row marks."""

    def __init__(self) -> None:
        super().__init__()
        self.params: list[tuple[str, str]] = []
        self.current_rows: list[str] = []
        self.sections: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        if tag == "tr" and "data-param" in a and "dsh-param" in (a.get("class") or ""):
            self.params.append((a["data-param"] or "", a.get("data-status") or ""))
        if tag == "tr" and a.get("data-current") == "1":
            self.current_rows.append(a.get("data-config") or "")
        if "data-section" in a:
            self.sections.append(a["data-section"] or "")


def _parse(html: str) -> _Rows:
    p = _Rows()
    p.feed(html)
    return p


@pytest.fixture
def state() -> InspectorState:
    return InspectorState(HarnessBackend(live=False), source="model")


def test_static_html_has_every_section_tables_and_the_matrix(state: InspectorState) -> None:
    html = render_html(state.update(background=False, sandbox="read-only"))
    rows = _parse(html)
    assert rows.sections == ["params", "json", "description", "matrix", "eras", "escalation"]
    assert ("run_in_background", "removed") in rows.params
    assert ("sandbox_permissions", "added") in rows.params
    assert rows.current_rows == ["bg=off sandbox=read-only"]
    # Highlights survive style stripping: signs and ins/del markup.
    assert "<del>run_in_background</del>" in html
    assert "<ins>sandbox_permissions</ins>" in html
    assert "▶" in html


@pytest.mark.parametrize("era", ERAS)
@pytest.mark.parametrize("background", [True, False])
@pytest.mark.parametrize("sandbox", [None, "danger-full-access"])
def test_nothing_is_blank_in_any_era(
    state: InspectorState, era: str, background: bool, sandbox: str | None
) -> None:
    view = state.update(era=era, background=background, sandbox=sandbox)
    html = render_html(view)
    text = render_text(view)
    rows = _parse(html)
    assert [n for n, s in rows.params if s != "removed"] == list(view.params.names)
    assert len(rows.current_rows) == 1
    visible = re.sub(r"<[^>]+>", "", html)
    for name in view.params.names:
        assert name in visible and name in text
    for tool in view.eras.tool_names:
        assert tool in text
    assert "matrix" in text and "escalation" in text


def test_text_rendering_marks_rows_like_the_html(state: InspectorState) -> None:
    text = render_text(state.update(background=False))
    line = next(ln for ln in text.splitlines() if "run_in_background" in ln and "boolean" in ln)
    assert line.lstrip().startswith("−")


def test_inspector_outside_a_kernel_offers_html_and_text_but_no_widget_view(
    state: InspectorState,
) -> None:
    insp = Inspector(state)
    bundle = insp._repr_mimebundle_()
    assert set(bundle) == {"text/plain", "text/html"}
    assert "dsh-params" in bundle["text/html"] and "dsh-matrix" in bundle["text/html"]
    assert "parameter" in bundle["text/plain"]
    assert insp._repr_html_() == bundle["text/html"]


def test_section_snapshots(state: InspectorState) -> None:
    insp = Inspector(state)
    for key in ("params", "json", "description", "matrix", "eras", "escalation"):
        snap = insp.section(key)
        assert f'data-section="{key}"' in snap._repr_html_()
        assert repr(snap).strip()
