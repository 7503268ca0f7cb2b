"""The tasks' board (dsh_magics/mcp/task_board.py): an input request is
shown to the client it was made for only, is taken once, and the task works
on when none is left."""

from __future__ import annotations

from dsh_magics.answer.page import SecretPrompt
from dsh_magics.mcp.elicit import UrlRequest
from dsh_magics.mcp.task_board import TaskBoard

TID = "bash-1~mcp-agent"
ASKED = UrlRequest(SecretPrompt("mcp-agent", "bash-1", 42, "Password: "), "nonce-1", "answer it", "http://127.0.0.1:1/x")


def test_an_input_request_is_shown_to_its_client_only_and_taken_once() -> None:
    board = TaskBoard()
    board.created(TID)
    board.ask(TID, "person-1", "client-a", ASKED)
    mine = board.state(TID, "running", None, "client-a")
    assert mine["status"] == "input_required"
    assert mine["inputRequests"] == {
        "person-1": {
            "method": "elicitation/create",
            "params": {"mode": "url", "message": "answer it", "url": "http://127.0.0.1:1/x"},
        }
    }
    other = board.state(TID, "running", None, "client-b")
    assert other["status"] == "working" and "inputRequests" not in other
    assert "another client" in other["statusMessage"] and "http" not in str(other)
    assert board.take_input(TID, "person-1", "client-b") is None  # not theirs
    assert board.take_input(TID, "person-1", "client-a") == "nonce-1"
    assert board.take_input(TID, "person-1", "client-a") is None  # once
    after = board.state(TID, "running", None, "client-a")
    assert after["status"] == "working" and "inputRequests" not in after


def test_a_withdrawn_or_finished_task_asks_no_more() -> None:
    board = TaskBoard()
    board.created(TID)
    board.ask(TID, "person-1", "client-a", ASKED)
    board.withdraw(TID)  # the prompt went away
    assert board.state(TID, "running", None, "client-a")["status"] == "working"
    assert board.take_input(TID, "person-1", "client-a") is None
    board.ask(TID, "person-2", "client-a", ASKED)
    done = board.state(TID, "completed", {"content": [], "isError": False}, "client-a")
    assert done["status"] == "completed" and "inputRequests" not in done
    board.ask(TID, "person-3", "client-a", ASKED)  # too late: the task is done
    assert board.state(TID, "completed", None, "client-a")["status"] == "completed"
