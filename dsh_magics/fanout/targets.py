"""Target lists: session names and target URLs, with ClusterShell ranges, unfolded into members.

A member is one place a group command runs: a label (what the user wrote,
unfolded), the session id its terminal lives under, and the target it opens
(None: a session of this engine, local or already attached elsewhere).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from ClusterShell.NodeSet import NodeSet, NodeSetException

from ..errors import InvalidArgument
from ..terminal import validation as V
from ..terminal.remote.targets import parse_target

#: Most members one group may have. A group is one terminal per member and the
#: engine's ``max_sessions`` bounds those too; this bound refuses a typo such as
#: ``web[1-10000]`` before anything is unfolded or started.
MAX_TARGETS = 1024
#: Members started at once (pdsh's and clush's default fan-out).
DEFAULT_FANOUT = 32
MAX_FANOUT = MAX_TARGETS
#: Most characters in one item of a target list.
MAX_ITEM_CHARS = 1000

_URL_KINDS = ("ssh://", "docker://", "podman://", "kubectl://")
#: ``ssh://[::1]``, ``ssh://u@[fe80::1]:22``: brackets of an IPv6 address, not a range.
_IPV6 = re.compile(r"(://|@)\[[0-9A-Fa-f.]*:[0-9A-Fa-f:.]*\]")
#: Labels NodeSet can fold safely (no spaces, commas, brackets or set operators).
_FOLDABLE = re.compile(r"^[A-Za-z0-9._:/@+=%-]+$")

#: Resolves ``@name`` to that group's items (:mod:`.groups`); raises INVALID_ARGUMENT if unknown.
GroupLookup = Callable[[str], list[str]]
#: Expands a ``kubectl://... -l SELECTOR`` item into pod targets (:mod:`.kubectl`).
SelectorLookup = Callable[[str], list[str]]


@dataclass(frozen=True)
class Member:
    """One place a group command runs."""

    label: str
    session_id: str
    target: str | None  # a target URL to attach to, or None for a plain session


def bad(message: str, **details: Any) -> InvalidArgument:
    return InvalidArgument(f"targets: {message}", field="targets", **details)


def unfold(text: str) -> list[str]:
    """``ssh://web[01-03]`` -> ``ssh://web01 ssh://web02 ssh://web03``
    (ClusterShell's node set syntax: ranges, steps, lists with ``,``).
    ``cmd:`` items are taken as written: their brackets are the command's."""
    if text.startswith("cmd:") or not any(c in text for c in "[],") or _IPV6.search(text):
        return [text]
    try:
        nodes = NodeSet(text)
        size = len(nodes)
    except (NodeSetException, ValueError) as e:
        raise bad(f"malformed range in {text[:200]!r} ({e})", item=text[:200]) from None
    if size > MAX_TARGETS:
        raise bad(f"{text[:200]!r} unfolds into {size} targets; a group has at most {MAX_TARGETS}")
    return list(nodes)


def fold(labels: Iterable[str]) -> str:
    """The labels folded as ClusterShell would print them (``ssh://web[01-16]``);
    labels that are not node names (a ``cmd:`` with spaces) are listed as they are."""
    labels = list(labels)
    safe = [lab for lab in labels if _FOLDABLE.match(lab) and "@" not in lab.split("://")[-1][:1]]
    rest = [lab for lab in labels if lab not in safe]
    parts: list[str] = []
    if safe:
        try:
            parts.append(str(NodeSet.fromlist(safe)))
        except (NodeSetException, ValueError):
            parts.extend(safe)  # not foldable after all: listed in full
    parts.extend(rest)
    return ",".join(parts)


def session_for(target_text: str) -> str:
    """The session id a target's member uses: the same target always gets the
    same terminal, so state (``cd``, ``export``) persists between group commands."""
    sid = target_text.replace("://", ":", 1)
    if "/" in sid or "\\" in sid or len(sid) > 180 or sid.strip() != sid:
        digest = hashlib.sha256(target_text.encode()).hexdigest()[:10]
        sid = sid.replace("/", ":").replace("\\", ":").strip()[:160] + "~" + digest
    try:
        return V.session_id(sid)
    except InvalidArgument:
        return "target~" + hashlib.sha256(target_text.encode()).hexdigest()[:24]


def is_target(text: str) -> bool:
    return text.startswith(_URL_KINDS) or text.startswith("cmd:")


def expand(
    items: str | list[str],
    groups: GroupLookup,
    selectors: SelectorLookup | None = None,
) -> list[Member]:
    """The members of a target list, in order, without duplicates.

    ``items``: one string (a group ``@name``, a session name, a target URL) or
    a list of them; ranges unfold. Refused with INVALID_ARGUMENT (nothing
    started): an empty list or group, an unknown group, a malformed range, a
    bad target, more than :data:`MAX_TARGETS` members."""
    if isinstance(items, str):
        items = [items]
    if not isinstance(items, list) or not items:
        raise bad("give at least one session name, target URL or @group")
    texts: list[str] = []
    _collect(items, groups, selectors, texts, seen_groups=())
    if not texts:
        raise bad("the target list is empty")
    members: list[Member] = []
    seen: set[str] = set()
    for text in texts:
        if text in seen:
            continue
        seen.add(text)
        if len(members) >= MAX_TARGETS:
            raise bad(f"more than {MAX_TARGETS} targets; a group has at most {MAX_TARGETS}")
        members.append(_member(text))
    return members


def _collect(
    items: list[str],
    groups: GroupLookup,
    selectors: SelectorLookup | None,
    out: list[str],
    seen_groups: tuple[str, ...],
) -> None:
    for item in items:
        if not isinstance(item, str) or not item.strip():
            raise bad("each item must be a non-empty string")
        if len(item) > MAX_ITEM_CHARS:
            raise bad(f"an item is longer than {MAX_ITEM_CHARS} characters")
        item = item.strip()
        if item.startswith("@"):
            name = item[1:]
            if name in seen_groups:
                raise bad(f"group @{name} includes itself ({' -> '.join('@' + g for g in (*seen_groups, name))})")
            inner = groups(name)
            if not inner:
                raise bad(f"group @{name} is empty")
            _collect(inner, groups, selectors, out, (*seen_groups, name))
        elif item.startswith("kubectl://") and " -l " in f" {item} ":
            if selectors is None:
                raise bad("a kubectl label selector needs a cluster lookup here")
            out.extend(selectors(item))
        else:
            out.extend(unfold(item))
        if len(out) > MAX_TARGETS:
            raise bad(f"more than {MAX_TARGETS} targets; a group has at most {MAX_TARGETS}")


def _member(text: str) -> Member:
    if is_target(text):
        parse_target(text)  # INVALID_ARGUMENT now, before anything starts
        return Member(text, session_for(text), text)
    try:
        sid = V.session_id(text)
    except InvalidArgument as e:
        raise bad(f"{text[:200]!r} is neither a target URL nor a session name ({e.message})") from None
    return Member(text, sid, None)
