"""``dsh-magics`` CLI, run as a real subprocess."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from pathlib import Path

import pytest

from .conftest import requires_node


def run(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "dsh_magics.cli", *args],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )


def one_line_error(proc: subprocess.CompletedProcess[str], code: str) -> str:
    assert proc.returncode == 1
    assert "Traceback" not in proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"dsh-magics: {code}: "), proc.stderr
    return lines[0]


def test_help_lists_subcommands() -> None:
    proc = run("--help")
    assert proc.returncode == 0
    for name in ("schema", "escalate", "catalog"):
        assert name in proc.stdout


def test_schema_table_default() -> None:
    proc = run("schema")
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert "variant A" in out and "bg=on sandbox=none" in out
    assert (
        "run_in_background" in out
        and "sandbox_permissions" not in out.split("description fragments")[0]
    )
    assert "our own wording" in out


def test_schema_json_for_a_config() -> None:
    proc = run("schema", "--no-background", "--sandbox", "danger-full-access", "--json")
    data = json.loads(proc.stdout)
    assert data["variant"] == "D"
    assert [p["name"] for p in data["tools"][0]["params"]] == [
        "command",
        "description",
        "timeoutMs",
        "workdir",
        "sandbox_permissions",
        "justification",
    ]
    assert data["tools"][0]["params"][4]["enum"] == ["workspace-write", "danger-full-access"]


def test_schema_preset_and_override() -> None:
    data = json.loads(run("schema", "--preset", "package-default", "--json").stdout)
    assert data["config"]["sandbox"] == "read-only"
    data = json.loads(run("schema", "--preset", "dsh-base", "--no-background", "--json").stdout)
    assert data["variant"] == "D"


def test_schema_matrix() -> None:
    proc = run("schema", "--matrix")
    assert "8 configurations, 4 distinct schemas" in proc.stdout
    data = json.loads(run("schema", "--matrix", "--json").stdout)
    assert data["distinct"] == 4 and len(data["rows"]) == 8
    assert data["columns"][-2:] == ["sandbox_permissions", "justification"]


def test_schema_old_era_reports_not_applicable() -> None:
    proc = run("schema", "--era", "2026-06-12", "--no-background")
    assert proc.returncode == 0
    assert "not applicable: enable_run_in_background=False" in proc.stdout
    assert "bash_output" in proc.stdout


def test_load_error_is_one_line() -> None:
    one_line_error(run("schema", "--sandbox", "read-only", "--no-policy"), "PLUGIN_LOAD_ERROR")


def test_usage_error_exits_2() -> None:
    proc = run("schema", "--sandbox", "sideways")
    assert proc.returncode == 2 and "invalid choice" in proc.stderr


@pytest.mark.parametrize(
    "args,category",
    [
        (
            ["--mode", "read-only", "--request", "workspace-write", "--justification", "why"],
            "granted",
        ),
        (
            [
                "--mode",
                "read-only",
                "--request",
                "workspace-write",
                "--justification",
                "why",
                "--outcome",
                "cancelled",
            ],
            "cancelled",
        ),
        (
            ["--mode", "workspace-write", "--request", "workspace-write", "--justification", "why"],
            "not-wider",
        ),
        (
            [
                "--mode",
                "read-only",
                "--request",
                "danger-full-access",
                "--justification",
                "why",
                "--no-approver",
            ],
            "no-approver",
        ),
        (
            [
                "--mode",
                "read-only",
                "--request",
                "danger-full-access",
                "--justification",
                "why",
                "--no-agent",
            ],
            "no-agent",
        ),
        (
            [
                "--mode",
                "read-only",
                "--request",
                "danger-full-access",
                "--justification",
                "why",
                "--policy",
                "never",
            ],
            "rejected",
        ),
        (["--mode", "read-only", "--request", "danger-full-access"], "invalid-args"),
    ],
)
def test_escalate_json(args: list[str], category: str) -> None:
    proc = run("escalate", *args, "--json")
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert data["category"] == category
    assert [s["key"] for s in data["steps"]][0] == "validate"


def test_escalate_table() -> None:
    proc = run(
        "escalate",
        "--mode",
        "read-only",
        "--request",
        "workspace-write",
        "--justification",
        "why",
        "--outcome",
        "rejected",
    )
    assert "category: rejected" in proc.stdout and "FAIL" in proc.stdout
    assert "(our summary)" in proc.stdout


def test_catalog_listing_and_check(fixtures: Path) -> None:
    proc = run("catalog", str(fixtures / "catalog_good.md"))
    assert proc.returncode == 0
    assert "3 packages, 5 tools" in proc.stdout and "job_output" in proc.stdout
    check = run("catalog", str(fixtures / "catalog_good.md"), "--check")
    assert check.returncode == 1  # our wording differs from the harness texts
    assert "text description differs" in check.stdout
    drifted = run("catalog", str(fixtures / "catalog_drifted.md"), "--check", "--json")
    data = json.loads(drifted.stdout)
    assert data["ok"] is False and [p["name"] for p in data["diff"]["added"]] == [
        "run_in_background"
    ]


def test_catalog_malformed_names_the_line(fixtures: Path) -> None:
    line = one_line_error(run("catalog", str(fixtures / "malformed_json.md")), "CATALOG_MALFORMED")
    assert "malformed_json.md:18:" in line


def test_catalog_missing_file(tmp_path: Path) -> None:
    one_line_error(run("catalog", str(tmp_path / "none.md")), "INVALID_ARGUMENT")


@pytest.mark.node
@requires_node
def test_schema_live(bridge: object) -> None:
    proc = run("schema", "--source", "live", "--json")
    assert proc.returncode == 0, proc.stderr
    bash = json.loads(proc.stdout)["tools"][0]
    assert hashlib.sha256(bash["description"].encode()).hexdigest() == (
        "f7b37227848f34ad5e576d931077ffe2a52ccc3af6b0a899f17a346f136cf3c3"
    )
    assert bash["description_is_summary"] is False
    proc = run(
        "escalate",
        "--mode",
        "read-only",
        "--request",
        "read-only",
        "--justification",
        "j",
        "--source",
        "live",
        "--json",
    )
    assert json.loads(proc.stdout)["category"] == "not-wider"


def test_schema_eras_say_where_texts_come_from() -> None:
    proc = run("schema", "--eras")
    assert proc.returncode == 0, proc.stderr
    rows = {line.split()[0]: line for line in proc.stdout.splitlines()[2:]}
    assert "live (0.0.1-rc.1)" in rows["2026-07-15"]
    assert "live (0.1.0-rc.8)" in rows["2026-08-13"]
    assert "modelled" in rows["2026-07-11"] and "modelled" in rows["rfc-foreground-only"]
    data = json.loads(run("schema", "--eras", "--json").stdout)
    assert {e["key"]: e["published"] for e in data}["2026-07-15"] == "0.0.1-rc.1"


def test_schema_era_diff_model_compares_hashes() -> None:
    proc = run("schema", "--era", "2026-07-15", "--against-era", "2026-08-13", "--json")
    d = json.loads(proc.stdout)
    assert d["texts_compared"] == "sha256"
    assert d["fragments_changed"] == ["background-on"]
    assert d["texts_changed"] == ["run_in_background"]
    assert (d["chars_a"], d["chars_b"]) == (1804, 1810)
    proc = run("schema", "--era", "2026-07-11", "--against-era", "2026-08-13")
    assert "texts: not compared (a side's texts are unknown)" in proc.stdout


@pytest.mark.node
@requires_node
def test_schema_live_task_era(bridge: object) -> None:
    proc = run("schema", "--source", "live", "--era", "2026-07-15", "--json")
    assert proc.returncode == 0, proc.stderr
    view = json.loads(proc.stdout)
    assert view["source"] == "live" and view["version"] == "0.0.1-rc.1"
    bash = view["tools"][0]
    assert hashlib.sha256(bash["description"].encode()).hexdigest() == (
        "611c8badb34bf0a6e1c06a3286ec5a87bb13b2a184fb3a7e12ca39e7c8b96310"
    )
    assert bash["description_is_summary"] is False
    assert [t["package"] for t in view["tools"][1:]] == ["@deepseek-ai/dsh-tool-tasks"] * 3
    proc = run("schema", "--source", "live", "--era", "2026-07-15", "--against-era", "2026-08-13")
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert out.startswith("bash: live:bg=on sandbox=none -> live:bg=on sandbox=none era=2026-07-15")
    assert "~ fragment background-on: text differs (compared exactly)" in out
    assert "texts: compared exactly on both sides" in out
    one_line_error(
        run("schema", "--source", "live", "--era", "2026-07-15", "--npm-version", "0.1.0-rc.8"),
        "INVALID_ARGUMENT",
    )
