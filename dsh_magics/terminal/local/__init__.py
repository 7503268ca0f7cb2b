"""The local terminal: bash in a PTY of ours, seen through the core's process
layer (``/proc`` or the portable one); the owner watchdog (``core.watchdog``) ends
its shells when the owner dies. It is the shared job core plus this transport.

May import: terminal/core/, terminal/'s contract modules, errors, jobs. Must not
import: terminal/remote/, the registry, or anything above terminal/.
"""
