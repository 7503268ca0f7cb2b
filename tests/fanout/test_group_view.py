"""How a group shows itself in the notebook (notebook/group_render.py), over a real group of
local bash terminals: rows alike fold under their folded names, a long list folds past
``max_rows``, the progress bar counts members done, and the HTML keeps text literal."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from dsh_magics import fanout
from dsh_magics.notebook.group_render import group_html, live_text
from dsh_magics.notebook.group_values import GroupView, started_at
from dsh_magics.terminal import Registry, TerminalConfig

N = 12


@pytest.fixture(scope="module")
def reg() -> Iterator[Registry]:
    r = Registry(TerminalConfig(login=False, max_sessions=N + 2))
    try:
        yield r
    finally:
        r.close_all()


def _run(reg: Registry, command: str) -> fanout.GroupJob:
    group = fanout.start(reg, f"view[01-{N}]", command, book=fanout.GroupBook({}, []))
    assert group.wait(timeout_ms=120_000), fanout.report(group).table()
    return group


def test_alike_rows_fold_and_the_bar_counts_members_done(reg: Registry) -> None:
    group = _run(reg, "echo '<i>$HOME</i>' same")
    rep = fanout.report(group)
    text = live_text(rep, started_at(group))
    assert f"[{'#' * 24}] {N}/{N} done" in text
    assert f"  view[01-{N}] ({N})  ok    <i>$HOME</i> same" in text, text
    html = group_html(rep, started_at(group))
    assert "&lt;i&gt;$HOME&lt;/i&gt; same" in html and "<i>" not in html
    assert "mathjax_ignore" in html and "width:100%" in html
    # done: the merged output, one block
    assert f"view[01-{N}] ({N})\n----------------\n<i>$HOME</i> same\n" in repr(GroupView(group, rep, "settled"))


def test_a_long_list_folds_past_max_rows(reg: Registry) -> None:
    group = _run(reg, "echo shell-$$")  # every member its own last line
    rep = fanout.report(group)
    rows = live_text(rep, started_at(group), max_rows=4).splitlines()[3:]
    assert len(rows) == 5, rows  # 4 rows, then the rest folded by status
    assert rows[-1].startswith(f"  view[05-{N}] ({N - 4})  ok") and rows[-1].endswith("…"), rows[-1]
    assert GroupView(group, rep, "settled").ok
