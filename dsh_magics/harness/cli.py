"""The harness subcommands of ``dsh-magics``: ``schema``, ``escalate`` and ``catalog``.

Thin adapters over the harness core (:mod:`dsh_magics.harness`): arguments, text tables
and ``--json``; the top :mod:`dsh_magics.cli` only dispatches to them.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
from collections.abc import Sequence
from typing import Any

_MODES = ("none", "read-only", "workspace-write", "danger-full-access")


def _print_json(obj: Any) -> None:
    print(json.dumps(obj, indent=2, ensure_ascii=False))


def _table(rows: Sequence[Sequence[Any]], header: Sequence[str]) -> str:
    cells = [[str(c) for c in header]] + [[("-" if c is None else str(c)) for c in r] for r in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(header))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in cells]
    lines.insert(1, "  ".join("-" * w for w in widths).rstrip())
    return "\n".join(lines)


def _short(text: str | None, width: int = 90) -> str:
    if text is None:
        return "-"
    text = " ".join(text.split())
    return text if len(text) <= width else text[: width - 1] + "…"


# --------------------------------------------------------------------- schema
def add_schema_arguments(p: argparse.ArgumentParser) -> None:
    from . import CURRENT_ERA, ERAS

    bg = p.add_mutually_exclusive_group()
    bg.add_argument(
        "--background",
        dest="background",
        action="store_true",
        default=None,
        help="enableRunInBackground: true (the default)",
    )
    bg.add_argument(
        "--no-background",
        dest="background",
        action="store_false",
        help="enableRunInBackground: false",
    )
    p.add_argument(
        "--sandbox",
        choices=_MODES,
        default=None,
        help="the executor's sandbox mode; none = unconfined executor (default)",
    )
    p.add_argument(
        "--no-policy",
        action="store_true",
        help="compose no sandbox policy service (a load error when a mode is set)",
    )
    p.add_argument(
        "--era", choices=ERAS, default=CURRENT_ERA, help=f"history point (default {CURRENT_ERA})"
    )
    p.add_argument(
        "--preset",
        choices=("catalog-default", "dsh-base", "package-default"),
        help="start from a named composition (flags above override it)",
    )
    p.add_argument(
        "--source",
        choices=("model", "live"),
        default="model",
        help="offline model (default) or the real published packages via node",
    )
    p.add_argument(
        "--npm-version", default=None, help="published package version for --source live"
    )
    p.add_argument("--matrix", action="store_true", help="every configuration x parameter")
    p.add_argument(
        "--eras", action="store_true", help="list the eras and where their texts come from"
    )
    p.add_argument(
        "--against-era",
        choices=ERAS,
        default=None,
        help="diff this configuration in another era against it (live on a side whose era "
        "has a published package, when --source live)",
    )
    p.add_argument("--json", action="store_true", help="machine-readable output")


def _config_from(args: argparse.Namespace) -> Any:
    from . import Config, preset

    base = preset(args.preset).config if args.preset else Config()
    background = base.background if args.background is None else args.background
    if args.sandbox is None:
        sandbox = base.sandbox
    else:
        sandbox = None if args.sandbox == "none" else args.sandbox
    return Config(
        background=background, sandbox=sandbox, era=args.era, sandbox_policy=not args.no_policy
    )


def _render_view(view: Any) -> str:
    from . import tool_size

    bash = view.bash
    out = [
        f"bash — {bash.package}   [{view.source}"
        + (f" {view.version}" if view.version else "")
        + f", era {view.config.era}"
        + (f", variant {view.variant}" if view.variant else "")
        + "]",
        f"config: {view.config.label()}",
        "",
        _table(
            [
                (
                    p.position + 1,
                    p.name,
                    p.type,
                    ",".join(p.enum) if p.enum else None,
                    "yes" if p.required else "no",
                )
                for p in bash.params
            ],
            ("#", "parameter", "type", "enum", "required"),
        ),
        "",
        "description fragments"
        + (
            " (our summaries)"
            if bash.description_is_summary
            else " (summaries are ours; exact text via --json)"
        )
        + ":",
    ]
    for f in bash.fragments:
        size = f" [{f.facts.length} chars, sha256 {f.facts.sha256[:12]}]" if f.facts else ""
        out.append(f"  {f.key:<15} {_short(f.summary, 100)}{size}")
    chars, tokens = tool_size(bash)
    out.append(
        f"size as the model sees it: {chars if chars is not None else '?'} chars, ~{tokens if tokens is not None else '?'} tokens"
    )
    others = [t for t in view.tools if t is not bash]
    if others:
        out.append(
            "other tools: "
            + "; ".join(
                f"{t.name}({', '.join(p.name + ('*' if p.required else '') for p in t.params)})"
                for t in others
            )
        )
    for t in view.related:
        out.append(
            f"related: {t.name} from {t.package}: "
            + ", ".join(p.name + ("*" if p.required else "") for p in t.params)
        )
    for i in view.inputs:
        if not i.applicable:
            out.append(f"not applicable: {i.name}={i.value!r} — {i.note}")
    for n in view.notes:
        if not n.startswith(tuple(f"{i.name}=" for i in view.inputs)):
            out.append(f"note: {n}")
    if bash.description_is_summary:
        out.append("(texts marked [summary] are our own wording, not the harness's)")
    return "\n".join(out)


def _render_matrix(m: Any) -> str:
    rows = []
    for r in m.rows:
        marks = ["x" if c in r.params else "." for c in m.columns]
        rows.append(
            (
                r.config.label(),
                r.variant,
                *marks,
                r.schema_id,
                r.chars,
                r.tokens,
                _short(r.load_error, 40) if r.load_error else "",
            )
        )
    header = ("config", "variant", *m.columns, "schema", "chars", "~tokens", "")
    out = [
        f"bash parameters per configuration [{m.source}, era {m.era}]",
        "",
        _table(rows, header),
        "",
        f"{len(m.rows)} configurations, {m.distinct} distinct schemas",
    ]
    for i in m.inputs:
        out.append(f"not applicable: {i.name} — {i.note}")
    return "\n".join(out)


def _render_eras() -> str:
    from . import ERAS, era_info

    rows = [
        (e.key, "yes" if e.shipped else "no", e.texts, ", ".join(e.tools))
        for e in map(era_info, ERAS)
    ]
    return _table(rows, ("era", "shipped", "texts", "tools"))


def _render_diff(d: Any) -> str:
    out = [f"bash: {d.a_label} -> {d.b_label}"]
    out += [f"  + param {p.name} ({p.type})" for p in d.added]
    out += [f"  - param {p.name} ({p.type})" for p in d.removed]
    out += [f"  ~ param {c.name}: {c.facet} {c.before!r} -> {c.after!r}" for c in d.changed]
    out += [f"  + fragment {k}" for k in d.fragments_added]
    out += [f"  - fragment {k}" for k in d.fragments_removed]
    how = {"exact": "compared exactly", "sha256": "by SHA-256"}.get(d.texts_compared)
    out += [f"  ~ fragment {k}: text differs ({how})" for k in d.fragments_changed]
    out += [f"  ~ param {n}: description text differs ({how})" for n in d.texts_changed]
    out += [f"  + tool {t}" for t in d.tools_added]
    out += [f"  - tool {t}" for t in d.tools_removed]
    if d.chars_delta is not None:
        out.append(
            f"  size: {d.chars_a} -> {d.chars_b} chars ({d.chars_delta:+}), "
            f"~{d.tokens_delta:+} tokens"
        )
    out.append(
        "  texts: "
        + (f"{how} on both sides" if how else "not compared (a side's texts are unknown)")
    )
    return "\n".join(out)


def run_schema(args: argparse.Namespace) -> int:
    from . import diff, era_info, matrix, schema

    if args.eras:
        if args.json:
            from . import ERAS

            _print_json([era_info(e).to_dict() for e in ERAS])
        else:
            print(_render_eras())
        return 0
    if args.against_era:
        cfg = _config_from(args)
        base = dataclasses.replace(cfg, era=args.against_era)

        def side(c: Any) -> Any:
            live = args.source == "live" and era_info(c.era).published is not None
            return schema(c, "live" if live else "model")

        d = diff(side(base), side(cfg))
        if args.json:
            _print_json(d.to_dict())
        else:
            print(_render_diff(d))
        return 0
    if args.matrix:
        m = matrix(args.source, args.era, version=args.npm_version)
        if args.json:
            _print_json(m.to_dict())
        else:
            print(_render_matrix(m))
        return 0
    view = schema(_config_from(args), args.source, version=args.npm_version)
    if args.json:
        _print_json(view.to_dict())
    else:
        print(_render_view(view))
    return 0


# ------------------------------------------------------------------- escalate
def add_escalate_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--mode", required=True, choices=_MODES[1:], help="the call's current sandbox mode"
    )
    p.add_argument(
        "--request", default=None, help="sandbox_permissions value (omit to leave it unset)"
    )
    p.add_argument(
        "--justification", default=None, help="justification value (omit to leave it unset)"
    )
    p.add_argument(
        "--outcome",
        default="allowed-once",
        choices=("allowed-once", "rejected", "cancelled", "unavailable"),
        help="what the scripted approver answers",
    )
    p.add_argument("--no-approver", action="store_true", help="no approval service composed")
    p.add_argument("--no-agent", action="store_true", help="the call has no agent")
    p.add_argument("--policy", choices=("ask", "never"), default="ask", help="approval policy")
    p.add_argument("--source", choices=("model", "live"), default="model")
    p.add_argument("--npm-version", default=None)
    p.add_argument("--json", action="store_true")


def run_escalate(args: argparse.Namespace) -> int:
    from . import EscalationRequest, escalate

    req = EscalationRequest(
        mode=args.mode,
        request=args.request,
        justification=args.justification,
        outcome=args.outcome,
        approver=not args.no_approver,
        agent=not args.no_agent,
        policy=args.policy,
    )
    r = escalate(req, args.source, version=args.npm_version)
    if args.json:
        _print_json(r.to_dict())
        return 0
    mark = {True: "pass", False: "FAIL", None: "-"}
    print(f"escalation {args.mode} -> {args.request or '(none)'}  [{r.source}]")
    print()
    print(
        _table(
            [(i + 1, s.title, mark[s.passed], s.detail) for i, s in enumerate(r.steps)],
            ("#", "step", "result", "detail"),
        )
    )
    print()
    print(f"category: {r.category}" + (f" ({r.violation})" if r.violation else ""))
    if r.granted_mode:
        print(f"granted for this call: {r.granted_mode}")
    if r.message:
        print(f"message{' (our summary)' if r.message_is_summary else ''}: {r.message}")
    return 0


# -------------------------------------------------------------------- catalog
def add_catalog_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("path", help="a harness docs/tool-catalog.md")
    p.add_argument(
        "--check", action="store_true", help="report drift of its bash entry against --source"
    )
    p.add_argument("--source", choices=("model", "live"), default="model")
    p.add_argument("--npm-version", default=None)
    p.add_argument("--json", action="store_true")


def run_catalog(args: argparse.Namespace) -> int:
    from . import check, load_catalog

    cat = load_catalog(args.path)
    if not args.check:
        if args.json:
            _print_json(cat.to_dict())
            return 0
        rows = [
            (
                p.name,
                t.name,
                len(t.parameters.get("properties", {})),
                ",".join(t.parameters.get("required", [])) or None,
                t.line,
            )
            for p in cat.packages
            for t in p.tools
        ]
        print(
            f"{cat.title} — {cat.path}: {len(cat.packages)} packages, {len(rows)} tools, {len(cat.map_rows)} map rows"
        )
        print()
        print(_table(rows, ("package", "tool", "params", "required", "line")))
        return 0
    drift = check(cat, args.source, version=args.npm_version)
    if args.json:
        _print_json(drift.to_dict())
        return 0 if drift.ok else 1
    d = drift.diff
    print(
        f"drift of {cat.path} bash vs {drift.source} for {drift.config.label()}: {'none' if drift.ok else 'FOUND'}"
    )
    for p in d.added:
        print(f"  + param {p.name} ({p.type}) in source, missing from catalog")
    for p in d.removed:
        print(f"  - param {p.name} ({p.type}) in catalog, not in source")
    for c in d.changed:
        print(f"  ~ param {c.name}: {c.facet} {c.before!r} -> {c.after!r}")
    for k in d.fragments_added:
        print(f"  + fragment {k}")
    for k in d.fragments_removed:
        print(f"  - fragment {k}")
    for t in d.tools_added:
        print(f"  + tool {t} in source, not in catalog")
    for t in d.tools_removed:
        print(f"  - tool {t} in catalog, not in source")
    for t in drift.text_mismatches:
        print(f"  ≠ text {t} differs (by SHA-256)")
    if d.chars_delta:
        print(
            f"  size: {d.chars_a} -> {d.chars_b} chars ({d.chars_delta:+}), ~{d.tokens_delta:+} tokens"
        )
    for n in drift.notes:
        print(f"  note: {n}")
    return 0 if drift.ok else 1
