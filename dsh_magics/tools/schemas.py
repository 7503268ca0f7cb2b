"""The ``bash_*`` tools as JSON Schema, generated from one spec per tool in the shapes providers expect.

Why bounds live in descriptions and ``validation_schema`` enforces them: docs/internals.md ("Module notes").
"""

from __future__ import annotations

import copy
import dataclasses
from typing import Any

from ..terminal import validation as V
from ..terminal.interaction import KEYS, MAX_SEND_CHARS
from ..terminal.keys import describe_valid
from ..terminal.validation import MAX_PATTERN_CHARS
from .group_params import GROUP_EXEC_PARAMS, GROUP_ID_PARAM, GROUP_TEXT, GROUP_VIEW_PARAMS
from .params import (
    DEFAULT_SEND_WAIT_MS,
    DEFAULT_WAIT_TIMEOUT_MS,
    MAX_COMMAND_CHARS,
    MAX_JOB_ID_CHARS,
    MAX_LINE_NUMBER,
    MAX_PATH_CHARS,
    MAX_READ_LINES,
    MAX_SESSION_ID_CHARS,
    MAX_WAIT_MS,
    RESULT_FIELDS,
    TERMINAL_FIELDS,
    Param,
    ToolSpec,
    session_param,
)
from .truncate import OUTPUT_BUDGET_CHARS

TOOL_NAMES: tuple[str, ...] = (
    "bash_attach",
    "bash_exec",
    "bash_wait",
    "bash_read",
    "bash_interrupt",
    "bash_close",
    "bash_list",
    "bash_send",
    "bash_screen",
)

FORMATS = ("plain", "openai", "anthropic")


SPECS: dict[str, ToolSpec] = {
    s.name: s
    for s in (
        ToolSpec(
            "bash_attach",
            "Open the persistent bash terminal of a session, or report on it if it "
            "is already open. bash_exec opens the terminal on demand, so attach only "
            "to choose the working directory, to check the terminal, or to start "
            "over with recreate. Result: session_id; "
            + TERMINAL_FIELDS
            + " opened is true when a new shell was started (earlier directory, "
            "variables and functions are gone).",
            (
                Param.of(
                    "cwd",
                    "Directory to change into: absolute, or relative to the terminal's "
                    "current directory; ~ expands. Refused if it is not an existing "
                    "directory, or while a command is running.",
                ),
                Param.of(
                    "recreate",
                    "true kills the current shell and everything it started, then "
                    "opens a fresh one. Default false.",
                ),
                Param.of(
                    "target",
                    "Where a new terminal's shell runs: local (default), ssh://[user@]host[:port], "
                    "docker://CONTAINER, podman://CONTAINER, kubectl://[CONTEXT/]NAMESPACE/POD[/CONTAINER] "
                    "or cmd:ARGV (a command that opens an interactive bash). An open terminal keeps "
                    "its target unless recreate is true.",
                ),
                session_param("Terminal to attach to."),
            ),
        ),
        ToolSpec(
            "bash_exec",
            "Run one bash command in a session's persistent terminal: the directory, "
            "variables and functions persist between commands. It runs as if typed at "
            "the prompt (multi-line, heredocs, loops all work) with empty stdin (unless tty is "
            "true), so programs that would wait for typed input get end-of-file; `exit` ends "
            "the shell and the next "
            "command starts a fresh one. One command per terminal at a time; another bash_exec "
            "meanwhile is refused with SESSION_BUSY. Without wait_ms, returns at once: "
            "job_id, session_id and status running; then use bash_wait. With wait_ms, "
            "waits up to that long and returns the finished result, with the same fields "
            "as bash_wait, or the job_id if it is still running.",
            (
                Param.of(
                    "command",
                    f"The bash command or script to run. 1 to {MAX_COMMAND_CHARS} characters.",
                    required=True,
                ),
                Param.of(
                    "wait_ms",
                    "Milliseconds to wait for the command to finish before returning "
                    f"its job id instead. Integer from 0 to {MAX_WAIT_MS}. Omit to "
                    "return at once.",
                ),
                Param.of(
                    "tty",
                    "true gives the command the terminal as its stdin, as a person's "
                    "terminal does: REPLs (python3 -i, psql, node) and y/N prompts then wait "
                    "for input, which you type with bash_send. Default false (stdin is empty).",
                ),
                session_param("Terminal to run in (opened if it has none)."),
                *GROUP_EXEC_PARAMS,
            ),
        ),
        ToolSpec(
            "bash_wait",
            "Wait for a job started by bash_exec and return its result. Returns early "
            "when the job waits for typed input (reason awaiting_input; answer with "
            "bash_send), when until matches a line of the job's output that no earlier "
            "bash_wait returned, or when the output has been "
            "quiet for idle_ms; reason says which. If it is still running when "
            "timeout_ms passes, returns the output so far with timed_out true and status "
            "running; the command keeps running, so call bash_wait again to keep "
            "waiting, or bash_interrupt to stop it. Use until to wait for a server to be "
            "ready instead of polling. " + RESULT_FIELDS,
            (
                Param.of(
                    "job_id",
                    "The job_id returned by bash_exec, or the group_id (g1, g2, ...) of a command "
                    "started with targets: then the wait returns when every target has finished "
                    "(or at timeout_ms) with the group's merged view.",
                    required=True,
                ),
                Param.of(
                    "timeout_ms",
                    f"Longest wait in milliseconds; 0 returns the current state at "
                    f"once. Integer from 0 to {MAX_WAIT_MS}; default {DEFAULT_WAIT_TIMEOUT_MS}.",
                ),
                Param.of(
                    "until",
                    "A Python regular expression: return as soon as a line of the job's "
                    "output matches it (reason matched, with match_line and match_text); "
                    "the first bash_wait on a job searches all of its output, a later one "
                    f"only what came after the previous bash_wait on it. 1 to {MAX_PATTERN_CHARS} characters; an invalid "
                    "expression is refused with INVALID_ARGUMENT.",
                ),
                Param.of(
                    "until_screen",
                    "A Python regular expression searched in the terminal's screen (its rows "
                    "joined by newlines; ^ and $ match at each row): return as soon as it "
                    "matches (reason matched, the row in match_text). Use it for full-screen "
                    "programs started with tty true (vim's -- INSERT --, a menu's item), whose "
                    "drawing is not in output. 1 to "
                    f"{MAX_PATTERN_CHARS} characters; an invalid expression is refused with "
                    "INVALID_ARGUMENT.",
                ),
                Param.of(
                    "idle_ms",
                    "Return once no output has come for this many milliseconds (reason "
                    f"idle). Integer from 1 to {MAX_WAIT_MS}.",
                ),
                Param.of(
                    "on_input",
                    "false keeps waiting while the job waits for typed input. Default true.",
                ),
                session_param("Session the job ran in (a job of another session is refused)."),
                *GROUP_VIEW_PARAMS,
            ),
        ),
        ToolSpec(
            "bash_read",
            "Read a terminal's retained output without sending it anything; works "
            "while a command runs, so use it to watch progress. Lines are numbered "
            "for the life of the terminal and the oldest are discarded past its "
            "limit (4000 lines by default). Without since, returns the most recent "
            f"lines that fit in {OUTPUT_BUDGET_CHARS} characters; with since, returns "
            "lines from that number on, as many as fit. Result: session_id is the "
            "terminal read; text is the output; first_line is "
            "the number of text's first line; next_line is the number to pass as "
            "since to continue; more is true when retained lines after next_line did "
            "not fit; omitted_chars and omitted_lines count what of the requested "
            "window was not returned; dropped counts requested lines already "
            "discarded; end_line is the number the next new line will get; "
            "running_job_id is the job running now, or null. The last line of text "
            "may still be unfinished.",
            (
                Param.of(
                    "since",
                    f"First line number to return (use a previous next_line). Integer "
                    f"from 0 to {MAX_LINE_NUMBER}.",
                ),
                Param.of(
                    "last",
                    f"Return at most this many of the newest lines. Integer from 1 to {MAX_READ_LINES}.",
                ),
                session_param("Terminal to read."),
                GROUP_ID_PARAM,
                *GROUP_VIEW_PARAMS,
            ),
        ),
        ToolSpec(
            "bash_interrupt",
            "Press Ctrl-C in a terminal: SIGINT to the command running in the "
            "foreground. The shell survives and the job settles as interrupted a "
            "moment later (bash_wait shows it); a program that ignores SIGINT keeps "
            "running. Result: session_id is the terminal; interrupted is false when "
            "nothing was running; job_id "
            "is the job that was signalled.",
            (session_param("Terminal to interrupt."), GROUP_ID_PARAM),
        ),
        ToolSpec(
            "bash_close",
            "Close a terminal: kill its shell and every process it started, and "
            "discard its output. A later bash_exec opens a fresh terminal. With all "
            "true, closes every terminal. Result: closed lists the session ids that "
            "were closed; count is their number.",
            (
                Param(
                    "all",
                    "boolean",
                    "true closes every open terminal (do not pass session_id then). Default false.",
                ),
                session_param("Terminal to close."),
            ),
        ),
        ToolSpec(
            "bash_list",
            "List the open terminals. Result: terminals, one entry each with "
            "session_id; " + TERMINAL_FIELDS + " typed: the last commands and input "
            "written to it, each with kind, source (person, agent, notebook, panel) and text "
            "([secret] for secret input). own_session is your session id "
            "(null if you have none).",
            (session_param("Show only this session's terminal (an empty list if it has none)."),),
        ),
        ToolSpec(
            "bash_send",
            "Type into the job running in a terminal, as a person at its keyboard: a "
            "line of text (Enter is pressed after it unless enter is false), one named "
            "key, or several keys in order. Use it to answer a prompt that bash_wait reported as awaiting_input "
            "(y/N, a REPL's next line), or to drive a program started with bash_exec tty "
            "true. Waits up to wait_ms for the job to react and returns early when it "
            "finishes or waits for input again. Result: the same fields as bash_wait, except "
            "that output holds only what the terminal showed after the input (the typed "
            "text appears once, as the terminal echoes it). Refused with NOT_RUNNING when "
            "no job runs. Text for hidden entry (awaiting_input.secret, e.g. a password) "
            "is refused with SECRET_INPUT: a person must type it; keys such as ctrl-c "
            "still work.",
            (
                Param.of(
                    "text",
                    "One line to type (no newlines inside). To press Enter alone, send "
                    f"key enter. 1 to {MAX_SEND_CHARS} characters. Omit when sending a key.",
                ),
                Param.of(
                    "key",
                    "A named key to press instead of text: ctrl-c interrupts, ctrl-d ends "
                    "input (leaves a REPL), ctrl-z suspends, tab completes, esc, arrows "
                    "up/down/left/right, backspace, enter. For other keys, or several, use keys.",
                    enum=tuple(KEYS),
                ),
                Param.of(
                    "keys",
                    "Named keys to press in order, in one call, instead of text or key, e.g. "
                    '["down", "down", "enter"] to pick the third item of a menu. Arrows, home '
                    "and end go out as the program's terminal mode expects (application cursor "
                    f"keys). Names: {describe_valid()}. An unknown name is refused with "
                    "INVALID_ARGUMENT listing the valid ones.",
                ),
                Param.of(
                    "enter",
                    "false types the text without pressing Enter. Default true.",
                ),
                Param.of(
                    "wait_ms",
                    "Longest wait in milliseconds for the job to react. Integer from 0 to "
                    f"{MAX_WAIT_MS}; default {DEFAULT_SEND_WAIT_MS}.",
                ),
                Param.of(
                    "allow_unknown_prompt",
                    "true types text into a job on a remote terminal whose prompts cannot be "
                    "seen (its info says awaiting input is unavailable), where it might be a "
                    "password prompt. Default false: refused with SECRET_INPUT.",
                ),
                session_param("Terminal whose running job gets the input."),
            ),
        ),
        ToolSpec(
            "bash_screen",
            "Look at a terminal's screen, as a person at an xterm of its size would see it: "
            "use it to drive full-screen programs started with bash_exec tty true (vim, "
            "less, top, menus, REPLs), whose drawing is not in the job's output. Result: "
            "session_id is the terminal looked at; lines (each row's text, trailing blanks cut), cursor_row and cursor_col "
            "(0-based; a wide character takes two columns), cursor_visible, alt_screen "
            "(a full-screen program is drawing), title, cols, rows, app_cursor (arrow "
            "keys are sent in application mode; bash_send does this by itself); with marks "
            "true also marked: the screen as numbered rows with a header naming the cursor, "
            "and highlighted cells (inverse video or a distinct background, e.g. a menu's "
            "selected item) between ⟦ and ⟧. With cols and rows (both), resizes the "
            "terminal first: the program gets SIGWINCH and redraws.",
            (
                Param(
                    "marks",
                    "boolean",
                    "true adds marked: the rows numbered, the cursor named, highlighted cells "
                    "between ⟦ and ⟧. Default false.",
                ),
                Param.of(
                    "cols",
                    f"New width in columns, with rows: resize before looking. Integer from 2 to {V.MAX_SIZE}.",
                ),
                Param.of(
                    "rows",
                    f"New height in rows, with cols: resize before looking. Integer from 2 to {V.MAX_SIZE}.",
                ),
                session_param("Terminal to look at."),
            ),
        ),
    )
}

SPECS = {
    name: dataclasses.replace(spec, description=spec.description + GROUP_TEXT.get(name, ""))
    for name, spec in SPECS.items()
}
assert tuple(SPECS) == TOOL_NAMES


def schemas(format: str = "plain", *, bounds: bool = False) -> list[dict[str, Any]]:  # noqa: A002
    """The tools for a model, as fresh dicts the caller may modify.

    ``format``: ``"plain"`` gives ``[{name, description, parameters}]``,
    ``"openai"`` gives ``[{type: "function", function: {...}}]`` and
    ``"anthropic"`` gives ``[{name, description, input_schema}]``.
    ``bounds=True`` adds ``minimum``/``maximum``/``minLength``/``maxLength``
    (not accepted by the DeepSeek Harness; see the module docstring).
    """
    if format not in FORMATS:
        raise ValueError(f"format must be one of {', '.join(FORMATS)}, got {format!r}")
    out: list[dict[str, Any]] = []
    for spec in SPECS.values():
        params = spec.parameters(bounds=bounds)
        if format == "openai":
            out.append(
                {
                    "type": "function",
                    "function": {
                        "name": spec.name,
                        "description": spec.description,
                        "parameters": params,
                    },
                }
            )
        elif format == "anthropic":
            out.append({"name": spec.name, "description": spec.description, "input_schema": params})
        else:
            out.append({"name": spec.name, "description": spec.description, "parameters": params})
    return out


_VALIDATION: dict[str, dict[str, Any]] = {
    name: s.parameters(bounds=True) for name, s in SPECS.items()
}


def validation_schema(name: str) -> dict[str, Any]:
    """The bounded schema ``call()`` enforces for tool ``name`` (a copy)."""
    return copy.deepcopy(_VALIDATION[name])


__all__ = [
    "DEFAULT_SEND_WAIT_MS",
    "DEFAULT_WAIT_TIMEOUT_MS",
    "FORMATS",
    "MAX_COMMAND_CHARS",
    "MAX_JOB_ID_CHARS",
    "MAX_LINE_NUMBER",
    "MAX_PATH_CHARS",
    "MAX_READ_LINES",
    "MAX_SESSION_ID_CHARS",
    "MAX_WAIT_MS",
    "SPECS",
    "TOOL_NAMES",
    "Param",
    "ToolSpec",
    "schemas",
    "validation_schema",
]
