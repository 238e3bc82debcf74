"""Server CPU per ``find_tools`` request and requests/s, gateway vs a bare SDK server.

Run: ``python -m benchmarks.bench_gateway_cpu [--duration 5] [--rounds 3] [--out docs/results/gateway_cpu.md]``.

Servers, each started in a subprocess on loopback and measured in the same run:

* ``bare``: the official SDK's own server with one trivial tool (``echo``), streamable
  HTTP with JSON answers (``benchmarks/bare_mcp_server.py``), stateful and stateless;
* ``toolsift serve`` over HTTP on the bundled demo catalogue (60 tools), ``--workers 1``
  (stateful, as the bare stateful server) and ``--workers 2`` (stateless, as the bare
  stateless server; see docs/gateway.md). Every request is ``find_tools`` with one of
  16 task queries and ``limit: 5``. With ``--workers 1`` a session's schema cache makes
  a repeated tool come back as a short ``unchanged`` stub; as the 16 queries repeat,
  nearly every answer is stubs after the first few, so ``--workers 1`` is measured
  twice: with the cache (as served by default) and with ``"schema_cache": false``
  (five full schemas per answer, as stateless workers always send).

The search itself is work the bare server does not do: its CPU per query is measured
in this process on the same index (same queries, ``k=5``, ``explain="why"``, as the
gateway asks), so the gateway's overhead can be read with and without it.

The load generator (``benchmarks/http_load.py``) speaks raw HTTP/1.1 over keep-alive
sockets, one thread per connection; no SDK client. Server CPU is user + system time of
the server process tree over the measured window, from ``/proc``. On a 2-core machine
the generator runs on the same cores as the server, so requests/s is a lower bound of
what the server could serve alone, and with 2 workers the generator competes with them.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import statistics
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

from benchmarks.http_load import LoadResult, queries, run_load

ROOT = Path(__file__).resolve().parent.parent
TOKEN = "bench-token"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait_health(proc: subprocess.Popen, url: str, log: Path) -> None:
    deadline = time.monotonic() + 60
    while True:
        if proc.poll() is not None:
            raise RuntimeError("server exited:\n" + log.read_text(errors="replace"))
        try:
            with urllib.request.urlopen(url, timeout=1) as r:
                if r.status in (200, 404, 405, 406):
                    return
        except urllib.error.HTTPError:
            return  # the server answers
        except OSError:
            pass
        if time.monotonic() > deadline:
            raise RuntimeError("server did not start:\n" + log.read_text(errors="replace"))
        time.sleep(0.1)


def _start(cmd: list[str], port: int, probe: str, workdir: Path, name: str) -> subprocess.Popen:
    log = workdir / f"{name}.log"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in (str(ROOT / "src"), os.environ.get("PYTHONPATH"))
                                                       if p)}
    proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=open(log, "wb"), stderr=subprocess.STDOUT,  # noqa: SIM115
                            env=env, cwd=ROOT)
    _wait_health(proc, f"http://127.0.0.1:{port}{probe}", log)
    return proc


def _stop(proc: subprocess.Popen) -> None:
    proc.terminate()
    try:
        proc.wait(timeout=15)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(timeout=5)


class _Server:
    """One server under test, started once and loaded in several rounds."""

    def __init__(self, label: str, kind: str, *, workers: int = 1, stateless: bool = False, workdir: Path,
                 schema_cache: bool = True) -> None:
        from toolsift.adapters import demo_catalog_path

        self.label = label
        self.port = port = _free_port()
        qs = queries()
        if kind == "bare":
            cmd = [sys.executable, str(ROOT / "benchmarks" / "bare_mcp_server.py"), str(port)]
            if stateless:
                cmd.append("--stateless")
            self.proc = _start(cmd, port, "/mcp", workdir, f"bare-{stateless}")
            self.tool, self.token = "echo", None
            self.arguments = lambda i: {"text": qs[i % len(qs)]}
            self.pid_of = lambda r: None
        else:
            config = workdir / f"gateway-{workers}-{schema_cache}.json"
            config.write_text(json.dumps({"auth_token": TOKEN, "gateway": {"schema_cache": schema_cache}}),
                              encoding="utf-8")
            cmd = [sys.executable, "-m", "toolsift", "serve", "--catalog", str(demo_catalog_path()), "--config",
                   str(config), "--transport", "http", "--port", str(port), "--workers", str(workers)]
            self.proc = _start(cmd, port, "/health", workdir, f"gateway-{workers}-{schema_cache}")
            self.tool, self.token = "find_tools", TOKEN
            self.arguments = lambda i: {"query": qs[i % len(qs)], "limit": 5}
            self.pid_of = lambda r: str((r.get("_meta") or {}).get("toolsift/worker_pid") or "") or None
        self.results: list[LoadResult] = []

    def load(self, *, duration_s: float, connections: int) -> LoadResult:
        r = run_load("127.0.0.1", self.port, server_pid=self.proc.pid, tool=self.tool, arguments=self.arguments,
                     token=self.token, connections=connections, duration_s=duration_s, pid_of=self.pid_of)
        self.results.append(r)
        return r

    def median(self, attr: str) -> float:
        return statistics.median(getattr(r, attr) for r in self.results)

    def pids(self) -> int:
        return len(frozenset().union(*(r.pids for r in self.results)))

    def errors(self) -> int:
        return sum(r.errors for r in self.results)


def _loadavg() -> str:
    try:
        return " ".join(Path("/proc/loadavg").read_text().split()[:3])
    except OSError:
        return "n/a"


def _search_ms() -> tuple[int, float]:
    """``(tools, CPU ms per query)`` of the search ``find_tools`` runs, in this process on
    the index ``toolsift serve`` builds from the demo catalogue."""
    from toolsift.adapters import demo_catalog_path, load_catalog
    from toolsift.presets import preset_config
    from toolsift.toolindex import ToolIndex

    index = ToolIndex.build(list(load_catalog(demo_catalog_path())), config=preset_config(None))
    qs, n = queries(), 2000
    for q in qs:
        index.search(q, k=5, explain="why")
    best = float("inf")
    for _ in range(3):  # best of three: the search's own cost, not the neighbours' bursts
        t0 = time.thread_time()
        for i in range(n):
            index.search(qs[i % len(qs)], k=5, explain="why")
        best = min(best, (time.thread_time() - t0) / n * 1e3)
    return len(index.catalog), best


BARE1, BARE2 = "bare SDK, stateful", "bare SDK, stateless"
CACHED, FULL, WORKERS2 = ("toolsift serve --workers 1, schema cache", "toolsift serve --workers 1, full schemas",
                          "toolsift serve --workers 2")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--duration", type=float, default=5.0, help="measured seconds per round (default 5)")
    p.add_argument("--connections", type=int, default=4, help="keep-alive connections (default 4)")
    p.add_argument("--rounds", type=int, default=3, help="interleaved rounds per server (default 3)")
    p.add_argument("--out", help="also write the results as markdown here")
    args = p.parse_args(argv)
    specs = [(BARE1, dict(kind="bare")), (BARE2, dict(kind="bare", stateless=True)),
             (CACHED, dict(kind="gateway", workers=1)),
             (FULL, dict(kind="gateway", workers=1, schema_cache=False)),
             (WORKERS2, dict(kind="gateway", workers=2))]
    load_before = _loadavg()
    search: list[float] = []
    with tempfile.TemporaryDirectory() as tmp:
        servers = []
        try:
            for label, kw in specs:
                servers.append(_Server(label, workdir=Path(tmp), **kw))
            # Interleaved rounds: a burst of load from other jobs on the machine hits
            # every server alike, and the medians compare them under the same conditions.
            for k in range(args.rounds):
                for server in servers:
                    r = server.load(duration_s=args.duration, connections=args.connections)
                    print(f"round {k + 1} {server.label:42s} {r.requests_per_s:7.0f} req/s  "
                          f"{r.cpu_ms_per_request:5.2f} ms CPU/request  {r.bytes_per_response:6.0f} B/answer  "
                          f"{r.errors} errors  {len(r.pids)} pids", flush=True)
                n_tools, ms = _search_ms()
                search.append(ms)
                print(f"round {k + 1} search alone, in-process ({n_tools} tools): {ms:.3f} ms CPU/query", flush=True)
        finally:
            for server in servers:
                _stop(server.proc)
    by = {server.label: server for server in servers}
    cpu = {label: server.median("cpu_ms_per_request") for label, server in by.items()}
    s_ms = statistics.median(search)
    pairs = [(FULL, BARE1, "both stateful; five full schemas per answer"),
             (CACHED, BARE1, "both stateful; repeated tools come back as `unchanged` stubs"),
             (WORKERS2, BARE2, "both stateless; five full schemas per answer")]
    ratios = [(a, b, why, cpu[a] / cpu[b], (cpu[a] - s_ms) / cpu[b]) for a, b, why in pairs]
    for label, server in by.items():
        print(f"median {label:42s} {server.median('requests_per_s'):7.0f} req/s  {cpu[label]:5.2f} ms CPU/request")
    print(f"search alone: {s_ms:.3f} ms CPU/query ({n_tools} tools)")
    for a, b, why, total, bare in ratios:
        print(f"{a} vs {b}: {total:.2f}x; without the search {bare:.2f}x ({why})")
    if args.out:
        now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
        lines = [
            "# Gateway throughput and server CPU per request",
            "",
            f"`python -m benchmarks.bench_gateway_cpu --duration {args.duration:g} --connections {args.connections} "
            f"--rounds {args.rounds}"
            f"{' --out ' + args.out}`",
            "",
            f"- date: {now}; machine: {platform.machine()}, {os.cpu_count()} cores, Python "
            f"{platform.python_version()}, {platform.system()} {platform.release()}, mcp {_mcp_version()}",
            f"- load average before the run: {load_before} (other jobs share the machine); after: {_loadavg()}",
            f"- requests: `tools/call` of `find_tools` with one of 16 task queries and `limit: 5` on the bundled "
            f"demo catalogue ({n_tools} tools), against the bare SDK's one-tool `echo` of the same text; both "
            "servers answer plain JSON (no SSE), with the SDK's DNS-rebinding checks, over uvicorn's h11; the "
            "gateway also checks a bearer token",
            f"- load generator: {args.connections} raw HTTP/1.1 keep-alive connections (threads, no SDK client) "
            "on the same machine: on 2 cores it competes with the server for CPU, so requests/s is a lower "
            "bound, most of all with 2 workers",
            f"- {args.rounds} interleaved rounds of {args.duration:g} s per server (after 1 s of warm-up each); "
            "medians over the rounds",
            "",
            "| server | requests/s | server CPU per request (ms) | bytes per answer | errors | worker pids seen |",
            "|---|---:|---:|---:|---:|---:|",
        ]
        for label, server in by.items():
            lines.append(f"| {label} | {server.median('requests_per_s'):.0f} | {cpu[label]:.2f} | "
                         f"{server.median('bytes_per_response'):.0f} | {server.errors()} | {server.pids() or '-'} |")
        lines += ["", f"The search alone (BM25, {n_tools} tools, k=5 with each hit's `why`, as `find_tools` runs it) "
                      f"costs {s_ms:.3f} ms of CPU per query, measured in the benchmark process between rounds "
                      "(best of three per round, median over rounds).", "",
                  "| gateway | against | CPU per request, ratio | without the search | answers |",
                  "|---|---|---:|---:|---|"]
        for a, b, why, total, bare in ratios:
            lines.append(f"| {a} | {b} | {total:.2f}x | {bare:.2f}x | {why} |")
        lines.append("")
        Path(args.out).write_text("\n".join(lines), encoding="utf-8")
    return 0


def _mcp_version() -> str:
    import importlib.metadata

    return importlib.metadata.version("mcp")


if __name__ == "__main__":
    sys.exit(main())
