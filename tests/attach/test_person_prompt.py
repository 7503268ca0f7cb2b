"""What a person gets at the prompt of an idle local terminal (docs/attach.md, "What you
type"): the shell's history list (the notebook's and agents' commands, and the person's
own lines), searched with Ctrl-R; Tab completes file names only."""

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


def test_tab_completes_file_names_only(
    engine: HostClient, attach_dir: str, tmuxes: list[Tmux], tmp_path: Path
) -> None:
    (tmp_path / "echoed-file-name").write_text("")
    engine.attach("p-tab", cwd=str(tmp_path))
    engine.exec("p-tab", "export PERSON_VISIBLE_VARIABLE=1", wait_ms=20_000)
    t = Tmux(attach_command("p-tab", attach_dir), 100, 30)
    tmuxes.append(t)
    t.text("echo $PERSON_VIS")
    t.keys("Tab")
    t.text(" ech")
    t.keys("Tab")
    # The variable was not completed; the word after it completed as a file name.
    wait_until(lambda: _prompt_line(t).endswith("echo $PERSON_VIS echoed-file-name"), T, msg=t.screen())
    t.keys("C-u", "Enter")
