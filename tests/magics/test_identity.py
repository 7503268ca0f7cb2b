"""This notebook's default session id: notebook path, else kernel id, else a
process default."""

from __future__ import annotations

import pytest

from dsh_magics.notebook.identity import (
    PROCESS_DEFAULT,
    identify,
    session_id_for_kernel,
    session_id_for_path,
)
from dsh_magics.terminal import validate_session_id


def test_notebook_path_from_ipykernel_wins() -> None:
    ident = identify(
        {"__session__": "/home/u/proj/analysis.ipynb"},
        {"JPY_SESSION_NAME": "/other.ipynb"},
        "/r/kernel-abc.json",
    )
    assert ident.source == "notebook" and ident.session_id.startswith("analysis.ipynb-")
    assert ident.detail == "/home/u/proj/analysis.ipynb"


def test_environment_and_vscode_are_also_notebook_paths() -> None:
    assert identify({}, {"JPY_SESSION_NAME": "nb/x.ipynb"}).session_id.startswith("x.ipynb-")
    assert identify({"__vsc_ipynb_file__": "/w/y.ipynb"}, {}).session_id.startswith("y.ipynb-")


def test_same_name_in_different_folders_gets_different_sessions() -> None:
    a = session_id_for_path("/a/analysis.ipynb")
    b = session_id_for_path("/b/analysis.ipynb")
    assert a != b and a.split("-")[0] == b.split("-")[0] == "analysis.ipynb"
    assert session_id_for_path("/a/analysis.ipynb") == a  # stable across restarts


def test_kernel_id_when_no_path() -> None:
    ident = identify({}, {}, "/run/jupyter/kernel-1b2c3d4e-aaaa-bbbb.json")
    assert (ident.source, ident.session_id) == ("kernel", "kernel-1b2c3d4e")
    assert session_id_for_kernel("/tmp/tmpab12cd.json") == "kernel-tmpab12c"


def test_process_default_last_and_config_first() -> None:
    assert identify({}, {}, None).session_id == PROCESS_DEFAULT
    ident = identify({"__session__": "/x.ipynb"}, {}, None, configured="mine")
    assert (ident.source, ident.session_id) == ("config", "mine")


@pytest.mark.parametrize(
    "path",
    [
        "/a/we ird\tname\n.ipynb",
        "/",
        "",
        "C:\\Users\\me\\nb.ipynb",
        "/a/" + "x" * 500 + ".ipynb",
        "/a/ü.ipynb",
    ],
)
def test_derived_ids_are_always_valid_session_ids(path: str) -> None:
    validate_session_id(session_id_for_path(path))
    validate_session_id(session_id_for_kernel(path or "k.json"))


def test_blank_values_are_ignored() -> None:
    assert identify({"__session__": "  "}, {"JPY_SESSION_NAME": ""}, None).source == "process"
