"""Notebook widgets: the tool-schema inspector, the terminal panel and the terminal-tab magic.

Each widget is a thin ipywidgets layer over pure modules (``*_state``, ``*_model``, ``*_view``,
``*_sections``) and HTML renderers (``*_html``) that the static and text fallbacks share.

May import: notebook/ (renderers, the option parser, the notebook's identity),
harness/, lab/, host/, terminal/, errors, shutdown. Must not import: tools/, mcp/,
attach/, answer/, cli.
"""
