"""The groups of an Ansible inventory (INI or YAML), as target lists, so an existing inventory works as it is.

Hosts become ``ssh://[user@]host[:port]`` (``ansible_host``, ``ansible_user``,
``ansible_port``), or ``docker://``/``podman://`` for those connection
plugins; ``ansible_connection=local`` hosts become a local session named after
the host. Ranges (``web[01:16]``) unfold. Variables other than these are ignored.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from ..errors import InvalidArgument

_RANGE = re.compile(r"\[([0-9]+):([0-9]+)(?::([0-9]+))?\]")
_CONTAINER_KINDS = {
    "docker": "docker",
    "community.docker.docker": "docker",
    "podman": "podman",
    "containers.podman.podman": "podman",
}


@dataclass
class Inventory:
    """Group name -> hosts (and child groups); host -> its connection vars."""

    hosts: dict[str, dict[str, Any]] = field(default_factory=dict)
    groups: dict[str, list[str]] = field(default_factory=dict)
    children: dict[str, list[str]] = field(default_factory=dict)

    def group_names(self) -> list[str]:
        return sorted({*self.groups, *self.children, "all"})

    def targets(self, name: str) -> list[str] | None:
        """The target list of group ``name`` (children included), or None if it has no such group."""
        if name == "all":
            return [self.target(h) for h in self.hosts]
        if name not in self.groups and name not in self.children:
            return None
        hosts: list[str] = []
        self._hosts_of(name, hosts, ())
        return [self.target(h) for h in dict.fromkeys(hosts)]

    def _hosts_of(self, name: str, out: list[str], path: tuple[str, ...]) -> None:
        if name in path:
            raise InvalidArgument(f"inventory group {name!r} includes itself", field="targets")
        out.extend(self.groups.get(name, []))
        for child in self.children.get(name, []):
            self._hosts_of(child, out, (*path, name))

    def target(self, host: str) -> str:
        v = self.hosts.get(host, {})
        conn = str(v.get("ansible_connection", "ssh"))
        address = str(v.get("ansible_host", host))
        if conn == "local":
            return host
        if conn in _CONTAINER_KINDS:
            return f"{_CONTAINER_KINDS[conn]}://{address}"
        user = v.get("ansible_user", v.get("ansible_ssh_user"))
        port = v.get("ansible_port", v.get("ansible_ssh_port"))
        text = f"ssh://{user + '@' if user else ''}{address}{':' + str(port) if port else ''}"
        return text

    def add_host(self, group: str, pattern: str, variables: Mapping[str, Any]) -> None:
        for host in unfold_ansible(pattern):
            self.hosts.setdefault(host, {}).update(variables)
            self.groups.setdefault(group, []).append(host)


def unfold_ansible(pattern: str) -> list[str]:
    """``web[01:03]`` -> ``web01 web02 web03`` (Ansible's numeric ranges, with a
    step; leading zeros keep the width). Letter ranges are refused."""
    m = _RANGE.search(pattern)
    if m is None:
        if "[" in pattern or "]" in pattern:
            raise InvalidArgument(f"inventory host pattern {pattern!r}: only numeric ranges [a:b] are supported", field="targets")
        return [pattern]
    start, end, step = m.group(1), m.group(2), int(m.group(3) or 1)
    width = len(start) if start.startswith("0") and len(start) > 1 else 0
    if step < 1 or int(end) < int(start) or (int(end) - int(start)) // step > 100_000:
        raise InvalidArgument(f"inventory host pattern {pattern!r}: bad range", field="targets")
    out: list[str] = []
    for n in range(int(start), int(end) + 1, step):
        for rest in unfold_ansible(pattern[m.end() :]):
            out.append(f"{pattern[: m.start()]}{str(n).zfill(width)}{rest}")
    return out


def load(path: str | Path) -> Inventory:
    """An inventory file: YAML if it parses as a mapping with ``hosts`` or
    ``children`` somewhere, else INI. A file that is neither is INVALID_ARGUMENT."""
    p = Path(path).expanduser()
    try:
        text = p.read_text()
    except OSError as e:
        raise InvalidArgument(f"cannot read inventory {str(p)!r}: {e.strerror}", field="targets") from None
    if p.suffix in (".yml", ".yaml") or _looks_yaml(text):
        return _from_yaml(text, str(p))
    return _from_ini(text, str(p))


def _looks_yaml(text: str) -> bool:
    first = next((ln for ln in text.splitlines() if ln.strip() and not ln.lstrip().startswith(("#", ";"))), "")
    return first.rstrip().endswith(":") and not first.lstrip().startswith("[")


def _from_yaml(text: str, where: str) -> Inventory:
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as e:
        raise InvalidArgument(f"inventory {where!r} is not valid YAML ({e})", field="targets") from None
    if not isinstance(data, dict):
        raise InvalidArgument(f"inventory {where!r}: expected a mapping of groups", field="targets")
    inv = Inventory()
    for name, body in data.items():
        _yaml_group(inv, str(name), body, where)
    return inv


def _yaml_group(inv: Inventory, name: str, body: Any, where: str) -> None:
    if body is None:
        inv.groups.setdefault(name, [])
        return
    if not isinstance(body, dict):
        raise InvalidArgument(f"inventory {where!r}: group {name!r} is not a mapping", field="targets")
    group_vars = body.get("vars") or {}
    for pattern, hvars in (body.get("hosts") or {}).items():
        inv.add_host(name, str(pattern), {**group_vars, **(hvars or {})})
    inv.groups.setdefault(name, [])
    for child, child_body in (body.get("children") or {}).items():
        inv.children.setdefault(name, []).append(str(child))
        _yaml_group(inv, str(child), child_body, where)


def _from_ini(text: str, where: str) -> Inventory:
    inv = Inventory()
    section, kind = "ungrouped", "hosts"
    group_vars: dict[str, dict[str, str]] = {}
    pending: list[tuple[str, str, dict[str, str]]] = []
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith(("#", ";")):
            continue
        if line.startswith("["):
            if not line.endswith("]"):
                raise InvalidArgument(f"inventory {where!r} line {number}: bad section header", field="targets")
            section, _, kind = line[1:-1].partition(":")
            kind = kind or "hosts"
            inv.groups.setdefault(section, [])
            continue
        if kind == "children":
            inv.children.setdefault(section, []).append(line.split()[0])
        elif kind == "vars":
            key, _, value = line.partition("=")
            group_vars.setdefault(section, {})[key.strip()] = value.strip()
        else:
            words = line.split()
            variables = dict(w.partition("=")[::2] for w in words[1:] if "=" in w)
            pending.append((section, words[0], variables))
    for section, pattern, variables in pending:
        inv.add_host(section, pattern, {**group_vars.get(section, {}), **variables})
    return inv
