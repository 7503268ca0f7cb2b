"""The tool schema a configuration gives, from the model or from the live
harness: the one entry point the package, the catalog and the matrix share
(the package facade re-exports it)."""

from __future__ import annotations

from .schema_types import Config, SchemaView


def schema(
    config: Config | None = None,
    source: str = "model",
    *,
    version: str | None = None,
) -> SchemaView:
    """The :class:`SchemaView` for ``config`` from ``"model"`` or ``"live"``.

    Raises :class:`PluginLoadError` when the composition cannot load (a set
    sandbox mode with ``sandbox_policy=False``), ``InvalidArgument`` for an
    unknown era/mode or a live request for an era without a published package, and
    ``BridgeUnavailable`` for live when node/npm/registry is missing.
    Live blocks on first use while it installs/boots; see :func:`get_bridge`
    to boot in the background first.
    """
    config = config or Config()
    if source == "model":
        from .model import model_view

        return model_view(config)
    if source == "live":
        from .live import live_view

        return live_view(config, version=version)
    from ..errors import InvalidArgument

    raise InvalidArgument(f"unknown source {source!r}; expected 'model' or 'live'")
