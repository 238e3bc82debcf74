"""Gateway configuration: host format, limits, routing rules and risk tags.

Every configuration the gateway reads (this module and :mod:`.upstream_config`) is a
pydantic model, validated one way: by the field types and constraints declared on it.
A bad value raises :class:`~toolsift.errors.ConfigError` naming the key
(``gateway.max_limit``, ``gateway.routing[1].pattern``) and, when read from a file, the
file, so a config can be fixed without a stack trace.
"""

from __future__ import annotations

import contextvars
import functools
import logging
import re
from collections.abc import Mapping
from typing import Annotated, Any, ClassVar, Literal, get_args

import re2
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from ..config import validation_message
from ..errors import ConfigError

__all__ = ["FORMATS", "ConfigModel", "GatewayConfig", "RoutingRule", "validation_message"]

log = logging.getLogger(__name__)

#: Host formats tool schemas can be returned in (``"openai"`` is Chat Completions,
#: ``"openai-responses"`` the Responses API's flat form).
FormatName = Literal["mcp", "openai", "openai-responses", "anthropic"]
FORMATS: tuple[str, ...] = get_args(FormatName)

#: Types shared by the gateway's config models (strict: no "3" for 3, no true for 1).
PositiveInt = Annotated[int, Field(strict=True, ge=1)]
PositiveSeconds = Annotated[float, Field(strict=True, gt=0, allow_inf_nan=False)]
NonEmptyStr = Annotated[str, Field(strict=True, min_length=1, pattern=r"\S")]


# Set while a config model is being validated: nested models (which pydantic builds
# through their __init__) then leave errors to the outermost one, which names the full key.
_VALIDATING: contextvars.ContextVar[bool] = contextvars.ContextVar("toolsift_config_validating", default=False)


class ConfigModel(BaseModel):
    """Base of the gateway's config models: immutable, unknown keys refused, and a
    :class:`ConfigError` (not pydantic's ``ValidationError``) on bad values, whether
    built directly (fields by name or in declaration order) or with :meth:`from_dict`."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    #: The key errors are reported under when built directly.
    _where: ClassVar[str] = ""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        if args:
            names = list(type(self).model_fields)
            if len(args) > len(names):
                raise TypeError(f"{type(self).__name__} takes at most {len(names)} positional arguments")
            kwargs.update(zip(names, args))
        if _VALIDATING.get():
            super().__init__(**kwargs)
            return
        token = _VALIDATING.set(True)
        try:
            super().__init__(**kwargs)
        except ValidationError as exc:
            raise ConfigError(validation_message(exc, self._where)) from None
        finally:
            _VALIDATING.reset(token)

    @classmethod
    def _validated(cls, data: Any, where: str) -> Any:
        if not isinstance(data, Mapping):
            raise ConfigError(f"{where or 'config'} must be an object, got {type(data).__name__}")
        token = _VALIDATING.set(True)
        try:
            return cls.model_validate(dict(data))
        except ValidationError as exc:
            raise ConfigError(validation_message(exc, where)) from None
        finally:
            _VALIDATING.reset(token)


@functools.lru_cache(maxsize=256)
def _compiled(pattern: str) -> Any:
    # Queries come from clients: match them in linear time (RE2) whenever RE2 can express
    # the pattern, so no query makes a pattern backtrack on the event loop.
    options = re2.Options()
    options.log_errors = False
    options.case_sensitive = False
    options.never_capture = True
    try:
        return re2.compile(pattern, options=options)
    except re2.error:
        log.warning("routing pattern %r needs a backtracking engine (lookaround or backreference); "
                    "a long query can make it slow", pattern)
        return re.compile(pattern, re.IGNORECASE)


class RoutingRule(ConfigModel):
    """Search tools with some tags first when a query matches a pattern.

    Example: ``RoutingRule(r"\\border", ("commerce",))`` ranks commerce tools above all
    others for "where is my order?".

    Attributes:
        pattern: Regular expression searched (not matched) in the query text,
            case-insensitively.
        tags: A tool carrying any of these tags is ranked above tools carrying none.
    """

    _where: ClassVar[str] = "routing"

    pattern: Annotated[str, Field(strict=True, min_length=1)]
    tags: Annotated[tuple[NonEmptyStr, ...], Field(min_length=1)]

    @field_validator("pattern")
    @classmethod
    def _valid_regex(cls, pattern: str) -> str:
        try:
            re.compile(pattern, re.IGNORECASE)
        except re.error as exc:
            raise ValueError(f"{pattern!r} is not a valid regular expression: {exc}") from None
        return pattern

    def matches(self, text: str) -> bool:
        """Whether the rule applies to a query with this text."""
        return _compiled(self.pattern).search(text) is not None

    def to_dict(self) -> dict[str, Any]:
        """JSON form ``{"pattern", "tags"}``."""
        return {"pattern": self.pattern, "tags": list(self.tags)}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any], *, where: str = "routing") -> RoutingRule:
        """Inverse of :meth:`to_dict`; errors name ``where`` (e.g. ``gateway.routing[2]``)."""
        return cls._validated(d, where)


class GatewayConfig(ConfigModel):
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
            larger ones become a ``result_too_large`` error. An upstream's result
            is also refused while it is read, once it passes this size.
        max_result_items: Most JSON values (array elements, object members) in an
            upstream's result; more is refused with ``result_too_large`` before the
            result is validated.
        schema_cache: Per client session, send a schema the session already received
            as ``{"name", "etag", "unchanged": true}`` (docs/gateway.md); off for hosts
            that do not keep earlier find_tools answers in the model's context.
    """

    _where: ClassVar[str] = "gateway"

    format: FormatName = "mcp"
    max_limit: PositiveInt = 20
    default_limit: PositiveInt = 5
    max_query_chars: PositiveInt = 2000
    routing: tuple[RoutingRule, ...] = ()
    high_risk_tags: tuple[NonEmptyStr, ...] = ("risk:high",)
    call_timeout: PositiveSeconds | None = None
    validation_timeout: PositiveSeconds = 2.0
    max_result_bytes: PositiveInt = 4 * 1024 * 1024
    max_result_items: PositiveInt = 100_000
    schema_cache: Annotated[bool, Field(strict=True)] = True

    @field_validator("default_limit")
    @classmethod
    def _within_max(cls, value: int, info: Any) -> int:
        top = info.data.get("max_limit")
        if top is not None and value > top:
            raise ValueError(f"must not exceed max_limit ({top})")
        return value

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
            "max_result_items": self.max_result_items,
            "schema_cache": self.schema_cache,
        }

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> GatewayConfig:
        """Build from the :meth:`to_dict` form; missing keys take their defaults.

        Raises:
            ConfigError: Unknown keys or bad values, naming the key.
        """
        return cls._validated(d, "gateway")
