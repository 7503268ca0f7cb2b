"""``%bash_schema`` in a real IPython shell: options, catalog, one-line errors."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from IPython.core.error import UsageError
from IPython.core.interactiveshell import InteractiveShell

from dsh_magics.widgets.inspector import Inspector
from dsh_magics.widgets.inspector_magic import register

FIXTURES = Path(__file__).parent / "fixtures"


@pytest.fixture(scope="module")
def ip() -> InteractiveShell:
    shell = InteractiveShell.instance()
    register(shell)
    return shell


def test_magic_returns_an_inspector_with_the_requested_controls(ip: InteractiveShell) -> None:
    result = ip.run_cell("%bash_schema --source model --no-background --sandbox read-only")
    assert result.success
    insp = result.result
    assert isinstance(insp, Inspector)
    v = insp.view
    assert (v.controls.background, v.controls.sandbox) == (False, "read-only")
    assert "sandbox_permissions" in v.params.names and "run_in_background" not in v.params.names


def test_text_option_prints_the_plain_rendering(ip: InteractiveShell, capsys) -> None:
    ip.run_line_magic("bash_schema", "--source model --era rfc-foreground-only --text")
    out = capsys.readouterr().out
    assert "tools in rfc-foreground-only: bash" in out
    assert "enable_run_in_background" in out  # reported as not applicable, never silently dropped
    assert not re.search(r"run_in_background +boolean", out)


def test_catalog_option_loads_the_catalog(ip: InteractiveShell) -> None:
    insp = ip.run_line_magic(
        "bash_schema", f"--source model --catalog {FIXTURES / 'inspector_catalog.md'}"
    )
    assert insp.view.catalog is not None and insp.view.catalog.tool_count == 3


@pytest.mark.parametrize(
    ("line", "code"),
    [
        ("--sandbox sideways", "INVALID_ARGUMENT"),
        ("--preset nowhere", "INVALID_ARGUMENT"),
        ("--catalog /nonexistent/tool-catalog.md", "INVALID_ARGUMENT"),
        ("--catalog 'unbalanced", "INVALID_ARGUMENT"),
        ("--bogus", "INVALID_ARGUMENT"),
    ],
)
def test_bad_input_is_one_usage_error_line(ip: InteractiveShell, line: str, code: str) -> None:
    with pytest.raises(UsageError) as err:
        ip.run_line_magic("bash_schema", f"--source model {line}")
    assert str(err.value).startswith(f"{code}: ") and "\n" not in str(err.value)


def test_bad_input_shows_one_line_without_traceback(ip: InteractiveShell, capsys) -> None:
    ip.run_cell("%bash_schema --source model --sandbox sideways")
    captured = capsys.readouterr()
    lines = [ln for ln in captured.err.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("UsageError: INVALID_ARGUMENT: "), lines
    assert "Traceback" not in captured.err + captured.out


def test_malformed_catalog_names_the_line(ip: InteractiveShell, capsys, tmp_path: Path) -> None:
    bad = tmp_path / "tool-catalog.md"
    bad.write_text("# Tool Schema Catalog\n\n## `@x/y`\n\n### `t`\n\n```python\n{}\n```\n")
    with pytest.raises(UsageError) as err:
        ip.run_line_magic("bash_schema", f"--source model --catalog {bad}")
    assert str(err.value).startswith("CATALOG_MALFORMED: ") and f"{bad}:7:" in str(err.value)
