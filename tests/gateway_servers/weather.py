"""Test upstream "weather": forecasts, a ``search`` that collides with the CRM server's,
a tool that hangs, one that freezes the whole process, one that kills it, and one that
adds a tool at run time and sends ``notifications/tools/list_changed``.

Run: ``python tests/gateway_servers/weather.py`` (stdio) or ``... --http --port N``.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import anyio

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _serve import make_server, run, tool

STATE = {"radar": False}

TOOLS = [
    tool("get_forecast", "Weather forecast for a city: temperature and chance of rain for the next days.",
         {"city": {"type": "string", "description": "city name, e.g. Lisbon"},
          "days": {"type": "integer", "minimum": 1, "maximum": 7, "description": "number of days to forecast"}},
         ["city"], outputSchema={"type": "object", "properties": {
             "city": {"type": "string"}, "days": {"type": "array"}}}),
    tool("search", "Search weather stations by place name and return their station codes.",
         {"query": {"type": "string", "description": "place name to look for"}}, ["query"]),
    tool("climate_report", "Generate a long historical climate report for a region (slow).",
         {"region": {"type": "string", "description": "region name"}}, ["region"]),
    tool("freeze_station", "Maintenance: freeze the weather station firmware for diagnostics.",
         {"seconds": {"type": "number", "description": "how long to freeze"}}, []),
    tool("crash_station", "Maintenance: reboot the weather station controller immediately.",
         {"reason": {"type": "string", "description": "why the reboot is needed"}}, []),
    tool("enable_radar", "Turn on the precipitation radar feature of the weather service.", {}, []),
]
RADAR = tool("radar_image", "Precipitation radar image showing rain and snow clouds over a city right now.",
             {"city": {"type": "string", "description": "city name"}}, ["city"])


def tools():
    return TOOLS + ([RADAR] if STATE["radar"] else [])


async def get_forecast(ctx, args):
    days = int(args.get("days", 3))
    return {"city": args["city"], "days": [{"day": i + 1, "temp_c": 18 + i, "rain": 10 * i} for i in range(days)],
            "pid": os.getpid()}


async def search(ctx, args):
    return {"stations": [f"WX-{args['query'][:3].upper()}-1"]}


async def climate_report(ctx, args):
    await anyio.sleep(3600)  # hangs, but the process stays responsive
    return {"report": "never"}


async def freeze_station(ctx, args):
    time.sleep(float(args.get("seconds", 3600)))  # noqa: ASYNC251 - freezes the event loop on purpose
    return {"frozen": True}


async def crash_station(ctx, args):
    os._exit(3)


async def enable_radar(ctx, args):
    STATE["radar"] = True
    await ctx.session.send_tool_list_changed()
    return {"radar": "on"}


async def radar_image(ctx, args):
    return {"city": args["city"], "image": "radar.png"}


HANDLERS = {f.__name__: f for f in (get_forecast, search, climate_report, freeze_station, crash_station,
                                    enable_radar, radar_image)}

if __name__ == "__main__":
    run(make_server("weather", tools, HANDLERS))
