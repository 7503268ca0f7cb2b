"""Facts about the DeepSeek Harness ``bash`` tool schema: from the model, live or a catalog.

All three give the same :class:`SchemaView`; this module is the public surface (``API.md``
here), the submodules are its parts; it knows nothing about terminals.

May import: errors and shutdown only. Must not import: terminal/, host/ or any
adapter (notebook/, tools/, mcp/, widgets/, attach/, answer/, lab/); the CLI and the
inspector widget import it, never the other way round.
"""

from __future__ import annotations

from typing import Any

from .bridge import Bridge
from .bridge.status import LiveStatus
from .catalog_types import Catalog, CatalogPackage, CatalogTool, Drift
from .comparison_types import Matrix, MatrixRow, ParamChange, SchemaDiff
from .errors import CatalogError, PluginLoadError
from .escalation_types import ChainStep, EscalationRequest, EscalationResult, Markers
from .facts import (
    CURRENT_ERA,
    DEFAULT_VERSION,
    ERAS,
    ESCALATION_TARGETS,
    OUTCOMES,
    POLICIES,
    SANDBOX_MODES,
    WIDER_MODES,
    era_info,
)
from .schema_source import schema
from .schema_types import (
    SUMMARY_LABEL,
    Config,
    EraInfo,
    Fragment,
    InputStatus,
    Param,
    Preset,
    SchemaView,
    TextFact,
    Tool,
)

__all__ = [
    "CURRENT_ERA",
    "DEFAULT_VERSION",
    "ERAS",
    "ESCALATION_TARGETS",
    "OUTCOMES",
    "POLICIES",
    "SANDBOX_MODES",
    "SUMMARY_LABEL",
    "WIDER_MODES",
    "Bridge",
    "Catalog",
    "CatalogError",
    "CatalogPackage",
    "CatalogTool",
    "ChainStep",
    "Config",
    "Drift",
    "EraInfo",
    "EscalationRequest",
    "EscalationResult",
    "Fragment",
    "InputStatus",
    "LiveStatus",
    "Markers",
    "Matrix",
    "MatrixRow",
    "Param",
    "ParamChange",
    "PluginLoadError",
    "Preset",
    "SchemaDiff",
    "SchemaView",
    "TextFact",
    "Tool",
    "catalog_view",
    "check",
    "diff",
    "era_info",
    "escalate",
    "estimate_tokens",
    "get_bridge",
    "live_status",
    "load_catalog",
    "markers",
    "matrix",
    "parse_catalog",
    "preset",
    "presets",
    "published_versions",
    "schema",
    "tool_size",
]


def matrix(
    source: str = "model",
    era: str = CURRENT_ERA,
    *,
    version: str | None = None,
) -> Matrix:
    """Every applicable configuration × ``bash`` parameter for ``era``.

    For the current era: the 8 combinations of background on/off × sandbox
    None/read-only/workspace-write/danger-full-access (4 distinct schemas).
    Inputs that do not exist in the era collapse and are listed in
    ``Matrix.inputs`` as not applicable.
    """
    from .schema_matrix import build_matrix

    return build_matrix(source, era, version=version)


def diff(a: SchemaView | Config, b: SchemaView | Config, *, tool: str = "bash") -> SchemaDiff:
    """``b`` relative to ``a`` for ``tool``; a :class:`Config` means its model view."""
    from .schema_diff import diff_views

    return diff_views(a, b, tool=tool)


def presets(env: dict[str, str] | None = None) -> dict[str, Preset]:
    """The known compositions, keyed ``catalog-default``, ``dsh-base``,
    ``package-default``.  ``dsh-base`` reads ``DSH_PERMISSION_MODE`` from
    ``env`` (default ``os.environ``)."""
    from .compositions import all_presets

    return all_presets(env)


def preset(key: str, env: dict[str, str] | None = None) -> Preset:
    """One preset by key (``InvalidArgument`` if unknown)."""
    from .compositions import get_preset

    return get_preset(key, env)


def escalate(
    request: EscalationRequest,
    source: str = "model",
    *,
    version: str | None = None,
) -> EscalationResult:
    """Run validation + the approval chain for ``request``.

    The model walks the facts; live calls the real ``validateEscalationArgs``
    and ``approveEscalation`` with a scripted approver (or none) and an agent
    (or none).  Both return the same ``category``.
    """
    if source == "model":
        from .escalation import model_escalate

        return model_escalate(request)
    if source == "live":
        from .live import live_escalate

        return live_escalate(request, version=version)
    from ..errors import InvalidArgument

    raise InvalidArgument(f"unknown source {source!r}; expected 'model' or 'live'")


def markers(
    mode: str,
    *,
    escalation_advertised: bool = True,
    source: str = "model",
    version: str | None = None,
) -> Markers:
    """The sandbox-denial marker (and escalation hint when advertised)."""
    if source == "model":
        from .escalation import model_markers

        return model_markers(mode, escalation_advertised=escalation_advertised)
    if source == "live":
        from .live import live_markers

        return live_markers(mode, escalation_advertised=escalation_advertised, version=version)
    from ..errors import InvalidArgument

    raise InvalidArgument(f"unknown source {source!r}; expected 'model' or 'live'")


def load_catalog(path: Any) -> Catalog:
    """Parse a harness ``tool-catalog.md`` file; :class:`CatalogError` names the line."""
    from .catalog import load_catalog as _load

    return _load(path)


def parse_catalog(text: str, path: str = "<string>") -> Catalog:
    """Parse catalog text (same rules as :func:`load_catalog`)."""
    from .catalog import parse_catalog as _parse

    return _parse(text, path)


def catalog_view(catalog: Catalog) -> SchemaView:
    """The catalog's dsh-tool-bash/-jobs entries as a ``SchemaView`` (source
    ``"catalog"``) for the catalog's config, so it can be diffed like any view."""
    from .catalog import catalog_view as _view

    return _view(catalog)


def check(
    catalog: Catalog, source: str | SchemaView = "model", *, version: str | None = None
) -> Drift:
    """Drift between the catalog's ``dsh-tool-bash`` ``bash`` entry and a source
    for the catalog's config (the catalog boots the unconfined default)."""
    from .catalog import check_drift

    return check_drift(catalog, source, version=version)


def estimate_tokens(text: str) -> int:
    """Approximate token count of ``text`` (see :mod:`.tokens` for the rule)."""
    from .tokens import estimate_tokens as _est

    return _est(text)


def tool_size(tool: Tool) -> tuple[int | None, int | None]:
    """``(chars, tokens)`` of the whole tool schema as the model sees it, or
    ``None`` parts when a text's size is unknown (e.g. a model-only era)."""
    from .tokens import tool_size as _size

    return _size(tool)


def get_bridge(version: str | None = None) -> Bridge:
    """The process-wide :class:`Bridge` for ``version`` (created, not started)."""
    from .bridge import get_bridge as _get

    return _get(version)


def live_status(version: str | None = None) -> LiveStatus:
    """The shared bridge's current :class:`LiveStatus` (never blocks)."""
    return get_bridge(version).status()


def published_versions() -> tuple[str, ...]:
    """Versions of ``@deepseek-ai/dsh-tool-bash`` the bridge accepts."""
    from .bridge import published_versions as _pv

    return _pv()
