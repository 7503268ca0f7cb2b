"""What the bridge installs for each published ``dsh-tool-bash`` version.

0.1.0-rc.8 installs as published.  0.0.1-rc.1 does not (docs/inspector.md, "The task era"):
its peers are not all on the registry, so it gets an explicit pinned list and one stand-in.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..facts import DEFAULT_VERSION, PEER_PACKAGES, TASK_ERA_VERSION, TOOL_PACKAGES

STANDIN_DIR = "standins"
STANDIN_MARK = "dshMagicsStandIn"


@dataclass(frozen=True)
class StandIn:
    """A local package, written at install time, standing in for an unpublished one.

    It re-exports exactly ``names`` from ``source`` (a published package pinned
    in the same plan); it defines nothing of its own.
    """

    package: str  # the unpublished package an import names
    version: str  # the version the importer's peer range asks for
    names: tuple[str, ...]
    source: str  # package@version the names are taken from

    @property
    def source_package(self) -> str:
        return self.source.rsplit("@", 1)[0]

    @property
    def folder(self) -> str:
        return f"{STANDIN_DIR}/{self.package.split('/')[-1]}"

    def package_json(self) -> dict[str, Any]:
        return {
            "name": self.package,
            "version": f"{self.version}+dsh-magics-standin",
            "private": True,
            "type": "module",
            "description": f"dsh-magics stand-in: {', '.join(self.names)} re-exported from "
            f"{self.source}; {self.package} is not on the registry",
            "exports": {".": "./index.js", "./package.json": "./package.json"},
            "peerDependencies": {self.source_package: self.source.rsplit("@", 1)[1]},
            STANDIN_MARK: {"names": list(self.names), "from": self.source},
        }

    def index_js(self) -> str:
        return f'export {{ {", ".join(self.names)} }} from "{self.source_package}"\n'

    def write(self, prefix: Path) -> None:
        d = prefix / self.folder
        d.mkdir(parents=True, exist_ok=True)
        (d / "package.json").write_text(json.dumps(self.package_json(), indent=2) + "\n")
        (d / "index.js").write_text(self.index_js())


@dataclass(frozen=True)
class InstallPlan:
    """The npm specs (pinned), npm flags, and stand-ins for one version."""

    version: str
    specs: tuple[str, ...]
    npm_flags: tuple[str, ...] = ()
    standins: tuple[StandIn, ...] = ()
    #: Non-optional peers of the installed packages that stay unmet; no installed
    #: JavaScript imports them (tests/harness/test_task_era.py checks both).
    unmet_peers: tuple[str, ...] = ()

    def npm_args(self) -> list[str]:
        return [*self.npm_flags, *self.specs, *(f"./{s.folder}" for s in self.standins)]

    def record(self) -> dict[str, Any]:
        """What ``installed.json`` keeps, so a changed plan reinstalls."""
        return {
            "packages": list(self.specs),
            "standins": [
                {"package": s.package, "names": list(s.names), "from": s.source}
                for s in self.standins
            ],
        }


_RC1 = TASK_ERA_VERSION

#: 0.0.1-rc.1: the tool package and every package its runtime imports reach, pinned;
#: peers are not auto-installed (several are not published), and the two names it
#: imports from the unpublished ``@deepseek-ai/dsh-bash`` come from dsh-shell 0.0.1-rc.5.
TASK_ERA_PLAN = InstallPlan(
    version=_RC1,
    specs=(
        f"@deepseek-ai/dsh-tool-bash@{_RC1}",
        f"@deepseek-ai/dsh-tools@{_RC1}",
        f"@deepseek-ai/dsh-llm@{_RC1}",
        f"@deepseek-ai/dsh-sandbox@{_RC1}",
        f"@deepseek-ai/dsh-sandbox-policy@{_RC1}",
        f"@deepseek-ai/dsh-system-prompt@{_RC1}",
        f"@deepseek-ai/dsh-user-approval@{_RC1}",
        f"@deepseek-ai/dsh-session@{_RC1}",
        f"@deepseek-ai/dsh-scope@{_RC1}",
        f"@deepseek-ai/dsh-timeout@{_RC1}",
        "@deepseek-ai/dsh-shell@0.0.1-rc.5",
        f"@deepseek-ai/dsh-settings@{_RC1}",
        f"@deepseek-ai/dsh-subprocess@{_RC1}",
        "@deepseek-ai/cordis@4.0.4",
    ),
    npm_flags=("--legacy-peer-deps", "--save-exact"),
    standins=(
        StandIn(
            package="@deepseek-ai/dsh-bash",
            version=_RC1,
            names=("DSH_ENV_PREFIX", "parseExitStatus"),
            source="@deepseek-ai/dsh-shell@0.0.1-rc.5",
        ),
    ),
    unmet_peers=(
        "@deepseek-ai/dsh-agent",
        "@deepseek-ai/dsh-tasks",
        "@deepseek-ai/dsh-bash-env",
        "@deepseek-ai/dsh-invariants",
        "@deepseek-ai/dsh-code-runtime",
        "@deepseek-ai/dsh-attachment",
        "@deepseek-ai/dsh-brand",
        "@deepseek-ai/dsh-type-meta",
    ),
)


def plan_for(version: str) -> InstallPlan:
    """The plan for ``version``: a special one when known, else the published peers."""
    if version == _RC1:
        return TASK_ERA_PLAN
    return InstallPlan(
        version=version,
        specs=tuple(f"{p}@{version}" for p in (*TOOL_PACKAGES, *PEER_PACKAGES)),
    )


#: Every version ``python -m dsh_magics.harness.bridge install`` sets up by default.
DEFAULT_INSTALLS: tuple[str, ...] = (DEFAULT_VERSION, _RC1)
