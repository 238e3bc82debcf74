"""Gateway configuration: host format, limits, routing rules and risk tags.

:class:`GatewayConfig` is immutable and validated on construction; a bad value raises
:class:`~toolsift.errors.ConfigError` naming the key (``gateway.max_limit``,
``gateway.routing[1].pattern``), so a config file can be fixed without a stack trace.
"""

from __future__ import annotations

import logging
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import re2

from ..errors import ConfigError

__all__ = ["FORMATS", "GatewayConfig", "RoutingRule"]

log = logging.getLogger(__name__)

#: Host formats tool schemas can be returned in.
FORMATS: tuple[str, ...] = ("mcp", "openai", "anthropic")


def _string_tuple(value: Any, key: str) -> tuple[str, ...]:
    # A bare string is almost always a forgotten list; iterating it would yield letters.
    if isinstance(value, str) or not isinstance(value, Sequence):
        raise ConfigError(f"{key} must be a list of strings, got {type(value).__name__}")
    for i, v in enumerate(value):
        if not isinstance(v, str) or not v.strip():
            raise ConfigError(f"{key}[{i}] must be a non-empty string, got {v!r}")
    return tuple(value)


def _positive_int(value: Any, key: str) -> None:
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise ConfigError(f"{key} must be an integer >= 1, got {value!r}")


@dataclass(frozen=True)
class RoutingRule:
    """Search tools with some tags first when a query matches a pattern.

    Example: ``RoutingRule(r"\\border", ("commerce",))`` ranks commerce tools above all
    others for "where is my order?".

    Attributes:
        pattern: Regular expression searched (not matched) in the query text,
            case-insensitively.
        tags: A tool carrying any of these tags is ranked above tools carrying none.
    """

    pattern: str
    tags: tuple[str, ...]
    _regex: Any = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if not isinstance(self.pattern, str) or not self.pattern:
            raise ConfigError(f"routing.pattern must be a non-empty string, got {self.pattern!r}")
        try:
            regex: Any = re.compile(self.pattern, re.IGNORECASE)
        except re.error as exc:
            raise ConfigError(f"routing.pattern {self.pattern!r} is not a valid regular expression: {exc}") from None
        # Queries come from clients: match them in linear time (RE2) whenever RE2 can
        # express the pattern, so no query makes a pattern backtrack on the event loop.
        options = re2.Options()
        options.log_errors = False
        options.case_sensitive = False
        options.never_capture = True
        try:
            regex = re2.compile(self.pattern, options=options)
        except re2.error:
            log.warning("routing pattern %r needs a backtracking engine (lookaround or backreference); "
                        "a long query can make it slow", self.pattern)
        tags = _string_tuple(self.tags, "routing.tags")
        if not tags:
            raise ConfigError("routing.tags must name at least one tag")
        object.__setattr__(self, "tags", tags)
        object.__setattr__(self, "_regex", regex)

    def matches(self, text: str) -> bool:
        """Whether the rule applies to a query with this text."""
        return self._regex.search(text) is not None

    def to_dict(self) -> dict[str, Any]:
        """JSON form ``{"pattern", "tags"}``."""
        return {"pattern": self.pattern, "tags": list(self.tags)}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any], *, where: str = "routing") -> RoutingRule:
        """Inverse of :meth:`to_dict`; errors name ``where`` (e.g. ``gateway.routing[2]``)."""
        if not isinstance(d, Mapping):
            raise ConfigError(f"{where} must be an object with 'pattern' and 'tags', got {type(d).__name__}")
        unknown = set(d) - {"pattern", "tags"}
        if unknown:
            raise ConfigError(f"{where}: unknown key(s) {', '.join(sorted(map(str, unknown)))}")
        try:
            return cls(pattern=d.get("pattern"), tags=d.get("tags", ()))  # type: ignore[arg-type]
        except ConfigError as exc:
            # Re-anchor "routing.x" to this rule's position in the file.
            raise ConfigError(str(exc).replace("routing.", f"{where}.", 1)) from None


@dataclass(frozen=True)
class GatewayConfig:
    """How the gateway answers ``find_tools`` / ``use_tool`` requests.

    Attributes:
        format: Default host format of returned schemas: ``"mcp"``, ``"openai"``
            (Chat Completions) or ``"anthropic"``; a request may override it.
        default_limit: Tools returned when a request gives no ``limit``.
        max_limit: Largest ``limit`` accepted; larger requests are refused, never cut.
        max_query_chars: Longest query accepted (for a structured query, the total
            length of its texts).
        routing: Rules ranking tools with given tags first for matching queries; the
            first matching rule a tool satisfies decides its group.
        high_risk_tags: Tags that make a tool high-risk (confirmation required). Tools
            with MCP ``destructiveHint: true`` (tag ``destructive``) are always high-risk.
        call_timeout: Seconds a tool execution may take before the gateway gives up
            with ``upstream_timeout``; ``None`` leaves timeouts to the executor.
        validation_timeout: Seconds argument validation may take (it runs in a worker
            thread) before the call is refused with ``invalid_params``.
        max_result_bytes: Largest tool result (as UTF-8 JSON) passed back to the model;
            larger ones become a ``result_too_large`` error.
    """

    format: Literal["mcp", "openai", "anthropic"] = "mcp"
    default_limit: int = 5
    max_limit: int = 20
    max_query_chars: int = 2000
    routing: tuple[RoutingRule, ...] = ()
    high_risk_tags: tuple[str, ...] = ("risk:high",)
    call_timeout: float | None = None
    validation_timeout: float = 2.0
    max_result_bytes: int = 4 * 1024 * 1024

    def __post_init__(self) -> None:
        if self.format not in FORMATS:
            raise ConfigError(f"gateway.format must be one of {', '.join(FORMATS)}, got {self.format!r}")
        _positive_int(self.max_limit, "gateway.max_limit")
        _positive_int(self.default_limit, "gateway.default_limit")
        if self.default_limit > self.max_limit:
            raise ConfigError(
                f"gateway.default_limit ({self.default_limit}) must not exceed gateway.max_limit ({self.max_limit})"
            )
        _positive_int(self.max_query_chars, "gateway.max_query_chars")
        if isinstance(self.routing, (str, Mapping)) or not isinstance(self.routing, Sequence):
            raise ConfigError(f"gateway.routing must be a list of routing rules, got {type(self.routing).__name__}")
        for i, rule in enumerate(self.routing):
            if not isinstance(rule, RoutingRule):
                raise ConfigError(f"gateway.routing[{i}] must be a RoutingRule, got {type(rule).__name__}")
        object.__setattr__(self, "routing", tuple(self.routing))
        object.__setattr__(self, "high_risk_tags", _string_tuple(self.high_risk_tags, "gateway.high_risk_tags"))
        t = self.call_timeout
        if t is not None and (
            not isinstance(t, (int, float)) or isinstance(t, bool) or not math.isfinite(t) or t <= 0
        ):
            raise ConfigError(f"gateway.call_timeout must be a number > 0 or null, got {t!r}")
        v = self.validation_timeout
        if not isinstance(v, (int, float)) or isinstance(v, bool) or not math.isfinite(v) or v <= 0:
            raise ConfigError(f"gateway.validation_timeout must be a number > 0, got {v!r}")
        _positive_int(self.max_result_bytes, "gateway.max_result_bytes")

    def to_dict(self) -> dict[str, Any]:
        """Plain-JSON form, the inverse of :meth:`from_dict`."""
        return {
            "format": self.format,
            "default_limit": self.default_limit,
            "max_limit": self.max_limit,
            "max_query_chars": self.max_query_chars,
            "routing": [r.to_dict() for r in self.routing],
            "high_risk_tags": list(self.high_risk_tags),
            "call_timeout": self.call_timeout,
            "validation_timeout": self.validation_timeout,
            "max_result_bytes": self.max_result_bytes,
        }

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> GatewayConfig:
        """Build from the :meth:`to_dict` form; missing keys take their defaults.

        Raises:
            ConfigError: Unknown keys or bad values, naming the key.
        """
        if not isinstance(d, Mapping):
            raise ConfigError(f"gateway config must be an object, got {type(d).__name__}")
        known = {"format", "default_limit", "max_limit", "max_query_chars", "routing",
                 "high_risk_tags", "call_timeout", "validation_timeout", "max_result_bytes"}
        unknown = set(d) - known
        if unknown:
            raise ConfigError(f"gateway: unknown key(s) {', '.join(sorted(map(str, unknown)))}")
        kw: dict[str, Any] = {k: d[k] for k in known - {"routing", "high_risk_tags"} if k in d}
        if "routing" in d:
            rules = d["routing"]
            if isinstance(rules, (str, Mapping)) or not isinstance(rules, Sequence):
                raise ConfigError(f"gateway.routing must be a list of rules, got {type(rules).__name__}")
            kw["routing"] = tuple(
                RoutingRule.from_dict(r, where=f"gateway.routing[{i}]") for i, r in enumerate(rules)
            )
        if "high_risk_tags" in d:
            kw["high_risk_tags"] = _string_tuple(d["high_risk_tags"], "gateway.high_risk_tags")
        return cls(**kw)
