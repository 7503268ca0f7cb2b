"""JupyterLab pieces: a Lab terminal running the attach client, and the small
front-end extension that opens it as a tab (built on the machine, never committed).

May import: host/ (its client, to reach a host's terminals), terminal/, errors. Must not
import: notebook/, widgets/, tools/, mcp/, attach/, answer/, harness/.
"""
