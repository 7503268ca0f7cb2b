"""``kubectl://[CONTEXT/]NAMESPACE[/CONTAINER] -l SELECTOR``: the pods a label selector matches, at run time.

The lookup is ``kubectl get pods`` (running pods only); each name becomes a
``kubectl://`` target. No cluster is reachable in the tests: a stand-in
``kubectl`` on PATH checks the argv and prints pod names (docs/fanout.md).
"""

from __future__ import annotations

import re
import shlex
import subprocess

from ..errors import InvalidArgument, TargetUnreachable

LOOKUP_TIMEOUT_S = 30
_NAME = re.compile(r"^[a-z0-9](?:[a-z0-9.-]{0,251}[a-z0-9])?$")
_CONTEXT = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.:@+=-]{0,252}$")
_SELECTOR = re.compile(r"^[A-Za-z0-9_./=!,() -]{1,1000}$")
_JSONPATH = "jsonpath={range .items[*]}{.metadata.name}{\"\\n\"}{end}"


def parse(item: str) -> tuple[str | None, str, str | None, str]:
    """(context, namespace, container, selector) of a selector item."""
    words = shlex.split(item)
    if len(words) != 3 or words[1] != "-l":
        raise InvalidArgument(
            f"targets: {item[:200]!r}: write kubectl://[CONTEXT/]NAMESPACE[/CONTAINER] -l SELECTOR",
            field="targets",
        )
    rest, selector = words[0][len("kubectl://") :], words[2]
    parts = rest.split("/")
    context: str | None = None
    container: str | None = None
    if len(parts) == 1:
        namespace = parts[0]
    elif len(parts) == 2:
        namespace, container = parts
    elif len(parts) == 3:
        context, namespace, container = parts
    else:
        raise InvalidArgument(f"targets: {item[:200]!r}: too many '/' parts", field="targets")
    container = container or None
    if context is not None and not _CONTEXT.match(context):
        raise InvalidArgument(f"targets: {item[:200]!r}: bad context name", field="targets")
    for what, value in (("namespace", namespace), ("container", container)):
        if value is not None and not _NAME.match(value):
            raise InvalidArgument(f"targets: {item[:200]!r}: bad {what} name", field="targets")
    if not _SELECTOR.match(selector):
        raise InvalidArgument(f"targets: {item[:200]!r}: bad label selector", field="targets")
    return context, namespace, container, selector


def lookup_argv(context: str | None, namespace: str, selector: str) -> list[str]:
    """The ``kubectl get pods`` command line that lists the matching running pods, one name a line."""
    argv = ["kubectl"]
    if context:
        argv += ["--context", context]
    return [
        *argv, "get", "pods", "-n", namespace, "-l", selector,
        "--field-selector=status.phase=Running", "-o", _JSONPATH,
    ]  # fmt: skip


def expand(item: str) -> list[str]:
    """The ``kubectl://`` targets of the pods ``item``'s selector matches now.
    kubectl failing (no cluster, no permission) is TARGET_UNREACHABLE; no
    matching pod is INVALID_ARGUMENT (an empty group)."""
    context, namespace, container, selector = parse(item)
    argv = lookup_argv(context, namespace, selector)
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=LOOKUP_TIMEOUT_S, stdin=subprocess.DEVNULL)
    except FileNotFoundError:
        raise TargetUnreachable("kubectl is not installed here", field="targets") from None
    except subprocess.TimeoutExpired:
        raise TargetUnreachable(f"kubectl get pods took over {LOOKUP_TIMEOUT_S} s", field="targets") from None
    if done.returncode != 0:
        why = (done.stderr.strip().splitlines() or ["no message"])[-1][:300]
        raise TargetUnreachable(f"kubectl get pods failed (exit {done.returncode}): {why}", field="targets")
    pods = [p.strip() for p in done.stdout.splitlines() if p.strip()]
    if not pods:
        raise InvalidArgument(f"targets: no running pod matches {selector!r} in namespace {namespace!r}", field="targets")
    bad = [p for p in pods if not _NAME.match(p)]
    if bad:
        raise InvalidArgument(f"targets: kubectl printed a bad pod name {bad[0][:100]!r}", field="targets")
    head = f"kubectl://{context + '/' if context else ''}{namespace}/"
    if context:
        return [f"{head}{pod}/{container or ''}" for pod in pods]
    return [f"{head}{pod}{'/' + container if container else ''}" for pod in pods]
