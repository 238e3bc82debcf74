"""The ``find_tools`` gateway (RFC 0001 "Selective Tool Retrieval"), transport-independent.

* :class:`Gateway`: ``find_tools``, ``use_tool``, ``call_tool``, capabilities and
  meta-tool definitions over a :class:`~toolsift.toolindex.ToolIndex`.
* :class:`GatewayConfig` / :class:`RoutingRule`: formats, limits, routing, risk tags.
* :class:`GatewayError`: every structured error, with a stable ``code``;
  :class:`UpstreamStartError` when an upstream server cannot be started.
* :mod:`toolsift.gateway.formats`: tool schemas in MCP, OpenAI and Anthropic format.

Importing this package does not load the compiled core; building an index does.
"""

from __future__ import annotations

from .config import FORMATS, GatewayConfig, RoutingRule
from .core import BACKENDS, META_TOOLS, Executor, Gateway, risk_level, when_not_to_use
from .errors import ERROR_CODES, GatewayError, UpstreamStartError
from .formats import input_schema, to_anthropic, to_format, to_mcp, to_openai

__all__ = [
    "BACKENDS",
    "ERROR_CODES",
    "FORMATS",
    "META_TOOLS",
    "Executor",
    "Gateway",
    "GatewayConfig",
    "GatewayError",
    "RoutingRule",
    "UpstreamStartError",
    "input_schema",
    "risk_level",
    "to_anthropic",
    "to_format",
    "to_mcp",
    "to_openai",
    "when_not_to_use",
]
