"""Turn raw bridge answers into the same value types the model produces.

Fragment boundaries come from comparing the real texts of variants (docs/inspector.md, "Internals").
"""

from __future__ import annotations

import dataclasses
import hashlib
import re
from typing import Any

from . import text_facts
from .bridge import Bridge, get_bridge
from .errors import PluginLoadError
from .escalation import chain_steps, check_request
from .escalation_types import EscalationRequest, EscalationResult, Markers
from .facts import CURRENT_ERA, check_mode, live_version
from .model import FRAGMENT_SUMMARIES, input_statuses, model_view, variant_of
from .schema_types import Config, Fragment, Param, SchemaView, TextFact, Tool
from .tokens import estimate_tokens, json_text_length


def text_fact(text: str) -> TextFact:
    """Measure an exact text the same way :mod:`.text_facts` was produced."""
    return TextFact(
        length=len(text),
        sha256=hashlib.sha256(text.encode("utf-8")).hexdigest(),
        json_length=json_text_length(text),
        tokens=estimate_tokens(text),
    )


def tool_from_json(raw: dict[str, Any], *, package: str | None = None) -> Tool:
    """A :class:`Tool` from an exact ``{name, description, parameters}``."""
    parameters = raw["parameters"]
    props: dict[str, Any] = parameters.get("properties", {})
    required = set(parameters.get("required", []))
    params = tuple(
        Param(
            name=name,
            type=node.get("type", "?"),
            enum=tuple(node["enum"]) if "enum" in node else None,
            required=name in required,
            position=i,
            description=node.get("description"),
            description_is_summary=False,
            text=text_fact(node["description"])
            if isinstance(node.get("description"), str)
            else None,
        )
        for i, (name, node) in enumerate(props.items())
    )
    return Tool(
        name=raw["name"],
        package=package or raw.get("package", "?"),
        description=raw["description"],
        parameters=parameters,
        params=params,
        description_is_summary=False,
        description_facts=text_fact(raw["description"]),
    )


def known_fragments(description: str) -> tuple[Fragment, ...]:
    """Recognise a current-era ``bash`` description by the stored fragment facts.

    Returns the fragments (with their exact text) when the description is a
    concatenation of known fragments in order, else ``()`` (unknown text).
    """
    summaries = FRAGMENT_SUMMARIES[CURRENT_ERA]
    base = text_facts.FRAGMENTS["base"]
    head = description[: base.length]
    if text_fact(head).sha256 != base.sha256:
        return ()
    out = [Fragment("base", summaries["base"], head, text_fact(head))]
    rest = description[base.length :]
    for key in ("background-on", "background-off"):
        fact = text_facts.FRAGMENTS[key]
        piece = rest[: fact.length]
        if text_fact(piece).sha256 == fact.sha256:
            out.append(Fragment(key, summaries[key], piece, text_fact(piece)))
            rest = rest[fact.length :]
            break
    else:
        return ()
    if rest:
        esc = text_facts.FRAGMENTS["escalation"]
        if text_fact(rest).sha256 != esc.sha256:
            return ()
        out.append(Fragment("escalation", summaries["escalation"], rest, text_fact(rest)))
    return tuple(out)


def _bridge(version: str | None) -> Bridge:
    return get_bridge(version)


def _raw_bash(bridge: Bridge, background: bool, sandbox: str | None) -> dict[str, Any]:
    raw = bridge.schemas(Config(background=background, sandbox=sandbox))  # type: ignore[arg-type]
    if "load_error" in raw:
        raise PluginLoadError(f"the bash plugin failed to load: {raw['load_error']}")
    return next(t for t in raw["tools"] if t["name"] == "bash")


def split_fragments(
    bridge: Bridge, background: bool, confined: bool, era: str = CURRENT_ERA
) -> tuple[Fragment, ...]:
    """Cut the live ``bash`` description into base / background / escalation.

    Uses the real descriptions of the unconfined on/off variants (the base is
    their common prefix) and a confined one (the escalation text is the
    appended tail).
    """
    on = _raw_bash(bridge, True, None)["description"]
    off = _raw_bash(bridge, False, None)["description"]
    n = 0
    while n < min(len(on), len(off)) and on[n] == off[n]:
        n += 1
    base, bg_on, bg_off = on[:n], on[n:], off[n:]
    pieces = [
        ("base", base),
        ("background-on", bg_on) if background else ("background-off", bg_off),
    ]
    if confined:
        confined_on = _raw_bash(bridge, True, "read-only")["description"]
        pieces.append(("escalation", confined_on[len(on) :]))
    summaries = FRAGMENT_SUMMARIES[era]
    return tuple(Fragment(k, summaries[k], text, text_fact(text)) for k, text in pieces)


def standin_notes(bridge: Bridge) -> list[str]:
    """One note per stand-in the bridge booted with (from its own ``hello``)."""
    hello = bridge.hello or {}
    return [
        f"{', '.join(s['names'])}: from a stand-in for the unpublished {pkg}, re-exported from "
        f"{s['from']}; DSH_ENV_PREFIX is interpolated into the base text, parseExitStatus is "
        'not used to build the schema (docs/inspector.md, "The task era")'
        for pkg, s in sorted(hello.get("standins", {}).items())
    ]


def live_view(config: Config, *, version: str | None = None) -> SchemaView:
    """The live :class:`SchemaView` for ``config``, from its era's published version.

    ``version`` defaults to the era's (:data:`~.facts.LIVE_ERAS`) and must agree with it.
    """
    version = live_version(config.era, version)
    check_mode(config.sandbox)
    bridge = _bridge(version)
    raw = bridge.schemas(config)
    if "load_error" in raw:
        raise PluginLoadError(
            f"the bash plugin failed to load: {raw['load_error']}",
            config=config.to_dict(),
        )
    tools = [tool_from_json(t) for t in raw["tools"]]
    confined = config.sandbox is not None
    fragments = split_fragments(bridge, config.background, confined, config.era)
    bash_i = next(i for i, t in enumerate(tools) if t.name == "bash")
    bash = tools[bash_i]
    if "".join(f.text or "" for f in fragments) == bash.description:
        tools[bash_i] = dataclasses.replace(bash, fragments=fragments)
    related = [tool_from_json(t) for t in raw["related"]]
    notes: list[str] = []
    if config.era == CURRENT_ERA:
        notes.append(
            "The pwsh twin is not part of the installed packages; see the model view for it."
        )
    else:
        # Background tools this version does not register come from the model, marked so.
        live_names = {t.name for t in tools}
        modelled = [t for t in model_view(config).tools if t.name not in live_names]
        tools += modelled
        for pkg in sorted({t.package for t in modelled}):
            names = ", ".join(t.name for t in modelled if t.package == pkg)
            notes.append(
                f"{names}: registered by {pkg}, which is not on the registry; "
                "they come from the model (our summaries)"
            )
    notes += standin_notes(bridge)
    notes += [
        f"{i.name}={i.value!r} is not applicable: {i.note}"
        for i in input_statuses(config)
        if not i.applicable and i.name != "sandbox_policy"
    ]
    return SchemaView(
        config=config,
        source="live",
        version=bridge.version,
        tools=tuple(tools),
        related=tuple(related),
        inputs=input_statuses(config),
        variant=variant_of(config.background, confined),
        notes=tuple(notes),
    )


_MODE_NAMES = re.compile(r"read-only|workspace-write|danger-full-access")


def classify_message(message: str) -> str | None:
    """Which known check produced a real message: hash of its mode-free template."""
    template = _MODE_NAMES.sub("<mode>", message)
    return text_facts.MESSAGE_TEMPLATES.get(hashlib.sha256(template.encode("utf-8")).hexdigest())


def live_escalate(req: EscalationRequest, *, version: str | None = None) -> EscalationResult:
    """Run the real argument check and approval chain for ``req``."""
    check_request(req)
    raw = _bridge(version).escalate(req)
    violation: str | None = None
    if raw["stage"] == "no-request":
        category = "not-requested"
    elif raw.get("granted") is not None:
        category = "granted"
    else:
        kind = classify_message(raw["message"] or "")
        if kind is None:
            category = "unknown"
        elif kind.startswith("justification-"):
            category, violation = "invalid-args", kind
        else:
            category = kind
    # The flags from the real run must agree with the ending we classified.
    reached_request = category in ("granted", "rejected", "cancelled", "unavailable")
    failure = raw.get("message") or ""
    if raw.get("asked") != reached_request:
        failure += " (bridge flags disagree with the classified ending)"
    steps = (
        chain_steps(req, category, violation, failure_detail=failure)
        if category != "unknown"
        else ()
    )
    return EscalationResult(
        source="live",
        request=req,
        category=category,
        steps=steps,
        granted_mode=raw.get("granted"),
        violation=violation,
        message=raw.get("message"),
        message_is_summary=False,
    )


def live_markers(
    mode: str, *, escalation_advertised: bool = True, version: str | None = None
) -> Markers:
    """The real denial marker (and hint) for ``mode``."""
    check_mode(mode, allow_none=False)
    raw = _bridge(version).markers(mode, escalation_advertised=escalation_advertised)
    return Markers(
        source="live",
        mode=mode,  # type: ignore[arg-type]
        denial=raw["denial"],
        hint=raw.get("hint"),
        is_summary=False,
    )


__all__ = [
    "classify_message",
    "live_escalate",
    "live_markers",
    "live_view",
    "split_fragments",
    "standin_notes",
    "text_fact",
    "tool_from_json",
]
