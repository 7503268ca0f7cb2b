"""What every terminal shares, whatever carries its bytes to and from bash:
the job core (:class:`jobcore.JobCore`), the running job and its results,
the output ring and cleaner, the marker scanner and the reader loop; and
what both transports ask of this machine's processes: the process layer
(``procs``, ``proclayer/``: ``/proc`` or the portable one; killing a tree and
reaping), the terminal's own state (``tty_state``), the bash version floor
(``bash_version``), a forked child's set-up (``child``), and the one owner of
a terminal's PTY (``pty``: spawn, size, the one write path); and the owner
watchdog (``watchdog``: it ends what a dead owner's terminals leave), and
how that and the package's other helper processes start (``boot``). The
transports (local shell, in-band remote shell) sit on top (docs/internals.md).

May import: errors, jobs and terminal/'s contract modules (api, result, config,
screen, interaction, ...). Must not import: a transport (terminal/local/,
terminal/remote/), the registry or terminal/'s package facade.
"""
