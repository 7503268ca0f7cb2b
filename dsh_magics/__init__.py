"""dsh-magics: persistent per-notebook bash terminals with job handles, and a tool-schema inspector.

Holds the IPython extension entry points; everything else is imported lazily, to keep it cheap.

Imports at load: nothing but the standard library; the entry points import
notebook/ (the extension) and widgets/ when called. Nothing in the package imports this
facade's functions.
"""

from __future__ import annotations

from typing import Any

__version__ = "0.1.0"


def load_ipython_extension(ipython: Any) -> None:
    from .notebook.extension import load_ipython_extension as _load

    _load(ipython)


def unload_ipython_extension(ipython: Any) -> None:
    from .notebook.extension import unload_ipython_extension as _unload

    _unload(ipython)


def inspect(**kwargs: Any) -> Any:
    """Open the tool-schema inspector widget (see ``dsh_magics.widgets.inspector``)."""
    from .widgets.inspector import inspect as _inspect

    return _inspect(**kwargs)


def panel(**kwargs: Any) -> Any:
    """Open the terminal panel widget (see ``dsh_magics.widgets.panel``)."""
    from .widgets.panel import panel as _panel

    return _panel(**kwargs)
