"""Notebook widgets: the tool-schema inspector, the terminal panel and the terminal-tab magic.

Each widget is a thin ipywidgets layer over pure modules (``*_state``, ``*_model``, ``*_view``,
``*_sections``) and HTML renderers (``*_html``) that the static and text fallbacks share.
May import: ``errors``, the engine contract (``terminal``, ``terminal.api``, ``terminal.result``),
``harness`` and the notebook-side helpers (magic arguments, HTML renderers, ``lab.tab``,
notebook identity, shutdown). Must not import a transport (``terminal.local``,
``terminal.remote``), the host or ``mcp``; only the package root and the extension import it.
"""
