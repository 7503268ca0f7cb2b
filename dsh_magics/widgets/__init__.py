"""Notebook widgets over the package's cores.

Each widget is a thin ipywidgets renderer over a pure view-model, so its logic
is testable without a browser and the same information is available as static
HTML and text when no widget frontend is present:

* :mod:`.inspector` — the ``bash`` tool-schema inspector (``dsh_magics.inspect()``,
  ``%bash_schema``), over :mod:`dsh_magics.harness`;
* :mod:`.panel` — the terminal panel (``dsh_magics.panel()``), over the terminal engine.
"""
