"""Variables that make a shell and the programs inside it safe to drive
without a human, local or remote: no pager ever takes over the PTY, and git
never prompts on the terminal."""

from __future__ import annotations

QUIET_ENV = {
    "PAGER": "cat",
    "GIT_PAGER": "cat",
    "MANPAGER": "cat",
    "SYSTEMD_PAGER": "cat",
    "TERM": "dumb",
    "GIT_TERMINAL_PROMPT": "0",
}
