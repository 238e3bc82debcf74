"""A small client for any OpenAI-compatible chat endpoint that must answer in JSON.

HTTP goes through ``httpx`` (the ``llm`` extra: ``pip install "toolsift[llm]"``), one
pooled connection set per client. Sync calls run directly; the async variant runs the
same code in a worker thread, so both share one concurrency limit, one cache and one
usage counter. Retries stay here rather than in the transport because they follow the
chat API's rules: 429 and 5xx honour ``Retry-After``, and every retry is counted in
:class:`Usage`.
"""

from __future__ import annotations

import asyncio
import email.utils
import json
import logging
import os
import random
import re
import threading
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ..errors import ToolsiftError
from ..extras import require_extra
from .cache import JsonCache, cache_key
from .concurrency import run_concurrently
from .report import Report, Usage


def _httpx() -> Any:
    """httpx, imported on first use (``toolsift.llm`` itself imports without it)."""
    return require_extra("httpx", extra="llm", feature="the LLM client")

__all__ = ["LLMClient", "LLMError", "LLMUnavailable", "Report", "Usage", "extract_json", "run_concurrently"]

logger = logging.getLogger(__name__)

ENV_BASE_URL = "TOOLSIFT_LLM_BASE_URL"
ENV_MODEL = "TOOLSIFT_LLM_MODEL"
ENV_API_KEY = "TOOLSIFT_LLM_API_KEY"
ENV_CACHE_DIR = "TOOLSIFT_LLM_CACHE_DIR"
ENV_TIMEOUT = "TOOLSIFT_LLM_TIMEOUT"
ENV_CONCURRENCY = "TOOLSIFT_LLM_CONCURRENCY"
DEFAULT_TIMEOUT = 30.0
DEFAULT_CONCURRENCY = 4


def _env_number(name: str, default: float, kind: type) -> float:
    """A positive number from the environment variable ``name``, else ``default``."""
    raw = os.environ.get(name, "").strip()
    if not raw:
        return default
    try:
        value = kind(raw)
    except ValueError:
        raise ValueError(f"{name}={raw!r} is not a valid {kind.__name__}") from None
    if value <= 0:
        raise ValueError(f"{name}={raw!r} must be > 0")
    return value

# Longest wait honoured from a Retry-After header; a server asking for minutes is better
# treated as a failure (and a fallback) than as a hung batch.
_MAX_RETRY_AFTER = 60.0
_MAX_BACKOFF = 20.0

_REFUSAL = re.compile(
    r"\b(i'?m sorry|i am sorry|i can(?:no|')t|i cannot|i'?m (?:not )?able|unable to (?:help|assist|comply)"
    r"|as an ai|i won'?t)\b",
    re.IGNORECASE,
)


class LLMError(ToolsiftError):
    """An LLM call failed for good (after retries where retrying makes sense).

    Attributes:
        kind: ``"timeout"``, ``"connection"``, ``"rate_limit"``, ``"http"`` (other
            status), ``"malformed"`` (no JSON object in the reply), ``"refusal"`` or
            ``"invalid"`` (JSON of the wrong shape, raised by the callers' validators).
    """

    def __init__(self, kind: str, message: str) -> None:
        self.kind = kind
        super().__init__(f"LLM {kind}: {message}")


class LLMUnavailable(LLMError):
    """No endpoint is configured (no base URL given and TOOLSIFT_LLM_BASE_URL unset)."""

    def __init__(self, message: str) -> None:
        super().__init__("unavailable", message)


def extract_json(text: str) -> dict[str, Any]:
    """The first JSON object in ``text`` (code fences and chatter around it are ignored).

    Raises:
        LLMError: ``kind="refusal"`` when the text reads like a refusal and holds no
            object, ``kind="malformed"`` otherwise.
    """
    if not isinstance(text, str):
        raise LLMError("malformed", f"reply content is {type(text).__name__}, not text")
    decoder = json.JSONDecoder()
    pos = text.find("{")
    while pos != -1:
        try:
            value, _ = decoder.raw_decode(text, pos)
        except ValueError:
            pos = text.find("{", pos + 1)
            continue
        if isinstance(value, dict):
            return value
        pos = text.find("{", pos + 1)
    snippet = " ".join(text.split())[:120]
    if _REFUSAL.search(text):
        raise LLMError("refusal", f"the model declined: {snippet!r}")
    raise LLMError("malformed", f"no JSON object in the reply: {snippet!r}")


def _retry_after(value: str | None) -> float | None:
    """Seconds to wait from a Retry-After header (delta-seconds or HTTP date)."""
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


class _Transient(Exception):
    """A failure worth retrying (timeout, connection error, 429, 5xx)."""

    def __init__(self, kind: str, message: str, wait: float | None = None) -> None:
        super().__init__(message)
        self.kind = kind
        self.wait = wait


class LLMClient:
    """JSON completions from an OpenAI-compatible ``/v1/chat/completions`` endpoint.

    Settings not passed come from the environment: ``TOOLSIFT_LLM_BASE_URL``,
    ``TOOLSIFT_LLM_MODEL``, ``TOOLSIFT_LLM_API_KEY``, ``TOOLSIFT_LLM_CACHE_DIR``,
    ``TOOLSIFT_LLM_TIMEOUT`` and ``TOOLSIFT_LLM_CONCURRENCY``. A CPU-hosted local model
    needs a long timeout (a 2k-token rewrite prompt takes ~30 s on 2 cores) and
    concurrency 1 (one slot: parallel requests only queue and evict its prompt cache).

    Args:
        base_url: Server root, with or without a trailing ``/v1``.
        model: Model name sent in each request (default ``"default"``; single-model
            local servers ignore it).
        api_key: Sent as ``Authorization: Bearer``; omitted when empty.
        timeout: Seconds per HTTP attempt (default ``TOOLSIFT_LLM_TIMEOUT`` or 30).
        max_retries: Extra attempts after a timeout, connection error, 429 or 5xx.
            Other 4xx errors, malformed JSON and refusals are not retried: at a fixed
            prompt they would fail again.
        concurrency: Most requests in flight at once, over all threads and tasks
            (default ``TOOLSIFT_LLM_CONCURRENCY`` or 4).
        cache_dir: Disk cache folder; ``None`` means ``TOOLSIFT_LLM_CACHE_DIR`` or
            ``~/.cache/toolsift/llm``; ``False`` disables caching.
        temperature: Sampling temperature (part of the cache key).
        max_tokens: Completion limit per request (part of the cache key).
        backoff: First retry delay in seconds; doubled per attempt, plus jitter.

    Raises:
        LLMUnavailable: No base URL given or configured.
        MissingExtraError: ``httpx`` is not installed (``pip install "toolsift[llm]"``).
    """

    def __init__(self, base_url: str | None = None, model: str | None = None,
                 api_key: str | None = None, *, timeout: float | None = None,
                 max_retries: int = 3, concurrency: int | None = None, cache_dir: str | os.PathLike[str] | bool | None = None,
                 temperature: float = 0.0, max_tokens: int = 1024, backoff: float = 0.5) -> None:
        base = base_url or os.environ.get(ENV_BASE_URL, "")
        if not base.strip():
            raise LLMUnavailable(f"no LLM endpoint: pass base_url or set {ENV_BASE_URL}")
        base = base.strip().rstrip("/")
        base = base.removesuffix("/v1")
        if timeout is None:
            timeout = _env_number(ENV_TIMEOUT, DEFAULT_TIMEOUT, float)
        if concurrency is None:
            concurrency = int(_env_number(ENV_CONCURRENCY, DEFAULT_CONCURRENCY, int))
        if concurrency < 1 or max_retries < 0 or timeout <= 0:
            raise ValueError("concurrency must be >= 1, max_retries >= 0 and timeout > 0")
        self.base_url = base
        self.model = model or os.environ.get(ENV_MODEL) or "default"
        self.api_key = api_key if api_key is not None else os.environ.get(ENV_API_KEY, "")
        self.timeout = float(timeout)
        self.max_retries = int(max_retries)
        self.concurrency = int(concurrency)
        self.temperature = float(temperature)
        self.max_tokens = int(max_tokens)
        self.backoff = float(backoff)
        if cache_dir is False:
            self.cache: JsonCache | None = None
        else:
            root = cache_dir if cache_dir not in (None, True) else (
                os.environ.get(ENV_CACHE_DIR) or Path.home() / ".cache" / "toolsift" / "llm")
            self.cache = JsonCache(root)  # type: ignore[arg-type]
        self.usage = Usage()
        self._lock = threading.Lock()
        self._slots = threading.BoundedSemaphore(self.concurrency)
        # Flipped off the first time the server rejects response_format, so later calls
        # do not pay for the rejected attempt again.
        self._json_mode = True
        httpx = _httpx()
        headers = {"Accept": "application/json"}
        if self.api_key:
            headers["Authorization"] = f"Bearer {self.api_key}"
        # Thread-safe and pooled: worker threads share keep-alive connections.
        self._http = httpx.Client(base_url=self.base_url, headers=headers, timeout=self.timeout,
                                  limits=httpx.Limits(max_connections=self.concurrency))

    def close(self) -> None:
        """Close the pooled HTTP connections (the client is unusable afterwards)."""
        self._http.close()

    def __enter__(self) -> LLMClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"LLMClient(base_url={self.base_url!r}, model={self.model!r})"

    # --------------------------------------------------------------- public

    def complete_json(self, messages: Sequence[Mapping[str, str]], *,
                      schema_hint: str | None = None) -> dict[str, Any]:
        """Send ``messages`` and return the first JSON object of the reply.

        Args:
            messages: Chat messages ``[{"role": ..., "content": ...}, ...]``.
            schema_hint: Text describing the expected object; appended to the last
                system message (or sent as one) so servers without JSON mode still
                know the shape.

        Returns:
            The parsed object (from the cache when the same request was answered before).

        Raises:
            LLMError: After retries, or at once for malformed output, refusals and
                non-retryable HTTP errors. The failure is counted in :attr:`usage`.
        """
        msgs = _with_hint(messages, schema_hint)
        key = cache_key({"model": self.model, "messages": msgs, "temperature": self.temperature,
                         "max_tokens": self.max_tokens})
        if self.cache is not None:
            hit = self.cache.get(key)
            if isinstance(hit, dict):
                with self._lock:
                    self.usage.cache_hits += 1
                return hit
        try:
            content = self._request_with_retries(msgs)
            value = extract_json(content)
        except LLMError as exc:
            with self._lock:
                self.usage.failures[exc.kind] += 1
            raise
        # Only usable answers are cached: a transient or malformed reply must not stick.
        if self.cache is not None:
            self.cache.put(key, value)
        return value

    async def acomplete_json(self, messages: Sequence[Mapping[str, str]], *,
                             schema_hint: str | None = None) -> dict[str, Any]:
        """Async :meth:`complete_json` (same limit, cache and usage)."""
        return await asyncio.to_thread(self.complete_json, messages, schema_hint=schema_hint)

    # -------------------------------------------------------------- transport

    def _request_with_retries(self, msgs: list[dict[str, str]]) -> str:
        attempt = 0
        while True:
            try:
                return self._request(msgs)
            except _Transient as exc:
                if attempt >= self.max_retries:
                    raise LLMError(exc.kind, f"{exc} (after {attempt + 1} attempts)") from None
                delay = exc.wait if exc.wait is not None else min(
                    _MAX_BACKOFF, self.backoff * 2 ** attempt)
                # Jitter spreads out clients that failed together so they do not retry
                # together; added on top, so a server's Retry-After is never undercut.
                delay = min(delay, _MAX_RETRY_AFTER) + random.uniform(0, self.backoff / 2)
                logger.info("LLM %s, retry %d/%d in %.2f s", exc.kind, attempt + 1,
                            self.max_retries, delay)
                with self._lock:
                    self.usage.retries += 1
                time.sleep(delay)
                attempt += 1

    def _request(self, msgs: list[dict[str, str]]) -> str:
        body: dict[str, Any] = {"model": self.model, "messages": msgs,
                                "temperature": self.temperature, "max_tokens": self.max_tokens}
        json_mode = self._json_mode
        if json_mode:
            body["response_format"] = {"type": "json_object"}
        with self._slots:
            try:
                data = self._post(body)
            except _HTTPStatus as exc:
                if json_mode and exc.status in (400, 422):
                    # Some servers reject response_format; the prompt asks for JSON anyway.
                    logger.info("server rejected response_format (HTTP %d); retrying without", exc.status)
                    self._json_mode = False
                    del body["response_format"]
                    try:
                        data = self._post(body)
                    except _HTTPStatus as exc2:
                        raise exc2.classified() from None
                else:
                    raise exc.classified() from None
        try:
            choice = data["choices"][0]["message"]
        except (KeyError, IndexError, TypeError):
            raise LLMError("malformed", "response has no choices[0].message") from None
        usage = data.get("usage") or {}
        with self._lock:
            self.usage.calls += 1
            self.usage.prompt_tokens += int(usage.get("prompt_tokens") or 0)
            self.usage.completion_tokens += int(usage.get("completion_tokens") or 0)
        if choice.get("refusal"):
            raise LLMError("refusal", str(choice["refusal"])[:200])
        return choice.get("content") or ""

    def _post(self, body: dict[str, Any]) -> dict[str, Any]:
        httpx = _httpx()
        try:
            resp = self._http.post("/v1/chat/completions", json=body)
        except httpx.TimeoutException as exc:
            raise _Transient("timeout", f"no answer within {self.timeout:g} s") from exc
        except httpx.TransportError as exc:  # connection refused/reset, DNS, protocol errors
            raise _Transient("connection", f"{self.base_url}: {exc or type(exc).__name__}") from exc
        if resp.status_code >= 400:
            raise _HTTPStatus(resp)
        try:
            data = resp.json()
        except ValueError:
            raise LLMError("malformed", "the server's response body is not JSON") from None
        if not isinstance(data, dict):
            raise LLMError("malformed", "the server's response body is not a JSON object")
        return data


class _HTTPStatus(Exception):
    """An HTTP error status from the server, before classification."""

    def __init__(self, resp: Any) -> None:
        super().__init__(resp.status_code)
        self.status = resp.status_code
        self.detail = resp.text[:200]
        self.retry_after = resp.headers.get("Retry-After")

    def classified(self) -> Exception:
        """A retryable :class:`_Transient` (429, 5xx) or a final :class:`LLMError`."""
        if self.status == 429:
            return _Transient("rate_limit", f"HTTP 429 {self.detail}", _retry_after(self.retry_after))
        if self.status >= 500:
            return _Transient("http", f"HTTP {self.status} {self.detail}", _retry_after(self.retry_after))
        return LLMError("http", f"HTTP {self.status} {self.detail}")


def _with_hint(messages: Sequence[Mapping[str, str]], hint: str | None) -> list[dict[str, str]]:
    msgs = [dict(m) for m in messages]
    if not hint:
        return msgs
    text = f"Reply with one JSON object only, of this shape:\n{hint}"
    for m in reversed(msgs):
        if m.get("role") == "system":
            m["content"] = f"{m.get('content', '')}\n\n{text}"
            return msgs
    return [{"role": "system", "content": text}, *msgs]
