"""The host's command line: ``dsh-magics host start|status|stop``, ``python -m dsh_magics.host``.

Starts and stops take the same lock as kernels, so a CLI start racing a kernel's yields one host.
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Sequence

from ..errors import DshError
from . import idle
from .lifecycle import ensure_host, host_status, stop_host
from .runtime import DEFAULT_NAME, HostPaths, candidate_dirs, list_names


def add_lookup_arguments(p: argparse.ArgumentParser, session_help: str) -> None:
    """SESSION, ``--host`` and ``--host-dir``: how a client outside the host
    (``dsh-magics answer``, ``attach``, ``log``) names the terminal it wants."""
    p.add_argument("session", metavar="SESSION", help=session_help)
    p.add_argument("--host", metavar="NAME", default=None, help="the terminal host (default: search)")
    p.add_argument(
        "--host-dir",
        metavar="DIR",
        default=None,
        help="the hosts' runtime directory (default: $DSH_MAGICS_HOST_DIR, "
        "$XDG_RUNTIME_DIR/dsh-magics or /tmp/dsh-magics-<uid>)",
    )


def add_arguments(p: argparse.ArgumentParser, *, with_serve: bool = False) -> None:
    sub = p.add_subparsers(dest="host_action", metavar="ACTION", required=not with_serve)
    s = sub.add_parser("start", help="start the terminal host (or report the running one)")
    _common(s)
    s.add_argument("--watch-pid", type=int, default=None, help="exit (closing every terminal) when this process ends")
    _idle_arg(s)
    s = sub.add_parser("status", help="show running hosts and their terminals")
    _common(s, name_default=None)
    s.add_argument("--json", action="store_true", help="machine-readable output")
    s = sub.add_parser("stop", help="stop hosts, closing every terminal they own")
    _common(s, name_default=None)
    if with_serve:
        s = sub.add_parser("serve", help="run a host in the foreground")
        _serve_args(s)
        _serve_args(p)
        s = sub.add_parser("reap", help=argparse.SUPPRESS)
        s.add_argument("--pid", type=int, required=True)


def _common(p: argparse.ArgumentParser, name_default: str | None = DEFAULT_NAME) -> None:
    p.add_argument(
        "--name",
        default=name_default,
        help="host name (default: %(default)s; a Jupyter server's host is jupyter-<pid>)"
        if name_default
        else "host name (default: every host of this user)",
    )
    p.add_argument("--dir", default=None, help="runtime directory (default: $DSH_MAGICS_HOST_DIR, "
                   "$XDG_RUNTIME_DIR/dsh-magics or /tmp/dsh-magics-<uid>)")


def _idle_arg(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--idle-timeout",
        metavar="TIME",
        default=None,
        help="stop after this long with no client, no attached person and no running job "
        "(seconds, or 30m, 4h; 0 or off: never; default $DSH_MAGICS_HOST_IDLE, else 4h)",
    )


def _serve_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--name", default=DEFAULT_NAME, help="host name (default: %(default)s)")
    p.add_argument("--dir", default=None, help=argparse.SUPPRESS)
    p.add_argument("--watch-pid", type=int, default=None, help="exit when this process ends")
    _idle_arg(p)
    p.add_argument("--ready-fd", type=int, default=None, help=argparse.SUPPRESS)
    p.add_argument("--lock-fd", type=int, default=None, help=argparse.SUPPRESS)


def run(args: argparse.Namespace) -> int:
    action = getattr(args, "host_action", None) or "serve"
    if action == "reap":
        from .orphan_sweeper import main as reap

        return reap(args.pid)
    if action == "serve":
        from .server import run as serve

        return serve(
            HostPaths.for_name(args.name, args.dir),
            watch_pid=args.watch_pid,
            ready_fd=args.ready_fd,
            lock_fd=args.lock_fd,
            idle_timeout=_idle(args),
        )
    if action == "start":
        paths = HostPaths.for_name(args.name, args.dir)
        _idle(args)  # a bad value is refused here, not in the host's log
        info = ensure_host(paths, watch_pid=args.watch_pid, idle_timeout=args.idle_timeout)
        print(f"host {paths.name}: running, pid {info['pid']}, socket {paths.socket}")
        return 0
    if action == "status":
        found = host_status(args.dir, args.name)
        if args.json:
            print(json.dumps([h.to_dict() for h in found], indent=2))
            return 0
        if not found:
            print("no terminal host is running")
            return 0
        for h in found:
            if not h.running:
                why = "stale files" if h.info.get("stale") else h.info.get("error", {}).get("message", "not answering")
                print(f"host {h.name}: not running ({why})")
                continue
            age = time.time() - float(h.info.get("started_at") or time.time())
            watch = h.info.get("watch_pid")
            print(
                f"host {h.name}: pid {h.info['pid']}, up {age:.0f}s, "
                f"{'following pid ' + str(watch) if watch else 'runs until stopped'}, "
                f"{len(set(h.info.get('clients') or []) - {a.get('pid') for a in h.info.get('attached') or []})}"
                " kernel(s) attached"
            )
            for a in h.info.get("attached") or []:
                ro = ", read-only" if a.get("read_only") else ""
                print(f"  a person is attached to {a.get('session_id')} (dsh-magics attach, pid {a.get('pid')}{ro})")
            for t in h.info.get("terminals") or []:
                job = f" job {t['job_id']}" if t.get("job_id") else ""
                print(f"  {t['session_id']}: {t['status']}, cwd {t.get('cwd')}{job}")
        return 0
    if action == "stop":
        stopped = 0
        for d in [args.dir] if args.dir else candidate_dirs():
            for name in list_names(d):
                if args.name is not None and name != args.name:
                    continue
                gone = stop_host(HostPaths.for_name(name, d))
                if gone is not None:
                    stopped += 1
                    print(f"host {name}: stopped (pid {gone['pid']}); its terminals are closed")
        if not stopped:
            print("no terminal host was running")
        return 0
    raise DshError(f"unknown host action {action!r}")


def _idle(args: argparse.Namespace) -> float | None:
    raw = getattr(args, "idle_timeout", None)
    return idle.configured() if raw is None else idle.parse_idle(raw, "--idle-timeout")


def main(argv: Sequence[str] | None = None) -> int:
    import sys

    parser = argparse.ArgumentParser(
        prog="python -m dsh_magics.host",
        description="The dsh-magics terminal host (runs in the foreground without an action).",
    )
    add_arguments(parser, with_serve=True)
    args = parser.parse_args(argv)
    try:
        return run(args)
    except DshError as e:
        print(f"dsh-magics host: {e.code}: {e.message}", file=sys.stderr)
        return 1
