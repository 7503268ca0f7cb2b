"""One command over many terminals: target lists and groups, group jobs, merged output (docs/fanout.md).

Adapters need three calls: :func:`start` (a group handle at once),
``group.wait(timeout_ms=...)`` and :func:`report` (the table and the merged view).
Durations are milliseconds (``member_timeout_ms``, ``timeout_ms``), the package's unit inside.

May import: terminal/'s contract modules only (the Engine, its typed requests and
values, the deadline, the checks, the target parser), errors, jobs: it works over any
Engine, the registry or a host client. Must not import: the engine's insides (the
registry, core/, the transports), host/, notebook/, tools/, mcp/, widgets/, attach/,
answer/, harness/, lab/.
"""

from __future__ import annotations

import threading
import weakref

from ..terminal.api import Engine
from . import kubectl
from .group_job import GroupJob, GroupTable, MemberRun
from .groups import GroupBook, groups_path
from .merge import Block, blocks, render, render_diff
from .report import GroupReport, Row, report
from .targets import DEFAULT_FANOUT, MAX_FANOUT, MAX_TARGETS, Member, expand, fold, unfold

_tables: weakref.WeakKeyDictionary[Engine, GroupTable] = weakref.WeakKeyDictionary()
_lock = threading.Lock()


def table_for(engine: Engine) -> GroupTable:
    """The group table of ``engine`` (one per engine, made on first use)."""
    with _lock:
        found = _tables.get(engine)
        if found is None:
            found = _tables[engine] = GroupTable(engine)
        return found


def _files_lookup(name: str) -> list[str]:
    """Group ``name`` from the files as they are now; read only when a list names a group,
    so a broken inventory does not stop commands that use none."""
    return GroupBook.load()(name)


def start(
    engine: Engine,
    targets: str | list[str],
    command: str,
    *,
    width: int = DEFAULT_FANOUT,
    member_timeout_ms: int | None = None,
    source: str | None = None,
    caller: str | None = None,
    book: GroupBook | None = None,
) -> GroupJob:
    """Unfold ``targets`` (names, URLs, ranges, ``@group``) and start
    ``command`` on each; the group handle at once. Bad input raises before
    anything starts."""
    members = expand(targets, book if book is not None else _files_lookup, kubectl.expand)
    return table_for(engine).start(
        members, command, width=width, member_timeout_ms=member_timeout_ms, source=source, caller=caller
    )


__all__ = [
    "DEFAULT_FANOUT",
    "MAX_FANOUT",
    "MAX_TARGETS",
    "Block",
    "GroupBook",
    "GroupJob",
    "GroupReport",
    "GroupTable",
    "Member",
    "MemberRun",
    "Row",
    "blocks",
    "expand",
    "fold",
    "groups_path",
    "render",
    "render_diff",
    "report",
    "start",
    "table_for",
    "unfold",
]
