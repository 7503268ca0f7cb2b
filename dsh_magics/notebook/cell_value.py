"""A magic's returned value and the cell's output: whether IPython's displayhook will
show it, standing in for the displayhook when the magic already drew it, and a display
message that skips the stream flushes when nothing waits in the streams.

Why (issue 34 §5, ``benchmarks/bench_cell.py``): a quick ``%bash_exec --wait`` draws its
final area itself (one display message) and returned a value whose display was then
suppressed; ipykernel's displayhook still flushed stdout and stderr for it, and each
flush is a round trip to the kernel's IO thread (~0.5 ms a cell together). A value that
goes to the displayhook is now not returned: the magic does here what the displayhook
would do besides drawing (``_``, ``Out[n]``, ``run_cell(...).result``), and an assigned
value (``r = %bash_exec --wait ...``) is returned as before.
"""

from __future__ import annotations

import dis
import sys
from typing import Any

from IPython.core.interactiveshell import InteractiveShell

_CACHE = dis.opmap.get("CACHE")  # 3.11+: inline cache entries after a call
_PRINT_EXPR = dis.opmap.get("PRINT_EXPR")  # up to 3.11: an expression statement in 'single' mode
_CALL_INTRINSIC_1 = dis.opmap.get("CALL_INTRINSIC_1")  # 3.12+: ... is CALL_INTRINSIC_1 INTRINSIC_PRINT
_INTRINSIC_PRINT = 1
_MAGIC_CALLS = (InteractiveShell.run_line_magic.__code__, InteractiveShell.run_cell_magic.__code__)


def goes_to_displayhook() -> bool:
    """Will the value of the magic running now be handed to ``sys.displayhook``?

    True when the cell's code that called ``run_line_magic``/``run_cell_magic`` (IPython's
    translation of ``%magic`` and ``%%magic``) prints the call's value next: the cell's last
    expression statement, compiled by IPython in ``'single'`` mode. An assignment, a call
    inside a loop or a function, a call through a wrapper: False (the caller keeps the value).
    Read from the caller's bytecode, where the interpreter decides it; anything unexpected
    answers False, which keeps the returned value and its suppressed display."""
    frame = sys._getframe(1)
    while frame is not None and frame.f_code not in _MAGIC_CALLS:
        frame = frame.f_back  # type: ignore[assignment]
    caller = frame.f_back if frame is not None else None
    if caller is None or caller.f_lasti < 0:
        return False
    code = caller.f_code.co_code
    i = caller.f_lasti + 2
    while i + 1 < len(code) and code[i] == _CACHE:
        i += 2
    if i + 1 >= len(code):
        return False
    op, arg = code[i], code[i + 1]
    return op == _PRINT_EXPR or (op == _CALL_INTRINSIC_1 and arg == _INTRINSIC_PRINT)


def stand_in_for_displayhook(shell: Any, value: Any) -> None:
    """What IPython's displayhook does with a cell's value besides drawing it: ``_``,
    ``__``, ``___``, ``_N`` and ``Out[N]``, and the value as ``run_cell(...).result``;
    nothing with a trailing ``;`` (IPython's own rule), nor for another displayhook."""
    hook: Any = getattr(shell, "displayhook", None)
    current: Any = sys.displayhook
    if hook is None or current is not hook:
        return
    hook.check_for_underscore()
    if not hook.quiet():
        hook.update_user_ns(value)
        hook.fill_exec_result(value)


class _Unflushed:
    """The display publisher itself, but for its ``_flush_streams``: its own ``publish``
    (message, hooks such as an Output widget's capture, history) without the flushes."""

    def __init__(self, pub: Any) -> None:
        self._pub = pub

    def __getattr__(self, name: str) -> Any:
        return getattr(self._pub, name)

    def _flush_streams(self) -> None:
        """Nothing waits in stdout or stderr (checked by the caller)."""


def _idle(stream: Any) -> bool:
    """No text written to this ipykernel stream waits for its flush (an unknown stream: False)."""
    return getattr(stream, "_flush_pending", True) is False and getattr(stream, "_subprocess_flush_pending", True) is False


def publish(pub: Any, **kwargs: Any) -> None:
    """``pub.publish(**kwargs)``; with ipykernel's publisher and nothing written to stdout
    or stderr since their last flush, without flushing them first (two round trips to the
    IO thread, which would only keep the order of text that is not there). Text written
    by another thread while this runs is that thread's race, as it is with any flush."""
    if (
        type(pub).__module__ == "ipykernel.zmqshell"
        and hasattr(pub, "_flush_streams")
        and _idle(sys.stdout)
        and _idle(sys.stderr)
    ):
        type(pub).publish(_Unflushed(pub), **kwargs)
    else:
        pub.publish(**kwargs)
