"""What a person gets at the prompt of an idle local terminal (docs/attach.md, "What you
type"): the shell's history list (the notebook's and agents' commands, and the person's
own lines), searched with Ctrl-R; Tab completes command names, variables and file
names as bash's own prompt does."""

from __future__ import annotations

from pathlib import Path

from dsh_magics.host import HostClient

from ..conftest import wait_until
from .conftest import T, Tmux, attach_command


def _prompt_line(t: Tmux) -> str:
    rows = [r for r in t.rows() if r]
    return rows[-1] if rows else ""


def test_history_holds_the_notebooks_commands_and_the_persons_lines(
    engine: HostClient, attach_dir: str, tmuxes: list[Tmux], tmp_path: Path
) -> None:
    engine.attach("p-hist", cwd=str(tmp_path))
    engine.exec("p-hist", "echo from-the-notebook-$((6*7))", wait_ms=20_000, source="notebook")
    t = Tmux(attach_command("p-hist", attach_dir), 100, 30)
    tmuxes.append(t)
    t.wait_for("from-the-notebook-42")
    t.keys("Up")  # the first key opens the prompt, and goes to it
    wait_until(lambda: _prompt_line(t).endswith("echo from-the-notebook-$((6*7))"), T, msg=t.screen())
    t.keys("C-u")
    t.text("echo said-by-a-person")
    t.keys("Enter")
    t.wait_for("\nsaid-by-a-person")
    t.keys("Up")
    wait_until(lambda: _prompt_line(t).endswith("echo said-by-a-person"), T, msg=t.screen())
    t.keys("C-u", "C-r")
    t.text("notebook")
    wait_until(lambda: "`notebook': echo from-the-notebook-$((6*7))" in _prompt_line(t), T, msg=t.screen())
    t.keys("C-g", "C-u", "Enter")  # leave the search, drop the line, close the prompt


def test_tab_completes_commands_variables_and_file_names(
    engine: HostClient, attach_dir: str, tmuxes: list[Tmux], tmp_path: Path
) -> None:
    (tmp_path / "echoed-file-name").write_text("")
    (tmp_path / "subdir-xq").mkdir()
    (tmp_path / "twin-a").write_text("")
    (tmp_path / "twin-b").write_text("")
    engine.attach("p-tab", cwd=str(tmp_path))
    engine.exec(
        "p-tab", "export PERSON_VISIBLE_VARIABLE=1; person_unique_command_xq() { echo ran; }; echo tab-ready", wait_ms=20_000
    )
    # Wide enough for the whole line: readline scrolls a longer one sideways.
    t = Tmux(attach_command("p-tab", attach_dir), 220, 30)
    tmuxes.append(t)
    t.wait_for("tab-ready")  # drawn by the client: its terminal is in raw mode
    # A command name in command position (a function of the shell: compgen -c knows it) ...
    t.text("person_uniq")
    t.keys("Tab")
    wait_until(lambda: _prompt_line(t).endswith("person_unique_command_xq"), T, msg=t.screen())
    # ... a variable after $, and file names elsewhere (a directory gets its /).
    t.text("$PERSON_VIS")
    t.keys("Tab")
    t.text("echoed-f")
    t.keys("Tab")
    t.text("subd")
    t.keys("Tab")
    t.text(" ")
    want = "person_unique_command_xq $PERSON_VISIBLE_VARIABLE echoed-file-name subdir-xq/"  # a space after each
    wait_until(lambda: _prompt_line(t).endswith(want), T, msg=t.screen() + "\nENGINE\n" + "\n".join(engine.screen("p-tab")["lines"]))
    # Several matches: completed to what they share; a second Tab lists them under the line.
    t.text("tw")
    t.keys("Tab")
    wait_until(lambda: _prompt_line(t).endswith(want + " twin-"), T, msg=t.screen())
    t.keys("Tab")
    wait_until(lambda: "twin-a  twin-b" in t.screen() and _prompt_line(t).endswith(want + " twin-"), T, msg=t.screen())
    # After `;` it is command position again.
    t.keys("C-u")
    t.text("true; person_uniq")
    t.keys("Tab")
    t.text("-")
    wait_until(lambda: _prompt_line(t).endswith("true; person_unique_command_xq -"), T, msg=t.screen())
    t.keys("C-u", "Enter")
    # Tab was the prompt's for its read only: the shell's own binding is back.
    wait_until(lambda: engine.info("p-tab").status == "idle", T)
    res = engine.exec("p-tab", "bind -X 2>/dev/null; bind -p 2>/dev/null | grep -F '\"\\C-i\"'; type -t __dsh_tab || echo no-fn", wait_ms=20_000)
    assert res.output.split() == ['"\\C-i":', "complete", "no-fn"], res.output
