"""What the tests read of a process from /proc: its command name. One copy,
shared by the sshd fixture (tests/sshd.py) and the launch-check tests."""

from __future__ import annotations


def comm(pid: int) -> str:
    """The process's command name, or "" once it has gone."""
    try:
        with open(f"/proc/{pid}/comm") as f:
            return f.read().strip()
    except OSError:
        return ""
