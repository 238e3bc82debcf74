"""``toolsift learn INDEX --usage usage.db OUT [--dry-run]``: the CLI front of :func:`learn_index`.

Kept out of :mod:`toolsift.cli` so the main parser only registers it
(:func:`add_learn_parser`) and dispatches to :func:`run_learn`.
"""

from __future__ import annotations

import argparse
import json
from typing import TextIO

__all__ = ["add_learn_parser", "run_learn"]


def add_learn_parser(sub: argparse._SubParsersAction) -> argparse.ArgumentParser:
    """Add the ``learn`` subcommand to the main parser's subparsers."""
    p = sub.add_parser("learn", help="learn example intents and weights from a gateway usage log; "
                                     "write a new index (INDEX stays as it is, for rollback)")
    p.add_argument("index", help="index directory to start from (not modified)")
    # OUT may come after the options (``learn INDEX --usage DB OUT``, as documented):
    # argparse binds an optional positional at the first positional run, so
    # toolsift.cli.main hands a trailing OUT back here (see LEARN_OUT_LATE).
    p.add_argument("out", nargs="?", help="index directory to write (atomically); not needed with --dry-run")
    p.add_argument("--usage", required=True, metavar="DB", help="usage log (SQLite) written by the gateway")
    p.add_argument("--dry-run", action="store_true", help="print what would change per tool, write nothing")
    p.add_argument("--min-voters", type=int, default=None,
                   help="distinct sessions an intent needs before it is trusted (default 2)")
    p.add_argument("--min-clients", type=int, default=None,
                   help="distinct client identities behind those sessions (default 5)")
    p.add_argument("--max-examples", type=int, default=None, help="learned intents kept per tool (default 20)")
    p.add_argument("--window", type=float, default=None, metavar="SECONDS",
                   help="a tool call counts for a find_tools at most this long after it (default 300)")
    p.add_argument("--no-weights", action="store_true", help="only add example intents, keep the weights")
    p.add_argument("--json", action="store_true", help="print the report as JSON")
    return p


def run_learn(args: argparse.Namespace, out: TextIO) -> int:
    """Run ``toolsift learn``; returns the exit status."""
    import sys
    import warnings
    from dataclasses import replace

    from ..errors import ToolsiftError
    from .attribution import AttributionRules
    from .learner import LearnConfig, UnknownToolsWarning, learn_index

    if args.out is None and not args.dry_run:
        raise ToolsiftError("learn: give OUT (the index directory to write) or --dry-run")

    cfg = LearnConfig()
    if args.window is not None:
        cfg = replace(cfg, rules=replace(AttributionRules(), window_s=args.window))
    if args.min_voters is not None:
        cfg = replace(cfg, min_voters=args.min_voters)
    if args.min_clients is not None:
        cfg = replace(cfg, min_clients=args.min_clients)
    if args.max_examples is not None:
        cfg = replace(cfg, max_examples_per_tool=args.max_examples)
    if args.no_weights:
        cfg = replace(cfg, train_weights=False)
    with warnings.catch_warnings():
        # Reported in the summary (and below on stderr), not as a Python warning line.
        warnings.simplefilter("ignore", UnknownToolsWarning)
        result = learn_index(args.index, args.usage, args.out, config=cfg, dry_run=args.dry_run)
    if result.unknown_tools and args.json:
        print(f"toolsift: {result.summary().splitlines()[-1]}", file=sys.stderr)
    if args.json:
        print(json.dumps(result.to_dict(), indent=1, ensure_ascii=False), file=out)
    else:
        print(result.summary(), file=out)
        print("dry run: nothing written" if args.dry_run else f"saved -> {args.out}", file=out)
    return 0
