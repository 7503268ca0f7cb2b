"""Named groups (``@name``): from the user's groups file and from Ansible inventories.

The groups file is YAML at ``$DSH_MAGICS_GROUPS``, else
``$XDG_CONFIG_HOME/dsh-magics/groups.yaml`` (``~/.config/...`` when
``XDG_CONFIG_HOME`` is unset)::

    groups:
      web: ssh://web[01-16]
      fleet: ["@web", "podman://box[1-3]"]
    inventories: [~/ansible/hosts.ini]

Inventories listed there, and in ``$DSH_MAGICS_INVENTORY`` (paths separated
by ``:``), add their groups; the file's own groups win over an inventory's,
and a group several inventories have (``all`` at least) is the union of theirs.
Files are read on every lookup, so an edit applies to the next command.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

from ..errors import InvalidArgument
from . import inventory

ENV_GROUPS = "DSH_MAGICS_GROUPS"
ENV_INVENTORY = "DSH_MAGICS_INVENTORY"


def groups_path(environ: Mapping[str, str] | None = None) -> Path:
    """Where the groups file is looked for (it need not exist)."""
    env = os.environ if environ is None else environ
    if env.get(ENV_GROUPS):
        return Path(env[ENV_GROUPS]).expanduser()
    base = env.get("XDG_CONFIG_HOME") or os.path.join(env.get("HOME") or os.path.expanduser("~"), ".config")
    return Path(base) / "dsh-magics" / "groups.yaml"


class GroupBook:
    """Resolves group names; built per command from the files as they are now."""

    def __init__(self, own: dict[str, list[str]], inventories: list[inventory.Inventory]) -> None:
        self._own = own
        self._inventories = inventories

    @classmethod
    def load(cls, environ: Mapping[str, str] | None = None) -> GroupBook:
        env = os.environ if environ is None else environ
        own, inv_paths = _read_groups_file(groups_path(env))
        inv_paths += [p for p in env.get(ENV_INVENTORY, "").split(":") if p.strip()]
        return cls(own, [inventory.load(p) for p in inv_paths])

    def names(self) -> list[str]:
        found = set(self._own)
        for inv in self._inventories:
            found.update(inv.group_names())
        return sorted(found)

    def __call__(self, name: str) -> list[str]:
        """The items of group ``name``; unknown is INVALID_ARGUMENT naming the known ones."""
        if name in self._own:
            return list(self._own[name])
        found = [inv.targets(name) for inv in self._inventories]
        if any(f is not None for f in found):
            # a name several inventories use (``all`` at least) means all of theirs
            return list(dict.fromkeys(t for f in found if f is not None for t in f))
        known = ", ".join(self.names()[:20]) or "none are defined"
        raise InvalidArgument(
            f"targets: no group named {name[:100]!r} (known: {known}; groups file {groups_path()})",
            field="targets",
        )


def _read_groups_file(path: Path) -> tuple[dict[str, list[str]], list[str]]:
    try:
        text = path.read_text()
    except FileNotFoundError:
        return {}, []
    except OSError as e:
        raise InvalidArgument(f"cannot read the groups file {str(path)!r}: {e.strerror}", field="targets") from None
    try:
        data: Any = yaml.safe_load(text) or {}
    except yaml.YAMLError as e:
        raise InvalidArgument(f"the groups file {str(path)!r} is not valid YAML ({e})", field="targets") from None
    if not isinstance(data, dict) or not set(data) <= {"groups", "inventories"}:
        raise InvalidArgument(
            f"the groups file {str(path)!r} holds a mapping with 'groups' and/or 'inventories'", field="targets"
        )
    groups = data.get("groups") or {}
    invs = data.get("inventories") or []
    if not isinstance(groups, dict) or not isinstance(invs, list):
        raise InvalidArgument(f"the groups file {str(path)!r}: groups is a mapping, inventories a list", field="targets")
    own: dict[str, list[str]] = {}
    for name, items in groups.items():
        listed = [items] if isinstance(items, str) else items
        if not isinstance(listed, list) or not all(isinstance(i, str) for i in listed):
            raise InvalidArgument(f"the groups file {str(path)!r}: group {name!r} is a string or a list of strings", field="targets")
        own[str(name)] = listed
    base = path.parent
    return own, [str(base / Path(p).expanduser()) for p in invs if isinstance(p, str)]
