"""Notebook widgets: the tool-schema inspector and the terminal panel.

Each is a thin ipywidgets renderer over a pure view-model, with static HTML and text fallbacks.

May import: notebook/ (renderers, the option parser, the notebook's identity),
harness/, lab/, host/, terminal/, errors, shutdown. Must not import: tools/, mcp/,
attach/, answer/, cli.
"""
