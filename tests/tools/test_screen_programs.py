"""Real full-screen programs driven through the agent tools only (bash_exec
tty, bash_wait until_screen, bash_send keys, bash_screen), on the local
backend: the screen and the effect are checked, never a sleep."""

from __future__ import annotations

import sys
from pathlib import Path

from ..conftest import wait_until
from ..programs import MENU
from .conftest import Agent


def _wait_screen(agent: Agent, job: str, pattern: str) -> dict:
    res = agent.ok("bash_wait", {"job_id": job, "until_screen": pattern, "timeout_ms": 20_000, "on_input": False})
    assert res.get("reason") == "matched", res
    return res


def test_vim_insert_text_and_write_quit(agent: Agent, tmp_path: Path) -> None:
    target = tmp_path / "notes.txt"
    job = agent.ok("bash_exec", {"command": f"vim -u NONE -N {target}", "tty": True})["job_id"]
    _wait_screen(agent, job, r"notes\.txt")
    agent.ok("bash_send", {"text": "i", "enter": False, "wait_ms": 0})
    _wait_screen(agent, job, r"-- INSERT --")
    agent.ok("bash_send", {"text": "hello from the agent", "enter": False, "wait_ms": 0})
    _wait_screen(agent, job, r"^hello from the agent$")
    screen = agent.ok("bash_screen", {"marks": True})
    assert screen["alt_screen"] is True and screen["lines"][0] == "hello from the agent"
    assert (screen["cursor_row"], screen["cursor_col"]) == (0, 20)
    assert "cursor row 1 col 21" in screen["marked"]
    agent.ok("bash_send", {"keys": ["esc"], "wait_ms": 0})
    agent.ok("bash_send", {"text": ":wq", "wait_ms": 0})
    res = agent.ok("bash_wait", {"job_id": job, "timeout_ms": 20_000, "on_input": False})
    assert res["status"] == "completed" and res["exit_code"] == 0, res
    assert target.read_text() == "hello from the agent\n"
    assert "~" not in res["output"] and "\x1b" not in res["output"]
    assert agent.ok("bash_screen")["alt_screen"] is False


def test_curses_menu_down_down_enter_picks_the_third_item(agent: Agent, tmp_path: Path) -> None:
    prog = tmp_path / "menu.py"
    prog.write_text(MENU)
    job = agent.ok("bash_exec", {"command": f"{sys.executable} {prog}", "tty": True})["job_id"]
    _wait_screen(agent, job, r"^  vanilla$")  # the last item drawn
    screen = agent.ok("bash_screen", {"marks": True})
    assert screen["app_cursor"] is True  # keypad(True): arrows must go out as ESC O x
    assert "⟦react⟧" in screen["marked"]
    agent.ok("bash_send", {"keys": ["down", "down"], "wait_ms": 0})
    # The highlight is a style, not text: look until it moved (a deadline, no sleep).
    wait_until(lambda: "⟦svelte⟧" in agent.ok("bash_screen", {"marks": True})["marked"], 20)
    agent.ok("bash_send", {"keys": ["enter"], "wait_ms": 0})
    res = agent.ok("bash_wait", {"job_id": job, "timeout_ms": 20_000, "on_input": False})
    assert res["status"] == "completed", res
    assert res["output"].strip().endswith("picked svelte")


def test_less_page_down_end_and_quit_brings_the_prompt_screen_back(agent: Agent) -> None:
    agent.run("echo before-less")
    job = agent.ok("bash_exec", {"command": "seq 1 500 | less", "tty": True})["job_id"]
    _wait_screen(agent, job, r"^1$")
    agent.ok("bash_send", {"keys": ["pgdn"], "wait_ms": 0})
    rows = agent.ok("bash_screen")["rows"]
    _wait_screen(agent, job, rf"^{rows}$")  # the first row of the second page
    agent.ok("bash_send", {"text": "G", "enter": False, "wait_ms": 0})
    _wait_screen(agent, job, r"^500$")
    agent.ok("bash_send", {"text": "q", "enter": False, "wait_ms": 0})
    res = agent.ok("bash_wait", {"job_id": job, "timeout_ms": 20_000, "on_input": False})
    assert res["status"] == "completed", res
    screen = agent.ok("bash_screen")
    assert screen["alt_screen"] is False and "before-less" in screen["lines"]


def test_top_shows_its_header_then_q_quits(agent: Agent) -> None:
    job = agent.ok("bash_exec", {"command": "top", "tty": True})["job_id"]
    _wait_screen(agent, job, r"^top - .*load average")
    agent.ok("bash_send", {"text": "q", "enter": False, "wait_ms": 0})
    res = agent.ok("bash_wait", {"job_id": job, "timeout_ms": 20_000, "on_input": False})
    assert res["status"] == "completed", res


def test_bash_screen_resizes_and_refuses_half_a_size(agent: Agent) -> None:
    agent.run("true")
    screen = agent.ok("bash_screen", {"cols": 70, "rows": 15})
    assert (screen["cols"], screen["rows"]) == (70, 15) and len(screen["lines"]) == 15
    assert agent.run("stty size </dev/tty")["output"] == "15 70\n"
    agent.err("bash_screen", {"cols": 70}, "INVALID_ARGUMENT")


def test_python_repl_up_recalls_the_last_line(agent: Agent) -> None:
    job = agent.ok("bash_exec", {"command": f"{sys.executable} -q -i", "tty": True})["job_id"]
    _wait_screen(agent, job, r"^>>>$")
    agent.ok("bash_send", {"text": "x = 41 + 1", "wait_ms": 0})
    _wait_screen(agent, job, r">>> x = 41 \+ 1\n>>>$")
    agent.ok("bash_send", {"keys": ["up"], "wait_ms": 0})
    _wait_screen(agent, job, r">>> x = 41 \+ 1\n>>> x = 41 \+ 1$")
    agent.ok("bash_send", {"keys": ["ctrl-u"], "wait_ms": 0})
    agent.ok("bash_send", {"text": "print(x)", "wait_ms": 0})
    _wait_screen(agent, job, r"^42\n>>>$")
    agent.ok("bash_send", {"keys": ["ctrl-d"], "wait_ms": 0})
    res = agent.ok("bash_wait", {"job_id": job, "timeout_ms": 20_000, "on_input": False})
    assert res["status"] == "completed" and res["exit_code"] == 0, res


def test_git_rebase_interactive_with_vim_reorders_two_commits(agent: Agent, tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    agent.run(
        f"git init -q {repo} && cd {repo} && git config user.email t@e && git config user.name t && "
        "for m in base first second; do echo $m > $m; git add $m; git commit -qm $m; done"
    )
    job = agent.ok(
        "bash_exec", {"command": "GIT_EDITOR='vim -u NONE -N' git rebase -i HEAD~2", "tty": True}
    )["job_id"]
    _wait_screen(agent, job, r"^pick \w+ first\npick \w+ second$")
    agent.ok("bash_send", {"text": "ddp", "enter": False, "wait_ms": 0})  # move "first" below "second"
    _wait_screen(agent, job, r"^pick \w+ second\npick \w+ first$")
    agent.ok("bash_send", {"text": ":wq", "wait_ms": 0})
    res = agent.ok("bash_wait", {"job_id": job, "timeout_ms": 20_000, "on_input": False})
    assert res["status"] == "completed" and res["exit_code"] == 0, res
    assert agent.run("git log --format=%s")["output"] == "first\nsecond\nbase\n"


NODE_KEYS = r"""
const readline = require("readline");
readline.emitKeypressEvents(process.stdin);
process.stdin.setRawMode(true);
console.log("ready");
const seen = [];
process.stdin.on("keypress", (str, key) => {
  seen.push(key.name);
  if (key.name === "return") {
    console.log("keys " + seen.join(" "));
    process.exit(0);
  }
});
"""


def test_node_readline_in_raw_mode_gets_arrow_keys(agent: Agent, tmp_path: Path) -> None:
    prog = tmp_path / "keys.js"
    prog.write_text(NODE_KEYS)
    job = agent.ok("bash_exec", {"command": f"node {prog}", "tty": True})["job_id"]
    _wait_screen(agent, job, r"^ready$")
    agent.ok("bash_send", {"keys": ["up", "down", "left", "right", "enter"], "wait_ms": 0})
    res = agent.ok("bash_wait", {"job_id": job, "timeout_ms": 20_000, "on_input": False})
    assert res["status"] == "completed" and res["exit_code"] == 0, res
    assert res["output"].splitlines()[-1] == "keys up down left right return"
