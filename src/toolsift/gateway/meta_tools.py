"""The meta-tools a host lists instead of the catalogue: ``find_tools`` and ``use_tool``."""

from __future__ import annotations

import copy

from ..schema import Tool
from ..query_schema import structured_query_schema
from .config import GatewayConfig

__all__ = ["META_TOOLS", "meta_tool_definitions"]

#: Names of the meta-tools a host lists instead of the catalogue.
META_TOOLS: tuple[str, ...] = ("find_tools", "use_tool")


def meta_tool_definitions(config: GatewayConfig) -> list[Tool]:
    """The ``find_tools`` and ``use_tool`` definitions (MCP form), limits taken from ``config``."""
    cfg = config
    structured = structured_query_schema()
    query = {
        "description": "The task to find tools for, in plain words (or the structured form).",
        "anyOf": [{"type": "string", "minLength": 1, "maxLength": cfg.max_query_chars}, structured],
    }
    find = {
        "name": "find_tools",
        "title": "Find tools",
        "description": (
            "Find the tools that can do a task and get their schemas. Call this first whenever "
            "you need a tool, then call a returned tool by its name. Returns at most `limit` "
            "tools, best first, each with a score, a short reason, and whether it needs the "
            "user's confirmation. An entry marked unchanged was already sent in this session."
        ),
        "inputSchema": {
            "type": "object",
            "properties": {
                "query": query,
                "limit": {"type": "integer", "minimum": 1, "maximum": cfg.max_limit,
                          "default": cfg.default_limit, "description": "How many tools to return."},
                "tags": {"type": "array", "items": {"type": "string"},
                         "description": "Only return tools that carry all of these tags."},
                "token_budget": {"type": "integer", "minimum": 1,
                                 "description": "Optional: return only the best tools whose schemas fit "
                                                "together in this many tokens."},
                "complete": {"type": "boolean", "default": False,
                             "description": "Set true for a multi-step task: also return the tools that "
                                            "provide the inputs the found tools need (e.g. the one that "
                                            "looks up a user id before sending a message)."},
            },
            "required": ["query"],
        },
        "annotations": {"readOnlyHint": True, "openWorldHint": False},
    }
    use = {
        "name": "use_tool",
        "title": "Use the best tool",
        "description": (
            "Find the best tool for a task and run it with the given parameters in one step. "
            "Tools that need confirmation run only with confirm=true, after the user approved."
        ),
        "inputSchema": {
            "type": "object",
            "properties": {
                "query": copy.deepcopy(query),
                "params": {"type": "object", "description": "Arguments for the tool."},
                "confirm": {"type": "boolean", "default": False,
                            "description": "True only when the user approved a high-risk action."},
            },
            "required": ["query", "params"],
        },
        "annotations": {"readOnlyHint": False, "openWorldHint": True},
    }
    return [Tool(id=str(d["name"]), name=str(d["name"]), description=str(d["description"]), source=d)
            for d in (find, use)]
