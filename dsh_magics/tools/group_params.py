"""The tool arguments about groups (one command on many targets: docs/fanout.md)."""

from __future__ import annotations

from ..fanout import MAX_FANOUT, MAX_TARGETS
from .params import Param

#: Longest per-target timeout: a day (a group command is not a daemon).
MAX_TARGET_TIMEOUT_MS = 86_400_000

GROUP_RESULT_TEXT = (
    "A group result: group_id; status done or running; timed_out; targets (how many); counts "
    "(targets per status: completed, interrupted, failed, running, queued, ...); merged: one "
    "header line per outcome (exit 0: web[01-16], TARGET_UNREACHABLE: ...), then each distinct "
    "output once under the targets that printed it (folded as web[01-16]), the most common "
    "first; omitted_chars if merged was cut; reason awaiting_input when bash_wait returned "
    "early because a target waits for typed input; detail (only with detail true): one row per "
    "target with target, session_id, job_id, status, exit_code, duration_s, last_line and, "
    "when relevant, code (TARGET_UNREACHABLE: never reached; TARGET_LOST: its connection or "
    "shell died), message, timed_out (target_timeout_ms ended it) and awaiting_input (a "
    "secret prompt is answered by a person, never by you); note, when members' password "
    "prompts were handed to a person, says which were asked or answered."
)

GROUP_EXEC_PARAMS = (
    Param(
        "targets",
        "array",
        "Run the command on many terminals at once instead of one: session names, target URLs "
        "(ssh://host, podman://box, kubectl://NS/POD, cmd:ARGV) or @group names (from the "
        "user's groups file or Ansible inventory); ranges unfold (ssh://web[01-16]); "
        "kubectl://NAMESPACE -l app=web is the pods that selector matches. Each target runs "
        "it as an ordinary job in its own persistent terminal (cd and export persist per "
        "target). Returns at once: group_id, targets (how many), nodes (folded); then "
        f"bash_wait with job_id set to the group_id. At most {MAX_TARGETS} targets; not with "
        "session_id, wait_ms or tty.",
        min_length=1,
        max_length=MAX_TARGETS,
    ),
    Param(
        "fanout",
        "integer",
        f"With targets: how many targets run at once (default 32, as pdsh). Integer from 1 to {MAX_FANOUT}.",
        minimum=1,
        maximum=MAX_FANOUT,
    ),
    Param(
        "target_timeout_ms",
        "integer",
        "With targets: Ctrl-C to a target whose command runs longer than this (its row says "
        f"timed_out). Integer from 1 to {MAX_TARGET_TIMEOUT_MS}. Default: no limit.",
        minimum=1,
        maximum=MAX_TARGET_TIMEOUT_MS,
    ),
)

GROUP_ID_PARAM = Param(
    "group_id",
    "string",
    "A group_id from bash_exec with targets: act on every target of that group instead of one "
    "terminal (not with session_id). " + GROUP_RESULT_TEXT,
    min_length=1,
    max_length=12,
)

GROUP_VIEW_PARAMS = (
    Param(
        "detail",
        "boolean",
        "For a group: add detail, one row per target. Default false (the merged view only).",
    ),
    Param(
        "diff",
        "boolean",
        "For a group: show each differing output as a unified diff against the most common one. Default false.",
    ),
)

#: What each tool's description adds about groups.
GROUP_TEXT = {
    "bash_exec": " With targets, runs the command on every target at once and returns at once: "
    "group_id, status running, targets (how many) and nodes (the targets, folded); then "
    "bash_wait with job_id set to the group_id.",
    "bash_wait": " With a group_id as job_id: waits for every target; it returns early, with "
    "reason awaiting_input, while a target's job waits for typed input (on_input false keeps "
    "waiting; detail rows show which). " + GROUP_RESULT_TEXT,
    "bash_read": " With group_id: the group's view now, without waiting. " + GROUP_RESULT_TEXT,
    "bash_interrupt": " With group_id: Ctrl-C to every running target of that group, and targets "
    "not started yet are cancelled. Result: group_id; interrupted, the targets signalled "
    "(folded); count, how many.",
}
