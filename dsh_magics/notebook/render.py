"""Text and HTML renderings of engine values (results, reads, terminal lists).

Pure functions (no IPython): the output's tail and what was left out; HTML is :data:`LITERAL`.
"""

from __future__ import annotations

import datetime as _dt
import html
import os
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from ..terminal.result import output_lines
from .styles_html import output_styles

if TYPE_CHECKING:
    from ..terminal import ReadResult, Result, TerminalInfo

TAIL_LINES = 40

#: Classes on the root of every HTML fragment this package renders. JupyterLab
#: typesets ``$…$``, ``$$…$$`` and ``\\(…\\)`` in HTML outputs and widget
#: HTML as math; its MathJax skips elements with ``mathjax_ignore`` (and
#: classic front ends skip ``tex2jax_ignore``), and never looks inside
#: ``<pre>``/``<code>``. Every user-derived text is also escaped and sits in
#: ``<code>``/``<pre>``. Pinned by
#: tests/browser/test_literal_text.py::test_every_html_view_shows_text_literally.
LITERAL = "dsh-literal tex2jax_ignore mathjax_ignore"

_STATUS_COLOURS = {
    "running": "#1f6feb",
    "completed": "#1a7f37",
    "failed": "#cf222e",
    "interrupted": "#9a6700",
    "shell_exited": "#cf222e",
    "idle": "#1a7f37",
    "busy": "#1f6feb",
    "dead": "#cf222e",
}

_MONO = "font-family:var(--jp-code-font-family,monospace);font-size:12px"
_PRE = (
    "margin:4px 0;padding:4px 6px;max-height:30em;overflow:auto;background:rgba(127,127,127,0.08)"
)
# A box of output opens scrolled to its end (where a build's error is): a
# column-reverse flex container starts at its end, with CSS alone (an HTML
# output runs no script). The <pre> inside keeps its own size.
_OUT = (
    "margin:4px 0;max-height:30em;overflow:auto;display:flex;flex-direction:column-reverse;"
    "background:rgba(127,127,127,0.08)"
)
_OUT_PRE = "margin:0;padding:4px 6px;flex-shrink:0;overflow:visible"
_MUTED = "color:#57606a;font-style:italic"
_CODE = "font-family:inherit;font-size:inherit;background:none;padding:0"


def short_path(path: str | None) -> str:
    """``~/project`` for a path under the home directory, as a prompt shows it
    (and so that a saved notebook does not carry the machine's home path)."""
    if not path:
        return ""
    home = os.path.expanduser("~").rstrip("/")
    if home and (path == home or path.startswith(home + "/")):
        return "~" + path[len(home) :]
    return path


def where(info: object) -> str:
    """A terminal's directory as its rows show it: ``~/dir`` here, or
    ``TARGET DIR`` for a shell on another machine (docs/remote.md)."""
    cwd = getattr(info, "cwd", None)
    target = getattr(info, "target", None)
    if target and target != "local":
        return f"{target} {cwd or ''}".rstrip()
    return short_path(cwd)


def code(text: object) -> str:
    """``text`` escaped, in a ``<code>`` that looks like its surroundings."""
    return f'<code style="{_CODE}">{html.escape(str(text))}</code>'


def tail_lines(output: str, n: int = TAIL_LINES) -> list[str]:
    """The lines a view of ``output`` shows (its last ``n``)."""
    return _tail(output, n)[0]


def shown_lines(output: str, n: int = TAIL_LINES) -> tuple[list[str], int]:
    """The lines a view of ``output`` shows (its last ``n``, as the ring
    numbered them) and how many lines come before them."""
    return _tail(output, n)


def _tail(output: str, n: int = TAIL_LINES) -> tuple[list[str], int]:
    lines = output_lines(output)
    if not any(line.strip() for line in lines):
        return [], 0  # only blank lines (e.g. the newline after ^C): nothing to show
    if n < 0 or len(lines) <= n:
        return lines, 0
    return (lines[-n:] if n else []), len(lines) - n


def output_box(body_html: str, cls: str = "dsh-output") -> str:
    """``body_html`` (escaped already) in a box that opens scrolled to its end."""
    return f'<div class="{cls}" style="{_OUT}"><pre style="{_OUT_PRE}">{body_html}</pre></div>'


def badge(label: str, colour_key: str) -> str:
    """A status badge: ``label``, escaped, on the colour of ``colour_key``
    (a job's or a group member's status)."""
    colour = _STATUS_COLOURS.get(colour_key, "#57606a")
    return (
        f'<span style="background:{colour};color:white;border-radius:3px;padding:0 6px">'
        f"{html.escape(label)}</span>"
    )


def command_header(command: str, width: int = 120) -> str:
    """A command in a one-line header, as written: its first line, and " …"
    when more lines follow or the line is cut (never lines run together)."""
    lines = command.strip("\n").splitlines() or [""]
    first = lines[0].rstrip()
    more = len(lines) > 1
    if len(first) > width:
        first, more = first[: width - 1].rstrip(), True
    return first + (" …" if more else "")


def input_note(awaiting: dict[str, object]) -> str:
    """The one phrasing of "the job waits for typed input" in the notebook."""
    who = f"{awaiting.get('name')} (pid {awaiting.get('pid')})"
    if awaiting.get("secret"):
        return f"{who} waits for hidden input {awaiting.get('prompt')!r}: answer with %bash_send --secret"
    return f"{who} waits for input {awaiting.get('prompt')!r}: answer with %bash_send TEXT"


TIMED_OUT = "the wait timed out after"


def shown_note(r: Result) -> str | None:
    """The note a view shows: for a job waiting for typed input, always
    :func:`input_note` (after the timed-out sentence if the wait timed out)."""
    if r.awaiting_input and r.status == "running":
        note = input_note(r.awaiting_input)
        if r.note and r.note.startswith(TIMED_OUT):
            return f"{r.note.split('; the job keeps running')[0]}; the job keeps running. {note}"
        return note
    return r.note


def status_word(r: Result) -> str:
    if r.status == "completed":
        return "ok" if r.exit_code == 0 else f"failed (exit {r.exit_code})"
    if r.status == "running":
        return "running"
    if r.status == "interrupted":
        return "interrupted"
    return f"shell exited (code {r.exit_code})"


def _badge_key(r: Result) -> str:
    if r.status == "completed" and r.exit_code not in (0, None):
        return "failed"
    return r.status


def result_header(r: Result) -> str:
    """One line: job, session, status, exit code, duration."""
    if r.status == "running":
        head = f"[{r.job_id} @ {r.session_id}] running for {r.duration:.1f}s"
    else:
        head = f"[{r.job_id} @ {r.session_id}] {status_word(r)} in {r.duration:.2f}s"
        if r.status == "interrupted" and r.exit_code is not None:
            head += f" (exit {r.exit_code})"
    if r.timed_out and r.status != "running":
        head += " (still running)"
    return head


def _last_screen(r: Result) -> list[str]:
    """The rows a full-screen program showed last (``Result.screen``), trailing
    empty rows left out; [] for an ordinary job."""
    rows = list(r.screen or ())
    while rows and not rows[-1].strip():
        rows.pop()
    return rows


def result_text(r: Result, tail: int = TAIL_LINES) -> str:
    lines, omitted = _tail(r.output, tail)
    omitted += r.omitted_lines  # left out of a tail snapshot already
    parts = [result_header(r)]
    if r.dropped_lines:
        parts.append(f"... {r.dropped_lines} earlier lines dropped by the ring")
    if omitted:
        parts.append(f"... {omitted} lines omitted (all retained lines are in .output)")
    parts.extend(lines)
    screen = _last_screen(r)
    if screen:
        parts.append("--- the program's last screen ---")
        parts.extend(screen)
    note = shown_note(r)
    if note:
        parts.append(f"({note})")
    return "\n".join(parts)


def result_html(r: Result, tail: int = TAIL_LINES, styled: Mapping[int, str] | None = None) -> str:
    """``styled``: HTML (escaped, with colours) for some of the shown lines,
    by index among them (``screen_html.styled_lines``); the rest are plain."""
    lines, omitted = _tail(r.output, tail)
    omitted += r.omitted_lines  # left out of a tail snapshot already
    notes = []
    if r.dropped_lines:
        notes.append(f"{r.dropped_lines} earlier lines dropped by the ring")
    if omitted:
        notes.append(f"{omitted} lines omitted above (all retained lines are in .output)")
    note = shown_note(r)
    if note:
        notes.append(note)
    if r.status == "running":
        label = "⏳ running"
        timing = f" · {r.duration:.1f}s elapsed"
    else:
        label = status_word(r) if r.status == "completed" else r.status.replace("_", " ")
        timing = f" · {r.duration:.2f}s"
    exit_txt = "" if r.exit_code is None else f" · exit {r.exit_code}"
    note_html = "".join(f'<div style="{_MUTED}">{code(n)}</div>' for n in notes)
    styled = styled or {}
    body = "\n".join(styled.get(i) or html.escape(line) for i, line in enumerate(lines))
    pre = output_box(body) if lines else ""
    screen = _last_screen(r)
    if screen:
        pre += (
            f'<div style="{_MUTED}">the program\'s last screen</div>'
            f'<pre class="dsh-last-screen" style="{_PRE}">{html.escape(chr(10).join(screen))}</pre>'
        )
    return (
        f'<div class="dsh-result dsh-status-{html.escape(r.status)} {LITERAL}" style="{_MONO}">'
        f"<div>{badge(label, _badge_key(r))} <b>{code(r.job_id)}</b>"
        f" @ {code(r.session_id)}{exit_txt}{timing}</div>"
        f'<div style="{_MUTED}" title="{html.escape(r.command)}">'
        f"{code('$ ' + command_header(r.command))}</div>"
        f"{note_html}{pre}</div>"
    )


def _span(rr: ReadResult) -> str:
    n = len(rr.lines)
    if not n:
        return "no complete lines" + (" (a partial line follows)" if rr.partial else "")
    return f"lines {rr.first_line}-{rr.first_line + n - 1}"


def read_text(rr: ReadResult, tail: int = TAIL_LINES) -> str:
    lines, omitted = _tail(rr.text, tail)
    head = f"[{rr.session_id}] {_span(rr)}"
    if rr.job_id:
        head += f", job {rr.job_id} running"
    parts = [head]
    if rr.dropped:
        parts.append(f"... {rr.dropped} lines dropped by the ring")
    if omitted:
        parts.append(f"... {omitted} lines omitted (all are in .lines)")
    parts.extend(lines)
    return "\n".join(parts)


def read_html(rr: ReadResult, tail: int = TAIL_LINES) -> str:
    lines, omitted = _tail(rr.text, tail)
    styled = output_styles(rr.styles, lines, omitted) if rr.styles else {}
    body = "\n".join(styled.get(i) or html.escape(line) for i, line in enumerate(lines))
    notes = []
    if rr.dropped:
        notes.append(f"{rr.dropped} lines dropped by the ring")
    if omitted:
        notes.append(f"{omitted} lines omitted above (all are in .lines)")
    running = f" · job {code(rr.job_id)} running" if rr.job_id else ""
    note_html = "".join(f'<div style="{_MUTED}">{html.escape(n)}</div>' for n in notes)
    return (
        f'<div class="dsh-read {LITERAL}" style="{_MONO}"><div><b>{code(rr.session_id)}</b>'
        f" · {_span(rr)}{running}</div>{note_html}"
        f"{output_box(body)}</div>"
    )


def _ago(ts: float | None) -> str:
    if ts is None:
        return ""
    return _dt.datetime.fromtimestamp(ts).strftime("%H:%M:%S")


def info_text(info: TerminalInfo) -> str:
    job = f" running {info.job_id} since {_ago(info.job_started_at)}" if info.job_id else ""
    code = f" exit {info.exit_code}" if info.exit_code is not None else ""
    return f"[{info.session_id}] {info.status}{code} pid {info.pid} cwd {where(info)}{job}"


def info_html(info: TerminalInfo) -> str:
    return terminals_html([info])


def terminals_text(
    infos: Sequence[TerminalInfo], default_session: str | None = None, default_note: str = ""
) -> str:
    out = []
    if default_session is not None:
        started = any(i.session_id == default_session for i in infos)
        out.append(
            f"default session: {default_session}"
            + (f" ({default_note})" if default_note else "")
            + ("" if started else " [not started yet]")
        )
    if not infos:
        out.append("no terminals open")
    rows = [
        (
            "*" if i.session_id == default_session else " ",
            f"[{i.session_id}]",
            i.status + (f" exit {i.exit_code}" if i.exit_code is not None else ""),
            job_source(i),
            f"pid {i.pid}",
            where(i),
            f"running {i.job_id} since {_ago(i.job_started_at)}" if i.job_id else "",
        )
        for i in infos
    ]
    widths = [max(len(r[k]) for r in rows) for k in range(6)] if rows else []
    for r in rows:
        cells = [r[k].ljust(widths[k]) for k in range(6)] + [r[6]]
        out.append(" ".join(cell for k, cell in enumerate(cells) if k != 3 or widths[3]).rstrip())
    return "\n".join(out)


def job_source(info: TerminalInfo) -> str:
    """Who started the terminal's running job (``notebook``, ``agent``,
    ``person``, ``panel``); ``?`` when the caller did not say; "" when idle."""
    if not info.job_id:
        return ""
    return info.job_source or "?"


def terminals_html(
    infos: Sequence[TerminalInfo], default_session: str | None = None, default_note: str = ""
) -> str:
    head = ""
    if default_session is not None:
        started = any(i.session_id == default_session for i in infos)
        note = f' <span style="{_MUTED}">({code(default_note)})</span>' if default_note else ""
        head = (
            f"<div>default session: <b>{code(default_session)}</b>{note}"
            + ("" if started else f' <span style="{_MUTED}">not started yet</span>')
            + "</div>"
        )
    root = f'<div class="dsh-terminals {LITERAL}" style="{_MONO}">{head}'
    if not infos:
        return f'{root}<div style="{_MUTED}">no terminals open</div></div>'
    rows = []
    for i in infos:
        star = " ★" if i.session_id == default_session else ""
        job = code(i.job_id) if i.job_id else ""
        since = f" since {_ago(i.job_started_at)}" if i.job_id else ""
        rows.append(
            f"<tr><td><b>{code(i.session_id)}</b>{star}</td><td>{badge(i.status, i.status)}</td>"
            f"<td>{code(where(i))}</td><td>{job}{since}</td><td>{code(job_source(i))}</td>"
            f"<td>{i.pid or ''}</td></tr>"
        )
    th = "".join(
        f'<th style="text-align:left">{h}</th>'
        for h in ("session", "status", "cwd", "running job", "source", "pid")
    )
    return f"{root}<table><thead><tr>{th}</tr></thead><tbody>{''.join(rows)}</tbody></table></div>"
