"""Upstream serve config: which MCP servers the gateway aggregates, and tool namespacing.

:class:`ServeConfig` is what ``toolsift serve --config`` reads; each entry of its
``upstreams`` list is an :class:`UpstreamSpec`. An upstream's tools are served as
``<upstream>__<tool>`` (see :func:`namespaced` and :func:`upstream_tool`).
"""

from __future__ import annotations

import json
import math
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from ..errors import ConfigError
from ..schema import Tool
from .config import GatewayConfig

__all__ = ["SEPARATOR", "ServeConfig", "UpstreamSpec", "namespaced", "upstream_tool"]

#: Between upstream name and tool name in a namespaced tool name.
SEPARATOR = "__"
# Upstream names may not contain the separator, so the first "__" in a namespaced
# name always ends the upstream part.
_UPSTREAM_NAME = re.compile(r"^[A-Za-z0-9](?:[A-Za-z0-9-]|_(?!_))*$")


def namespaced(upstream: str, tool: str) -> str:
    """The gateway-wide name of ``tool`` served by ``upstream``."""
    return f"{upstream}{SEPARATOR}{tool}"


def _number(value: Any, key: str, default: float) -> float:
    if value is None:
        return default
    if not isinstance(value, (int, float)) or isinstance(value, bool) or not math.isfinite(value) or value <= 0:
        raise ConfigError(f"{key} must be a number > 0, got {value!r}")
    return float(value)


def _str_map(value: Any, key: str) -> dict[str, str]:
    if value is None:
        return {}
    if not isinstance(value, Mapping) or not all(isinstance(k, str) and isinstance(v, str) for k, v in value.items()):
        raise ConfigError(f"{key} must be an object of string values")
    return dict(value)


@dataclass(frozen=True)
class UpstreamSpec:
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

    name: str
    command: tuple[str, ...] = ()
    url: str | None = None
    env: Mapping[str, str] = field(default_factory=dict)
    headers: Mapping[str, str] = field(default_factory=dict)
    cwd: str | None = None
    timeout_s: float = 30.0
    connect_timeout_s: float = 20.0

    def __post_init__(self) -> None:
        where = f"upstreams[{self.name!r}]"
        if not isinstance(self.name, str) or not _UPSTREAM_NAME.match(self.name):
            raise ConfigError(f"upstream name {self.name!r} must be letters, digits, '-' and single '_' "
                              f"(no '{SEPARATOR}': it separates upstream and tool names)")
        if bool(self.command) == bool(self.url):
            raise ConfigError(f"{where}: give exactly one of 'command' (stdio) or 'url' (streamable HTTP)")
        if self.command and not all(isinstance(c, str) and c for c in self.command):
            raise ConfigError(f"{where}.command must be a non-empty list of strings")
        if self.url is not None and not re.match(r"^https?://", self.url):
            raise ConfigError(f"{where}.url must be an http(s) URL, got {self.url!r}")

    @property
    def transport(self) -> str:
        """``"stdio"`` or ``"http"``."""
        return "stdio" if self.command else "http"

    @classmethod
    def from_dict(cls, d: Mapping[str, Any], *, where: str = "upstreams[?]",
                  base_dir: Path | None = None) -> UpstreamSpec:
        """Build from one ``upstreams`` entry; errors name ``where``."""
        if not isinstance(d, Mapping):
            raise ConfigError(f"{where} must be an object, got {type(d).__name__}")
        known = {"name", "command", "url", "env", "headers", "cwd", "timeout_s", "connect_timeout_s"}
        unknown = set(d) - known
        if unknown:
            raise ConfigError(f"{where}: unknown key(s) {', '.join(sorted(map(str, unknown)))}")
        command = d.get("command") or ()
        if isinstance(command, str) or not isinstance(command, Sequence):
            raise ConfigError(f"{where}.command must be a list of strings, e.g. [\"python\", \"server.py\"]")
        cwd = d.get("cwd")
        if cwd is not None and not isinstance(cwd, str):
            raise ConfigError(f"{where}.cwd must be a string")
        if base_dir is not None and command:
            cwd = str((base_dir / cwd) if cwd else base_dir)
        try:
            return cls(
                name=d.get("name"),  # type: ignore[arg-type]
                command=tuple(command),
                url=d.get("url"),
                env=_str_map(d.get("env"), f"{where}.env"),
                headers=_str_map(d.get("headers"), f"{where}.headers"),
                cwd=cwd,
                timeout_s=_number(d.get("timeout_s"), f"{where}.timeout_s", 30.0),
                connect_timeout_s=_number(d.get("connect_timeout_s"), f"{where}.connect_timeout_s", 20.0),
            )
        except ConfigError as exc:
            raise ConfigError(f"{where}: {exc}") from None


@dataclass(frozen=True)
class ServeConfig:
    """Everything ``toolsift serve --config`` reads.

    Attributes:
        upstreams: The upstream servers; names must be unique.
        gateway: Retrieval settings (format, limits, routing, risk tags).
        auth_token: Bearer token required on HTTP requests; ``None`` means no auth.
            ``"auth_token_env": "VAR"`` in the file reads it from an environment variable.
        max_request_bytes: Largest HTTP request body accepted (413 above).
    """

    upstreams: tuple[UpstreamSpec, ...] = ()
    gateway: GatewayConfig = field(default_factory=GatewayConfig)
    auth_token: str | None = None
    max_request_bytes: int = 1_048_576

    def __post_init__(self) -> None:
        names = [u.name for u in self.upstreams]
        dup = sorted({n for n in names if names.count(n) > 1})
        if dup:
            raise ConfigError(f"duplicate upstream name(s): {', '.join(dup)}")
        if self.auth_token is not None and (not isinstance(self.auth_token, str) or not self.auth_token.strip()):
            raise ConfigError("auth_token must be a non-empty string or null")
        if not isinstance(self.max_request_bytes, int) or isinstance(self.max_request_bytes, bool) \
                or self.max_request_bytes < 1024:
            raise ConfigError(f"max_request_bytes must be an integer >= 1024, got {self.max_request_bytes!r}")

    @classmethod
    def from_dict(cls, d: Mapping[str, Any], *, base_dir: Path | None = None) -> ServeConfig:
        """Build from the parsed config file; relative stdio paths resolve from ``base_dir``."""
        if not isinstance(d, Mapping):
            raise ConfigError(f"serve config must be a JSON object, got {type(d).__name__}")
        unknown = set(d) - {"upstreams", "gateway", "auth_token", "auth_token_env", "max_request_bytes"}
        if unknown:
            raise ConfigError(f"serve config: unknown key(s) {', '.join(sorted(map(str, unknown)))}")
        ups = d.get("upstreams") or []
        if isinstance(ups, (str, Mapping)) or not isinstance(ups, Sequence):
            raise ConfigError("upstreams must be a list of objects")
        token = d.get("auth_token")
        if d.get("auth_token_env"):
            token = os.environ.get(str(d["auth_token_env"]))
            if not token:
                raise ConfigError(f"auth_token_env: environment variable {d['auth_token_env']!r} is not set")
        return cls(
            upstreams=tuple(UpstreamSpec.from_dict(u, where=f"upstreams[{i}]", base_dir=base_dir)
                            for i, u in enumerate(ups)),
            gateway=GatewayConfig.from_dict(d.get("gateway") or {}),
            auth_token=token,
            max_request_bytes=d.get("max_request_bytes", 1_048_576),
        )

    @classmethod
    def load(cls, path: str | Path) -> ServeConfig:
        """Read a config file (JSON)."""
        path = Path(path)
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except OSError as exc:
            raise ConfigError(f"cannot read serve config {path}: {exc.strerror or exc}") from None
        except json.JSONDecodeError as exc:
            raise ConfigError(f"{path} is not valid JSON: {exc}") from None
        return cls.from_dict(data, base_dir=path.resolve().parent)


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
