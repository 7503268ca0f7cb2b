"""Catalog reader on our own fixtures (the harness's layout, our wording)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from dsh_magics.errors import InvalidArgument
from dsh_magics.harness import (
    Bridge,
    CatalogError,
    Config,
    catalog_view,
    check,
    load_catalog,
    parse_catalog,
    schema,
)
from dsh_magics.harness.catalog import render_catalog

from .conftest import requires_node


def test_reads_the_good_fixture(fixtures: Path) -> None:
    cat = load_catalog(fixtures / "catalog_good.md")
    assert cat.title == "Tool Schema Catalog"
    assert [p.name for p in cat.packages] == [
        "@deepseek-ai/dsh-tool-bash",
        "@deepseek-ai/dsh-tool-jobs",
        "@deepseek-ai/dsh-tool-bash-persistent",
    ]
    assert [p.anchor for p in cat.packages] == [
        "deepseek-aidsh-tool-bash",
        "deepseek-aidsh-tool-jobs",
        "deepseek-aidsh-tool-bash-persistent",
    ]
    bash = cat.packages[0].tools[0]
    assert (bash.name, bash.line, bash.source) == (
        "bash",
        25,
        "packages/shell/tool-bash/src/index.ts",
    )
    assert bash.description.startswith("Runs one shell command")
    assert list(bash.parameters["properties"]) == [
        "command",
        "description",
        "timeoutMs",
        "workdir",
        "run_in_background",
    ]
    assert cat.packages[0].note is not None and cat.packages[0].note.startswith("Fixture note")
    assert cat.packages[1].note is None
    assert [t.name for t in cat.packages[1].tools] == ["job_kill", "job_list", "job_output"]
    assert len(cat.map_rows) == 3 and cat.map_rows[1][1] == "`job_kill`, `job_list`, `job_output`"
    assert [t.package for t in cat.tools_named("bash")] == [
        "@deepseek-ai/dsh-tool-bash",
        "@deepseek-ai/dsh-tool-bash-persistent",
    ]


def test_good_fixture_has_no_structural_drift_but_our_texts_differ(fixtures: Path) -> None:
    drift = check(load_catalog(fixtures / "catalog_good.md"), "model")
    assert drift.diff.structurally_equal
    assert drift.config == Config(background=True, sandbox=None)
    # our wording is not the harness's: every text is reported by hash
    assert drift.text_mismatches == (
        "description",
        "param:command",
        "param:description",
        "param:timeoutMs",
        "param:workdir",
        "param:run_in_background",
    )
    assert not drift.ok
    assert any("known fragments" in n for n in drift.notes)


def test_drifted_fixture_reports_every_change(fixtures: Path) -> None:
    drift = check(load_catalog(fixtures / "catalog_drifted.md"), "model")
    d = drift.diff
    assert [p.name for p in d.removed] == ["justification", "sandbox_permissions"]  # catalog only
    assert [p.name for p in d.added] == ["run_in_background"]  # in the source only
    changes = {(c.name, c.facet): (c.before, c.after) for c in d.changed}
    assert changes == {
        ("timeoutMs", "type"): ("integer", "number"),
        ("workdir", "required"): (True, False),
    }
    assert not drift.ok


def test_catalog_view_diffs_like_any_view(fixtures: Path) -> None:
    from dsh_magics.harness import diff

    view = catalog_view(load_catalog(fixtures / "catalog_drifted.md"))
    assert view.source == "catalog"
    d = diff(view, schema(Config(sandbox="read-only")))
    changes = {(c.name, c.facet): (c.before, c.after) for c in d.changed}
    assert changes[("sandbox_permissions", "enum")] == (
        ["danger-full-access"],
        ["workspace-write", "danger-full-access"],
    )
    assert changes[("justification", "position")] == (4, 6)
    assert ("sandbox_permissions", "position") not in changes  # 5 on both sides
    assert [p.name for p in d.added] == ["run_in_background"]


@pytest.mark.parametrize(
    "name,line,fragment",
    [
        ("malformed_fence.md", 13, "```json"),
        ("malformed_json.md", 18, "invalid JSON"),
        ("malformed_unclosed.md", 9, "unclosed"),
    ],
)
def test_malformed_fixture_files(fixtures: Path, name: str, line: int, fragment: str) -> None:
    with pytest.raises(CatalogError) as exc:
        load_catalog(fixtures / name)
    assert exc.value.code == "CATALOG_MALFORMED"
    assert exc.value.line == line
    assert fragment in exc.value.message
    assert f"{name}:{line}:" in exc.value.message


Mutation = Callable[[list[str]], tuple[list[str], int]]


def _replace(old: str, new: str) -> Mutation:
    """Replace the first line equal to ``old``; the error is expected on it."""

    def go(lines: list[str]) -> tuple[list[str], int]:
        i = lines.index(old)
        return lines[:i] + [new] + lines[i + 1 :], i + 1

    return go


def _insert_after(anchor: str, *new: str, expect: int) -> Mutation:
    """Insert ``new`` after the first ``anchor`` line; the error is expected on
    inserted line number ``expect`` (1-based within ``new``)."""

    def go(lines: list[str]) -> tuple[list[str], int]:
        i = lines.index(anchor)
        return lines[: i + 1] + list(new) + lines[i + 1 :], i + 1 + expect

    return go


def _delete(line_text: str, expect_at: str) -> Mutation:
    """Delete the first ``line_text``; the error is expected on the (first)
    ``expect_at`` line of the result."""

    def go(lines: list[str]) -> tuple[list[str], int]:
        i = lines.index(line_text)
        out = lines[:i] + lines[i + 1 :]
        return out, out.index(expect_at) + 1

    return go


SOURCE_JOBS = (
    "Source: [`packages/jobs/tool-jobs/src/index.ts`](../packages/jobs/tool-jobs/src/index.ts)"
)
MAP_ROW = (
    "| [`@deepseek-ai/dsh-tool-bash`](#deepseek-aidsh-tool-bash) | `bash` | shell executor "
    "| runs processes | none | fixture row |"
)

MUTATIONS: list[tuple[str, Mutation, str]] = [
    ("title missing", _replace("# Tool Schema Catalog", "Tool Schema Catalog"), "title"),
    ("#### heading", _insert_after("### `job_list`", "", "#### Extra", expect=2), "####"),
    (
        "unquoted package heading",
        _replace("## `@deepseek-ai/dsh-tool-jobs`", "## dsh-tool-jobs"),
        "## `@scope/package`",
    ),
    ("unquoted tool heading", _replace("### `job_kill`", "### job_kill"), "### `name`"),
    ("source line missing", _delete(SOURCE_JOBS, expect_at="### `job_kill`"), "no Source:"),
    ("malformed source line", _replace(SOURCE_JOBS, "Source: packages/jobs/tool-jobs"), "Source:"),
    (
        "map row with 5 columns",
        _replace(MAP_ROW, "| `@deepseek-ai/dsh-tool-bash` | `bash` | a | b | c |"),
        "5 columns",
    ),
    (
        "anchor without heading",
        _delete(
            "## `@deepseek-ai/dsh-tool-jobs`", expect_at='<a id="deepseek-aidsh-tool-jobs"></a>'
        ),
        "anchor",
    ),
    (
        "text between tools",
        _insert_after(SOURCE_JOBS, "", "A stray paragraph.", expect=2),
        "text between",
    ),
    (
        "fence in prose",
        _insert_after("### `job_list`", "", "```python", "x", "```", expect=2),
        "```json",
    ),
]


@pytest.mark.parametrize("label,mutate,fragment", MUTATIONS, ids=[m[0] for m in MUTATIONS])
def test_malformed_mutations_name_the_line(
    fixtures: Path, label: str, mutate: Mutation, fragment: str
) -> None:
    text = (fixtures / "catalog_good.md").read_text()
    parse_catalog(text)  # the unmutated fixture is fine
    lines, line = mutate(text.split("\n"))
    with pytest.raises(CatalogError) as exc:
        parse_catalog("\n".join(lines), "mutated.md")
    assert exc.value.line == line, exc.value.message
    assert fragment in exc.value.message


def test_structural_errors_in_parameters() -> None:
    bad = '# T\n\n## `@x/y`\n\n### `t`\n\n```json\n{"type": "array"}\n```\n\nSource: [`a`](../a)\n'
    with pytest.raises(CatalogError, match="object schema") as exc:
        parse_catalog(bad)
    assert exc.value.line == 7
    second = '# T\n\n## `@x/y`\n\n### `t`\n\n```json\n{"type": "object", "properties": {}}\n```\n\n```json\n{}\n```\n'
    with pytest.raises(CatalogError, match="second"):
        parse_catalog(second)
    orphan = "# T\n\n### `t`\n"
    with pytest.raises(CatalogError, match="outside a ## package") as exc:
        parse_catalog(orphan)
    assert exc.value.line == 3


def test_missing_file_and_missing_bash(tmp_path: Path) -> None:
    with pytest.raises(InvalidArgument, match="cannot read catalog"):
        load_catalog(tmp_path / "nope.md")
    only_jobs = '# T\n\n## `@deepseek-ai/dsh-tool-jobs`\n\n### `job_list`\n\n```json\n{"type": "object", "properties": {}}\n```\n\nSource: [`a`](../a)\n'
    with pytest.raises(InvalidArgument, match="no `bash`"):
        check(parse_catalog(only_jobs))


@pytest.mark.node
@requires_node
def test_round_trip_of_live_schemas_has_no_drift(bridge: Bridge, tmp_path: Path) -> None:
    """Render the live schemas in the catalog layout (at run time, in tmp),
    read them back, and check against live and model: nothing drifts."""
    view = schema(Config(), "live")
    packages: dict[str, list[dict[str, object]]] = {}
    for t in (*view.tools, *view.related):
        packages.setdefault(t.package, []).append(t.model_json())
    path = tmp_path / "tool-catalog.md"
    path.write_text(
        render_catalog("Tool Schema Catalog", [(k, v, None) for k, v in packages.items()])
    )
    cat = load_catalog(path)
    for source in ("live", "model"):
        drift = check(cat, source)
        assert drift.ok, drift.to_dict()
    assert [f.key for f in catalog_view(cat).bash.fragments] == ["base", "background-on"]
    # A live schema for another config drifts, and the report says how.
    other = check(cat, schema(Config(sandbox="read-only", background=False), "live"))
    assert [p.name for p in other.diff.added] == ["sandbox_permissions", "justification"]
    assert [p.name for p in other.diff.removed] == ["run_in_background"]
    assert other.diff.fragments_added == ("background-off", "escalation")
    assert other.text_mismatches == ("description",)
