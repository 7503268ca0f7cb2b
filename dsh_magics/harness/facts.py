"""Facts about the harness's bash tool family: names, enums, ladders, eras.

Texts are only lengths and hashes (:mod:`.text_facts`) and our own summaries (:mod:`.model`).
"""

from __future__ import annotations

from ..errors import InvalidArgument
from .schema_types import EraInfo, SandboxMode

#: Published version the bridge installs by default (npm ``latest``).
DEFAULT_VERSION = "0.1.0-rc.8"

#: Versions of the three tool packages known to be on the registry.
KNOWN_PUBLISHED_VERSIONS: tuple[str, ...] = ("0.1.0-rc.8", "0.0.1-rc.1")

#: Packages the bridge installs (peers come in automatically with npm >= 7, and
#: the two the bridge imports directly are also named explicitly).
TOOL_PACKAGES: tuple[str, ...] = (
    "@deepseek-ai/dsh-tool-bash",
    "@deepseek-ai/dsh-tool-jobs",
    "@deepseek-ai/dsh-tool-bash-persistent",
)
PEER_PACKAGES: tuple[str, ...] = ("@deepseek-ai/dsh-sandbox", "@deepseek-ai/dsh-tools")

#: ``None`` is the unconfined executor (its ``sandboxMode`` getter is undefined).
SANDBOX_MODES: tuple[str | None, ...] = (None, "read-only", "workspace-write", "danger-full-access")
CONFINED_MODES: tuple[str, ...] = ("read-only", "workspace-write", "danger-full-access")

#: The ``sandbox_permissions`` enum: constant, never narrowed by the current mode.
ESCALATION_TARGETS: tuple[str, ...] = ("workspace-write", "danger-full-access")

#: The ladder: which modes are strictly wider than a given one.
WIDER_MODES: dict[str, tuple[str, ...]] = {
    "read-only": ("workspace-write", "danger-full-access"),
    "workspace-write": ("danger-full-access",),
    "danger-full-access": (),
}

OUTCOMES: tuple[str, ...] = ("allowed-once", "rejected", "cancelled", "unavailable")
POLICIES: tuple[str, ...] = ("ask", "never")

#: Package default of the sandbox policy service vs the shipped base bundle.
PACKAGE_DEFAULT_MODE: SandboxMode = "read-only"
BASE_BUNDLE_DEFAULT_MODE = "workspace-write"
PERMISSION_MODE_ENV = "DSH_PERMISSION_MODE"

#: Order of parameters in the current ``bash`` tool; which ones appear depends
#: on the config (see :mod:`.model`).
BASH_PARAM_ORDER: tuple[str, ...] = (
    "command",
    "description",
    "timeoutMs",
    "workdir",
    "run_in_background",
    "sandbox_permissions",
    "justification",
)
BASH_REQUIRED: tuple[str, ...] = ("command", "description")

CURRENT_ERA = "2026-08-13"

#: The ``task_*`` era, whose texts are published as dsh-tool-bash 0.0.1-rc.1.
TASK_ERA = "2026-07-15"
TASK_ERA_VERSION = "0.0.1-rc.1"

#: Eras with exact texts from a published package: era -> dsh-tool-bash version.
LIVE_ERAS: dict[str, str] = {CURRENT_ERA: DEFAULT_VERSION, TASK_ERA: TASK_ERA_VERSION}

_ERAS: tuple[EraInfo, ...] = (
    EraInfo(
        key="2026-06-12",
        title="2026-06-12: first bash tools",
        summary="bash plus bash_output and bash_kill addressed by task_id; always offers "
        "background runs; no sandbox escalation fields and no background switch.",
        shipped=True,
        background_toggle=False,
        escalation=False,
        tools=("bash", "bash_kill", "bash_output"),
    ),
    EraInfo(
        key="2026-07-11",
        title="2026-07-11: sandbox escalation",
        summary="Adds sandbox_permissions and justification to bash when the executor "
        "confines; background tools still bash_output/bash_kill.",
        shipped=True,
        background_toggle=False,
        escalation=True,
        tools=("bash", "bash_kill", "bash_output"),
    ),
    EraInfo(
        key="2026-07-15",
        title="2026-07-15: generic task runtime",
        summary="Background runs move to a generic runtime with task_output, task_list and "
        "task_kill; the enableRunInBackground switch appears.",
        shipped=True,
        background_toggle=True,
        escalation=True,
        tools=("bash", "task_kill", "task_list", "task_output"),
        published=TASK_ERA_VERSION,
    ),
    EraInfo(
        key="2026-08-13",
        title="2026-08-13: jobs (current)",
        summary="Tasks renamed to jobs: job_output, job_list and job_kill; the bash "
        "parameter set is unchanged since the previous era.",
        shipped=True,
        background_toggle=True,
        escalation=True,
        tools=("bash", "job_kill", "job_list", "job_output"),
        published=DEFAULT_VERSION,
    ),
    EraInfo(
        key="rfc-foreground-only",
        title="RFC 2026-06-20: foreground-only bash (never shipped)",
        summary="A withdrawn proposal: bash alone, no run_in_background and no background "
        "tools at all.",
        shipped=False,
        background_toggle=False,
        escalation=False,
        tools=("bash",),
    ),
)

ERAS: tuple[str, ...] = tuple(e.key for e in _ERAS)


def era_info(key: str) -> EraInfo:
    """The :class:`EraInfo` for ``key``; ``InvalidArgument`` lists valid keys."""
    for e in _ERAS:
        if e.key == key:
            return e
    raise InvalidArgument(f"unknown era {key!r}; expected one of {', '.join(ERAS)}")


def era_of_version(version: str) -> str:
    """The era whose texts a published ``dsh-tool-bash`` version carries."""
    for era, v in LIVE_ERAS.items():
        if v == version:
            return era
    known = ", ".join(f"{v} ({e})" for e, v in LIVE_ERAS.items())
    raise InvalidArgument(f"no era is known for dsh-tool-bash {version!r}; live versions: {known}")


def live_version(era: str, version: str | None = None) -> str:
    """The published version for ``era``'s live texts (``version`` must agree)."""
    info = era_info(era)
    if info.published is None:
        raise InvalidArgument(
            f"era {era!r} has no published package, so it is model-only; live eras: "
            + ", ".join(f"{e} ({v})" for e, v in LIVE_ERAS.items())
        )
    if version is not None and version != info.published:
        raise InvalidArgument(
            f"dsh-tool-bash {version} does not carry era {era!r} (that is {info.published}; "
            f"{version} is era {era_of_version(version)!r})"
        )
    return info.published


def check_mode(mode: str | None, *, allow_none: bool = True) -> str | None:
    """Validate a sandbox mode name (``None`` = unconfined when allowed)."""
    if mode is None and allow_none:
        return None
    if mode not in CONFINED_MODES:
        valid = ", ".join(CONFINED_MODES)
        raise InvalidArgument(f"unknown sandbox mode {mode!r}; expected one of {valid}")
    return mode
