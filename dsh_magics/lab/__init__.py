"""JupyterLab pieces: a Lab terminal running the attach client, and the small
front-end extension that opens it as a tab (built on the machine, never committed)."""
