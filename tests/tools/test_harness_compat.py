"""Our schemas load in the DeepSeek Harness itself.

Runs the seven parameter schemas (and the output schemas) through the
published ``@deepseek-ai/dsh-tools`` package's ``assertSupportedJsonSchema``
in Node, with the packages installed by the harness bridge's own install path
(a per-user cache; ``.ci/run`` fills it). Skipped only without node or npm.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from dsh_magics import tools

pytestmark = pytest.mark.node

CHECKER = Path(__file__).with_name("harness_schema_check.mjs")


@pytest.fixture(scope="module")
def harness_prefix() -> Path:
    missing = [t for t in ("node", "npm") if shutil.which(t) is None]
    if missing:
        pytest.skip(
            f"{' and '.join(missing)} not on PATH: cannot load the published harness packages"
        )
    from dsh_magics.harness.bridge import Bridge

    bridge = Bridge()
    bridge.install()  # no-op when cached; a failure here is a real failure
    return bridge.prefix


def run_checker(prefix: Path, request: dict[str, Any]) -> dict[str, Any]:
    proc = subprocess.run(
        ["node", str(CHECKER), str(prefix)],
        input=json.dumps(request),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    return json.loads(proc.stdout)


@pytest.fixture(scope="module")
def verdicts(harness_prefix: Path) -> dict[str, Any]:
    req: dict[str, Any] = {"schemas": {}, "values": []}
    for spec in tools.schemas():
        req["schemas"][f"params:{spec['name']}"] = spec["parameters"]
    for spec in tools.schemas(bounds=True):
        req["schemas"][f"bounded:{spec['name']}"] = spec["parameters"]
    for name in tools.TOOL_NAMES:
        req["schemas"][f"output:{name}"] = tools.output_schema(name)
    exec_params = next(s for s in tools.schemas() if s["name"] == "bash_exec")["parameters"]
    for label, value in ARGUMENT_SETS:
        req["values"].append({"label": label, "schema": exec_params, "value": value})
    return run_checker(harness_prefix, req)


def test_the_published_package_was_used(verdicts: dict[str, Any]) -> None:
    from dsh_magics.harness.facts import DEFAULT_VERSION

    assert verdicts["version"] == DEFAULT_VERSION


@pytest.mark.parametrize("name", tools.TOOL_NAMES)
def test_parameters_are_accepted_by_the_harness(verdicts: dict[str, Any], name: str) -> None:
    v = verdicts["schemas"][f"params:{name}"]
    assert v["supported"] and v["object"], v["violations"]


@pytest.mark.parametrize("name", tools.TOOL_NAMES)
def test_output_schemas_are_accepted_by_the_harness(verdicts: dict[str, Any], name: str) -> None:
    v = verdicts["schemas"][f"output:{name}"]
    assert v["supported"], v["violations"]


def test_bound_keywords_are_why_the_default_has_none(verdicts: dict[str, Any]) -> None:
    """The harness refuses keywords it cannot enforce (minimum, maxLength...).
    That is why ``schemas()`` states bounds in descriptions and ``call()``
    enforces them; if this starts passing, bounds can move into the schema."""
    v = verdicts["schemas"]["bounded:bash_exec"]
    assert not v["supported"]
    text = " ".join(v["violations"])
    for keyword in ("minimum", "maximum", "minLength", "maxLength"):
        assert keyword in text


ARGUMENT_SETS: list[tuple[str, Any]] = [
    ("valid", {"command": "ls", "wait_ms": 100}),
    ("valid minimal", {"command": "ls"}),
    ("wrong type", {"command": 1}),
    ("unknown key", {"command": "ls", "timeout": 1}),
    ("missing command", {}),
    ("negative wait_ms", {"command": "ls", "wait_ms": -1}),
    ("empty command", {"command": ""}),
]


def test_argument_checks_agree_with_the_harness(verdicts: dict[str, Any]) -> None:
    """Type, key and required checks agree; bounds (negative wait_ms, empty
    command) only ``call()`` can enforce, since the schema cannot carry them."""
    ours = jsonschema.Draft202012Validator(tools.validation_schema("bash_exec"))
    harness = {v["label"]: not v["violations"] for v in verdicts["values"]}
    expected = {
        # label: (harness accepts, call() accepts)
        "valid": (True, True),
        "valid minimal": (True, True),
        "wrong type": (False, False),
        "unknown key": (False, False),
        "missing command": (False, False),
        "negative wait_ms": (True, False),
        "empty command": (True, False),
    }
    assert {
        label: (harness[label], ours.is_valid(value)) for label, value in ARGUMENT_SETS
    } == expected
