"""``dsh-magics attach``: a person's terminal emulator attached to a terminal in a host.

The client draws the terminal's screen (the engine's emulator, fetched over the
host's socket) on the local terminal, like ``tmux attach``. Like tmux's client it
hands the local terminal to the host (attach/handover.py), which then writes the
live output to it and reads its keys; without that, the client writes the output
and sends the keys itself (docs/attach.md).

May import: host/ (to find the host and talk to it), terminal/ (the screen model
from terminal/core/), errors. Must not import: notebook/, widgets/, tools/, mcp/,
answer/, harness/, lab/.
"""
