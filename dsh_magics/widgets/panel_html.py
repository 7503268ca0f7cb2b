"""Markup for the terminal panel: widget fragments, and HTML/text snapshots without widgets.

Pure functions of a :class:`~.panel_view.PanelView`; ``data-*`` attributes give tests hooks.
"""

from __future__ import annotations

import html

from ..notebook.render import LITERAL, where
from ..notebook.screen_html import screen_html, screen_text
from ..terminal import TerminalInfo
from .panel_view import JobRow, Notice, OutputView, PanelView

CSS = """<style>
.dsh-panel {font-size: 13px}
.dsh-panel table.dsh-panel-table {border-collapse: collapse; margin: 2px 0 6px 0; width: 100%}
.dsh-panel table.dsh-panel-table th {text-align: left; font-weight: 600; padding: 2px 8px;
  border-bottom: 1px solid var(--jp-border-color1, #ccc)}
.dsh-panel table.dsh-panel-table td {padding: 2px 8px; vertical-align: top;
  font-family: var(--jp-code-font-family, monospace); font-size: 12px}
.dsh-panel tr.dsh-selected td {background: rgba(31, 111, 235, 0.10)}
.dsh-panel .dsh-st {border-radius: 3px; padding: 0 6px; color: white}
.dsh-panel .dsh-st-idle, .dsh-panel .dsh-st-ok {background: #1a7f37}
.dsh-panel .dsh-st-busy, .dsh-panel .dsh-st-running {background: #1f6feb}
.dsh-panel .dsh-st-dead, .dsh-panel .dsh-st-failed, .dsh-panel .dsh-st-shell_exited {background: #cf222e}
.dsh-panel .dsh-st-interrupted {background: #9a6700}
.dsh-panel .dsh-muted {color: var(--jp-ui-font-color2, #57606a)}
.dsh-panel .dsh-notice {margin: 2px 0; padding: 2px 6px; border-radius: 3px}
.dsh-panel .dsh-notice-error {background: rgba(207, 34, 46, 0.12); color: #cf222e}
.dsh-panel .dsh-notice-ok {background: rgba(26, 127, 55, 0.10)}
.dsh-panel .dsh-notice-info {background: rgba(127, 127, 127, 0.10)}
.dsh-panel .dsh-panel-out {display: flex; flex-direction: column-reverse; overflow: auto;
  max-height: 22em; min-height: 3em; background: rgba(127, 127, 127, 0.08)}
.dsh-panel .dsh-panel-out pre {margin: 0; padding: 4px 6px; white-space: pre-wrap; flex-shrink: 0; overflow: visible;
  word-break: break-all; font-family: var(--jp-code-font-family, monospace); font-size: 12px}
.dsh-panel .dsh-panel-out .dsh-screen pre {white-space: pre; word-break: normal}
.dsh-panel h4 {margin: 6px 0 2px 0; font-size: 13px}
</style>"""


def esc(text: object) -> str:
    return html.escape(str(text), quote=True)


def fmt_age(seconds: float) -> str:
    """``0.4s``, ``12s``, ``3m05s``, ``2h07m``: short enough for a table cell."""
    if seconds < 10:
        return f"{seconds:.1f}s"
    s = int(seconds)
    if s < 60:
        return f"{s}s"
    if s < 3600:
        return f"{s // 60}m{s % 60:02d}s"
    return f"{s // 3600}h{(s % 3600) // 60:02d}m"


def short_job(job_id: str | None) -> str:
    """``bash-1a2b3c4d`` for a 32-hex-digit id (the full id is in a tooltip)."""
    if not job_id:
        return ""
    kind, _, rest = job_id.partition("-")
    return f"{kind}-{rest[:8]}" if rest else job_id[:13]


def _status_badge(word: str, key: str) -> str:
    return f'<span class="dsh-st dsh-st-{esc(key)}">{esc(word)}</span>'


def job_badge(job: JobRow) -> str:
    outcome = job.outcome
    key = {"ok": "ok", "running": "running", "interrupted": "interrupted"}.get(outcome)
    if key is None:
        key = "shell_exited" if job.status == "shell_exited" else "failed"
    return _status_badge(outcome, key)


# -- fragments -----------------------------------------------------------------------


def summary_html(view: PanelView) -> str:
    terms = view.terminals
    busy = sum(1 for t in terms if t.status == "busy")
    dead = sum(1 for t in terms if t.status == "dead")
    parts = [f"{len(terms)} open"]
    if busy:
        parts.append(f"{busy} busy")
    if dead:
        parts.append(f"{dead} dead")
    return f'<div class="dsh-panel-summary {LITERAL}"><b>Terminals</b> · {esc(" · ".join(parts))}</div>'


def _terminal_row(t: TerminalInfo, view: PanelView) -> str:
    cls = ' class="dsh-selected"' if t.session_id == view.selected else ""
    star = " ★" if t.session_id == view.default_session else ""
    age = fmt_age(view.now - t.job_started_at) if t.job_started_at else ""
    job = f'<span title="{esc(t.job_id)}">{esc(short_job(t.job_id))}</span>' if t.job_id else ""
    status = t.status if t.status != "dead" or t.exit_code is None else f"dead ({t.exit_code})"
    return (
        f'<tr{cls} data-session="{esc(t.session_id)}" data-status="{esc(t.status)}"'
        f' data-job="{esc(t.job_id or "")}">'
        f"<td>{esc(t.session_id)}{star}</td>"
        f"<td>{_status_badge(status, t.status)}</td>"
        f"<td>{esc(where(t))}</td>"
        f"<td>{job}</td><td>{esc(age)}</td><td>{t.lines}</td></tr>"
    )


def terminals_html(view: PanelView) -> str:
    if not view.terminals:
        return (
            f'<div class="dsh-panel-terminals dsh-muted {LITERAL}">No terminal is open yet. Send a command '
            "(this notebook's terminal starts on its first command) or attach one.</div>"
        )
    rows = "".join(_terminal_row(t, view) for t in view.terminals)
    return (
        f'<table class="dsh-panel-table dsh-panel-terminals {LITERAL}"><thead><tr><th>session</th>'
        "<th>status</th><th>cwd</th><th>running job</th><th>age</th><th>lines</th></tr></thead>"
        f"<tbody>{rows}</tbody></table>"
    )


def notice_html(notice: Notice | None) -> str:
    if notice is None:
        return ""
    code = f' data-code="{esc(notice.code)}"' if notice.code else ""
    return (
        f'<div class="dsh-panel dsh-notice dsh-notice-{esc(notice.kind)} {LITERAL}"{code}>'
        f"{esc(notice.line)}</div>"
    )


def output_header_text(out: OutputView, now: float) -> str:
    if not out.open:
        return f"{out.session_id}: not started"
    parts = [out.session_id, f"{out.retained} line{'s' if out.retained != 1 else ''} retained"]
    parts.append(f"{out.dropped} dropped")
    if out.hidden:
        parts.append(f"showing the last {len(out.lines)}")
    if out.screen is not None:
        parts.append(
            "showing the screen" + (" (full-screen program)" if out.screen.get("alt_screen") else "")
        )
    if out.paused:
        parts.append("paused (not following)")
    elif out.job is not None:
        parts.append(
            f"following job {short_job(out.job.job_id)}, running {fmt_age(out.job.age(now))}"
        )
    return " · ".join(parts)


def awaiting_text(view: PanelView) -> str:
    """What the selected terminal's job waits for, in one line ('' if nothing)."""
    info = view.selected_info
    a = info.awaiting_input if info is not None else None
    if not a:
        return ""
    what = "a hidden answer (password box)" if a.get("secret") else "input (answer box)"
    return f"{a.get('name')} waits for {what}: {a.get('prompt') or '(no prompt)'}"


def output_header_html(view: PanelView) -> str:
    out = view.output
    waiting = awaiting_text(view)
    info = view.selected_info
    secret = (info.awaiting_input or {}).get("secret") if waiting and info is not None else False
    note = (
        f'<div class="dsh-panel-awaiting" data-secret="{"1" if secret else "0"}">'
        f"{esc(waiting)}</div>"
        if waiting
        else ""
    )
    return (
        f'<div class="dsh-panel-outhead {LITERAL}" data-session="{esc(out.session_id)}"'
        f' data-retained="{out.retained}" data-dropped="{out.dropped}">'
        f"<b>Output</b> · {esc(output_header_text(out, view.now))}{note}</div>"
    )


def inputs_text(j: JobRow) -> str:
    """The job's input record in a few words: ``person: y · agent: [ctrl-d]``."""
    shown = [f"{src}: {what}" for src, what in j.inputs[-3:]]
    more = len(j.inputs) - len(shown)
    return ("… " if more > 0 else "") + " · ".join(shown)


def output_html(view: PanelView) -> str:
    out = view.output
    if not out.open:
        body = (
            f'<pre class="dsh-muted">(no terminal {esc(out.session_id)} yet: send a command '
            "or attach to start it)</pre>"
        )
    elif out.screen is not None:
        body = screen_html(out.screen)
    elif not out.lines and not out.partial:
        body = '<pre class="dsh-muted">(no output yet)</pre>'
    else:
        body = f"<pre>{esc(out.text)}</pre>"
    return f'<div class="dsh-panel-out {LITERAL}" data-session="{esc(out.session_id)}">{body}</div>'


def command_head(command: str, width: int) -> tuple[str, int]:
    """A command's first line as written (cut to ``width`` with "…") and how many
    lines follow it: a multi-line command is never run together into one line."""
    lines = command.strip("\n").split("\n")
    first = lines[0].rstrip()
    if len(first) > width:
        first = first[: width - 1] + "…"
    return first, len(lines) - 1


def more_lines(n: int) -> str:
    """`` … (+N lines)`` after a command's first line, or nothing for a one-line command."""
    return f" … (+{n} line{'s' if n != 1 else ''})" if n else ""


def _command_cell(command: str) -> str:
    first, more = command_head(command, 80)
    if not more:
        return f'<td class="dsh-panel-cmd">{esc(first)}</td>'
    # The whole command (as the engine keeps it) is the cell's tooltip.
    whole = command.strip("\n")
    return (
        f'<td class="dsh-panel-cmd" data-more="{more}" title="{esc(whole)}">'
        f'{esc(first)}<span class="dsh-muted">{esc(more_lines(more))}</span></td>'
    )


def _job_row(j: JobRow, view: PanelView) -> str:
    return (
        f'<tr data-job="{esc(j.job_id)}" data-status="{esc(j.status)}"'
        f' data-exit="{"" if j.exit_code is None else j.exit_code}">'
        f'<td title="{esc(j.job_id)}">{esc(short_job(j.job_id))}</td>'
        f"<td>{esc(j.session_id)}</td>{_command_cell(j.command)}<td>{job_badge(j)}</td>"
        f"<td>{esc(fmt_age(j.age(view.now)))}</td>"
        f'<td class="dsh-panel-inputs">{esc(inputs_text(j))}</td></tr>'
    )


def jobs_html(view: PanelView) -> str:
    if not view.jobs:
        return f'<div class="dsh-panel-jobs dsh-muted {LITERAL}">No jobs yet.</div>'
    rows = "".join(_job_row(j, view) for j in view.jobs)
    return (
        f'<table class="dsh-panel-table dsh-panel-jobs {LITERAL}"><thead><tr><th>job</th><th>session</th>'
        f"<th>command</th><th>status</th><th>time</th><th>typed</th></tr></thead>"
        f"<tbody>{rows}</tbody></table>"
    )


# -- whole snapshots (no widget frontend) ---------------------------------------------


def render_html(view: PanelView) -> str:
    """A static snapshot of the panel (nbconvert, GitHub, classic viewers)."""
    return (
        f'{CSS}<div class="dsh-panel dsh-panel-static {LITERAL}">{summary_html(view)}'
        f"{terminals_html(view)}{notice_html(view.notice)}{output_header_html(view)}"
        f"{output_html(view)}<h4>Recent jobs</h4>{jobs_html(view)}"
        '<div class="dsh-muted">Static snapshot: run the cell in a notebook with widgets '
        "for the live panel.</div></div>"
    )


def render_text(view: PanelView, output_lines: int = 20) -> str:
    """The panel as plain text (terminal IPython, text-only frontends)."""
    out: list[str] = []
    terms = view.terminals
    out.append(f"Terminals ({len(terms)})")
    if terms:
        rows = [("", "session", "status", "cwd", "job", "age")]
        for t in terms:
            mark = "*" if t.session_id == view.default_session else ""
            mark += ">" if t.session_id == view.selected else ""
            age = fmt_age(view.now - t.job_started_at) if t.job_started_at else ""
            rows.append((mark, t.session_id, t.status, where(t), short_job(t.job_id), age))
        widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
        for r in rows:
            out.append("  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip())
    else:
        out.append("  (none open)")
    if view.notice is not None:
        out.append(view.notice.line)
    o = view.output
    out.append("")
    out.append("Output: " + output_header_text(o, view.now))
    if awaiting_text(view):
        out.append("  " + awaiting_text(view))
    if o.open and o.screen is not None:
        out.extend("  " + line for line in screen_text(o.screen).splitlines())
    elif o.open:
        lines = o.text.splitlines()
        if len(lines) > output_lines:
            out.append(f"  ... {len(lines) - output_lines} more line(s) above")
            lines = lines[-output_lines:]
        out.extend("  " + line for line in lines)
    if view.jobs:
        out.append("")
        out.append("Recent jobs")
        job_rows = [
            (
                short_job(j.job_id),
                j.session_id,
                j.outcome,
                fmt_age(j.age(view.now)),
                _command_text(j.command) + (f"  [{inputs_text(j)}]" if j.inputs else ""),
            )
            for j in view.jobs
        ]
        widths = [max(len(r[i]) for r in job_rows) for i in range(4)]
        for jr in job_rows:
            cells = [c.ljust(w) for c, w in zip(jr[:4], widths, strict=True)]
            out.append("  " + "  ".join([*cells, jr[4]]).rstrip())
    return "\n".join(out)


def _command_text(command: str) -> str:
    first, more = command_head(command, 60)
    return first + more_lines(more)
