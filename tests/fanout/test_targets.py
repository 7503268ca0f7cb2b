"""Target lists: ranges through ClusterShell's NodeSet, @groups, session ids, bad input refused before anything starts."""

from __future__ import annotations

import pytest

from dsh_magics.errors import InvalidArgument
from dsh_magics.fanout import MAX_TARGETS, GroupBook, expand, fold, unfold
from dsh_magics.fanout.targets import session_for

NO_GROUPS = GroupBook({}, [])


def test_ranges_unfold_and_fold_back() -> None:
    web = unfold("ssh://web[01-16]")
    assert web[0] == "ssh://web01" and web[-1] == "ssh://web16" and len(web) == 16
    assert unfold("podman://box[1-3]") == ["podman://box1", "podman://box2", "podman://box3"]
    assert fold(web) == "ssh://web[01-16]"
    assert fold(["b2", "b1", "cmd:bash -i"]) == "b[1-2],cmd:bash -i"


def test_ipv6_brackets_are_not_ranges() -> None:
    assert unfold("ssh://[::1]:2222") == ["ssh://[::1]:2222"]
    assert [m.label for m in expand(["ssh://u@[fe80::1]", "ssh://h[1-2]"], NO_GROUPS)] == [
        "ssh://u@[fe80::1]", "ssh://h1", "ssh://h2",
    ]  # fmt: skip


def test_cmd_targets_keep_their_brackets() -> None:
    assert unfold("cmd:bash -c '[ -x /bin/sh ] && exec bash -i'") == ["cmd:bash -c '[ -x /bin/sh ] && exec bash -i'"]


def test_members_get_stable_sessions_and_duplicates_go() -> None:
    members = expand(["ssh://web[1-2]", "ssh://web1", "build"], NO_GROUPS)
    assert [m.label for m in members] == ["ssh://web1", "ssh://web2", "build"]
    assert [m.session_id for m in members] == ["ssh:web1", "ssh:web2", "build"]
    assert members[0].target == "ssh://web1" and members[2].target is None
    assert session_for("kubectl://ns/pod") != session_for("kubectl://ns:pod")
    assert "/" not in session_for("kubectl://ns/pod")


def test_groups_nest_and_unknown_or_empty_or_cyclic_ones_are_refused() -> None:
    book = GroupBook({"web": ["ssh://web[1-2]"], "all": ["@web", "db"], "none": [], "loop": ["@loop"]}, [])
    assert [m.label for m in expand("@all", book)] == ["ssh://web1", "ssh://web2", "db"]
    for items, words in (
        ("@nope", "no group named 'nope'"),
        ("@none", "group @none is empty"),
        ("@loop", "includes itself"),
        ([], "at least one"),
    ):
        with pytest.raises(InvalidArgument) as e:
            expand(items, book)
        assert words in e.value.message and e.value.details["field"] == "targets"


@pytest.mark.parametrize(
    "items, words",
    [
        (["ssh://web[01-"], "malformed range"),
        (["ssh://web[5-1]"], "malformed range"),
        ([f"n[1-{MAX_TARGETS + 1}]"], f"at most {MAX_TARGETS}"),
        (["n[1-10000]"], f"unfolds into 10000 targets; a group has at most {MAX_TARGETS}"),
        ([f"a[1-{MAX_TARGETS}]", "b1"], f"more than {MAX_TARGETS}"),
        (["ssh://-oProxyCommand=x"], "cannot parse target"),
        (["bad/session"], "neither a target URL nor a session name"),
        ([""], "non-empty string"),
    ],
)
def test_bad_target_lists_are_refused(items: list[str], words: str) -> None:
    with pytest.raises(InvalidArgument) as e:
        expand(items, NO_GROUPS)
    assert words in e.value.message
