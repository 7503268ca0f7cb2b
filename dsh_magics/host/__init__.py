"""The terminal host: terminals that belong to the notebook, not the kernel.

:func:`select_registry` picks in-process or the host at extension load (docs/host.md).

May import: terminal/ (the engine it serves, the local process layer), answer.page
(the page it serves), errors, jobs, shutdown. Must not import: notebook/, tools/, mcp/,
widgets/, attach/, lab/, harness/, answer.cli, cli.
"""

from __future__ import annotations

import logging
import os
import sys
import threading
from collections.abc import Mapping
from typing import Any

from ..errors import DshError
from ..terminal import Engine, default_registry, set_default_registry
from .client import HOST_GONE_NOTE, HostClient
from .lifecycle import (
    ENV_MODE,
    ModeChoice,
    choose_mode,
    ensure_host,
    host_status,
    jupyter_server_pid,
    probe,
    stop_host,
)
from .runtime import HostPaths, default_dir

__all__ = [
    "ENV_MODE",
    "HOST_GONE_NOTE",
    "HostClient",
    "HostPaths",
    "ModeChoice",
    "active_client",
    "choose_mode",
    "current_mode",
    "detach_on_shutdown",
    "ensure_host",
    "host_status",
    "jupyter_server_pid",
    "probe",
    "select_registry",
    "stop_host",
]

_client: HostClient | None = None
_choice: ModeChoice | None = None
_lock = threading.Lock()


def select_registry(configured: Any = None, *, environ: Mapping[str, str] | None = None) -> Engine:
    """Decide where this process's terminals live, install that registry as
    the process default and return it.

    ``configured`` is the config key's value (``"auto"``, ``"on"``/``"off"``,
    a bool or None); ``DSH_MAGICS_HOST=0/1`` overrides it. In automatic mode a
    host that cannot be started means a warning and the in-process engine; in
    forced mode it raises ``HOST_UNAVAILABLE``. Calling it again (a reloaded
    extension) returns the same client.
    """
    global _client, _choice
    choice = choose_mode(configured, environ)
    with _lock:
        _choice = choice
        if not choice.use_host:
            return default_registry()
        if _client is not None and not _client.detached and _client.paths.name == choice.name:
            return _client
        try:
            directory = default_dir(os.environ if environ is None else environ)
            client = HostClient(HostPaths.for_name(choice.name, directory), watch_pid=choice.watch_pid)
            client.connect()
        except DshError as e:
            if choice.forced:
                raise
            print(
                f"dsh_magics: terminal host unavailable ({e.message}); using in-process terminals, "
                "which end with this kernel",
                file=sys.stderr,
            )
            _choice = ModeChoice(False, False, choice.name, None, f"in-process (host unavailable: {e.message})")
            return default_registry()
        _client = client
        set_default_registry(client)
        return client


def detach_on_shutdown() -> bool:
    """At kernel exit: leave the host without closing the notebook's
    terminals. Returns True if there was a host to detach from (then the
    caller must *not* close the terminals), False in in-process mode."""
    global _client
    with _lock:
        client = _client
    if client is None:
        return False
    try:
        client.detach()
    except Exception:  # noqa: BLE001 - at exit, never raise
        logging.getLogger(__name__).debug("detaching at exit failed", exc_info=True)
    return True


def active_client() -> HostClient | None:
    """The host client this process uses, if it uses one."""
    return _client


def current_mode() -> ModeChoice | None:
    """What :func:`select_registry` decided last, with a reason to show users."""
    return _choice
