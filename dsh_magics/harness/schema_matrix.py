"""Every configuration × parameter, for one era and source.

Current era: 8 rows, 4 distinct schemas (only *whether* the executor reports a mode matters).
"""

from __future__ import annotations

import hashlib
import json

from ..errors import InvalidArgument
from .comparison_types import Matrix, MatrixRow
from .errors import PluginLoadError
from .facts import CURRENT_ERA, SANDBOX_MODES, era_info
from .model import input_statuses
from .schema_types import Config, InputStatus, SchemaView
from .tokens import tool_size


def schema_id(view: SchemaView) -> str:
    """Short stable id of the ``bash`` structure (names, order, types, enums,
    required, fragment keys); equal ids mean the same schema."""
    bash = view.bash
    key = json.dumps([bash.structure(), [f.key for f in bash.fragments]], sort_keys=False)
    return hashlib.sha256(key.encode()).hexdigest()[:10]


def configs_for(era: str) -> tuple[list[Config], tuple[InputStatus, ...]]:
    """The configurations worth a row in ``era``, and the inputs that collapse."""
    info = era_info(era)
    bgs = (True, False) if info.background_toggle else (True,)
    modes = SANDBOX_MODES if info.escalation else (None,)
    configs = [Config(background=bg, sandbox=m, era=era) for bg in bgs for m in modes]  # type: ignore[arg-type]
    collapsed = tuple(
        i
        for i in input_statuses(Config(era=era))
        if not i.applicable and i.name != "sandbox_policy"
    )
    return configs, collapsed


def build_matrix(
    source: str = "model", era: str = CURRENT_ERA, *, version: str | None = None
) -> Matrix:
    """Build the :class:`Matrix` (live only for eras with a published package)."""
    from .schema_source import schema

    if source not in ("model", "live"):
        raise InvalidArgument(f"unknown source {source!r}; expected 'model' or 'live'")
    configs, collapsed = configs_for(era)
    rows: list[MatrixRow] = []
    columns: list[str] = []
    for cfg in configs:
        try:
            view = schema(cfg, source, version=version)
        except PluginLoadError as exc:
            rows.append(MatrixRow(cfg, None, (), (), "-", None, None, load_error=exc.message))
            continue
        names = view.bash.param_names
        for n in names:
            if n not in columns:
                columns.append(n)
        chars, tokens = tool_size(view.bash)
        rows.append(
            MatrixRow(
                config=cfg,
                variant=view.variant,
                params=names,
                fragments=tuple(f.key for f in view.bash.fragments),
                schema_id=schema_id(view),
                chars=chars,
                tokens=tokens,
            )
        )
    distinct = len({r.schema_id for r in rows if r.load_error is None})
    return Matrix(
        source=source,  # type: ignore[arg-type]
        era=era,
        columns=tuple(columns),
        rows=tuple(rows),
        distinct=distinct,
        inputs=collapsed,
    )
