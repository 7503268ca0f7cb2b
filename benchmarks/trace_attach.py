"""Where a key's way to its echo goes at ``dsh-magics attach``, step by step,
against the bare Python relay of ``bench_attach.py --floor`` in the same run
(benchmarks/README.md, ``bench_attach.py`` section).

    python benchmarks/trace_attach.py [--keys N] [--rounds R] [--vim] [--baseline DIR]

Each attach host and client (and the floor's two processes) runs under a
``sitecustomize`` of this script's making that wraps a handful of functions
on the way with timestamps (``time.perf_counter_ns``: CLOCK_MONOTONIC, one
clock for every process on the machine) and writes them out when the process
ends; nothing in the product code knows about it. Keys alternate ``x`` and
Backspace at a bash prompt (``--vim``: in vim's insert mode), the clients
take turns key by key as in ``bench_attach.py``, and each step's median time
after the key was written is printed, with the median time between
consecutive steps.
"""

from __future__ import annotations

import argparse
import bisect
import glob
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
import types
from typing import Any

HERE = os.path.dirname(os.path.abspath(__file__))

#: The steps, in the order a key and its echo pass them: (name, the step it
#: follows, what). A step's time is its first mark after the one it follows.
STEPS: dict[str, list[tuple[str, str | None, str]]] = {
    "attach": [
        ("c_wake_key", None, "the client's select returns for the key"),
        ("c_key", "c_wake_key", "the client has read the key (its request line is being sent)"),
        ("c_sent", "c_key", "the client has sent it"),
        ("h_req", "c_sent", "the host's connection thread has the request line"),
        ("h_engine", "h_req", "the dispatch has called the engine (PersonKeys.press; session 35: .type; before: Registry.type_keys)"),
        ("h_write", "h_engine", "the engine writes the key to the PTY (Pty.write)"),
        ("h_written", "h_write", "the key is in the PTY (the record's turn)"),
        ("h_poke", "h_written", "the reader is poked (a new deadline)"),
        ("h_req_done", "h_written", "the request is done (its thread goes back to read)"),
        ("h_pty", "h_written", "the terminal's reader has bash's echo (_on_pty)"),
        ("h_piece", "h_pty", "the echo reaches the viewer's stream (_on_piece)"),
        ("h_sent", "h_piece", "the reader thread has sent it on the socket (Connection.send_stream; before: .wake)"),
        ("h_tty", "h_piece", "session 37 on: the reader thread has written it to the person's terminal (TtyOut.put)"),
        ("h_pty_done", "h_sent", "the reader is done with the piece"),
        ("h_block", "h_pty_done", "the reader waits again"),
        ("c_wake_echo", "h_sent", "the client's select returns for the echo"),
        ("c_recv", "c_wake_echo", "the client has the bytes event"),
        ("c_drawn", "c_recv", "the client has written it to its terminal"),
    ],
    # Session 37 on: the person's terminal is in the host, which reads the key and writes the echo.
    "attach_tty": [
        ("h_key", None, "the host's connection thread reads the person's terminal (TtyKeys.readable)"),
        ("h_engine", "h_key", "it has called the engine (PersonKeys.press)"),
        ("h_write", "h_engine", "the engine writes the key to the PTY (Pty.write)"),
        ("h_written", "h_write", "the key is in the PTY (the record's turn)"),
        ("h_pty", "h_written", "the terminal's reader has bash's echo (_on_pty)"),
        ("h_piece", "h_pty", "the echo reaches the viewer's stream (_on_piece)"),
        ("h_tty", "h_piece", "the reader thread has written it to the person's terminal (TtyOut.put)"),
        ("h_pty_done", "h_tty", "the reader is done with the piece"),
    ],
    "pyfloor": [
        ("c_key", None, "the client has read the key"),
        ("c_sent", "c_key", "the client has sent it"),
        ("h_req", "c_sent", "the host's key thread has it"),
        ("h_written", "h_req", "the key is in the PTY"),
        ("h_pty", "h_written", "the host's output thread has bash's echo"),
        ("h_sent", "h_pty", "it has sent it"),
        ("c_recv", "h_sent", "the client has it"),
        ("c_drawn", "c_recv", "the client has written it"),
    ],
}

#: Imported by the processes under trace (DSH_TRACE_ATTACH names the directory
#: the timestamps go to); the floor's scripts call ``mark`` themselves.
_SITECUSTOMIZE = """
import os
if os.environ.get("DSH_TRACE_ATTACH"):
    import sys
    sys.path.insert(0, {here!r})
    import trace_attach
    trace_attach.install(os.environ["DSH_TRACE_ATTACH"])
    del sys.path[0]
"""

#: Keys requests and reader pieces not profiled at the start (``DSH_TRACE_PROFILE``):
#: the first key opens the person's prompt (a job start, hundreds of calls).
_WARM = 10

_marks: list[tuple[str, int]] = []
_now = time.perf_counter_ns


def mark(name: str) -> None:
    _marks.append((name, _now()))


def _dump(out_dir: str) -> None:
    if _marks:
        with open(os.path.join(out_dir, f"{os.getpid()}.json"), "w") as f:
            json.dump(_marks, f)


def install(out_dir: str) -> None:
    """In a traced process: wrap the steps of attach's host or client (the
    modules are imported here: the wrappers must be in place before use)."""
    import atexit

    atexit.register(_dump, out_dir)
    if sys.argv[0] == "-c":  # the floor's scripts and _START_HOST: nothing to wrap
        return
    from dsh_magics.attach import client, link
    from dsh_magics.host import connection, requests, stream
    from dsh_magics.terminal import registry
    from dsh_magics.terminal.core import input_record, pty
    from dsh_magics.terminal.core import reader as reader_mod
    from dsh_magics.terminal.local import terminal

    append, now = _marks.append, _now

    def around(cls: Any, name: str, before: str | None, after: str | None, when: Any = None) -> None:
        orig = getattr(cls, name)

        def wrapped(*a: Any, **kw: Any) -> Any:
            on = when is None or when(*a, **kw)
            if on and before:
                append((before, now()))
            out = orig(*a, **kw)
            if on and after:
                append((after, now()))
            return out

        setattr(cls, name, wrapped)

    # the client
    around(link.Pipe, "send_line", "c_key", "c_sent", lambda self, line: b"type_keys" in line)
    orig_read = link.Pipe.read

    def read(self: Any) -> Any:
        out = orig_read(self)
        if out and type(out[0]) is bytes:
            append(("c_recv", now()))
        return out

    link.Pipe.read = read  # type: ignore[method-assign]
    if hasattr(client.Attacher, "_on_bytes"):  # before session 36
        around(client.Attacher, "_on_bytes", None, "c_drawn")
    else:  # session 36 on: the stream's bytes are written in _on_events itself
        around(client.Attacher, "_on_events", None, "c_drawn", lambda self, msgs: bool(msgs) and type(msgs[0]) is bytes)
    real_select = client.select.select

    def select_(r: Any, w: Any, x: Any, timeout: Any = None) -> Any:  # the client's one wait
        out = real_select(r, w, x, timeout)
        append(("c_wake_key" if r and r[-1] in out[0] else "c_wake_echo", now()))
        return out

    # a stand-in module: the client calls select.select and nothing else of it
    setattr(client, "select", types.SimpleNamespace(select=select_))  # noqa: B010
    # the host
    keys = lambda self, conn, item: isinstance(item, bytes) and b'"type_keys"' in item  # noqa: E731
    around(requests.Requests, "handle", "h_req", "h_req_done", keys)
    handle = requests.Requests.handle
    cpu = time.thread_time_ns

    def timed(self: Any, conn: Any, item: Any) -> Any:  # the request's own CPU time against its wall time
        c0, w0 = cpu(), now()
        out = handle(self, conn, item)
        if isinstance(item, bytes) and b'"type_keys"' in item:
            append(("=cpu_req", cpu() - c0))
            append(("=wall_req", now() - w0))
        return out

    requests.Requests.handle = timed  # type: ignore[method-assign]
    prof: Any = None
    if os.environ.get("DSH_TRACE_PROFILE"):  # where a keys request's time goes, by function
        import cProfile

        prof = cProfile.Profile()
        plain = requests.Requests.handle

        seen = [0, 0]  # keys requests and reader pieces so far: the first few (the prompt's start) are not profiled

        def profiled(self: Any, conn: Any, item: Any) -> Any:
            if isinstance(item, bytes) and b'"type_keys"' in item:
                seen[0] += 1
                if seen[0] > _WARM:
                    return prof.runcall(plain, self, conn, item)
            return plain(self, conn, item)

        requests.Requests.handle = profiled  # type: ignore[method-assign]
        on_pty = terminal.Terminal._on_pty
        rprof = cProfile.Profile()  # the echo's way through the reader (its own thread)

        def profiled_pty(self: Any, data: bytes) -> Any:
            seen[1] += 1
            if seen[1] > _WARM:
                return rprof.runcall(on_pty, self, data)
            return on_pty(self, data)

        terminal.Terminal._on_pty = profiled_pty  # type: ignore[method-assign]
        atexit.register(lambda: rprof.dump_stats(os.path.join(out_dir, f"{os.getpid()}-reader.prof")))
        atexit.register(lambda: prof.dump_stats(os.path.join(out_dir, f"{os.getpid()}.prof")))
    try:  # the engine's keyboard of a person (session 35 on); before it, the registry's method
        from dsh_magics.terminal import person_keys

        # press (session 36 on): the keys lane's call; type answers the general way
        around(person_keys.PersonKeys, "press" if hasattr(person_keys.PersonKeys, "press") else "type", "h_engine", None)
    except ImportError:
        around(registry.Registry, "type_keys", "h_engine", None)
    around(pty.Pty, "write", "h_write", None, lambda self, data, typed=None: typed is not None)
    around(input_record.Typed, "written", "h_written", None)
    around(terminal.Terminal, "_on_pty", "h_pty", "h_pty_done")
    around(stream.ViewerStream, "_on_piece", "h_piece", None)
    around(connection.Connection, "wake", None, "h_sent")
    if hasattr(connection.Connection, "send_stream"):  # session 35 on: a piece with nothing before it
        around(connection.Connection, "send_stream", None, "h_sent", lambda self, line: True)
    try:  # session 37 on: the person's terminal is in the host
        from dsh_magics.host import tty_in, tty_out

        around(tty_out.TtyOut, "put", None, "h_tty")
        # Session 37 round 2: read on the keys' reader thread (``_got``), typed on
        # the typist's (``_type``: its CPU time and profile); before, both in ``readable``.
        read_name = "_got" if hasattr(tty_in.TtyKeys, "_got") else "readable"
        type_name = "_type" if read_name == "_got" else "readable"
        key_type = getattr(tty_in.TtyKeys, type_name)
        kprof = prof if os.environ.get("DSH_TRACE_PROFILE") else None
        reads = [0]

        def type_key(self: Any, *args: Any) -> Any:  # a key typed by the host: its CPU time, and its profile
            c0, w0 = cpu(), now()
            reads[0] += 1
            out = kprof.runcall(key_type, self, *args) if kprof is not None and reads[0] > _WARM else key_type(self, *args)
            append(("=cpu_req", cpu() - c0))
            append(("=wall_req", now() - w0))
            return out

        setattr(tty_in.TtyKeys, type_name, type_key)
        around(tty_in.TtyKeys, read_name, "h_key", None)
    except ImportError:
        pass  # an older tree: the client writes the echo
    around(reader_mod.WakePipe, "poke", "h_poke", None)
    wait = reader_mod.fdwait.readable

    def readable(fds: Any, timeout: Any) -> Any:  # the reader's waits (select(0) only looks)
        if timeout != 0.0:
            append(("h_block", now()))
        return wait(fds, timeout)

    setattr(reader_mod, "fdwait", types.SimpleNamespace(readable=readable))  # noqa: B010 - a stand-in module


def _own_calls(stats: Any, root: str) -> tuple[int, int]:
    """The calls a profile counted, less the trace's own (its wrappers and
    what only they call), and how many times ``root`` (the profiled function,
    wrapped) ran."""
    own = 0
    roots = 0
    for (file, _, func), (_, ncalls, _, _, callers) in stats.stats.items():
        if file.endswith("trace_attach.py") or (callers and all(c[0].endswith("trace_attach.py") for c in callers)
                                                and file == "~"):  # fmt: skip
            continue  # a wrapper, or a builtin only wrappers call (perf_counter_ns, thread_time_ns)
        own += ncalls
        if func == root and not file.endswith("trace_attach.py"):
            roots = max(roots, ncalls)
    return own, roots


#: The floor of bench_attach.py with a mark at each step.
def _traced_floor(src: str, pairs: list[tuple[str, str]]) -> str:
    # sitecustomize has imported trace_attach; these processes end by
    # os._exit or SIGTERM, so they write their marks out themselves.
    head = (
        "import os, signal, trace_attach\n"
        "from trace_attach import mark\n"
        "def _bye(*a):\n"
        "    trace_attach._dump(os.environ['DSH_TRACE_ATTACH'])\n"
        "    os._exit(0)\n"
        "signal.signal(signal.SIGTERM, _bye)\n"
    )
    for old, new in pairs:
        assert old in src, old
        src = src.replace(old, new, 1)
    return head + src.replace("os._exit(0)", "_bye()")


def _floor_scripts(bench: Any) -> tuple[str, str]:
    host = _traced_floor(
        bench._FLOOR_HOST,
        [
            ("            os._exit(0)\n        os.write(master, data)",
             "            os._exit(0)\n        mark('h_req')\n        os.write(master, data)\n        mark('h_written')"),
            ("        os._exit(0)\n    conn.sendall(data)", "        os._exit(0)\n    mark('h_pty')\n    conn.sendall(data)\n    mark('h_sent')"),
        ],
    )  # fmt: skip
    client = _traced_floor(
        bench._FLOOR_CLIENT,
        [
            ("            break\n        sock.sendall(data)", "            break\n        mark('c_key')\n        sock.sendall(data)\n        mark('c_sent')"),
            ("            break\n        os.write(1, data)", "            break\n        mark('c_recv')\n        os.write(1, data)\n        mark('c_drawn')"),
        ],
    )  # fmt: skip
    return host, client


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--keys", type=int, default=300)
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--vim", action="store_true", help="in vim's insert mode instead of at a bash prompt")
    ap.add_argument("--baseline", metavar="DIR", help="also trace another checkout's attach (as attach-base)")
    ap.add_argument("--json", metavar="FILE", help="write the medians here too")
    args = ap.parse_args()
    sys.path.insert(0, HERE)
    import bench_attach as bench

    work = tempfile.mkdtemp(prefix="dsh-trace-attach-", dir="/tmp")
    site = os.path.join(work, "site")
    os.mkdir(site)
    with open(os.path.join(site, "sitecustomize.py"), "w") as f:
        f.write(_SITECUSTOMIZE.format(here=HERE))
    bench._FLOOR_HOST, bench._FLOOR_CLIENT = _floor_scripts(bench)
    tmux_env = dict(os.environ, TERM="xterm-256color", DSH_MAGICS_LOGIN="0")
    tmux_env.pop("TMUX", None)
    dirs: dict[str, str] = {}

    def env_for(name: str) -> dict[str, str]:
        d = dirs[name] = os.path.join(work, name)
        os.mkdir(d)
        return dict(tmux_env, DSH_TRACE_ATTACH=d, PYTHONPATH=site)

    here = os.path.dirname(HERE)
    clients: list[Any] = []
    keys: dict[str, list[tuple[int, int]]] = {}
    load = [os.getloadavg()[0]]
    try:
        clients.append(bench.Tmux(tmux_env))
        clients.append(bench.Floor(env_for("pyfloor")))
        bench.Attach.extra_path = site  # after each checkout's own dsh_magics

        def attach(name: str, tree: str) -> Any:
            return bench.Attach(name, tree, env_for(name))

        if args.baseline:
            clients.append(attach("attach-base", os.path.abspath(args.baseline)))
        clients.append(attach("attach", here))
        for c in clients:
            keys[c.name] = []
        for _ in range(args.rounds):
            for c in clients:
                c.to_prompt()
            if args.vim:
                for c in clients:
                    os.write(c.p.master, b"\x15vim -u NONE -N -n dsh-bench-vim.txt\r")
                    c.p.read_until(b"[New")
                    os.write(c.p.master, b"i")
                    c.p.read_until(b"INSERT")
            for i in range(args.keys):
                first = i % len(clients)
                for c in clients[first:] + clients[:first]:
                    c.p.drain()
                    t0 = time.perf_counter_ns()
                    os.write(c.p.master, bench.KEYS[i % 2])
                    if not bench.fdwait.readable([c.p.master], 5.0):
                        raise TimeoutError(f"{c.name}: no echo")
                    t1 = time.perf_counter_ns()
                    c.p.seen += os.read(c.p.master, 1 << 16)
                    keys[c.name].append((t0, t1))
            if args.vim:
                for c in clients:
                    os.write(c.p.master, b"\x1b:q!\r")
                    c.p.drain(0.5)
            load.append(os.getloadavg()[0])
    finally:
        for c in clients:
            c.close()
    report: dict[str, Any] = {"load": [round(x, 1) for x in load]}
    print(f"{args.rounds} round(s) of {args.keys} keys ({'vim' if args.vim else 'bash prompt'}); "
          f"load average {min(load):.1f}-{max(load):.1f}")  # fmt: skip
    tm = [(t1 - t0) / 1e6 for t0, t1 in keys["tmux"]]
    print(f"tmux: key to echo median {statistics.median(tm):.3f} ms")
    report["tmux"] = round(statistics.median(tm), 3)
    for name in [c.name for c in clients[1:]]:
        marks: list[tuple[str, int]] = []
        for path in glob.glob(os.path.join(dirs[name], "*.json")):
            with open(path) as f:
                marks += [tuple(m) for m in json.load(f)]  # type: ignore[misc]
        marks.sort(key=lambda m: m[1])
        for what in ("=cpu_req", "=wall_req"):
            spans = [t for m, t in marks if m == what]
            if spans:
                print(f"  {what[1:]}: median {statistics.median(spans) / 1e3:.1f} us")
        marks = [m for m in marks if not m[0].startswith("=")]
        wakes = sum(1 for m, _ in marks if m.startswith("c_wake"))
        handed = any(m == "h_key" for m, _ in marks)
        steps = STEPS["pyfloor" if name == "pyfloor" else "attach_tty" if handed else "attach"]
        at: dict[str, list[float]] = {step: [] for step, _, _ in steps}
        gap: dict[str, list[float]] = {step: [] for step, _, _ in steps}
        times = [t for _, t in marks]
        for t0, t1 in keys[name]:
            end = t1 + 2_000_000  # the client's steps after the benchmark saw the echo
            got: dict[str, int] = {}
            for step, after, _ in steps:
                start = t0 if after is None else got.get(after)
                if start is None:
                    continue
                k = bisect.bisect_left(times, start)
                while k < len(marks) and marks[k][1] <= end and marks[k][0] != step:
                    k += 1
                if k < len(marks) and marks[k][1] <= end:
                    got[step] = marks[k][1]
                    at[step].append((marks[k][1] - t0) / 1e6)
                    gap[step].append((marks[k][1] - start) / 1e6)
        total = statistics.median((t1 - t0) / 1e6 for t0, t1 in keys[name])
        print(f"\n{name}: key to echo median {total:.3f} ms ({len(keys[name])} keys)")
        print("  after the key  after the step before")
        rows = []
        for step, after, what in steps:
            if not at[step]:
                continue
            m, g = statistics.median(at[step]), statistics.median(gap[step])
            print(f"  {m:7.3f} ms    +{g:6.3f} ({after or 'key'})  {step:11} {what}  [{len(at[step])}]")
            rows.append({"step": step, "after": after, "median_ms": round(m, 3), "gap_ms": round(g, 3), "n": len(at[step])})
        if name != "pyfloor":  # (session 37 on, a key and its echo wake the client no more)
            print(f"  the client's wake-ups: {wakes / max(len(keys[name]), 1):.2f} a key")
        report[name] = {"total": round(total, 3), "steps": rows, "client_wakeups": round(wakes / max(len(keys[name]), 1), 2)}
    for path in sorted(glob.glob(os.path.join(work, "*", "*.prof"))):  # DSH_TRACE_PROFILE
        import pstats

        what = "the reader's pieces" if path.endswith("-reader.prof") else "the keys requests"
        try:
            stats = pstats.Stats(path)
        except (TypeError, EOFError, ValueError):
            continue  # a process that had none
        calls, n = _own_calls(stats, "_on_pty" if path.endswith("-reader.prof") else "handle")
        if not n and not path.endswith("-reader.prof"):  # session 37 on: the host reads the keys
            calls, n = _own_calls(stats, "readable")
        name = os.path.basename(os.path.dirname(path))
        print(f"\n{name}: profile of {what}: {calls / max(n, 1):.0f} Python calls each ({n}), "
              "the trace's own wrappers left out")  # fmt: skip
        stats.sort_stats("ncalls").print_stats(40)
        report.setdefault("calls", {})[f"{name} {what}"] = round(calls / max(n, 1))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(report, f, indent=2)
    if not os.environ.get("DSH_TRACE_KEEP"):
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
