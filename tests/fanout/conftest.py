"""Fixtures of the fan-out tests: the MCP ones come from tests/mcp (a private host per test)."""

from __future__ import annotations

from tests.mcp.conftest import anyio_backend, server_env  # noqa: F401 - fixtures
