"""Which terminal is "this notebook's": the default session id, from the most stable identity.

The notebook's path (name plus a short hash), else the kernel id, else ``default`` (docs/magics.md).
"""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

PROCESS_DEFAULT = "default"

_UNSAFE = re.compile(r"[^A-Za-z0-9._+=,@~-]+")
_KERNEL_FILE = re.compile(r"^kernel-(?P<id>[^/\\]+)\.json$")
_NAME_MAX = 60


@dataclass(frozen=True)
class NotebookIdentity:
    """The default session id and where it came from (shown by ``%bash_list``)."""

    session_id: str
    source: str  # "notebook", "kernel", "process" or "config"
    detail: str = ""

    def describe(self) -> str:
        where = {
            "notebook": "from the notebook path",
            "kernel": "from the kernel id",
            "process": "process default (no notebook path or kernel id seen)",
            "config": "set by configuration",
        }.get(self.source, self.source)
        if not self.detail:
            return where
        if self.source == "kernel":
            return f"{where}: {os.path.basename(self.detail)}"
        from .render import short_path

        return f"{where}: {short_path(self.detail)}"


def session_id_for_path(path: str) -> str:
    """``analysis.ipynb-1a2b3c`` for ``/any/where/analysis.ipynb``."""
    name = os.path.basename(path.rstrip("/\\")) or "notebook"
    name = _UNSAFE.sub("_", name).strip("_.") or "notebook"
    digest = hashlib.sha256(path.encode("utf-8", "surrogatepass")).hexdigest()[:6]
    return f"{name[:_NAME_MAX]}-{digest}"


def session_id_for_kernel(connection_file: str) -> str:
    """``kernel-<first 8 chars of the id>``, or the file stem for other names."""
    base = os.path.basename(connection_file)
    m = _KERNEL_FILE.match(base)
    kid = m.group("id") if m else os.path.splitext(base)[0]
    kid = _UNSAFE.sub("_", kid).strip("_.") or "unknown"
    return f"kernel-{kid[:8]}"


def notebook_path(user_ns: Mapping[str, Any], environ: Mapping[str, str]) -> str | None:
    """The notebook path the front end told the kernel about, if any."""
    for key in ("__session__", "__vsc_ipynb_file__"):
        value = user_ns.get(key)
        if isinstance(value, str) and value.strip():
            return value.strip()
    value = environ.get("JPY_SESSION_NAME", "")
    return value.strip() or None


def kernel_connection_file(shell: Any = None) -> str | None:
    """The running ipykernel's connection file, without creating a kernel app.

    Only under a kernel: in terminal IPython the application singleton is a
    TerminalIPythonApp, and asking IPKernelApp for its instance would fail.
    """
    if shell is not None and getattr(shell, "kernel", None) is None:
        return None
    try:
        from ipykernel.kernelapp import IPKernelApp
    except ImportError:
        return None
    app = getattr(IPKernelApp, "_instance", None)
    if not isinstance(app, IPKernelApp):
        return None
    cf = getattr(app, "connection_file", "") or ""
    return cf or None


def identify(
    user_ns: Mapping[str, Any],
    environ: Mapping[str, str] | None = None,
    connection_file: str | None = None,
    configured: str | None = None,
) -> NotebookIdentity:
    """Work out this kernel's default session id (order: docs/magics.md, "Internals")."""
    env = os.environ if environ is None else environ
    if configured:
        return NotebookIdentity(configured, "config")
    path = notebook_path(user_ns, env)
    if path:
        return NotebookIdentity(session_id_for_path(path), "notebook", path)
    if connection_file:
        return NotebookIdentity(session_id_for_kernel(connection_file), "kernel", connection_file)
    return NotebookIdentity(PROCESS_DEFAULT, "process")
