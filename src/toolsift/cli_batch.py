"""``toolsift score`` and ``toolsift rank``: batch scoring from the command line.

    toolsift score INDEX PAIRS OUT [--on-error column] [--engine ray --address HOST:PORT]
    toolsift rank INDEX QUERIES OUT -k 10

Formats by extension (Parquet, Arrow IPC, CSV, JSONL; see :mod:`toolsift.batch.io`).
:func:`add_commands` registers the subcommands on the main parser; each handler returns
the exit status, and toolsift's own errors (a missing column, a bad row, an unreadable
file) reach the main CLI as :class:`~toolsift.errors.ToolsiftError`, printed as one line.
"""

from __future__ import annotations

import argparse
from typing import TextIO

__all__ = ["add_commands"]


def add_commands(sub) -> dict:
    """Add ``score`` and ``rank`` to the subparsers ``sub``; returns ``{name: handler}``."""
    sc = sub.add_parser("score", help="score every (query, tool) pair of a file (Parquet, Arrow, CSV, JSONL)")
    sc.add_argument("index", help="index directory written by 'toolsift index'")
    sc.add_argument("pairs", help="pairs file: columns query (text or structured JSON) and tool_id")
    sc.add_argument("out", help="output file; same formats, chosen by extension")
    # A scoring job is a throughput job: every core this process may use (affinity and
    # cgroup quota, toolsift.cpus) unless the call says otherwise.
    _common(sc, threads=0, threads_help="threads (default 0 = every core this process may use)")
    sc.add_argument("--tool-column", default="tool_id", help="column of tool ids (default tool_id)")
    sc.add_argument("--keep", default=None,
                    help="comma-separated input columns to copy to the output (default: all but the query)")
    sc.add_argument("--batch-size", type=int, default=262_144, help="rows per batch (default 262144)")
    sc.add_argument("--engine", choices=("local", "ray"), default="local",
                    help="local (this process) or ray (Ray Data; needs toolsift[ray])")
    sc.add_argument("--address", default=None,
                    help="Ray cluster address (default: start a local Ray instance)")
    sc.add_argument("--workers", type=int, default=None, help="Ray workers (default: one per CPU)")

    rk = sub.add_parser("rank", help="the top-k tools of every query of a file, as rows")
    rk.add_argument("index", help="index directory written by 'toolsift index'")
    rk.add_argument("queries", help="queries file: column query (text or structured JSON), optional query_id")
    rk.add_argument("out", help="output file; same formats, chosen by extension")
    rk.add_argument("-k", type=int, default=10, help="tools per query (default 10)")
    _common(rk)
    rk.add_argument("--query-id-column", default="query_id",
                    help="column of query ids (default query_id; the row number if absent)")
    rk.add_argument("--batch-size", type=int, default=1024, help="queries per batch (default 1024)")
    return {"score": _cmd_score, "rank": _cmd_rank}


def _common(p: argparse.ArgumentParser, *, threads: int | None = None, threads_help: str | None = None) -> None:
    p.add_argument("--query-column", default="query", help="column of queries (default query)")
    p.add_argument("--query-format", choices=("auto", "text", "json"), default="auto",
                   help="auto: a value starting with '{' is structured query JSON (default)")
    p.add_argument("--on-error", choices=("raise", "column"), default="raise",
                   help="raise: stop at the first bad row, naming it; column: write an error column")
    # Threads are the index's setting (IndexConfig.threads, saved with it; `toolsift index
    # --threads`) unless the call says otherwise; `score` defaults to every core.
    p.add_argument("--threads", type=int, default=threads,
                   help=threads_help or "threads (default: the index's config.threads, 1 unless built with "
                                        "--threads; 0 = all cores)")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.add_argument("--compression", choices=("none", "lz4", "zstd", "snappy"), default=None,
                   help="output codec for Parquet (default lz4) or Arrow IPC (default none)")


def _report(what: str, res, out: TextIO, unit: str) -> None:
    rate = res.rows_in / res.seconds if res.seconds > 0 else float("inf")
    errors = f", {res.errors:,} rows with errors" if res.errors else ""
    print(f"{what} {res.rows_in:,} {unit} -> {res.rows_out:,} rows in {res.seconds:.2f}s "
          f"({rate:,.0f} {unit}/s){errors}", file=out)


def _cmd_score(args: argparse.Namespace, out: TextIO) -> int:
    keep = [c.strip() for c in args.keep.split(",") if c.strip()] if args.keep is not None else None
    options = dict(query_column=args.query_column, tool_column=args.tool_column, keep=keep,
                   on_error=args.on_error, query_format=args.query_format, threads=args.threads)
    if args.engine == "ray":
        from .distributed import score_file_ray

        res = score_file_ray(args.index, args.pairs, args.out, address=args.address, workers=args.workers,
                             batch_size=args.batch_size, progress=not args.quiet, compression=args.compression,
                             **options)
    else:
        from .batch.files import score_file

        res = score_file(args.index, args.pairs, args.out, batch_size=args.batch_size, progress=not args.quiet,
                         compression=args.compression, **options)
    _report(f"scored ({args.engine})", res, out, "pairs")
    return 0


def _cmd_rank(args: argparse.Namespace, out: TextIO) -> int:
    from .batch.files import rank_file

    res = rank_file(args.index, args.queries, args.out, k=args.k, batch_size=args.batch_size,
                    progress=not args.quiet, query_column=args.query_column,
                    query_id_column=args.query_id_column, on_error=args.on_error,
                    query_format=args.query_format, threads=args.threads, compression=args.compression)
    _report("ranked", res, out, "queries")
    return 0
