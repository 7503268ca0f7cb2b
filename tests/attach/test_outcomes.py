"""attach/outcomes.py and docs/attach.md's "Ways out" table are one list:
every way out the code has is a row of the table, and every row is one of them."""

from __future__ import annotations

import re
from pathlib import Path

from dsh_magics.attach.outcomes import Outcome, Said
from dsh_magics.errors import NoSuchSession

DOC = Path(__file__).resolve().parents[2] / "docs" / "attach.md"


def _rows() -> list[tuple[str, re.Pattern[str], int]]:
    """(what happened, the line said as a pattern, status) of each row."""
    text = DOC.read_text().split("## Ways out", 1)[1].split("\n## ", 1)[0]
    rows = []
    for line in text.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) != 3 or not cells[2].isdigit():
            continue  # not a row (the header's status is a word, the rule is dashes)
        said = cells[1]
        if said.startswith("nothing"):
            pattern = ""
        else:
            pattern = re.escape(said.strip("`"))
            pattern = pattern.replace(re.escape("..."), ".+").replace("CODE", "[A-Z_]+").replace("message", ".+")
        rows.append((cells[0], re.compile(pattern), int(cells[2])))
    return rows


def _outcomes() -> dict[str, Outcome]:
    """Every way out of :class:`Said`, for session ``S`` of host ``H`` (the table's names)."""
    said = Said("S", "H")
    out = {
        "detached": said.detached(),
        "session_closed": said.session_closed(),
        "terminal_closed": said.terminal_closed(),
        "host_gone": said.host_gone(),
        "signalled": said.signalled("SIGTERM"),
        "error": said.error(NoSuchSession("no session S")),
        "unwritable": Said.unwritable(),
    }
    methods = {n for n in vars(Said) if not n.startswith("_")} - {"keys_event"}  # (keys_event: one of these, or a bell)
    assert methods == set(out), "a way out this test does not know: add it here and to the table"
    return out


def test_the_ways_out_table_is_the_code() -> None:
    rows = _rows()
    assert len(rows) >= 7
    matched: set[str] = set()
    for name, outcome in _outcomes().items():
        hits = [what for what, pattern, status in rows if status == outcome.status and pattern.fullmatch(outcome.message)]
        assert hits, f"Said.{name} ({outcome}) has no row in docs/attach.md's Ways out"
        matched.update(hits)
    assert matched == {what for what, _, _ in rows}, "a row of the table that no way out says"
