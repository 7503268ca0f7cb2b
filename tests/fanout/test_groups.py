"""Named groups: the XDG groups file, Ansible inventories (INI and YAML), and kubectl label selectors."""

from __future__ import annotations

import os
import stat
import textwrap
from pathlib import Path

import pytest

from dsh_magics.errors import InvalidArgument, TargetUnreachable
from dsh_magics.fanout import GroupBook, expand, groups_path, kubectl

INI = """\
# a plain Ansible INI inventory
[web]
web[01:03].example.com ansible_user=deploy
db1 ansible_host=10.0.0.5 ansible_port=2222

[boxes]
box1 ansible_connection=podman
here ansible_connection=local

[fleet:children]
web
boxes

[web:vars]
ansible_port=22
"""

YAML = """\
all:
  hosts:
    lone:
  children:
    gpu:
      vars:
        ansible_user: ml
      hosts:
        gpu[1:4:2]:
        gpu9:
          ansible_port: 2200
    cluster:
      children:
        gpu:
"""


def test_the_groups_file_follows_xdg(tmp_path: Path) -> None:
    assert groups_path({"HOME": "/home/u"}) == Path("/home/u/.config/dsh-magics/groups.yaml")
    assert groups_path({"XDG_CONFIG_HOME": "/x", "HOME": "/h"}) == Path("/x/dsh-magics/groups.yaml")
    assert groups_path({"DSH_MAGICS_GROUPS": str(tmp_path / "g.yaml"), "XDG_CONFIG_HOME": "/x"}) == tmp_path / "g.yaml"


def test_groups_file_and_inventories_resolve(tmp_path: Path) -> None:
    (tmp_path / "hosts.ini").write_text(INI)
    (tmp_path / "inv.yml").write_text(YAML)
    (tmp_path / "dsh-magics").mkdir()
    (tmp_path / "dsh-magics" / "groups.yaml").write_text(
        textwrap.dedent(
            """\
            groups:
              web: ssh://mine[1-2]
              mixed: ["@gpu", "podman://box[1-2]"]
            inventories: [../hosts.ini]
            """
        )
    )
    env = {"XDG_CONFIG_HOME": str(tmp_path), "DSH_MAGICS_INVENTORY": str(tmp_path / "inv.yml")}
    book = GroupBook.load(env)
    # the file's own group wins over the inventory's [web]
    assert [m.label for m in expand("@web", book)] == ["ssh://mine1", "ssh://mine2"]
    assert [m.label for m in expand("@fleet", book)] == [
        "ssh://deploy@web01.example.com:22",
        "ssh://deploy@web02.example.com:22",
        "ssh://deploy@web03.example.com:22",
        "ssh://10.0.0.5:2222",
        "podman://box1",
        "here",
    ]
    assert [m.label for m in expand("@mixed", book)] == [
        "ssh://ml@gpu1", "ssh://ml@gpu3", "ssh://ml@gpu9:2200", "podman://box1", "podman://box2",
    ]  # fmt: skip
    assert [m.label for m in expand("@cluster", book)] == ["ssh://ml@gpu1", "ssh://ml@gpu3", "ssh://ml@gpu9:2200"]
    assert "lone" in " ".join(m.label for m in expand("@all", book))
    assert {"web", "fleet", "gpu", "cluster", "mixed"} <= set(book.names())


def test_broken_files_are_clear_errors(tmp_path: Path) -> None:
    bad = tmp_path / "g.yaml"
    for text, words in (("groups: [", "not valid YAML"), ("hosts: x", "'groups' and/or 'inventories'"),
                        ("groups: {a: 3}", "a string or a list of strings")):  # fmt: skip
        bad.write_text(text)
        with pytest.raises(InvalidArgument) as e:
            GroupBook.load({"DSH_MAGICS_GROUPS": str(bad)})
        assert words in e.value.message
    with pytest.raises(InvalidArgument, match="cannot read inventory"):
        GroupBook.load({"DSH_MAGICS_GROUPS": str(tmp_path / "none.yaml"), "DSH_MAGICS_INVENTORY": str(tmp_path / "no.ini")})


def test_kubectl_selector_argv() -> None:
    assert kubectl.lookup_argv("prod", "web", "app=web,tier!=db") == [
        "kubectl", "--context", "prod", "get", "pods", "-n", "web", "-l", "app=web,tier!=db",
        "--field-selector=status.phase=Running", "-o", 'jsonpath={range .items[*]}{.metadata.name}{"\\n"}{end}',
    ]  # fmt: skip
    for item in ("kubectl://web -l", "kubectl://a/b/c/d -l x=y", "kubectl://Bad -l x=y", "kubectl://web -l 'x;rm'"):
        with pytest.raises(InvalidArgument):
            kubectl.parse(item)


def _fake_kubectl(bin_dir: Path, script: str) -> None:
    """A stand-in for the *cluster* (no cluster here): a kubectl on PATH."""
    path = bin_dir / "kubectl"
    path.write_text("#!/bin/sh\n" + script)
    path.chmod(path.stat().st_mode | stat.S_IXUSR)


def test_kubectl_selector_expands_to_the_pods_at_run_time(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _fake_kubectl(
        tmp_path,
        'printf "%s\\n" "$*" > "$(dirname "$0")/argv"\n'
        'case "$*" in *"-l app=web "*) printf "web-7d-abc\\nweb-7d-def\\n";; esac\n',
    )
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}{os.environ['PATH']}")
    members = expand(["kubectl://prod/shop/app -l app=web"], GroupBook({}, []), kubectl.expand)
    assert [m.label for m in members] == ["kubectl://prod/shop/web-7d-abc/app", "kubectl://prod/shop/web-7d-def/app"]
    assert (tmp_path / "argv").read_text().startswith("--context prod get pods -n shop -l app=web ")
    assert [m.label for m in expand("kubectl://shop -l app=web", GroupBook({}, []), kubectl.expand)] == [
        "kubectl://shop/web-7d-abc", "kubectl://shop/web-7d-def",
    ]  # fmt: skip
    with pytest.raises(InvalidArgument, match="no running pod matches"):
        expand("kubectl://shop -l app=none", GroupBook({}, []), kubectl.expand)
    _fake_kubectl(tmp_path, 'echo "The connection to the server was refused" >&2; exit 1\n')
    with pytest.raises(TargetUnreachable, match="connection to the server was refused"):
        expand("kubectl://shop -l app=web", GroupBook({}, []), kubectl.expand)
