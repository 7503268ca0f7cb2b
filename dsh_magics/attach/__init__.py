"""``dsh-magics attach``: a person's terminal emulator attached to a terminal in a host.

The client draws the terminal's screen (the engine's emulator, fetched over the
host's socket) on the local terminal, like ``tmux attach``, and sends the keys
typed there back (docs/attach.md).

May import: host/ (to find the host and talk to it), terminal/ (the screen model
from terminal/core/), errors. Must not import: notebook/, widgets/, tools/, mcp/,
answer/, harness/, lab/.
"""
