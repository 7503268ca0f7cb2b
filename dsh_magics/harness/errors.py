"""Harness-specific errors, on the shared :class:`~dsh_magics.errors.DshError` base.

Only the harness core raises them, so they live here; adapters rely on the stable ``code``.
"""

from __future__ import annotations

from ..errors import DshError


class PluginLoadError(DshError):
    """The composition cannot load: the plugin would throw in ``apply``.

    Mirrors the fact that a confining executor without a sandbox policy service
    is a load-time failure (no schema at all), not a narrower schema.
    """

    code = "PLUGIN_LOAD_ERROR"


class CatalogError(DshError):
    """A catalog file does not follow the generated format; ``line`` is 1-based."""

    code = "CATALOG_MALFORMED"

    def __init__(self, message: str, *, path: str, line: int) -> None:
        super().__init__(f"{path}:{line}: {message}", path=path, line=line)
        self.path = path
        self.line = line
