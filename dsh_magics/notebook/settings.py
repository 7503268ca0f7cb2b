"""What a person sets with ``%config BashMagics.<name>`` (docs/magics.md lists them),
and the modes derived from it, kept apart from the magics that read them.
"""

from __future__ import annotations

from IPython.core.magic import Magics
from traitlets import Bool, CaselessStrEnum, Float, Int, Unicode

from .live_views import ViewSettings


class MagicsSettings(Magics):
    """The configurable settings of :class:`~.magics.BashMagics` (its base: traitlets
    reads a class's settings from the class and its bases)."""

    default_session = Unicode(
        None,
        allow_none=True,
        help="Session id used when no --session is given. Default: derived from the "
        "notebook path, else the kernel id, else 'default'.",
    ).tag(config=True)
    live_display = CaselessStrEnum(
        ["auto", "on", "off"],
        default_value="auto",
        help="Live-updating output areas: 'auto' uses them under a Jupyter kernel "
        "and prints to stdout in plain IPython.",
    ).tag(config=True)
    live_tail = Int(20, help="Lines of output shown while a job runs.").tag(config=True)
    update_interval = Float(
        0.25, help="Minimum seconds between two re-renders of a live output area."
    ).tag(config=True)
    heartbeat = Float(
        1.0, help="Seconds between re-renders of a quiet job (the elapsed time moves)."
    ).tag(config=True)
    interrupt_grace = Float(
        5.0, help="Seconds to wait for a job to stop after Ctrl-C before returning."
    ).tag(config=True)
    show_background = Bool(
        True, help="Whether %bash_exec opens a live output area for a job it leaves running."
    ).tag(config=True)
    host = CaselessStrEnum(
        ["auto", "on", "off"],
        default_value="auto",
        help="Where terminals live: 'auto' uses the per-user terminal host when a Jupyter "
        "server started this notebook's kernel (terminals then survive kernel restarts), "
        "in-process otherwise; 'on'/'off' force it. DSH_MAGICS_HOST=1/0 overrides this. "
        "Read when the extension loads.",
    ).tag(config=True)

    @property
    def live(self) -> bool:
        if self.live_display == "on":
            return True
        if self.live_display == "off":
            return False
        return getattr(self.shell, "kernel", None) is not None

    @property
    def view_settings(self) -> ViewSettings:
        """This magics object's settings, as the view manager takes them."""
        return ViewSettings(
            live=self.live,
            tail=self.live_tail,
            update_interval=self.update_interval,
            heartbeat=self.heartbeat,
            interrupt_grace=self.interrupt_grace,
        )
