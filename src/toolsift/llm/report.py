"""What an LLM client used (:class:`Usage`) and what one LLM batch did and cost (:class:`Report`)."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any


@dataclass
class Usage:
    """Running totals of one client (thread-safe updates through :meth:`LLMClient`).

    Attributes:
        calls: Requests answered by the server with a usable HTTP 200 (not cache hits).
        cache_hits: Requests answered from the disk cache.
        prompt_tokens: Sum of ``usage.prompt_tokens`` reported by the server.
        completion_tokens: Sum of ``usage.completion_tokens``.
        retries: Attempts repeated after a timeout, 429 or 5xx.
        failures: Failed requests by :attr:`LLMError.kind`.
    """

    calls: int = 0
    cache_hits: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    retries: int = 0
    failures: Counter = field(default_factory=Counter)

    @property
    def total_tokens(self) -> int:
        """Prompt plus completion tokens."""
        return self.prompt_tokens + self.completion_tokens

    def copy(self) -> Usage:
        """A snapshot."""
        return Usage(self.calls, self.cache_hits, self.prompt_tokens, self.completion_tokens,
                     self.retries, Counter(self.failures))


@dataclass
class Report:
    """What one LLM batch (standardization or rewriting) did and cost.

    Attributes:
        items: Tools or queries processed.
        llm_ok: Items whose LLM output was valid and used.
        fallbacks: Items that fell back to the non-LLM path.
        failures: Fallbacks by kind (an :class:`LLMError` kind, ``"invalid"`` or
            ``"leaked_value"``).
        field_fallbacks: Single fields filled by rules: standardization fields, or
            ``"argument"`` for rewrite argument descriptions replaced by role names.
        calls, cache_hits, prompt_tokens, completion_tokens, retries: Client usage
            during the batch.
        seconds: Wall time.
        cost: Estimated cost, when a price per 1k tokens was given, else ``None``.
    """

    items: int = 0
    llm_ok: int = 0
    fallbacks: int = 0
    failures: dict[str, int] = field(default_factory=dict)
    field_fallbacks: dict[str, int] = field(default_factory=dict)
    calls: int = 0
    cache_hits: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    retries: int = 0
    seconds: float = 0.0
    cost: float | None = None

    @classmethod
    def from_usage(cls, before: Usage, after: Usage, *, items: int, failures: Counter,
                   field_fallbacks: Counter | None = None, seconds: float = 0.0,
                   price_per_1k: float | tuple[float, float] | None = None) -> Report:
        """Build from two :class:`Usage` snapshots taken around a batch.

        Args:
            price_per_1k: One price for all tokens, or ``(prompt, completion)`` prices.
        """
        pt = after.prompt_tokens - before.prompt_tokens
        ct = after.completion_tokens - before.completion_tokens
        cost = None
        if price_per_1k is not None:
            p_in, p_out = (price_per_1k, price_per_1k) if isinstance(price_per_1k, (int, float)) \
                else price_per_1k
            cost = (pt * p_in + ct * p_out) / 1000.0
        n_fail = sum(failures.values())
        return cls(items=items, llm_ok=items - n_fail, fallbacks=n_fail, failures=dict(failures),
                   field_fallbacks=dict(field_fallbacks or {}),
                   calls=after.calls - before.calls, cache_hits=after.cache_hits - before.cache_hits,
                   prompt_tokens=pt, completion_tokens=ct, retries=after.retries - before.retries,
                   seconds=seconds, cost=cost)

    def to_dict(self) -> dict[str, Any]:
        """JSON form."""
        return dict(self.__dict__)

    def summary(self) -> str:
        """One line for a CLI: items, fallbacks by kind, calls, cache hits, tokens, cost."""
        fails = ", ".join(f"{k} {v}" for k, v in sorted(self.failures.items())) or "none"
        cost = f", ~${self.cost:.4f}" if self.cost is not None else ""
        fixed = ", ".join(f"{k} {v}" for k, v in sorted(self.field_fallbacks.items()))
        fixed = f"; fields by rules: {fixed}" if fixed else ""
        return (f"{self.items} items: {self.llm_ok} by LLM, {self.fallbacks} fallbacks ({fails}){fixed}; "
                f"{self.calls} calls, {self.cache_hits} cache hits, {self.retries} retries; "
                f"{self.prompt_tokens:,} prompt + {self.completion_tokens:,} completion tokens{cost}; "
                f"{self.seconds:.1f} s")
