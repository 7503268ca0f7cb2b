"""A person answers a password prompt outside the model's view: ``dsh-magics answer
SESSION`` (:mod:`.cli`, typing at this terminal) and the one-time browser page
(:mod:`.page`, served by the host or by the MCP server).

May import: terminal/ (the engine contract), errors; :mod:`.cli` also host/ (to find
the host that holds the session). :mod:`.page` must not import host/ (the host serves
it). Must not import: notebook/, mcp/, tools/, widgets/, attach/, harness/.
"""
