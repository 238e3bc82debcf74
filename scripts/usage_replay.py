"""Learning from usage, measured: replay benchmark queries as simulated agents, learn, score.

For each shared mftr-* set (docs/usage-learning.md has the protocol and the numbers):

1. Serve the set's raw tools (ToolRet adapter) with ``IndexConfig()`` and the set's
   leave-one-dataset-out shipped weights -- exactly the ``default`` cold-start method --
   through a real gateway: the MCP server over streamable HTTP (``--transport http``,
   default) or the in-process :class:`Gateway` core (``--transport core``). Its executor
   accepts every call that passed argument validation. A :class:`UsageRecorder` logs.
2. Simulated agents: every query is asked by ``--agents`` independent sessions, in one
   shuffled order. An agent calls ``find_tools(query, limit=10)``, then calls each gold
   tool by name with arguments generated from its schema, and with probability
   ``--noise`` also a wrong tool among the returned ones (before or after, at random).
3. Per fold k: learning sees only the log rows of sessions whose query is a training
   query of fold k (no test-fold query reaches examples or weights), cut after the
   first N logged uses (N = 0, 50, 200, all); the learned index then ranks the test
   queries of fold k (``search_batch``, top 100, score ties broken by the eval's hash of
   the tool id, as ``toolsift eval`` does). Runs are pooled over the five folds and
   scored with pytrec_eval (NDCG@10, Recall@10).
4. References, computed in the same run with the eval code (``run_method`` + pytrec_eval):
   ``toolsift eval``'s cold ``default`` method (the same index and tie rule: it equals the
   0-uses point) and the offline feedback method
   ``llm-free`` with feedback (rule-based docs, example intents from the labelled training
   folds, weights trained per fold): what learning from labels reaches, to compare the
   usage curve with. ``--no-offline`` skips it.

Usage::

    python scripts/usage_replay.py mftr-apibank mftr-toolink --json out.json --plot docs/usage-learning.png \
        --report docs/results/usage-learning-DATE.md
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import sys
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"
CURVE = (0, 50, 200, None)  # None = every logged use
METRICS = ("ndcg@10", "recall@10")


# ------------------------------------------------------------------ arguments
def sample(schema: Any, depth: int = 0) -> Any:
    """A value that validates against a (simple) JSON schema: enum/const/default first,
    then by type, honouring lengths and bounds."""
    if not isinstance(schema, dict) or depth > 6:
        return "x"
    for key in ("const",):
        if key in schema:
            return schema[key]
    if schema.get("enum"):
        return schema["enum"][0]
    if "default" in schema:
        return schema["default"]
    for key in ("anyOf", "oneOf", "allOf"):
        if isinstance(schema.get(key), list) and schema[key]:
            return sample(schema[key][0], depth + 1)
    kind = schema.get("type", "string")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), "null")
    if kind == "integer":
        return int(schema.get("minimum", schema.get("exclusiveMinimum", -1) + 1 if "exclusiveMinimum" in schema else 1))
    if kind == "number":
        return float(schema.get("minimum", 1.0))
    if kind == "boolean":
        return True
    if kind == "null":
        return None
    if kind == "array":
        n = int(schema.get("minItems", 1))
        return [sample(schema.get("items", {}), depth + 1) for _ in range(n)]
    if kind == "object":
        props = schema.get("properties", {}) if isinstance(schema.get("properties"), dict) else {}
        return {k: sample(props.get(k, {}), depth + 1) for k in schema.get("required", []) if isinstance(k, str)}
    fmt = schema.get("format")
    text = {"date": "2024-01-01", "date-time": "2024-01-01T00:00:00Z", "email": "a@b.co", "uri": "https://a.b/c",
            "time": "00:00:00"}.get(fmt, "example")
    lo = int(schema.get("minLength", 0))
    return text + "x" * max(0, lo - len(text))


def arguments(schema: dict) -> dict:
    """Required arguments only (what an agent must send)."""
    value = sample(dict(schema, type="object"))
    return value if isinstance(value, dict) else {}


# ------------------------------------------------------------------ transports
class CoreClient:
    """Agents talk to the in-process gateway core."""

    def __init__(self, gateway) -> None:
        self.gateway = gateway

    async def find(self, session: str, query: str) -> list[str]:
        found = await self.gateway.find_tools(query, limit=10, session=session)
        return [t["name"] for t in found["tools"]]

    async def call(self, session: str, name: str, args: dict) -> bool:
        try:
            await self.gateway.call_tool(name, args, session=session)
            return True
        except Exception:  # noqa: BLE001 - any failed call is a "not used" outcome to replay
            return False


async def _http_agents(url: str, jobs: list, run_job, concurrency: int, sessions: dict) -> None:
    """Each job is one agent = one MCP session over streamable HTTP."""
    from mcp import ClientSession
    from mcp.client.streamable_http import streamable_http_client

    class HttpClient:
        def __init__(self, session) -> None:
            self.s = session

        async def find(self, _: str, query: str) -> list[str]:
            res = await self.s.call_tool("find_tools", {"query": query, "limit": 10})
            data = res.structured_content or json.loads(res.content[0].text)
            return [t["name"] for t in data.get("tools", [])]

        async def call(self, _: str, name: str, args: dict) -> bool:
            res = await self.s.call_tool(name, args)
            return not res.is_error

    sem = asyncio.Semaphore(concurrency)

    async def one(job) -> None:
        import httpx2

        seen: list[str] = []

        async def hook(response) -> None:
            sid = response.headers.get("mcp-session-id")
            if sid and not seen:
                seen.append(sid)
                # The gateway keys its sessions by the MCP session id.
                sessions[f"http:{sid}"] = job[0].id

        async with sem:
            async with httpx2.AsyncClient(timeout=60, event_hooks={"response": [hook]}) as http:
                async with streamable_http_client(url, http_client=http) as (read, write, *_):
                    async with ClientSession(read, write) as s:
                        await s.initialize()
                        await run_job(HttpClient(s), job)

    await asyncio.gather(*(one(j) for j in jobs))


def _serve_http(runtime_factory, port: int):
    """Start the gateway's MCP app on loopback in a thread; returns (server, thread)."""
    import threading

    import uvicorn
    from mcp.server.streamable_http_manager import StreamableHTTPASGIApp, StreamableHTTPSessionManager
    from starlette.applications import Starlette
    from starlette.routing import Route

    from toolsift.gateway.server import build_mcp_server

    server = build_mcp_server(runtime_factory)
    manager = StreamableHTTPSessionManager(app=server, json_response=True)
    from contextlib import asynccontextmanager

    @asynccontextmanager
    async def lifespan(app):
        async with manager.run():
            yield

    app = Starlette(routes=[Route("/mcp", StreamableHTTPASGIApp(manager))], lifespan=lifespan)
    uv = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", lifespan="on"))
    thread = threading.Thread(target=uv.run, daemon=True)
    thread.start()
    for _ in range(300):
        if uv.started:
            break
        time.sleep(0.05)
    return uv, thread


# ------------------------------------------------------------------ replay
def replay(ds, base, db: Path, *, agents: int, noise: float, seed: int, transport: str) -> dict:
    """Run the simulated agents against a gateway over ``base``; returns replay counts."""
    from toolsift.gateway import Gateway
    from toolsift.gateway.formats import input_schema
    from toolsift.usage import UsageRecorder

    by_id = {t.id: t for t in base.catalog}
    rng = random.Random(seed)
    jobs = [(q, a) for q in ds.queries for a in range(agents)]
    rng.shuffle(jobs)
    plans = {}
    for q, a in jobs:
        plans[(q.id, a)] = (rng.random() < noise, rng.random() < 0.5, rng.random())
    stats = {"finds": 0, "calls": 0, "failed_calls": 0, "noise_calls": 0, "gold_returned": 0}

    async def executor(tool, args):
        return {"ok": True}

    recorder = UsageRecorder(db)
    gateway = Gateway(base, executor=executor, recorder=recorder)

    async def run_job(client, job) -> None:
        q, a = job
        session = f"{q.id}#{a}"
        returned = await client.find(session, q.text)
        stats["finds"] += 1
        gold = [by_id[t].name for t in q.labels if t in by_id]
        stats["gold_returned"] += any(g in returned for g in gold)
        is_noise, noise_first, pick = plans[(q.id, a)]
        wrong = [n for n in returned if n not in gold]
        calls = list(gold)
        if is_noise and wrong:
            bad = wrong[int(pick * len(wrong))]
            calls = [bad] + calls if noise_first else calls + [bad]
            stats["noise_calls"] += 1
        for name in calls:
            tool = names[name]
            ok = await client.call(session, name, arguments(input_schema(tool)))
            stats["calls"] += 1
            stats["failed_calls"] += not ok

    names = {t.name: t for t in base.catalog}
    sessions = {f"{q.id}#{a}": q.id for q, a in jobs}  # session key in the log -> query id
    t0 = time.perf_counter()
    if transport == "core":
        client = CoreClient(gateway)

        async def main() -> None:
            sem = asyncio.Semaphore(8)

            async def one(job):
                async with sem:
                    await run_job(client, job)

            await asyncio.gather(*(one(j) for j in jobs))

        asyncio.run(main())
    else:
        import socket

        from toolsift.gateway.server import Runtime

        rt = Runtime(gateway)
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        uv, thread = _serve_http(lambda: rt, port)
        try:
            asyncio.run(_http_agents(f"http://127.0.0.1:{port}/mcp", jobs, run_job, concurrency=8,
                                     sessions=sessions))
        finally:
            uv.should_exit = True
            thread.join(timeout=10)
    recorder.close()
    stats["seconds"] = round(time.perf_counter() - t0, 1)
    stats["dropped_records"] = recorder.dropped
    return stats, sessions


# ------------------------------------------------------------------ learn + score
def curve(ds, base, db: Path, sessions: dict, *, config, points=CURVE) -> dict:
    """NDCG@10 / Recall@10 of the test folds after learning from the first N uses."""
    from toolsift.evaluate.cold import ranked_run, tie_keys
    from toolsift.evaluate.metrics import evaluate
    from toolsift.usage import UsageLog, attribute, learn

    with UsageLog(db) as log:
        finds, uses = list(log.finds()), list(log.uses())
    qid = lambda session: sessions.get(session)  # noqa: E731
    texts = {q.id: q.text for q in ds.queries}
    ids = [t.id for t in base.catalog]
    keys = dict(zip(ids, tie_keys(ids)))
    out = {}
    notes = []
    for n in points:
        run: dict = {}
        for k in range(len(ds.folds)):
            train = set(ds.train_ids(k))
            test = list(ds.test_ids(k))
            assert not train & set(test)
            fu = [u for u in uses if u.session and qid(u.session) in train]
            if n is not None:
                fu = fu[:n]
            if not fu:
                index = base
            else:
                last_ts = fu[-1].ts
                ff = [f for f in finds if f.session and qid(f.session) in train and f.ts <= last_ts]
                # Guard: nothing of a test query may reach learning.
                assert all(qid(r.session) not in set(test) for r in ff + fu)
                result = learn(base, attribute((ff, fu), rules=config.rules), config=config)
                index = result.index
                notes.append({"uses": n, "fold": k, "added_tools": len(result.added),
                              "weights": None if result.weights is None else result.weights.reason,
                              "params": result.params_after.to_dict()["weights"]})
            hits = index.search_batch([texts[i] for i in test], k=100)
            # Ties re-ranked by the eval's neutral rule, as `toolsift eval` does for `default`:
            # search keeps catalogue order among ties, and ToolLink's order puts relevant
            # tools first among its duplicates (docs/coldstart.md, "tie rules").
            ordered = [sorted(hs, key=lambda h: (-h.score, keys[h.id])) for hs in hits]
            run.update(ranked_run([[h.id for h in hs] for hs in ordered], test))
        res = evaluate(ds.qrels(), run, metrics=METRICS).mean
        label = "all" if n is None else str(n)
        total = len(uses) if n is None else n
        out[label] = {"ndcg@10": round(res["ndcg@10"], 4), "recall@10": round(res["recall@10"], 4),
                      "uses_per_fold": total if n is not None else "all"}
        print(f"  {ds.name} after {label} uses: N@10 {res['ndcg@10']:.4f}  R@10 {res['recall@10']:.4f}",
              file=sys.stderr, flush=True)
    return {"curve": out, "notes": notes}


def reference(ds, method: str, *, feedback: bool) -> dict:
    """N@10 / R@10 of one ``toolsift eval`` method on ``ds``, pooled over its folds."""
    from toolsift.evaluate.metrics import evaluate
    from toolsift.evaluate.methods import run_method

    t0 = time.process_time()
    out = run_method(ds, method, feedback=feedback)
    res = evaluate(ds.qrels(), out.run, metrics=METRICS).mean
    print(f"  {ds.name} {method} (feedback={feedback}): N@10 {res['ndcg@10']:.4f}  R@10 {res['recall@10']:.4f}",
          file=sys.stderr, flush=True)
    return {"method": method, "feedback": feedback, **{m: round(res[m], 4) for m in METRICS},
            "cpu_seconds": round(time.process_time() - t0, 1)}


def conditions(argv: list[str]) -> dict:
    """What the run was measured on (quality numbers do not depend on load; timings do)."""
    import os
    import platform
    from datetime import datetime, timezone

    from toolsift import __version__

    return {"date_utc": datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M"), "cpus": os.cpu_count(),
            "load_avg": [round(x, 2) for x in os.getloadavg()], "python": platform.python_version(),
            "platform": platform.platform(), "toolsift": __version__,
            "command": "python scripts/usage_replay.py " + " ".join(argv)}


def _offline_n10(r: dict) -> float | None:
    ref = r.get("offline_feedback")
    # Older --json files stored a bare N@10 here.
    return ref.get("ndcg@10") if isinstance(ref, dict) else ref


def report(results: dict, run: dict, path: str) -> None:
    """The run as a Markdown results file (docs/results/ style)."""
    first = next(iter(results.values()))
    points = list(first["curve"])
    lines = ["# Learning from usage (simulated agents), " + run["start"]["date_utc"][:10], "",
             "Command:", "", "```bash", run["start"]["command"], "```", "",
             f"Machine: {run['start']['cpus']} CPUs, {run['start']['platform']}, Python {run['start']['python']}, "
             f"toolsift {run['start']['toolsift']}; {run['start']['date_utc']}–{run['end']['date_utc'][11:]} UTC; "
             f"1/5/15-min load average {' '.join(map(str, run['start']['load_avg']))} at the start, "
             f"{' '.join(map(str, run['end']['load_avg']))} at the end (other jobs share the machine; "
             "the quality numbers do not depend on load, the replay seconds do).", "",
             f"Transport `{first['transport']}`, {first['agents']} agents per query, "
             f"{round(first['noise'] * 100)}% noise, `LearnConfig(min_voters={first['min_voters']}, "
             f"min_clients={first['min_clients']})`, seed {run['seed']}. Test folds pooled, N@10 / R@10:", ""]
    head = ["set", *[f"{p} uses" for p in points], "`default` (eval)", "`llm-free` + feedback", "all ÷ llm-free"]
    lines += ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    cell = lambda d: f"{d['ndcg@10']:.4f} / {d['recall@10']:.4f}" if d else "–"  # noqa: E731
    for name, r in results.items():
        off = r.get("offline_feedback")
        last = r["curve"][points[-1]]["ndcg@10"]
        row = [name, *[cell(r["curve"][p]) for p in points], cell(r.get("cold_default")), cell(off),
               f"{last / off['ndcg@10']:.3f}" if off else "–"]
        lines.append("| " + " | ".join(row) + " |")
    lines += ["", "Replay (calls logged, noise calls, failed calls, finds whose 10 results held a gold tool, "
              "wall seconds):", ""]
    for name, r in results.items():
        st = r["replay"]
        lines.append(f"- {name}: {st['finds']} finds, {st['calls']} calls ({st['noise_calls']} noise, "
                     f"{st['failed_calls']} failed), gold returned in {st['gold_returned'] / st['finds']:.0%} "
                     f"of finds, {st['seconds']} s")
    lines += ["", "`0 uses` is the served index (the `default-bm25` cold method's index: raw tools, LODO weights) "
              "before any learning, score ties broken by the eval's hash of the tool id; `default-bm25` (eval) is "
              "`toolsift eval --method default-bm25 --no-feedback` on the same set, computed in the same run (the "
              "two agree when the replay scores as the eval does). "
              "`llm-free` + feedback is `toolsift eval --method llm-free` (rule-based docs, training-fold "
              "queries as examples, weights trained per fold), run in the same process."]
    Path(path).write_text("\n".join(lines) + "\n", encoding="utf-8")


def plot(results: dict, path: str) -> None:
    """Learning curves (NDCG@10 after 0, 50, 200, all uses) with each set's no-usage
    baseline (dotted) and offline feedback reference (dashed)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4.6))
    xs: list = []
    for name, r in results.items():
        xs = list(r["curve"])
        ys = [r["curve"][x]["ndcg@10"] for x in xs]
        noise = int(round(r["noise"] * 100))
        line, = ax.plot(range(len(xs)), ys, marker="o", label=f"{name} ({r['agents']} agents/query, {noise}% noise)")
        ax.axhline(ys[0], color=line.get_color(), linestyle=":", linewidth=1)
        if _offline_n10(r):
            ax.axhline(_offline_n10(r), color=line.get_color(), linestyle="--", linewidth=1)
    ax.set_xticks(range(len(xs)), [f"{x} uses" if x != "all" else "all uses" for x in xs])
    ax.set_ylabel("test-fold NDCG@10 (BM25 fields)")
    ax.set_title("Learning from usage (dotted: no usage; dashed: offline feedback)", fontsize=10)
    ax.legend(fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.1), ncol=2)
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("datasets", nargs="+", help="mftr-* folder names under ../shared/data")
    ap.add_argument("--agents", type=int, default=3, help="sessions asking each query (default 3)")
    ap.add_argument("--noise", type=float, default=0.15, help="share of agents also calling a wrong returned tool")
    ap.add_argument("--min-voters", type=int, default=None, help="override LearnConfig.min_voters")
    ap.add_argument("--min-clients", type=int, default=1,
                    help="LearnConfig.min_clients (default 1 here: the simulated agents share one process "
                         "and, over HTTP, one loopback address, so they are not distinct client identities; "
                         "the library default is 5)")
    ap.add_argument("--transport", choices=("http", "core"), default="http")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--workdir", default="/tmp/toolsift-usage-replay")
    ap.add_argument("--no-offline", action="store_true",
                    help="skip the reference methods (eval `default`, `llm-free` with feedback)")
    ap.add_argument("--json", help="write the results here")
    ap.add_argument("--report", help="write the results as a Markdown file (docs/results/ style)")
    ap.add_argument("--plot", help="write the learning curves (PNG)")
    ap.add_argument("--replot", metavar="JSON", help="only plot the results of an earlier --json run")
    args = ap.parse_args(argv)
    if args.replot:
        saved = json.loads(Path(args.replot).read_text(encoding="utf-8"))
        # Older --json files hold the sets at the top level, without the run's conditions.
        plot(saved.get("sets", saved), args.plot or "usage-learning.png")
        return 0
    import logging

    # The MCP client warns once per call that a gateway-routed tool is not in tools/list
    # (under the logger "client" in mcp 2.x's client session, "mcp" in 1.x).
    for logger in ("mcp", "client"):
        logging.getLogger(logger).setLevel(logging.ERROR)

    from toolsift.evaluate import MftrDataset
    from toolsift.evaluate.cold import default_config
    from toolsift.toolindex import ToolIndex
    from toolsift.usage import LearnConfig

    config = LearnConfig(min_clients=args.min_clients)
    if args.min_voters is not None:
        config = LearnConfig(min_voters=args.min_voters, min_clients=args.min_clients)
    work = Path(args.workdir)
    work.mkdir(parents=True, exist_ok=True)
    start = conditions(sys.argv[1:] if argv is None else list(argv))
    results = {}
    for name in args.datasets:
        ds = MftrDataset.load(DATA / name)
        cfg, weights = default_config(ds.root.name)
        base = ToolIndex.build(ds.raw_tools, config=replace(cfg, threads=0))
        db = work / f"{name}-a{args.agents}-n{args.noise}-s{args.seed}-{args.transport}.db"
        db.unlink(missing_ok=True)
        for suffix in ("-wal", "-shm"):
            Path(str(db) + suffix).unlink(missing_ok=True)
        stats, sessions = replay(ds, base, db, agents=args.agents, noise=args.noise, seed=args.seed, transport=args.transport)
        print(f"{name}: replay {stats}", file=sys.stderr, flush=True)
        got = curve(ds, base, db, sessions, config=config)
        refs = {} if args.no_offline else {"cold_default": reference(ds, "default-bm25", feedback=False),
                                           "offline_feedback": reference(ds, "llm-free", feedback=True)}
        results[name] = {"weights": weights, "replay": stats, "agents": args.agents, "noise": args.noise,
                         "transport": args.transport, "min_voters": config.min_voters,
                         "min_clients": config.min_clients, **got, **refs}
    run = {"start": start, "end": conditions([]), "seed": args.seed}
    if args.json:
        Path(args.json).write_text(json.dumps({"run": run, "sets": results}, indent=1), encoding="utf-8")
    if args.report:
        report(results, run, args.report)
    if args.plot:
        plot(results, args.plot)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
