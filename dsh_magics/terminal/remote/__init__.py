"""Remote terminals: the same jobs in a bash over ssh, in a container or pod,
or under any command that opens an interactive bash on its PTY.

:func:`parse_target` turns ``ssh://host``, ``docker://c``, ``podman://c``,
``kubectl://ns/pod`` or ``cmd:ARGV`` into a :class:`Target`;
:class:`RemoteTerminal` runs jobs there through the PTY alone
(:mod:`.inband`). See docs/remote.md for what holds remotely and what weakens.
"""

from __future__ import annotations

from .remote_terminal import RemoteTerminal
from .targets import KINDS, Target, enabled_kinds, is_local, parse_target

__all__ = ["KINDS", "RemoteTerminal", "Target", "enabled_kinds", "is_local", "parse_target"]
