"""The offline structural model of the ``bash`` tool family, built only from facts.

Harness texts become labelled summaries of ours (:data:`~.types.SUMMARY_LABEL`); docs/inspector.md.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from . import text_facts
from .errors import PluginLoadError
from .facts import CURRENT_ERA, ESCALATION_TARGETS, check_mode, era_info
from .schema_types import (
    SUMMARY_LABEL,
    Config,
    Fragment,
    InputStatus,
    Param,
    SchemaView,
    TextFact,
    Tool,
)

BASH_PKG = "@deepseek-ai/dsh-tool-bash"
JOBS_PKG = "@deepseek-ai/dsh-tool-jobs"
PERSISTENT_PKG = "@deepseek-ai/dsh-tool-bash-persistent"
PWSH_PKG = "@deepseek-ai/dsh-tool-pwsh"


@dataclass(frozen=True)
class _P:
    """Authoring form of one parameter: name, type, summary, required, enum."""

    name: str
    type: str
    summary: str
    required: bool = False
    enum: tuple[str, ...] | None = None


# --- our own summaries (never harness prose) -------------------------------

_COMMAND = _P("command", "string", "The shell command line to run.", required=True)
_LABEL = _P(
    "description",
    "string",
    "A few words naming the command's purpose for the user interface; the harness text "
    "gives examples.",
    required=True,
)
_TIMEOUT = _P(
    "timeoutMs",
    "number",
    "Time limit in milliseconds, bounded by the executor's own default and cap.",
)
_WORKDIR = _P(
    "workdir",
    "string",
    "Directory to run in; a relative path resolves against the session workspace.",
)
_BG_JOBS = _P(
    "run_in_background",
    "boolean",
    "Start as a background job and get its id back at once; no time limit; read it and end it "
    "through the job tools.",
)
_BG_TASKS_V2 = _P(
    "run_in_background",
    "boolean",
    "Start as a background task and get its id back at once; no time limit; read it and end it "
    "through the task tools.",
)
_BG_TASKS_V1 = _P(
    "run_in_background",
    "boolean",
    "Start as a background task and get its id back at once; no time limit.",
)
_SANDBOX_PERMS = _P(
    "sandbox_permissions",
    "string",
    "Which wider mode to ask for, and only when re-running a command that was just blocked; "
    "also needs a justification and the user's consent.",
    enum=ESCALATION_TARGETS,
)
_JUSTIFICATION = _P(
    "justification",
    "string",
    "A short reason shown to the user, explaining the need for more access; only valid "
    "alongside sandbox_permissions.",
)

FRAGMENT_SUMMARIES: dict[str, dict[str, str]] = {
    # era -> fragment key -> our summary
    "2026-06-12": {
        "base": "Runs one command in a fresh shell per call (no state carries over), reports "
        "non-zero exits with a marker, and keeps only the end of long output, with the rest "
        "on disk.",
        "background-on": "Suggests run_in_background for long commands, read with bash_output "
        "and stopped with bash_kill.",
    },
    "2026-07-11": {
        "base": "As before, plus: a sandbox may block file access, reported with a denial "
        "marker that is policy, not a bug, and must not be worked around.",
        "background-on": "Suggests run_in_background for long commands, read with bash_output "
        "and stopped with bash_kill.",
        "escalation": "How to escalate: attempt, read the denial, then retry the same command "
        "once with the narrowest wider mode and a one-sentence reason; never speculatively; a "
        "refusal ends it for that command.",
    },
    "2026-07-15": {
        "base": "Fresh shell per call, exit-code marker, sandbox-denial marker as policy, and "
        "long output cut to its end with the complete output kept on disk.",
        "background-on": "Suggests run_in_background for long commands, read with task_output "
        "and stopped with task_kill.",
        "background-off": "States that background runs are unavailable, so long commands must "
        "finish within the time limit.",
        "escalation": "How to escalate: attempt, read the denial, then retry the same command "
        "once with the narrowest wider mode and a one-sentence reason; never speculatively; a "
        "refusal ends it for that command.",
    },
    CURRENT_ERA: {
        "base": "Fresh shell per call (pass workdir rather than cd), exit-code marker, managed "
        "DSH_ environment variables, the sandbox-denial marker as policy, and long output cut "
        "to its end with the complete output kept on disk.",
        "background-on": "Suggests run_in_background for long commands, read with job_output "
        "and stopped with job_kill.",
        "background-off": "States that background runs are unavailable, so long commands must "
        "finish within the time limit.",
        "escalation": "How to escalate: attempt first, read the denial, then retry the same "
        "command once with the narrowest wider mode and a one-sentence reason; no asking in "
        "chat first; none when approvals are disabled; never speculatively; a refusal "
        "ends it for that command only.",
    },
    "rfc-foreground-only": {
        "base": "Runs one command in a fresh shell per call and waits for it: no background "
        "option exists in this proposal.",
    },
}

_JOB_ID = _P(
    "job_id", "string", "The id handed back when the background work began.", required=True
)
_JOBS_TOOLS: tuple[tuple[str, str, tuple[_P, ...]], ...] = (
    (
        "job_kill",
        "Cancels one background job by id without waiting; it shows as killed once it has "
        "actually stopped.",
        (
            _JOB_ID,
            _P("reason", "string", "Optional short note on why, logged and passed to the job."),
        ),
    ),
    ("job_list", "Lists this agent's background jobs with ids, kinds and states.", ()),
    (
        "job_output",
        "Reads a background job: new output for streaming jobs, the result for finished "
        "ones, always ending with a status line; waits only when asked.",
        (
            _JOB_ID,
            _P(
                "wait",
                "boolean",
                "Wait for completion or a time-out; a timed-out wait does not end the job.",
            ),
            _P(
                "timeout_ms",
                "number",
                "Longest blocking wait in milliseconds, capped by configuration.",
            ),
        ),
    ),
)

_TASK_ID = _P("task_id", "string", "Id of the background task, as returned by bash.", required=True)
_BASH_TASK_TOOLS: tuple[tuple[str, str, tuple[_P, ...]], ...] = (
    ("bash_kill", "Stops the background task with the given id.", (_TASK_ID,)),
    (
        "bash_output",
        "Returns new output of a background task since the last read, with its status.",
        (_TASK_ID,),
    ),
)
_TASK_TOOLS: tuple[tuple[str, str, tuple[_P, ...]], ...] = (
    (
        "task_kill",
        "Cancels one background task by id.",
        (_TASK_ID, _P("reason", "string", "Optional short note on why.")),
    ),
    ("task_list", "Lists background tasks with ids and states.", ()),
    (
        "task_output",
        "Reads a background task's new output or result, optionally waiting.",
        (
            _TASK_ID,
            _P("wait", "boolean", "Wait for completion or a time-out."),
            _P("timeout_ms", "number", "Longest blocking wait in milliseconds."),
        ),
    ),
)

_PERSISTENT_COMMAND = _P(
    "command",
    "string",
    "Command line to run in the persistent shell; relative paths preferred.",
    required=True,
)
_PERSISTENT_SUMMARY = (
    "Runs commands in one long-lived shell per agent, so the working directory and exported "
    "variables carry over between calls (the description is configurable)."
)
_PWSH_SUMMARY = (
    "The PowerShell twin of bash: same parameter names, types and conditions, with "
    "PowerShell-specific wording and an extra Windows paragraph before the escalation "
    "guidance. Its texts are not measured here."
)


def _summary(text: str) -> str:
    return SUMMARY_LABEL + text


def _build_parameters(params: tuple[_P, ...]) -> dict[str, Any]:
    """JSON Schema in the harness compiler's key order."""
    props: dict[str, Any] = {}
    for p in params:
        node: dict[str, Any] = {"type": p.type, "description": _summary(p.summary)}
        if p.enum is not None:
            node["enum"] = list(p.enum)
        props[p.name] = node
    out: dict[str, Any] = {"type": "object", "properties": props}
    required = [p.name for p in params if p.required]
    if required:
        out["required"] = required
    return out


def _tool(
    name: str,
    package: str,
    summary: str,
    params: tuple[_P, ...],
    *,
    fragments: tuple[Fragment, ...] = (),
    description_facts: TextFact | None = None,
    param_facts: dict[str, TextFact] | None = None,
) -> Tool:
    facts = param_facts or {}
    return Tool(
        name=name,
        package=package,
        description=_summary(summary),
        parameters=_build_parameters(params),
        params=tuple(
            Param(
                name=p.name,
                type=p.type,
                enum=p.enum,
                required=p.required,
                position=i,
                description=_summary(p.summary),
                description_is_summary=True,
                text=facts.get(p.name),
            )
            for i, p in enumerate(params)
        ),
        fragments=fragments,
        description_is_summary=True,
        description_facts=description_facts,
    )


def variant_of(background: bool, confined: bool) -> str:
    """The variant letter (A-D) of an era with a background switch and escalation."""
    return {(True, False): "A", (True, True): "B", (False, False): "C", (False, True): "D"}[
        (background, confined)
    ]


def input_statuses(config: Config) -> tuple[InputStatus, ...]:
    """Which inputs of ``config`` mean something in its era (and why not)."""
    era = era_info(config.era)
    if era.background_toggle:
        bg = InputStatus(
            "enable_run_in_background",
            config.background,
            True,
            "adds or removes run_in_background and switches the background sentence",
        )
    elif era.key == "rfc-foreground-only":
        bg = InputStatus(
            "enable_run_in_background",
            config.background,
            False,
            "the proposal has no background execution at all",
        )
    else:
        bg = InputStatus(
            "enable_run_in_background",
            config.background,
            False,
            "the switch does not exist yet; run_in_background is always offered",
        )
    if era.escalation:
        sb = InputStatus(
            "sandbox",
            config.sandbox,
            True,
            "any reported mode adds sandbox_permissions and justification; the mode itself does not change the schema",
        )
    else:
        sb = InputStatus(
            "sandbox",
            config.sandbox,
            False,
            "no escalation fields exist in this era, so the executor's mode does not change the schema",
        )
    if era.published is not None:
        pol = InputStatus(
            "sandbox_policy",
            config.sandbox_policy,
            config.sandbox is not None,
            "a reported mode without a policy service is a load error"
            if config.sandbox is not None
            else "only consulted when the executor reports a mode",
        )
    else:
        pol = InputStatus(
            "sandbox_policy",
            config.sandbox_policy,
            False,
            "the load-time policy check is only known for eras with a published package",
        )
    return (bg, sb, pol)


def _effective(config: Config) -> tuple[bool, bool]:
    """(background offered, escalation advertised) after era applicability."""
    era = era_info(config.era)
    if era.key == "rfc-foreground-only":
        bg = False
    elif era.background_toggle:
        bg = config.background
    else:
        bg = True
    confined = era.escalation and config.sandbox is not None
    return bg, confined


def model_view(config: Config) -> SchemaView:
    """The model's :class:`SchemaView` for ``config`` (conditions: docs/inspector.md)."""
    era = era_info(config.era)
    check_mode(config.sandbox)
    inputs = input_statuses(config)
    bg, confined = _effective(config)
    current = era.key == CURRENT_ERA
    era_facts = text_facts.BY_ERA.get(era.key)  # measured sizes and hashes, if published
    if era.published is not None and confined and not config.sandbox_policy:
        raise PluginLoadError(
            "the bash plugin would fail to load: the executor reports sandbox mode "
            f"{config.sandbox!r} but no sandbox policy service is composed",
            config=config.to_dict(),
        )

    summaries = FRAGMENT_SUMMARIES[era.key]
    bg_param = {
        "2026-06-12": _BG_TASKS_V1,
        "2026-07-11": _BG_TASKS_V1,
        "2026-07-15": _BG_TASKS_V2,
    }.get(era.key, _BG_JOBS)
    params: list[_P] = [_COMMAND, _LABEL, _TIMEOUT, _WORKDIR]
    if bg:
        params.append(bg_param)
    if confined:
        params += [_SANDBOX_PERMS, _JUSTIFICATION]

    keys = ["base"]
    if era.key != "rfc-foreground-only":
        keys.append("background-on" if bg else "background-off")
    if confined:
        keys.append("escalation")
    fragments = tuple(
        Fragment(k, summaries[k], None, era_facts[0][k] if era_facts else None) for k in keys
    )
    variant = variant_of(bg, confined) if era_facts else None
    bash = _tool(
        "bash",
        BASH_PKG,
        " ".join(f.summary for f in fragments),
        tuple(params),
        fragments=fragments,
        description_facts=era_facts[1][variant] if era_facts and variant else None,
        param_facts=era_facts[2] if era_facts else None,
    )

    tools = [bash]
    related: list[Tool] = []
    notes = [
        f"{i.name}={i.value!r} is not applicable: {i.note}"
        for i in inputs
        if not i.applicable and i.name != "sandbox_policy"
    ]
    if current:
        for name, summary, ps in _JOBS_TOOLS:
            key = f"dsh-tool-jobs:{name}"
            facts: dict[str, Any] = text_facts.TOOLS[key]
            tools.append(
                _tool(
                    name,
                    JOBS_PKG,
                    summary,
                    ps,
                    description_facts=facts["description"],
                    param_facts=facts["params"],
                )
            )
        pf: dict[str, Any] = text_facts.TOOLS["dsh-tool-bash-persistent:bash"]
        related.append(
            _tool(
                "bash",
                PERSISTENT_PKG,
                _PERSISTENT_SUMMARY,
                (_PERSISTENT_COMMAND,),
                description_facts=pf["description"],
                param_facts=pf["params"],
            )
        )
        pwsh_params = tuple(
            _P(
                p.name,
                p.type,
                p.summary.replace("shell command", "PowerShell command"),
                p.required,
                p.enum,
            )
            for p in params
        )
        related.append(_tool("pwsh", PWSH_PKG + " (model only)", _PWSH_SUMMARY, pwsh_params))
    else:
        family = {
            "2026-06-12": _BASH_TASK_TOOLS,
            "2026-07-11": _BASH_TASK_TOOLS,
            "2026-07-15": _TASK_TOOLS,
        }.get(era.key, ())
        pkg = "@deepseek-ai/dsh-tool-tasks" if era.key == "2026-07-15" else BASH_PKG
        for name, summary, ps in family:
            tools.append(_tool(name, pkg, summary, ps))
        if era.published is not None:
            notes.append(
                f"Older era: names, order, required flags and the bash text sizes and hashes "
                f"come from the published {BASH_PKG}@{era.published}; the texts shown are our "
                "summaries (live has the exact ones)."
            )
        elif era.key != "rfc-foreground-only":
            notes.append(
                "Older era: tool and parameter names, order and required flags come from the "
                "recorded history; types and enums are carried over from the current era, and "
                "text sizes are unknown."
            )
        else:
            notes.append("Never shipped: a 2026-06-20 proposal, withdrawn the same day.")
    return SchemaView(
        config=config,
        source="model",
        version=None,
        tools=tuple(tools),
        related=tuple(related),
        inputs=inputs,
        variant=variant,
        notes=tuple(notes),
    )
