"""A named JupyterLab terminal whose program is ``dsh-magics attach SESSION``.

The kernel asks its own Jupyter server (the one whose pid is ``JPY_PARENT_PID``, found in
the server's runtime files) to start the terminal: ``POST /api/terminals`` with a ``name``
and a ``shell_command``. That body is passed through by ``jupyter_server_terminals`` to
terminado's ``new_named_terminal``; it is not documented, so the versions it is tested on
are pinned in the ``[lab]`` extra (jupyter_server_terminals 0.5.4, terminado 0.18.1).
"""

from __future__ import annotations

import json
import os
import re
import urllib.error
import urllib.parse
import urllib.request
import zlib
from dataclasses import dataclass
from typing import Any

from ..errors import DshError
from ..terminal.core.boot import boot_argv

_NOT_WORD = re.compile(r"\W")
_TIMEOUT = 10.0


class LabUnavailable(DshError):
    """No Jupyter server to ask, or it refused the terminal."""

    code = "LAB_UNAVAILABLE"


@dataclass(frozen=True)
class Server:
    url: str
    token: str
    pid: int


@dataclass(frozen=True)
class LabTerminal:
    name: str
    created: bool
    argv: list[str]


def terminal_name(session_id: str, read_only: bool = False) -> str:
    """``dsh_<session>`` (``_ro`` for a viewer); terminal names must match ``\\w+``, so
    other characters become ``_`` and a checksum of the real id keeps names apart."""
    word = _NOT_WORD.sub("_", session_id)
    name = f"dsh_{word}"
    if word != session_id:
        name += f"_{zlib.crc32(session_id.encode()):08x}"
    return name + ("_ro" if read_only else "")


def attach_argv(session_id: str, host: str, host_dir: str, read_only: bool = False) -> list[str]:
    """The attach client, run by this kernel's Python and this very package.
    Not ``-m``: the Jupyter server runs it in its own working directory (often
    the notebooks' folder), where a ``json.py`` of the user's shadowed the
    standard library (terminal/core/boot.py)."""
    argv = boot_argv("dsh_magics.cli", "attach", session_id, "--host", host, "--host-dir", host_dir)
    return argv + (["--read-only"] if read_only else [])


def find_server(environ: Any = None) -> Server:
    """The Jupyter server that started this kernel, from its runtime file."""
    env = os.environ if environ is None else environ
    raw = env.get("JPY_PARENT_PID", "")
    if not raw.isdigit():
        raise LabUnavailable("no Jupyter server started this kernel (JPY_PARENT_PID is not set)")
    pid = int(raw)
    from jupyter_server.serverapp import list_running_servers

    for info in list_running_servers():
        if int(info.get("pid", -1)) == pid:
            return Server(str(info["url"]), str(info.get("token", "")), pid)
    raise LabUnavailable(
        f"the Jupyter server pid {pid} has no runtime file (jupyter server list does not show it)"
    )


def _request(
    server: Server, method: str, path: str, body: dict[str, Any] | None = None
) -> tuple[int, Any]:
    url = urllib.parse.urljoin(server.url, path.lstrip("/"))
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(url, data=data, method=method)
    req.add_header("Content-Type", "application/json")
    if server.token:
        req.add_header("Authorization", f"token {server.token}")
    try:
        with urllib.request.urlopen(req, timeout=_TIMEOUT) as resp:  # noqa: S310 - the kernel's own server
            text = resp.read().decode()
            return resp.status, (json.loads(text) if text else None)
    except urllib.error.HTTPError as e:
        return e.code, None
    except (OSError, ValueError) as e:
        raise LabUnavailable(f"the Jupyter server at {server.url} did not answer: {e}") from None


def open_terminal(
    server: Server, session_id: str, host: str, host_dir: str, read_only: bool = False
) -> LabTerminal:
    """Start the named Lab terminal for ``session_id``, or reuse it if it runs."""
    name = terminal_name(session_id, read_only)
    argv = attach_argv(session_id, host, host_dir, read_only)
    status, _ = _request(server, "GET", f"api/terminals/{name}")
    if status == 200:
        return LabTerminal(name, False, argv)
    body: dict[str, Any] = {"name": name, "shell_command": argv}
    if os.environ.get("PYTHONPATH"):
        # the kernel's own import path for the client's imports (this package
        # itself comes from the boot, whatever PYTHONPATH holds)
        body["extra_env"] = {"PYTHONPATH": os.environ["PYTHONPATH"]}
    status, model = _request(server, "POST", "api/terminals", body)
    if status != 200 or not isinstance(model, dict) or model.get("name") != name:
        raise LabUnavailable(
            f"the Jupyter server refused the terminal {name} (HTTP {status}); "
            "terminals need jupyter_server_terminals (pip install 'dsh-magics[lab]')"
        )
    return LabTerminal(name, True, argv)


def close_terminal(server: Server, name: str) -> bool:
    """``DELETE /api/terminals/<name>``; True if it existed."""
    status, _ = _request(server, "DELETE", f"api/terminals/{name}")
    return status == 204
