"""The merged view groups targets as ``dshbak -c`` does (Debian's pdsh), and its diff view."""

from __future__ import annotations

import random
import shutil
import subprocess

import pytest
from ClusterShell.NodeSet import NodeSet

from dsh_magics.fanout import blocks, render, render_diff

DSHBAK = shutil.which("dshbak")


def _dshbak_groups(outputs: dict[str, str]) -> set[tuple[frozenset[str], str]]:
    """The groups dshbak -c makes of the same per-target outputs."""
    feed = "".join(f"{label}: {line}\n" for label, out in outputs.items() for line in out.splitlines())
    text = subprocess.run([DSHBAK or "dshbak", "-c"], input=feed, capture_output=True, text=True, check=True, timeout=60).stdout
    found: set[tuple[frozenset[str], str]] = set()
    parts = text.split("----------------\n")
    # "", header, body, header, body ...
    for header, body in zip(parts[1::2], parts[2::2], strict=True):
        found.add((frozenset(NodeSet(header.strip())), body))
    return found


def _ours(outputs: dict[str, str]) -> set[tuple[frozenset[str], str]]:
    return {(frozenset(b.labels), b.output) for b in blocks(outputs)}


def _random_outputs(rng: random.Random) -> dict[str, str]:
    variants = ["Linux 6.1.0\n", "Linux 6.1.0\nload 0.1\n", "Linux 6.8.0\n", "error: disk full\nLinux 6.1.0\n"]
    names = [f"node{n:02d}" for n in range(1, rng.randint(2, 24))] + [f"gpu{n}" for n in range(rng.randint(0, 5))]
    return {name: rng.choice(variants[: rng.randint(1, len(variants))]) for name in names}


@pytest.mark.skipif(DSHBAK is None, reason="dshbak (Debian package pdsh) is not installed")
@pytest.mark.parametrize("seed", range(12))
def test_the_same_groups_as_dshbak_c(seed: int) -> None:
    outputs = _random_outputs(random.Random(seed))
    assert _ours(outputs) == _dshbak_groups(outputs)


def test_the_oracle_can_tell_a_wrong_grouping() -> None:
    """The comparison fails for a grouping that is not dshbak's."""
    if DSHBAK is None:
        pytest.skip("dshbak is not installed")
    outputs = {"a1": "x\n", "a2": "x\n", "b1": "y\n"}
    wrong = {(frozenset({"a1", "a2", "b1"}), "x\n")}
    assert _dshbak_groups(outputs) != wrong
    assert _ours(outputs) == _dshbak_groups(outputs)


def test_render_folds_names_and_puts_the_largest_block_first() -> None:
    outputs = {f"ssh://web{n:02d}": "6.1.0\n" for n in range(1, 17)} | {"podman://box1": "6.8.0\n"}
    text = render(blocks(outputs))
    assert text.startswith("----------------\nssh://web[01-16] (16)\n----------------\n6.1.0\n")
    assert "podman://box1 (1)\n----------------\n6.8.0\n" in text


def test_the_diff_view_compares_with_the_most_common_output() -> None:
    outputs = {"a1": "one\ntwo\n", "a2": "one\ntwo\n", "b1": "one\nTWO\n", "c1": "one\ntwo\n"}
    text = render_diff(blocks(outputs))
    assert text.startswith("----------------\na[1-2],c1 (3)\n----------------\none\ntwo\n")
    assert "b1 (1) differs from a[1-2],c1\n" in text
    assert "-two\n+TWO\n" in text and "--- a[1-2],c1\n+++ b1\n" in text
    assert render_diff(blocks({"a": "same\n", "b": "same\n"})) == render(blocks({"a": "same\n", "b": "same\n"}))
