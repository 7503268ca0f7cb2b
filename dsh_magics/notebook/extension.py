"""``%load_ext dsh_magics``: register the magics, their live views, the formatters and the exit steps.

The one place IPython learns how engine values show themselves (the dataclasses carry no reprs).
"""

from __future__ import annotations

import logging
import signal
import sys
from typing import Any

from .. import shutdown
from ..errors import DshError
from ..terminal import ReadResult, Result, TerminalInfo
from ..terminal.api import Engine
from . import following
from . import values as dsp
from .live_views import ViewManager
from .magic_args import usage_line
from .magics import BashMagics
from .render import info_html, info_text, read_html, read_text, result_html, result_text

log = logging.getLogger(__name__)

_STATE_ATTR = "_dsh_magics_state"
_ADDONS = ("inspector_magic", "panel_magic", "terminal_tab_magic")


class _State:
    def __init__(self, magics: BashMagics, views: ViewManager) -> None:
        self.magics = magics
        self.views = views
        self.formatters: list[tuple[Any, type, Any]] = []
        self.submodules: list[Any] = []
        self.unregister: list[Any] = []


def load_ipython_extension(ip: Any) -> None:
    """Register the magics (idempotent, reload-safe)."""
    if getattr(ip, _STATE_ATTR, None) is not None:
        unload_ipython_extension(ip)
    from ..host import select_registry

    try:
        registry = select_registry(_host_setting(ip))
    except DshError as e:
        raise usage_line(e) from None
    views = ViewManager(registry, _publisher(ip))
    magics = BashMagics(shell=ip, registry=registry, views=views)
    ip.register_magics(magics)
    state = _State(magics, views)
    setattr(ip, _STATE_ATTR, state)
    if magics not in ip.configurables:
        ip.configurables.append(magics)
    ip.events.register("post_run_cell", magics.post_run_cell)
    register_formatters(ip, state.formatters, registry)
    state.unregister += _exit_steps(views)
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
        pass  # not registered any more (the person removed it): nothing to undo
    if magics in ip.configurables:
        ip.configurables.remove(magics)
    for formatter, typ, old in state.formatters:
        formatter.pop(typ, None)
        if old is not None:
            formatter.for_type(typ, old)
    for mod in state.submodules:
        try:
            mod.unregister(ip)
        except Exception:  # noqa: BLE001 - one add-on must not stop the unload of the rest
            log.warning("dsh_magics: unloading %s failed", mod.__name__, exc_info=True)
    for off in state.unregister:
        off()
    state.views.close()
    setattr(ip, _STATE_ATTR, None)


def _plain(text_of: Any) -> Any:
    return lambda obj, p, cycle: p.text(text_of(obj))


def register_formatters(ip: Any, undo: list[tuple[Any, type, Any]], registry: Engine | None = None) -> None:
    """Text and HTML for the engine's values (``Result`` and its subclasses,
    ``TerminalInfo``, ``ReadResult``); ``undo`` collects what unload restores.
    With the ``registry``, a result's HTML has the colours its terminal's
    screen still shows (``display.output_colours``)."""
    fmts = ip.display_formatter.formatters
    plain, rich = fmts["text/plain"], fmts["text/html"]

    def result_rich(r: Result) -> str:
        colours = dsp.output_colours(registry, r) if registry is not None else {}
        return result_html(r, styled=colours)

    pairs: list[tuple[Any, type, Any]] = [
        (plain, Result, _plain(result_text)),
        (rich, Result, result_rich),
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


def _host_setting(ip: Any) -> Any:
    """``c.BashMagics.host`` from the configuration (the magics object that
    would carry it does not exist yet when the registry is chosen)."""
    try:
        return ip.config.BashMagics.get("host", "auto")
    except AttributeError:
        return "auto"


def _publisher(ip: Any) -> Any:
    """The shell's display publisher, looked up at each publish (a shell
    without one, plain IPython in a terminal, publishes nothing)."""

    def publish(**kwargs: Any) -> None:
        pub = getattr(ip, "display_pub", None)
        if pub is not None:
            pub.publish(**kwargs)

    return publish


def _exit_steps(views: ViewManager) -> list[Any]:
    """Stop live views first at exit (before a kernel's sockets go; the
    engine's own steps then detach or close the terminals). SIGTERM (what
    jupyter_client sends a kernel that does not exit in time) and SIGHUP (a
    closed terminal window) skip atexit, so they run the steps too. SIGKILL
    cannot be caught: the engine's parent-death signal covers it."""

    def stop_views() -> None:
        following.closing.set()
        views.stop()

    off = shutdown.register(shutdown.VIEWS, stop_views)
    shutdown.handle_signals(signal.SIGTERM, signal.SIGHUP)
    return [off]
