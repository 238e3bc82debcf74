"""Structured gateway errors.

Every failure the gateway reports to a calling LLM or client is a :class:`GatewayError`
with a stable machine-readable ``code``, a human message and optional details, so a
transport (MCP, HTTP) can serialise it with :meth:`GatewayError.to_dict` without
inspecting exception types.
"""

from __future__ import annotations

from typing import Any

from ..errors import ToolsiftError

__all__ = ["ERROR_CODES", "GatewayError", "UpstreamStartError"]

#: Every code a :class:`GatewayError` may carry, with its default message.
ERROR_CODES: dict[str, str] = {
    "unknown_tool": "no tool with this name",
    "invalid_params": "the arguments do not match the tool's input schema",
    "empty_query": "the query is empty; describe the task to find tools for",
    "query_too_long": "the query is too long",
    "limit_out_of_range": "limit is out of range",
    "confirmation_required": "this tool is high-risk; call it again with confirm=true "
                             "after the user has approved",
    "upstream_error": "the tool failed",
    "upstream_timeout": "the tool did not answer in time",
    "result_too_large": "the tool's result is larger than the gateway passes on",
    "no_match": "no tool matches the query",
    "bad_request": "the request is malformed",
}

# Keys of the serialised error object that details must not overwrite.
_RESERVED = frozenset({"code", "message"})


class GatewayError(ToolsiftError):
    """A gateway request failed in a way the caller can act on.

    Args:
        code: One of :data:`ERROR_CODES`.
        message: What went wrong; defaults to the code's standard message.
        **details: JSON-serialisable extras (``tool``, ``did_you_mean``, ``errors``...),
            merged into the serialised error object.

    Attributes:
        code: The error code.
        message: The human-readable message.
        details: The extra fields.

    Raises:
        ValueError: For an unknown code or a detail named ``code`` or ``message``
            (programming errors, not request errors).
    """

    def __init__(self, code: str, message: str | None = None, **details: Any) -> None:
        if code not in ERROR_CODES:
            raise ValueError(f"unknown gateway error code {code!r}; expected one of {', '.join(ERROR_CODES)}")
        clash = _RESERVED & details.keys()
        if clash:
            raise ValueError(f"details may not be named {', '.join(sorted(clash))}")
        self.code = code
        self.message = message or ERROR_CODES[code]
        self.details = details
        super().__init__(f"{code}: {self.message}")

    def to_dict(self) -> dict[str, Any]:
        """The wire form: ``{"error": {"code": ..., "message": ..., **details}}``."""
        return {"error": {"code": self.code, "message": self.message, **self.details}}

    def __repr__(self) -> str:
        return f"GatewayError({self.code!r}, {self.message!r}, **{self.details!r})"


class UpstreamStartError(GatewayError):
    """An upstream MCP server could not be started or connected to (code
    ``upstream_error``); the message names the cause, e.g. ``upstream 'notes' exited
    during start-up: ModuleNotFoundError: No module named 'mcp.server.fastmcp'``.

    Args:
        upstream: The upstream's name.
        message: What went wrong, with the server's own last stderr line when it exited.
        stderr_tail: The server's last stderr lines (stdio upstreams).

    Attributes:
        stderr_tail: As given.
    """

    def __init__(self, upstream: str, message: str, *, stderr_tail: list[str] | tuple[str, ...] = ()) -> None:
        super().__init__("upstream_error", message, upstream=upstream)
        self.stderr_tail = list(stderr_tail)

    def __str__(self) -> str:
        return self.message
