"""``%load_ext dsh_magics``: register the magics, the formatters and the exit steps.

The one place where IPython learns how the engine's values show themselves:
the engine's dataclasses carry no reprs of their own.
"""

from __future__ import annotations

import atexit
import os
import signal
import sys
import threading
from typing import Any

from . import display as dsp
from .errors import DshError
from .magic_args import usage_line
from .magics import BashMagics
from .render import info_html, info_text, read_html, read_text, result_html, result_text
from .terminal import ReadResult, Result, TerminalInfo, default_registry

_STATE_ATTR = "_dsh_magics_state"
_ADDONS = ("inspector_magic", "panel_magic")


class _State:
    def __init__(self, magics: BashMagics) -> None:
        self.magics = magics
        self.formatters: list[tuple[Any, type, Any]] = []
        self.submodules: list[Any] = []


def load_ipython_extension(ip: Any) -> None:
    """Register the magics (idempotent, reload-safe)."""
    if getattr(ip, _STATE_ATTR, None) is not None:
        unload_ipython_extension(ip)
    from .host import select_registry

    try:
        registry = select_registry(_host_setting(ip))
    except DshError as e:
        raise usage_line(e) from None
    magics = BashMagics(shell=ip, registry=registry)
    ip.register_magics(magics)
    state = _State(magics)
    setattr(ip, _STATE_ATTR, state)
    if magics not in ip.configurables:
        ip.configurables.append(magics)
    ip.events.register("post_run_cell", magics.post_run_cell)
    register_formatters(ip, state.formatters)
    _install_process_cleanup()
    for name in _ADDONS:
        try:
            mod = __import__(f"dsh_magics.widgets.{name}", fromlist=["register"])
        except ImportError:
            continue
        try:
            mod.register(ip)
        except Exception as e:  # noqa: BLE001 - an optional add-on must not break the magics
            print(f"dsh_magics: {name} not loaded: {e}", file=sys.stderr)
            continue
        state.submodules.append(mod)


def unload_ipython_extension(ip: Any) -> None:
    """Remove the magics, hooks and formatters. Terminals are *not* closed:
    ``%reload_ext`` must not lose the user's shells (exit closes them)."""
    state: _State | None = getattr(ip, _STATE_ATTR, None)
    if state is None:
        return
    magics = state.magics
    mm = ip.magics_manager
    for kind in ("line", "cell"):
        table = mm.magics[kind]
        for name, fn in list(table.items()):
            if getattr(fn, "__self__", None) is magics:
                del table[name]
    if mm.registry.get(type(magics).__name__) is magics:
        del mm.registry[type(magics).__name__]
    try:
        ip.events.unregister("post_run_cell", magics.post_run_cell)
    except ValueError:
        pass
    if magics in ip.configurables:
        ip.configurables.remove(magics)
    for formatter, typ, old in state.formatters:
        formatter.pop(typ, None)
        if old is not None:
            formatter.for_type(typ, old)
    for mod in state.submodules:
        try:
            mod.unregister(ip)
        except Exception:  # noqa: BLE001
            pass
    magics.close()
    setattr(ip, _STATE_ATTR, None)


def _plain(text_of: Any) -> Any:
    return lambda obj, p, cycle: p.text(text_of(obj))


def register_formatters(ip: Any, undo: list[tuple[Any, type, Any]]) -> None:
    """Text and HTML for the engine's values (``Result`` and its subclasses,
    ``TerminalInfo``, ``ReadResult``); ``undo`` collects what unload restores."""
    fmts = ip.display_formatter.formatters
    plain, rich = fmts["text/plain"], fmts["text/html"]
    pairs: list[tuple[Any, type, Any]] = [
        (plain, Result, _plain(result_text)),
        (rich, Result, result_html),
        (plain, TerminalInfo, _plain(info_text)),
        (rich, TerminalInfo, info_html),
        (plain, ReadResult, _plain(read_text)),
        (rich, ReadResult, read_html),
    ]
    for formatter, typ, fn in pairs:
        old = formatter.for_type(typ, fn)
        undo.append((formatter, typ, old))


# ---------------------------------------------------------------------------
# process exit

_cleanup_installed = False
_previous_handlers: dict[int, Any] = {}
# Signals that end the process without running atexit: SIGTERM (jupyter_client
# sends it to a kernel that does not exit in time) and SIGHUP (a closed
# terminal window, for plain IPython).
_FATAL_SIGNALS = (signal.SIGTERM, signal.SIGHUP)


def _host_setting(ip: Any) -> Any:
    """``c.BashMagics.host`` from the configuration (the magics object that
    would carry it does not exist yet when the registry is chosen)."""
    try:
        return ip.config.BashMagics.get("host", "auto")
    except AttributeError:
        return "auto"


def close_all_terminals() -> None:
    """Close every terminal of this process (kernel shutdown, restart, exit);
    with the terminal host, detach instead: the notebook's terminals live on."""
    dsp.closing.set()
    from .host import detach_on_shutdown

    if detach_on_shutdown():
        return
    try:
        default_registry().close_all()
    except Exception:  # noqa: BLE001 - best effort at exit
        pass


def _on_fatal_signal(signum: int, frame: Any) -> None:
    # Close the shells first, then let the previous handler (or the default
    # action) end the process as it would have without us.
    close_all_terminals()
    prev = _previous_handlers.get(signum, signal.SIG_DFL)
    if callable(prev):
        prev(signum, frame)
        return
    if prev == signal.SIG_IGN:
        return
    signal.signal(signum, signal.SIG_DFL)
    os.kill(os.getpid(), signum)


def _install_process_cleanup() -> None:
    """atexit (normal exit, and ipykernel's shutdown and restart path) plus
    SIGTERM/SIGHUP. The engine registers its own atexit too; ours also stops
    live views before the kernel's sockets go away. SIGKILL cannot be caught;
    the engine's parent-death signal is what covers it."""
    global _cleanup_installed
    if _cleanup_installed:
        return
    _cleanup_installed = True
    default_registry()  # created first, so our atexit handler runs before its own
    atexit.register(close_all_terminals)
    if threading.current_thread() is not threading.main_thread():
        return
    for signum in _FATAL_SIGNALS:
        try:
            prev = signal.getsignal(signum)
            if prev is _on_fatal_signal or prev == signal.SIG_IGN:
                continue
            _previous_handlers[signum] = prev
            signal.signal(signum, _on_fatal_signal)
        except (ValueError, OSError):
            pass
