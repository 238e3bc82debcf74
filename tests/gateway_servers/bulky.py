"""Test upstream "bulky": results too large to pass on (issue 24, item 5).

``blob(mb)`` answers ``mb`` megabytes of text, ``many(n)`` a structured result with
``n`` items, ``small()`` a tiny one and its process id (to see that the server was
not restarted after a refusal).

Run: ``python tests/gateway_servers/bulky.py`` (stdio) or ``... --http --port N``.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _serve import make_server, run, tool

TOOLS = [
    tool("blob", "Download a large binary log blob as text.",
         {"mb": {"type": "number", "description": "size in megabytes"}}, ["mb"]),
    tool("many", "List every record of the archive, one item each.",
         {"n": {"type": "integer", "description": "number of records"}}, ["n"]),
    tool("small", "Tell the server's process id.", {}, []),
]


async def blob(ctx, args):
    return "x" * int(float(args["mb"]) * 1_000_000)


async def many(ctx, args):
    return {"items": [0] * int(args["n"])}


async def small(ctx, args):
    return {"pid": os.getpid()}


HANDLERS = {f.__name__: f for f in (blob, many, small)}

if __name__ == "__main__":
    run(make_server("bulky", lambda: TOOLS, HANDLERS))
