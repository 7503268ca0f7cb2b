"""The notebook side: the ``%bash_*`` magics, ``%load_ext dsh_magics``, the values
the magics return, live output areas, HTML/text renderers and the notebook's identity.

May import: terminal/ (the engine contract and its values), fanout/ (group commands),
host/ (the extension picks the host-backed engine), and the base modules errors, jobs,
shutdown. IPython is only
imported here (and in widgets/). Must not import: mcp/, tools/, attach/, harness/,
answer/, cli; widgets/ only by name at load time (the optional add-on magics).
"""
