"""Targets: what each one parses to and the exact local argv it runs."""

from __future__ import annotations

import pytest

from dsh_magics.errors import InvalidArgument
from dsh_magics.terminal.remote import parse_target
from dsh_magics.terminal.remote.targets import enabled_kinds

ENV: dict[str, str] = {}
SSH_TAIL = [
    "-o", "BatchMode=yes", "-o", "ConnectTimeout=10", "-o", "ServerAliveInterval=10", "-o", "ServerAliveCountMax=3",
]  # fmt: skip


def argv(text: str, login: bool = True, env: dict[str, str] | None = None) -> list[str]:
    t = parse_target(text, environ=env or ENV)
    assert t is not None
    return t.argv(login=login, environ=env or ENV)


NO_MUX = ["-o", "ControlMaster=no", "-o", "ControlPath=none"]
NO_RC = ["-o", "RemoteCommand=none"]  # first: a RemoteCommand of the user's config never runs


def test_ssh_argv_host_only():
    # a login start runs no remote command: sshd starts the user's login shell (tests/remote/test_login_start.py)
    assert argv("ssh://gpu-box") == ["ssh", "-tt", *NO_RC, *NO_MUX, *SSH_TAIL, "--", "gpu-box"]


def test_ssh_argv_user_port_and_no_login():
    assert argv("ssh://alice@Gpu.Example.org:2222", login=False) == [
        "ssh", "-tt", *NO_RC, *SSH_TAIL, "-p", "2222", "-l", "alice", "--", "Gpu.Example.org",
        "exec bash --noprofile --norc -i",
    ]  # fmt: skip


def test_ssh_ipv6_and_extra_options_first():
    env = {"DSH_MAGICS_SSH_OPTIONS": "-F /tmp/cfg -o ServerAliveInterval=1", "DSH_MAGICS_SSH": "/opt/ssh"}
    assert argv("ssh://[::1]:22", env=env) == [
        "/opt/ssh", "-tt", *NO_RC, *NO_MUX, "-F", "/tmp/cfg", "-o", "ServerAliveInterval=1", *SSH_TAIL, "-p", "22", "--", "::1",
    ]  # fmt: skip


@pytest.mark.parametrize("kind", ["docker", "podman"])
def test_container_argv(kind):
    assert argv(f"{kind}://web_1.x") == [kind, "exec", "-it", "-e", "TERM=dumb", "web_1.x", "bash", "-l", "-i"]
    # a terminal's token marks the container's bash and its children
    # (remote/dead_owner.py); its value comes from the client's environment,
    # not from the argv, which any user may read
    target = parse_target(f"{kind}://web_1.x", environ=ENV)
    assert target is not None and target.argv(token="ab12") == [
        kind, "exec", "-it", "-e", "TERM=dumb", "-e", "DSH_MAGICS_TOKEN", "web_1.x", "bash", "-l", "-i",
    ]  # fmt: skip


@pytest.mark.parametrize(
    "text, expected",
    [
        ("kubectl://prod/api-0", ["kubectl", "exec", "-it", "-n", "prod", "api-0", "--"]),
        ("kubectl://prod/api-0/app", ["kubectl", "exec", "-it", "-n", "prod", "api-0", "-c", "app", "--"]),
        (
            "kubectl://kind-dev/prod/api-0/app",
            ["kubectl", "--context", "kind-dev", "exec", "-it", "-n", "prod", "api-0", "-c", "app", "--"],
        ),
        ("kubectl://kind-dev/prod/api-0/", ["kubectl", "--context", "kind-dev", "exec", "-it", "-n", "prod", "api-0", "--"]),
    ],
)
def test_kubectl_argv(text, expected):
    assert argv(text, login=False) == [*expected, "bash", "--noprofile", "--norc", "-i"]


def test_cmd_argv_is_shlex_split():
    assert argv("cmd:bash --noprofile -i -c 'x y'") == ["bash", "--noprofile", "-i", "-c", "x y"]


@pytest.mark.parametrize("text", [None, "", "local", " local "])
def test_local(text):
    assert parse_target(text, environ=ENV) is None


@pytest.mark.parametrize(
    "text",
    [
        "ssh://",
        "ssh://-oProxyCommand=x",
        "ssh://host/path",
        "ssh://host?x=1",
        "ssh://u:pw@host",
        "ssh://host:0",
        "ssh://host:99999",
        "ssh://host:",
        "ssh://@host",
        "ssh://bad host",
        "ssh://[zz::1]",
        "docker://",
        "docker://-it",
        "docker://a b",
        "kubectl://pod",
        "kubectl://a/b/c/d/e",
        "kubectl://Prod/api",
        "kubectl://prod/-api",
        "cmd:",
        "cmd:'unterminated",
        "cmd:/no/such/program -i",
        "cmd:--probe= bash -i",
        "cmd:--probe='sh -c' ",
        "cmd:--probe=/no/such/probe bash -i",
        "cmd:--probe='unterminated bash -i",
        "telnet://host",
        "gpu-box",
        "ssh://host\nx",
    ],
)
def test_unparseable_is_invalid_argument(text):
    with pytest.raises(InvalidArgument) as e:
        parse_target(text, environ=ENV)
    assert e.value.code == "INVALID_ARGUMENT"
    assert e.value.details.get("field") == "target"


def test_non_string_target():
    with pytest.raises(InvalidArgument):
        parse_target(42, environ=ENV)  # type: ignore[arg-type]


def test_targets_disabled_by_configuration():
    env = {"DSH_MAGICS_TARGETS": "local"}
    assert enabled_kinds(env) == ()
    assert parse_target("local", environ=env) is None
    with pytest.raises(InvalidArgument, match="disabled"):
        parse_target("ssh://host", environ=env)
    env = {"DSH_MAGICS_TARGETS": "ssh,cmd"}
    assert parse_target("ssh://host", environ=env) is not None
    with pytest.raises(InvalidArgument, match="disabled"):
        parse_target("docker://c", environ=env)
    with pytest.raises(InvalidArgument, match="unknown target kind"):
        enabled_kinds({"DSH_MAGICS_TARGETS": "ssh,ftp"})


def test_the_side_channel_execs_into_the_same_pod_without_a_tty(monkeypatch) -> None:
    from dsh_magics.terminal.remote.side_channel import probe_argv

    monkeypatch.delenv("DSH_MAGICS_SIDE_CHANNEL", raising=False)
    t = parse_target("kubectl://ctx/ns/pod/box")
    main = t.argv(login=False)
    side = probe_argv(t, None)
    assert side is not None and side[: side.index("--")] == [
        "-i" if a == "-it" else a for a in main[: main.index("--")]
    ]
    assert side[side.index("--") + 1 :] == ["sh"]


def test_cmd_names_its_probe_command(monkeypatch) -> None:
    """``cmd:--probe=PROBE ARGV``: PROBE (one shell word, split again) is the
    side channel; the terminal's own argv is the rest."""
    from dsh_magics.terminal.remote.side_channel import probe_argv
    from dsh_magics.terminal.remote.targets import PROBE_OPTION

    monkeypatch.delenv("DSH_MAGICS_SIDE_CHANNEL", raising=False)
    t = parse_target("cmd:--probe='podman exec -i box sh' podman exec -it box bash -i", environ=ENV)
    assert t is not None and t.kind == "cmd"
    assert t.argv() == ["podman", "exec", "-it", "box", "bash", "-i"]
    assert probe_argv(t, None) == ["podman", "exec", "-i", "box", "sh"]
    plain = parse_target("cmd:bash -i", environ=ENV)
    assert plain is not None and probe_argv(plain, None) is None
    monkeypatch.setenv("DSH_MAGICS_SIDE_CHANNEL", "0")
    assert probe_argv(t, None) is None
    # the docs show the same spelling
    from pathlib import Path

    doc = (Path(__file__).resolve().parents[2] / "docs" / "remote.md").read_text(encoding="utf-8")
    assert f"cmd:{PROBE_OPTION}PROBE ARGV" in doc
