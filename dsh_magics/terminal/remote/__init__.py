"""Remote terminals: the same jobs in a bash over ssh, in a container or pod, or under any command.

:func:`parse_target` makes a :class:`Target`; :class:`RemoteTerminal` runs jobs through the PTY (docs/remote.md).

May import: terminal/core/, terminal/'s contract modules, errors, jobs. Must not
import: terminal/local/, the registry, or anything above terminal/.
"""

from __future__ import annotations

from .remote_terminal import RemoteTerminal
from .targets import KINDS, Target, enabled_kinds, is_local, parse_target

__all__ = ["KINDS", "RemoteTerminal", "Target", "enabled_kinds", "is_local", "parse_target"]
