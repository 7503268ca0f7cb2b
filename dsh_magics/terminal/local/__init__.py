"""The local terminal: bash in a PTY of ours, seen through the process layer
(``/proc`` or the portable one), with the watchdog that ends its shells when
the owner dies. It is the shared job core plus this transport."""
