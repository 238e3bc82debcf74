"""Scale: build, memory, disk, save/load and search latency on 100k and 1M synthetic tools,
against bm25s on the same tools as flat documents.

The catalogue is :mod:`benchmarks.synthetic` (real names, descriptions and parameters of
the shared sets, recombined; seed 0); the queries are the shared sets' real queries
(``raw`` text and ``structured`` MFTR rewrites). Every measurement runs in a fresh
process, so peak RSS (``getrusage``) belongs to that one catalogue and library alone; it
includes the catalogue's Python objects (a service holds them too). Search runs on the
index as saved and loaded again (memory-mapped), one query at a time, with
``IndexConfig(threads=1)``; bm25s tokenises and retrieves one query per call with
``n_threads=1``.

The ``hybrid`` worker builds the ``hybrid`` preset's fields (``TOOLSIFT_BENCH_DENSE``
names others, comma-separated) with the static encoder for documents too
(``IndexConfig(encoder="static")``: no transformer can embed a million tools in minutes
on two cores; ``USE_STATIC_ENCODER = False`` runs the hashing stand-in instead); fields of
``ivf_min_docs`` documents or more get an IVF index (``TOOLSIFT_BENCH_IVF_MIN_DOCS``
overrides the threshold), and the worker reports its recall@100 against an exact scan.

Run (opt-in; heavy; numbers are reported, never asserted)::

    python -m pytest benchmarks/bench_scale.py -q -s                        # 100k
    TOOLSIFT_BENCH_SCALE=100k,1M python -m pytest benchmarks/bench_scale.py  # and 1M

``TOOLSIFT_BENCH_SCALE`` lists catalogue sizes (``25k``, ``100k``, ``1M`` ...; default
``100k``); ``TOOLSIFT_BENCH_QUERIES`` (default 300) caps the timed queries;
``TOOLSIFT_BENCH_OUT`` names a folder for ``bench_scale.json``; ``TOOLSIFT_BENCH_ENGINES``
picks the workers. A worker can also be run by hand: ``python -m benchmarks.bench_scale
toolsift 100000`` (prints JSON). The ``default`` worker builds with ``ToolIndex.build(tools)``
and nothing else (issue 34: the hybrid preset, static document vectors and IVF at this
size, the graph deferred) and reports what the build logged; ``default-nograph`` spells
out ``graph=False`` and ``bm25-preset`` passes ``preset="bm25"``, default settings otherwise.
"""

from __future__ import annotations

import gc
import json
import logging
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
N_QUERIES = int(os.environ.get("TOOLSIFT_BENCH_QUERIES", "300"))
SEED = 0
K = 10


def _sizes() -> list[int]:
    raw = os.environ.get("TOOLSIFT_BENCH_SCALE", "100k")
    out = []
    for item in raw.replace(" ", "").split(","):
        mult = {"k": 1_000, "m": 1_000_000}.get(item[-1:].lower(), 1)
        digits = item[:-1] if mult > 1 else item
        if not digits.isdigit():
            raise ValueError(f"TOOLSIFT_BENCH_SCALE: {item!r} is not a size such as 100k or 1M")
        out.append(int(digits) * mult)
    return out


def _label(n: int) -> str:
    return f"{n // 1_000_000}M" if n % 1_000_000 == 0 else f"{n // 1000}k" if n % 1000 == 0 else str(n)


def _disk_mb(path: Path) -> float:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file()) / 2**20


def _queries() -> tuple[list[str], list]:
    from .synthetic import real_queries

    qs = [q for q in real_queries() if q.rewritten is not None]
    pick = np.linspace(0, len(qs) - 1, min(N_QUERIES, len(qs))).astype(int)
    return [qs[i].text for i in pick], [qs[i].rewritten for i in pick]


def _catalogue(n: int) -> tuple[list, dict]:
    from .results import peak_rss_mb
    from .synthetic import synthetic_tools

    t0 = time.perf_counter()
    tools = list(synthetic_tools(n, seed=SEED))
    return tools, {"generate_s": time.perf_counter() - t0, "catalogue_rss_mb": peak_rss_mb(),
                   "load_avg_1m": os.getloadavg()[0]}


def _lat_ms(seconds: np.ndarray) -> dict:
    return {"p50_ms": float(np.percentile(seconds, 50) * 1e3), "p99_ms": float(np.percentile(seconds, 99) * 1e3)}


def worker_toolsift(n: int) -> dict:
    """Build, save, load and search a toolsift index of ``n`` synthetic tools."""
    from toolsift import IndexConfig, ToolIndex

    from .results import peak_rss_mb, per_call

    raw, structured = _queries()
    tools, out = _catalogue(n)
    t0, c0 = time.perf_counter(), time.process_time()
    index = ToolIndex.build(tools, config=IndexConfig(threads=1))
    out.update(build_s=time.perf_counter() - t0, build_cpu_s=time.process_time() - c0, build_rss_mb=peak_rss_mb())
    del tools
    with tempfile.TemporaryDirectory(prefix="toolsift-scale-") as tmp:
        path = Path(tmp) / "index"
        t0, c0 = time.perf_counter(), time.process_time()
        index.save(path)
        out.update(save_s=time.perf_counter() - t0, save_cpu_s=time.process_time() - c0, disk_mb=_disk_mb(path))
        del index
        gc.collect()
        t0, c0 = time.perf_counter(), time.process_time()
        index = ToolIndex.load(path)
        out.update(load_s=time.perf_counter() - t0, load_cpu_s=time.process_time() - c0)
        for q in raw[:20] + structured[:20]:
            index.search(q, k=K)
        for form, qs in (("raw", raw), ("structured", structured)):
            c0 = time.process_time()
            out[form] = _lat_ms(per_call(lambda q: index.search(q, k=K), qs))  # noqa: F821 - bound here; deleted after
            out[form]["cpu_ms_per_query"] = (time.process_time() - c0) * 1e3 / len(qs)
        out["peak_rss_mb"] = peak_rss_mb()
        # The tool graph is built on first use (ToolIndex.build(graph=False), the default):
        # what the first dependencies() / complete=True of this loaded index pays, and the
        # memory after it.
        t0, c0 = time.perf_counter(), time.process_time()
        index.dependencies(index.catalog.ids[0])
        out.update(graph_first_use_s=time.perf_counter() - t0, graph_first_use_cpu_s=time.process_time() - c0,
                   peak_rss_after_graph_mb=peak_rss_mb())
        del index
    return out


#: The document (and query) encoder of the hybrid worker: the static token table
#: (IndexConfig(encoder="static")); False runs the hashing stand-in.
USE_STATIC_ENCODER = True
#: Dense fields of the hybrid worker: the ``hybrid`` preset's (``TOOLSIFT_BENCH_DENSE``
#: overrides, comma-separated).
DENSE_FIELDS = tuple(f for f in os.environ.get("TOOLSIFT_BENCH_DENSE", "description,response,examples").split(",") if f)


def _hybrid_config():
    """``(IndexConfig, context)``: hybrid fields, one thread, and a context that makes the
    stand-in encoder the index's encoder (a no-op with the static encoder)."""
    import contextlib
    from dataclasses import replace

    from toolsift import IndexConfig
    from toolsift.index.embed import encoder_wrapper
    from toolsift.presets import preset_config

    base = preset_config("hybrid", threads=1)
    retrievers = tuple((f, "hybrid" if f in DENSE_FIELDS else "bm25") for f, _ in base.retrievers)
    cfg = replace(base, retrievers=retrievers)
    if os.environ.get("TOOLSIFT_BENCH_IVF_MIN_DOCS"):  # e.g. to force the IVF on a small catalogue
        cfg = replace(cfg, ivf_min_docs=int(os.environ["TOOLSIFT_BENCH_IVF_MIN_DOCS"]))
    if USE_STATIC_ENCODER:
        return replace(cfg, encoder="static"), contextlib.nullcontext()
    from .standin_encoder import HashingStandInEncoder

    standin = HashingStandInEncoder()
    assert isinstance(cfg, IndexConfig)
    return cfg, encoder_wrapper(lambda enc, config: standin)


def _ivf_recall(index, texts: list[str], n: int = 100) -> dict:
    """Recall@n of each IVF field's candidates against an exact scan of the same field,
    over query texts embedded by the index's encoder (the raw query text, as a raw
    query's first need is)."""
    from toolsift.kernels.select import top_positive
    from toolsift.index.embed import get_encoder

    st = index._state
    vecs = get_encoder(index.config).encode(texts)
    out = {}
    for name, dn in st.dense.items():
        if dn.ivf is None:
            continue
        got = dn.top_tools_ivf(vecs, n, index.config.ivf_nprobe)
        exact = dn.score_tools(vecs)
        rec = []
        for i, g in enumerate(got):
            truth = top_positive(exact[i], np.arange(exact.shape[1]), None, exact.shape[1], n)
            if truth.size:
                rec.append(len(set(truth.tolist()) & set(g.tolist())) / truth.size)
        out[name] = {"recall_at_100": float(np.mean(rec)) if rec else None, "queries": len(rec),
                     "lists": dn.ivf.n_lists, "rows": int(dn.matrix.n_rows), "listed": int(dn.ivf.list_ids.size)}
    return out


def worker_default(n: int) -> dict:
    """As :func:`worker_hybrid` with ``ToolIndex.build(tools)`` and nothing else: the
    default preset and settings a user gets (issue 34), which pick the document encoder
    by catalogue size (``IndexConfig.static_documents_from``)."""
    return worker_hybrid(n, build={})


def worker_default_nograph(n: int) -> dict:
    """:func:`worker_default` with ``graph=False`` spelled out: the build the default's
    cost is compared with (issue 35; with the graph built on first use they are the same
    build)."""
    return worker_hybrid(n, build={"graph": False})


def worker_bm25_preset(n: int) -> dict:
    """:func:`worker_default` with ``preset="bm25"``: no dense fields, default settings
    otherwise (the opt-out the README names)."""
    return worker_hybrid(n, build={"preset": "bm25"})


class _Printed(logging.Handler):
    """Keeps what toolsift logs during a build (what a user sees on stderr)."""

    def __init__(self) -> None:
        super().__init__(logging.INFO)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(f"{record.levelname}: {record.getMessage()}")


def worker_hybrid(n: int, *, build: dict | None = None) -> dict:
    """As :func:`worker_toolsift` with dense (hybrid) fields: build, save, load, search.

    ``build``: keyword arguments of a ``ToolIndex.build(tools, **build)`` with default
    settings otherwise (``None``: the bench's own hybrid config, :func:`_hybrid_config`).
    The output's ``printed`` lists what toolsift logged during the build."""
    import contextlib

    from toolsift import ToolIndex
    from toolsift.presets import preset_config

    from .results import peak_rss_mb, per_call

    raw, structured = _queries()
    default = build is not None
    cfg, ctx = (None, contextlib.nullcontext()) if default else _hybrid_config()
    kwargs = dict(build or {}) if default else {"config": cfg}
    shown = cfg or preset_config(kwargs.get("preset"))
    out = {"build_kwargs": {k: v for k, v in kwargs.items() if k != "config"},
           "dense_fields": [f for f, r in shown.retrievers if r != "bm25"],
           "encoder": "static" if USE_STATIC_ENCODER else "hashing stand-in",
           "ivf_min_docs": shown.ivf_min_docs, "ivf_nprobe": shown.ivf_nprobe}
    printed = _Printed()
    logger = logging.getLogger("toolsift")
    with ctx:
        tools, gen = _catalogue(n)
        out.update(gen)
        out["load_avg_before_build"] = os.getloadavg()[0]
        logger.addHandler(printed)
        t0, c0 = time.perf_counter(), time.process_time()
        try:
            index = ToolIndex.build(tools, **kwargs)
        finally:
            logger.removeHandler(printed)
        out.update(build_s=time.perf_counter() - t0, build_cpu_s=time.process_time() - c0,
                   build_rss_mb=peak_rss_mb(), printed=printed.lines)
        if default:
            out["encoder"] = (index.config.encoder or "MiniLM (transformer)") if index.config.uses_dense else None
            out["graph_built"] = index._state.graph is not None
        del tools
        with tempfile.TemporaryDirectory(prefix="toolsift-scale-") as tmp:
            path = Path(tmp) / "index"
            t0, c0 = time.perf_counter(), time.process_time()
            index.save(path)
            out.update(save_s=time.perf_counter() - t0, save_cpu_s=time.process_time() - c0,
                       disk_mb=_disk_mb(path))
            del index
            gc.collect()
            t0, c0 = time.perf_counter(), time.process_time()
            index = ToolIndex.load(path)
            out.update(load_s=time.perf_counter() - t0, load_cpu_s=time.process_time() - c0)
            for q in raw[:20] + structured[:20]:
                index.search(q, k=K)
            for form, qs in (("raw", raw), ("structured", structured)):
                c0 = time.process_time()
                out[form] = _lat_ms(per_call(lambda q: index.search(q, k=K), qs))  # noqa: F821 - bound here
                out[form]["cpu_ms_per_query"] = (time.process_time() - c0) * 1e3 / len(qs)
            out["peak_rss_mb"] = peak_rss_mb()
            # The recall check scans every row exactly (minutes at 1M on a busy machine):
            # TOOLSIFT_BENCH_IVF_RECALL=0 skips it.
            recall = index.config.uses_dense and os.environ.get("TOOLSIFT_BENCH_IVF_RECALL", "1") != "0"
            out["ivf"] = _ivf_recall(index, raw[:100]) if recall else {}
            del index
    out["load_avg_end"] = os.getloadavg()[0]
    return out


def worker_bm25s(n: int) -> dict:
    """Index, save, load and query bm25s over the same tools as flat documents."""
    import bm25s

    from .results import peak_rss_mb, per_call
    from .synthetic import flat_document

    raw, _ = _queries()
    tools, out = _catalogue(n)
    docs = [flat_document(t) for t in tools]
    del tools
    t0, c0 = time.perf_counter(), time.process_time()
    retriever = bm25s.BM25()
    retriever.index(bm25s.tokenize(docs, stopwords="en", show_progress=False), show_progress=False)
    out.update(build_s=time.perf_counter() - t0, build_cpu_s=time.process_time() - c0, build_rss_mb=peak_rss_mb())
    del docs
    with tempfile.TemporaryDirectory(prefix="bm25s-scale-") as tmp:
        path = Path(tmp) / "index"
        t0 = time.perf_counter()
        retriever.save(str(path))
        out.update(save_s=time.perf_counter() - t0, disk_mb=_disk_mb(path))
        del retriever
        gc.collect()
        t0 = time.perf_counter()
        retriever = bm25s.BM25.load(str(path), mmap=True)
        out["load_s"] = time.perf_counter() - t0

        def one(text):
            tokens = bm25s.tokenize([text], stopwords="en", show_progress=False, return_ids=False)
            return retriever.retrieve(tokens, k=K, show_progress=False, n_threads=1)

        for q in raw[:20]:
            one(q)
        out["raw"] = _lat_ms(per_call(one, raw))
        out["peak_rss_mb"] = peak_rss_mb()
    return out


def run_worker(engine: str, n: int, *, timeout: float = 3600) -> dict:
    """Run one worker in a fresh Python process and return its measurements."""
    proc = subprocess.run([sys.executable, "-m", "benchmarks.bench_scale", engine, str(n)],
                          cwd=REPO, capture_output=True, text=True, timeout=timeout)
    if proc.returncode != 0:
        raise RuntimeError(f"{engine} worker at {n} tools failed ({proc.returncode}):\n{proc.stderr[-3000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


# ---------------------------------------------------------------------------- pytest
try:
    import pytest
except ImportError:  # the worker runs without pytest
    pytest = None

if pytest is not None and __name__ != "__main__":
    from .conftest import report
    from .results import Figure, table, write_json

    #: Workers the pytest run starts (``TOOLSIFT_BENCH_ENGINES``, comma-separated; also
    #: ``default``, ``default-nograph``, ``bm25-preset``).
    ENGINES = [e for e in os.environ.get("TOOLSIFT_BENCH_ENGINES", "bm25s,toolsift,hybrid").split(",") if e]
    PIN_THREADS = False  # the public configuration: IndexConfig(threads=1) alone
    _FIGURES: list = []
    _LABELS: list[str] = []
    _ROWS = {  # figure name -> (unit, key in the worker's output)
        "build": ("s", "build_s"), "peak RSS": ("MB", "peak_rss_mb"), "index on disk": ("MB", "disk_mb"),
        "save": ("s", "save_s"), "load": ("s", "load_s"),
        "build CPU": ("s", "build_cpu_s"), "save CPU": ("s", "save_cpu_s"), "load CPU": ("s", "load_cpu_s"),
    }

    @pytest.fixture(scope="module", autouse=True)
    def _summary():
        yield
        if _FIGURES:
            for line in table(_FIGURES, _LABELS):
                report(line)
            path = write_json("bench_scale", _FIGURES, seed=SEED, k=K, queries=N_QUERIES)
            if path is not None:
                report(f"written: {path}")

    def _record(engine: str, n: int, out: dict) -> None:
        label = _label(n)
        if label not in _LABELS:
            _LABELS.append(label)
        prefix = {"toolsift": "", "bm25s": "bm25s "}.get(engine, engine + " ")
        for name, (unit, key) in _ROWS.items():
            if key not in out:  # CPU seconds are measured for toolsift only
                continue
            base = f"bm25s {name}" if engine != "bm25s" else None
            _FIGURES.append(Figure(prefix + name, label, unit, value=out[key], baseline=base,
                                   extra={"tools": n, "generate_s": out["generate_s"],
                                          "catalogue_rss_mb": out["catalogue_rss_mb"],
                                          "load_avg_1m": out["load_avg_1m"]}))
        for form in ("raw", "structured"):
            if form in out:
                base = "bm25s search raw" if engine != "bm25s" else None
                _FIGURES.append(Figure(f"{prefix}search {form}", label, "ms", p50=out[form]["p50_ms"],
                                       p99=out[form]["p99_ms"], n=N_QUERIES, baseline=base,
                                       extra={"tools": n, "threads": 1, "load_avg_1m": out["load_avg_1m"]}))

    @pytest.mark.parametrize("n", _sizes(), ids=_label)
    @pytest.mark.parametrize("engine", ENGINES)
    def test_scale(benchmark, engine, n):
        out = benchmark.pedantic(run_worker, args=(engine, n), rounds=1, iterations=1)
        _record(engine, n, out)


if __name__ == "__main__":
    engine, n = sys.argv[1], int(sys.argv[2])
    worker = {"toolsift": worker_toolsift, "hybrid": worker_hybrid, "default": worker_default,
              "default-nograph": worker_default_nograph, "bm25-preset": worker_bm25_preset,
              "bm25s": worker_bm25s}[engine]
    print(json.dumps(worker(n)))
