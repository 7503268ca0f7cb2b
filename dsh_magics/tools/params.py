"""The pieces tool schemas are built from: bounds, one ``Param`` per argument, one ``ToolSpec`` per tool, shared text.

schemas.py lists the tools; this module says how a spec becomes JSON Schema.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..terminal import requests as R
from .truncate import OUTPUT_BUDGET_CHARS

#: The tools' bounds come from the table of a request's fields (terminal/requests.py):
#: a tool call may block at most ten minutes (a model that needs longer polls again),
#: carry a command of at most 100,000 characters (a 1 MB "command" is a bug in the
#: caller), and name line numbers JSON readers represent exactly.
MAX_WAIT_MS = R.MAX_TOOL_WAIT_MS
DEFAULT_WAIT_TIMEOUT_MS = R.DEFAULT_TOOL_WAIT_TIMEOUT_MS
MAX_COMMAND_CHARS = R.MAX_TOOL_COMMAND_CHARS
MAX_SESSION_ID_CHARS = R.FIELDS["session_id"].max_length
MAX_JOB_ID_CHARS = R.FIELDS["job_id"].max_length
MAX_PATH_CHARS = R.MAX_PATH_CHARS
MAX_LINE_NUMBER = R.MAX_LINE_NUMBER
MAX_READ_LINES = R.MAX_TOOL_READ_LINES
#: ``bash_send`` waits this long for the job to react when ``wait_ms`` is omitted.
DEFAULT_SEND_WAIT_MS = R.DEFAULT_SEND_WAIT_MS


@dataclass(frozen=True)
class Param:
    """One parameter: its JSON type, our description, and its bounds."""

    name: str
    type: str  # "string" | "integer" | "boolean" | "array" (of strings)
    description: str
    required: bool = False
    minimum: int | None = None
    maximum: int | None = None
    min_length: int | None = None
    max_length: int | None = None
    enum: tuple[str, ...] | None = None

    @classmethod
    def of(cls, field: str, description: str, *, required: bool = False, enum: tuple[str, ...] | None = None) -> Param:
        """The tool argument of a row of the request table (terminal/requests.py):
        its name, JSON type and bounds from the row, the description ours."""
        row = R.FIELDS[field]
        arg = row.tool_arg
        assert arg is not None, f"no tool takes {field}"
        return cls(
            arg.name,
            row.type,
            description,
            required=required,
            minimum=arg.minimum,
            maximum=arg.maximum,
            min_length=1 if row.type in ("string", "array") else None,
            max_length=arg.max_length,
            enum=enum,
        )

    def model_schema(self) -> dict[str, Any]:
        out: dict[str, Any] = {"type": self.type, "description": self.description}
        if self.enum is not None:
            out["enum"] = list(self.enum)
        if self.type == "array":
            out["items"] = {"type": "string"}
        return out

    def bounded_schema(self) -> dict[str, Any]:
        out = self.model_schema()
        lengths = ("minItems", "maxItems") if self.type == "array" else ("minLength", "maxLength")
        for key, value in (
            ("minimum", self.minimum),
            ("maximum", self.maximum),
            (lengths[0], self.min_length),
            (lengths[1], self.max_length),
        ):
            if value is not None:
                out[key] = value
        return out


@dataclass(frozen=True)
class ToolSpec:
    name: str
    description: str
    params: tuple[Param, ...]

    def parameters(self, *, bounds: bool = False) -> dict[str, Any]:
        return {
            "type": "object",
            "properties": {
                p.name: (p.bounded_schema() if bounds else p.model_schema()) for p in self.params
            },
            "required": [p.name for p in self.params if p.required],
            "additionalProperties": False,
        }


def session_param(what: str) -> Param:
    return Param.of(
        "session_id",
        f"{what} Omit it to use your own session's terminal; name another session "
        f"to share that session's terminal. 1 to {MAX_SESSION_ID_CHARS} characters, no '/'.",
    )


RESULT_FIELDS = (
    "Result: job_id and session_id identify the job; status is completed, interrupted "
    "(by bash_interrupt), shell_exited (the shell died; the next command gets a fresh "
    "one) or running; exit_code is the exit status (0 = success; null while running); "
    "output is the command's stdout and stderr as the terminal showed them; timed_out "
    "is true if the job was still running at the deadline; cwd is the shell's directory "
    "afterwards; duration_s is the run time; output_chars and output_lines are the "
    f"output's full size; output over {OUTPUT_BUDGET_CHARS} characters keeps its head and "
    "tail around a marker, and omitted_chars and omitted_lines count what was left out "
    "(bash_read pages through it); dropped_lines counts lines the terminal had already "
    "discarded (it keeps only its newest). Only when relevant: signal (that stopped the "
    "command), fresh_shell (the shell was restarted first; earlier state is gone), note "
    "(anything unusual), awaiting_input (the job waits for someone to type: pid and name "
    "of the program, prompt is its unfinished last line, secret is true for hidden entry "
    "such as a password, which only a person may answer), reason (why a wait returned: "
    "settled, matched, idle, awaiting_input or timeout), match_line and match_text (the "
    "line that matched until; its number is the one bash_read uses), inputs (what was "
    "typed into the job: source person or agent, caller, at, text, key for a named "
    "key, enter whether Enter followed; secret text is redacted)."
)

TERMINAL_FIELDS = (
    "status is idle (ready), busy (a command is running) or dead (the shell "
    "exited; the next command starts a fresh one); cwd is the shell's current "
    "directory; running and job_id tell whether a command is in progress and "
    "which; pid is the shell's process id; own is true for your own session's terminal; "
    "target is where the shell runs (local, or the ssh://, docker://, ... target it was opened "
    "with); "
    "awaiting_input, only while the running job waits for typed input, gives its pid, "
    "name, prompt and secret (true for a password prompt, which a person must answer); "
    "awaiting_input_unavailable, on a remote terminal whose prompts cannot be seen, says why "
    "(bash_send text to its job then needs allow_unknown_prompt)."
)

