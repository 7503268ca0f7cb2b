"""Notebook widgets: the tool-schema inspector and the terminal panel.

Each is a thin ipywidgets renderer over a pure view-model, with static HTML and text fallbacks.
"""
