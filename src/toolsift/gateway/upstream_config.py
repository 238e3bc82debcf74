"""Upstream serve config: which MCP servers the gateway aggregates, and tool namespacing.

:class:`ServeConfig` is what ``toolsift serve --config`` reads; each entry of its
``upstreams`` list is an :class:`UpstreamSpec`. An upstream's tools are served as
``<upstream>__<tool>`` (see :func:`namespaced` and :func:`upstream_tool`).
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import Annotated, Any, ClassVar, Literal

from pydantic import Field, field_validator, model_validator

from ..errors import ConfigError
from ..schema import Tool
from .config import ConfigModel, GatewayConfig, NonEmptyStr, PositiveSeconds

__all__ = ["SEPARATOR", "ServeConfig", "UpstreamSpec", "namespaced", "upstream_tool"]

#: Between upstream name and tool name in a namespaced tool name.
SEPARATOR = "__"
# Upstream names may not contain the separator, so the first "__" in a namespaced
# name always ends the upstream part.
_UPSTREAM_NAME = re.compile(r"^[A-Za-z0-9](?:[A-Za-z0-9-]|_(?!_))*$")

StrMap = dict[Annotated[str, Field(strict=True)], Annotated[str, Field(strict=True)]]


def namespaced(upstream: str, tool: str) -> str:
    """The gateway-wide name of ``tool`` served by ``upstream``."""
    return f"{upstream}{SEPARATOR}{tool}"


class UpstreamSpec(ConfigModel):
    """One upstream MCP server.

    Attributes:
        name: Namespace of its tools; letters, digits, ``-`` and single ``_``.
        command: Command line of a stdio server (``command`` or ``url``, not both).
        url: Streamable HTTP endpoint of a remote server.
        env: Extra environment for a stdio server, over the SDK's safe default subset
            (``HOME``, ``PATH``, ...); the gateway's own environment is not inherited.
        headers: HTTP headers sent to a URL upstream (e.g. its API key).
        cwd: Working directory of a stdio server (default: the config file's folder).
        timeout_s: Seconds one tool call may take.
        connect_timeout_s: Seconds to start, initialise and list a server.
    """

    _where: ClassVar[str] = "upstream"

    name: Annotated[str, Field(strict=True)]
    command: tuple[NonEmptyStr, ...] = ()
    url: Annotated[str, Field(strict=True, pattern=r"^https?://")] | None = None
    env: StrMap = Field(default_factory=dict)
    headers: StrMap = Field(default_factory=dict)
    cwd: Annotated[str, Field(strict=True)] | None = None
    timeout_s: PositiveSeconds = 30.0
    connect_timeout_s: PositiveSeconds = 20.0

    @field_validator("name")
    @classmethod
    def _name(cls, name: str) -> str:
        if not _UPSTREAM_NAME.match(name):
            raise ValueError(f"an upstream name must be letters, digits, '-' and single '_' (no "
                             f"'{SEPARATOR}': it separates upstream and tool names), got {name!r}")
        return name

    @field_validator("env", "headers", "timeout_s", "connect_timeout_s", mode="before")
    @classmethod
    def _null_is_default(cls, value: Any, info: Any) -> Any:
        if value is not None:
            return value
        return {} if info.field_name in ("env", "headers") else cls.model_fields[info.field_name].default

    @model_validator(mode="after")
    def _one_transport(self) -> UpstreamSpec:
        if bool(self.command) == bool(self.url):
            raise ValueError("give exactly one of 'command' (stdio) or 'url' (streamable HTTP)")
        return self

    @property
    def transport(self) -> str:
        """``"stdio"`` or ``"http"``."""
        return "stdio" if self.command else "http"

    @classmethod
    def from_dict(cls, d: Mapping[str, Any], *, where: str = "upstreams[?]",
                  base_dir: Path | None = None) -> UpstreamSpec:
        """Build from one ``upstreams`` entry; errors name ``where``; a stdio server's
        ``cwd`` resolves from ``base_dir``."""
        return cls._validated(_with_cwd(d, base_dir), where)


def _with_cwd(entry: Any, base_dir: Path | None) -> Any:
    """``entry`` with a stdio server's ``cwd`` resolved from the config file's folder."""
    if base_dir is None or not isinstance(entry, Mapping) or not entry.get("command"):
        return entry
    cwd = entry.get("cwd")
    if cwd is not None and not isinstance(cwd, str):
        return entry  # reported by validation
    return {**entry, "cwd": str((base_dir / cwd) if cwd else base_dir)}


class ServeConfig(ConfigModel):
    """Everything ``toolsift serve --config`` reads.

    Attributes:
        upstreams: The upstream servers; names must be unique.
        gateway: Retrieval settings (format, limits, routing, risk tags).
        auth_token: Bearer token required on HTTP requests; ``None`` means no auth.
            ``"auth_token_env": "VAR"`` in the file reads it from an environment variable.
        auth_tokens: Named bearer tokens, principal -> token (alone or beside
            ``auth_token``): a request carrying one is recorded in the usage log as that
            principal (``token:NAME``), the client identity learning counts.
        trusted_proxies: Addresses or networks (``"10.0.0.5"``, ``"10.0.0.0/8"``) of
            reverse proxies whose ``X-Forwarded-For`` names the client. Empty (the
            default): no forwarding header is trusted and the client is the TCP peer.
        max_request_bytes: Largest HTTP request body accepted (413 above).
        max_connections: Open HTTP connections served at once; one more is answered
            503 and closed.
        header_timeout_s: Seconds a connection may take to send a request's line and
            headers (counted from its opening, or from the previous response); it is
            closed after that.
        body_timeout_s: Seconds a request may take to send its body (408 after that).
        keep_alive_s: Seconds an idle keep-alive connection stays open.
        preset: Index configuration of the combined index (:mod:`toolsift.presets`:
            ``"bm25"`` or ``"hybrid"``); ``None`` is the library's default preset, so the
            gateway ranks like ``ToolIndex.build`` and ``toolsift index``.
            ``toolsift serve --preset`` overrides it.
        save_index: Directory the combined index is saved to (atomically) after every
            (re)build: the ``INDEX`` that ``toolsift learn INDEX --usage DB OUT`` starts
            from. ``toolsift serve --save-index`` overrides it.
    """

    upstreams: tuple[UpstreamSpec, ...] = ()
    gateway: GatewayConfig = Field(default_factory=GatewayConfig)
    auth_token: NonEmptyStr | None = None
    auth_tokens: dict[NonEmptyStr, NonEmptyStr] = Field(default_factory=dict)
    trusted_proxies: tuple[NonEmptyStr, ...] = ()
    max_request_bytes: Annotated[int, Field(strict=True, ge=1024)] = 1_048_576
    max_connections: Annotated[int, Field(strict=True, ge=1)] = 1000
    header_timeout_s: PositiveSeconds = 10.0
    body_timeout_s: PositiveSeconds = 30.0
    keep_alive_s: PositiveSeconds = 5.0
    preset: Literal["bm25", "hybrid"] | None = None
    save_index: NonEmptyStr | None = None

    @field_validator("upstreams")
    @classmethod
    def _unique(cls, ups: tuple[UpstreamSpec, ...]) -> tuple[UpstreamSpec, ...]:
        names = [u.name for u in ups]
        dup = sorted({n for n in names if names.count(n) > 1})
        if dup:
            raise ValueError(f"duplicate upstream name(s): {', '.join(dup)}")
        return ups

    @field_validator("auth_tokens")
    @classmethod
    def _distinct_tokens(cls, tokens: dict[str, str]) -> dict[str, str]:
        values = list(tokens.values())
        if len(set(values)) != len(values):
            raise ValueError("two principals share one token: each principal needs its own")
        return tokens

    @field_validator("trusted_proxies")
    @classmethod
    def _proxies(cls, proxies: tuple[str, ...]) -> tuple[str, ...]:
        import ipaddress

        for proxy in proxies:
            try:
                ipaddress.ip_network(proxy, strict=False)
            except ValueError:
                raise ValueError(f"a trusted proxy is an IP address or network (\"10.0.0.0/8\"), "
                                 f"got {proxy!r}") from None
        return proxies

    @property
    def requires_auth(self) -> bool:
        """Whether HTTP requests need a bearer token."""
        return self.auth_token is not None or bool(self.auth_tokens)

    @field_validator("upstreams", "gateway", mode="before")
    @classmethod
    def _null_is_empty(cls, value: Any, info: Any) -> Any:
        return value if value is not None else ((), {})[info.field_name == "gateway"]

    @classmethod
    def from_dict(cls, d: Mapping[str, Any], *, base_dir: Path | None = None) -> ServeConfig:
        """Build from the parsed config file; relative stdio paths resolve from ``base_dir``."""
        if not isinstance(d, Mapping):
            raise ConfigError(f"serve config must be a JSON object, got {type(d).__name__}")
        data = dict(d)
        env_var = data.pop("auth_token_env", None)
        if env_var:
            token = os.environ.get(str(env_var))
            if not token:
                raise ConfigError(f"auth_token_env: environment variable {env_var!r} is not set")
            data["auth_token"] = token
        save = data.get("save_index")
        if base_dir is not None and isinstance(save, str) and save.strip():
            data["save_index"] = str(base_dir / save)  # relative to the config file, as cwd is
        ups = data.get("upstreams")
        if isinstance(ups, list):
            data["upstreams"] = [_with_cwd(u, base_dir) for u in ups]
        return cls._validated(data, "")

    @classmethod
    def load(cls, path: str | Path) -> ServeConfig:
        """Read a config file (JSON); errors name the file and the key."""
        path = Path(path)
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except OSError as exc:
            raise ConfigError(f"cannot read serve config {path}: {exc.strerror or exc}") from None
        except json.JSONDecodeError as exc:
            raise ConfigError(f"{path} is not valid JSON: {exc}") from None
        except RecursionError:
            raise ConfigError(f"{path}: JSON nested too deeply to read") from None
        except UnicodeDecodeError as exc:
            raise ConfigError(f"{path}: not UTF-8 text (invalid byte at offset {exc.start})") from None
        try:
            return cls.from_dict(data, base_dir=path.resolve().parent)
        except ConfigError as exc:
            raise ConfigError(f"{path}: {exc}") from None


def upstream_tool(upstream: str, entry: Mapping[str, Any]) -> Tool:
    """An MCP ``tools/list`` entry of ``upstream`` as a namespaced, tagged :class:`Tool`.

    The original entry stays in ``source`` (schemas are returned as the upstream wrote
    them); only the name the LLM calls changes.
    """
    from ..adapters.mcp import mcp_tool

    tool = mcp_tool(entry)
    name = namespaced(upstream, tool.name)
    tag = f"server:{upstream}"
    tags = tool.tags if tag in tool.tags else (*tool.tags, tag)
    return replace(tool, id=name, name=name, tags=tags)
