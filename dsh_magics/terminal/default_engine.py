"""The process-wide engine: the registry the module functions of
:mod:`dsh_magics.terminal` use, or a host client swapped in for it."""

from __future__ import annotations

import signal
import threading

from .. import shutdown
from .api import Engine
from .registry import Registry

_default: Engine | None = None
_default_lock = threading.Lock()


def default_registry() -> Engine:
    """The process-wide engine (created on first use; its in-process
    terminals close at exit, see :mod:`dsh_magics.shutdown`)."""
    global _default
    with _default_lock:
        if _default is None:
            _default = Registry()
            shutdown.register(shutdown.TERMINALS, _close_default)
            # SIGTERM (what a kernel manager sends when a kernel does not
            # exit in time) skips atexit; handle it only if nobody else does.
            shutdown.handle_signals(signal.SIGTERM, chain=False)
        return _default


def set_default_registry(registry: Engine | None) -> None:
    """Swap the process-wide engine (the host client uses this)."""
    global _default
    with _default_lock:
        _default = registry


def _close_default() -> None:
    """Close the in-process terminals; a host client was detached in an
    earlier step, and its terminals belong to the host."""
    reg = _default
    if isinstance(reg, Registry):
        reg.close_all()
