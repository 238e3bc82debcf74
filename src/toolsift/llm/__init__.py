"""LLM enrichment: an OpenAI-compatible JSON client, our prompts, and LLM
standardization and query rewriting that fall back to the rule-based paths.

Every LLM output is cached on disk by content hash; every step has a non-LLM fallback
and counts its fallbacks in a :class:`Report`.

Example:
    >>> from toolsift.llm import LLMClient, rewrite_with_llm
    >>> client = LLMClient()            # TOOLSIFT_LLM_BASE_URL, _MODEL, _API_KEY
    >>> queries, report = rewrite_with_llm(["book a table for two"], index, client)
    >>> print(report.summary())
"""

from __future__ import annotations

from .cache import JsonCache, cache_key
from .client import LLMClient, LLMError, LLMUnavailable, Report, Usage, extract_json
from .rewrite import (
    parse_rewrite,
    rewrite_dataset,
    rewrite_records,
    rewrite_with_llm,
    with_rewrites,
)
from .standardize import parse_standardized, standardize_with_llm

__all__ = [
    "JsonCache",
    "LLMClient",
    "LLMError",
    "LLMUnavailable",
    "Report",
    "Usage",
    "cache_key",
    "extract_json",
    "parse_rewrite",
    "parse_standardized",
    "rewrite_dataset",
    "rewrite_records",
    "rewrite_with_llm",
    "standardize_with_llm",
    "with_rewrites",
]
