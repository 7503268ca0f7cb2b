"""The group side of the magics (issue 35, docs/fanout.md): ``%bash_exec --on TARGETS``
starts one job per target and returns a group handle at once; ``%bash_wait``,
``%bash_read``, ``%bash_interrupt`` and ``%bash_list`` take a group id (``g1``, or the
handle: ``%bash_wait $g``).

A mixin of :class:`~.magics.BashMagics`: the options are declared on the magics themselves
(``@group_args()``, as :func:`~.magic_args.session_arg` is), the work is here. Bad input
(an empty or unknown group, a malformed range, a width of 0, too many targets) is refused
by :func:`dsh_magics.fanout.start` before anything starts, and shows as one line.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable
from typing import Any, TypeVar

from IPython.core.magic_arguments import argument

from .. import fanout
from ..errors import InvalidArgument, NoSuchJob
from ..fanout import GroupJob
from ..terminal.api import Engine
from . import group_live
from .group_values import GroupFailed, GroupHandle, GroupView, raise_if_group_failed
from .live_views import ViewManager, ViewSettings
from .magic_args import seconds, to_ms
from .values import SKIP, set_once

F = TypeVar("F", bound=Callable[..., Any])
GROUP_ID = re.compile(r"g[0-9]{1,9}")


def group_args() -> Callable[[F], F]:
    """``--on``, ``--fanout``, ``--target-timeout`` and ``--diff`` (decorators, under
    ``@magic_arguments()``)."""
    decorators = [
        argument(
            "--on",
            action="append",
            default=None,
            metavar="TARGETS",
            help="Run on many terminals at once, one job each: session names, target URLs with "
            "ranges (ssh://web[01-16]), @group, or a kubectl selector; repeat or use commas for "
            "several. Returns a group handle (docs/fanout.md).",
        ),
        argument(
            "--fanout",
            type=int,
            default=None,
            metavar="N",
            help=f"With --on: at most N members connect and run at once (default {fanout.DEFAULT_FANOUT}).",
        ),
        argument(
            "--target-timeout",
            type=seconds,
            default=None,
            metavar="SECONDS",
            help="With --on: a member still running after SECONDS gets Ctrl-C (its row says timed_out).",
        ),
        argument("--diff", action="store_true", help="With --on: show each output as a diff against the most common one."),
    ]

    def apply(fn: F) -> F:
        for deco in reversed(decorators):
            fn = deco(fn)
        return fn

    return apply


def is_group_id(text: str | None) -> bool:
    return text is not None and GROUP_ID.fullmatch(text.strip()) is not None


class GroupVerbs:
    """The group work of the magics; ``registry``, ``views``, ``view_settings`` and
    ``live`` are the magics class's."""

    registry: Engine
    views: ViewManager
    show_background: bool
    view_settings: ViewSettings
    _pending_once: list[Any]
    _last_group: str | None = None  # the group this notebook's last %bash_exec started

    def _shown(self, value: Any) -> Any:
        """Under a live display the area already shows ``value``: its display as the
        cell's value is skipped, once (dropped after the cell: ``post_run_cell``)."""
        if self.view_settings.live:
            set_once(value, SKIP)
            self._pending_once.append(value)
        return value

    # -- starting --------------------------------------------------------
    def exec_group(self, args: Any, command: str) -> GroupHandle | GroupView:
        """``%bash_exec --on``: the handle at once (``--wait``/``--timeout``: the group's view)."""
        if args.session is not None or args.tty:
            raise InvalidArgument("--on runs in each target's own terminal: not with --session or --tty")
        group = fanout.start(
            self.registry,
            args.on,
            command,
            width=fanout.DEFAULT_FANOUT if args.fanout is None else args.fanout,
            member_timeout_ms=to_ms(args.target_timeout),
            source="notebook",
        )
        self._last_group = group.id
        settings = self.view_settings
        limit_ms: int | None = None
        if args.timeout is not None:  # the group's view if it ended in time, else the handle
            try:
                if not group.wait(timeout_ms=to_ms(args.timeout)):
                    return self._group_handle(group, settings)
            except KeyboardInterrupt:
                group.interrupt(source="notebook")
                print(f"Interrupted: sent Ctrl-C to the members of group {group.id}.")
                limit_ms = to_ms(settings.interrupt_grace)
        if args.wait or args.timeout is not None:
            view = group_live.wait_group(self.views, group, limit_ms, settings, diff=args.diff, write=_write)
            return self._finish(view, args.raise_error)
        return self._group_handle(group, settings)

    def _finish(self, view: GroupView, raise_error: bool) -> GroupView:
        """The view a wait returns; a group that ended badly raises GroupFailed (one line)
        after its table and merged output were shown (the live area, else printed here)."""
        self._shown(view)
        try:
            return raise_if_group_failed(view, raise_error)
        except GroupFailed:
            if not self.view_settings.live:
                print(repr(view), end="")
            raise

    def _group_handle(self, group: GroupJob, settings: ViewSettings) -> GroupHandle:
        handle = GroupHandle(group, live=(lambda h: group_live.show_live(self.views, h.group, self.view_settings))
                             if settings.live else None)
        if settings.live and self.show_background:
            group_live.show_live(self.views, group, settings)
            self._shown(handle)
        return handle

    # -- finding ---------------------------------------------------------
    def find_group(self, group_id: str) -> GroupJob:
        found = fanout.table_for(self.registry).get(group_id.strip())
        if found is None:
            raise NoSuchJob(f"no group with id {group_id.strip()!r} (ids of this notebook's groups: "
                            f"{', '.join(g.id for g in fanout.table_for(self.registry).all()) or 'none yet'})")
        return found

    def last_group(self) -> GroupJob | None:
        """The group of this notebook's last ``%bash_exec``, when it was a group command."""
        return fanout.table_for(self.registry).get(self._last_group) if self._last_group else None

    def forget_last_group(self) -> None:
        """A plain ``%bash_exec`` ran since: ``%bash_wait`` without an id means its job."""
        self._last_group = None

    # -- the verbs -------------------------------------------------------
    def wait_group(self, group: GroupJob, timeout_ms: int | None, diff: bool, raise_error: bool) -> GroupView:
        view = group_live.wait_group(self.views, group, timeout_ms, self.view_settings, diff=diff, write=_write)
        return self._finish(view, raise_error)

    def read_group(self, group: GroupJob, lines: int | None, diff: bool) -> GroupView:
        """Every member's output so far (its last ``lines``), merged; nothing is sent."""
        return GroupView(group, fanout.report(group, tail_lines=lines), None, diff)

    def interrupt_group(self, group: GroupJob, grace: float) -> GroupView:
        hit = group.interrupt(source="notebook")
        if not hit and group.done:
            print(f"group {group.id} has ended: nothing to interrupt")
        else:
            try:
                group.wait(timeout_ms=to_ms(grace))
            except KeyboardInterrupt:
                pass  # a second Ctrl-C stops the waiting, not the members: the view says how they are
            left = "" if group.done else f"; still running after {grace:g}s: " + fanout.fold(
                r.member.label for r in group.runs if not r.done)
            print(f"Sent Ctrl-C to {len(hit)} member{'s' if len(hit) != 1 else ''} of group {group.id}{left}")
        return GroupView(group, fanout.report(group), "interrupted")

    def list_group(self, group: GroupJob) -> GroupView:
        return GroupView(group, fanout.report(group, tail_lines=3), None)


def _write(text: str) -> None:
    sys.stdout.write(text)
    sys.stdout.flush()
