"""Optional features and the extras that install them.

The core install (``pip install toolsift``) indexes and searches; everything else is an
extra. Importing a feature whose extra is missing raises :class:`MissingExtraError`
naming the ``pip install`` line, instead of a bare ``ModuleNotFoundError`` from deep
inside the package.
"""

from __future__ import annotations

import importlib
from types import ModuleType

from .errors import ToolsiftError

__all__ = ["EXTRAS", "MissingExtraError", "require_extra"]

#: What each extra adds (the names used in ``pip install "toolsift[NAME]"``).
EXTRAS: dict[str, str] = {
    "eval": "benchmark loaders, IR metrics (pytrec_eval) and `toolsift eval/train/rewrite`",
    "llm": "the LLM client (httpx): LLM standardization, query rewriting",
    "gateway": "the MCP gateway (`toolsift serve`)",
    "dense": "dense and hybrid retrievers (onnxruntime, tokenizers, the bundled MiniLM)",
    "export": "exporting encoders to ONNX",
    "peers": "other tool retrievers measured beside toolsift",
    "plot": "recall plots",
    "tokens": "token counts for token budgets (tiktoken)",
    "openai": "the OpenAI client wrapper",
    "anthropic": "the Anthropic client wrapper",
    "langchain": "the LangChain retriever",
    "langgraph": "the LangGraph big-tool retrieve_tools function",
    "llama-index": "the LlamaIndex retriever",
}


class MissingExtraError(ToolsiftError, ImportError):
    """A feature needs an optional dependency that is not installed.

    Attributes:
        extra: The extra that installs it.
        module: The missing module.
    """

    def __init__(self, module: str, *, extra: str, feature: str) -> None:
        self.extra = extra
        self.module = module
        super().__init__(f"{feature} needs the optional dependency {module!r}, which is not installed: "
                         f'pip install "toolsift[{extra}]"')


def require_extra(module: str, *, extra: str, feature: str) -> ModuleType:
    """Import ``module`` or raise :class:`MissingExtraError` naming ``extra``.

    Args:
        module: Module to import (e.g. ``"httpx"``).
        extra: The extra that installs it (a key of :data:`EXTRAS`).
        feature: What needs it, for the message (e.g. ``"the LLM client"``).
    """
    try:
        return importlib.import_module(module)
    except ModuleNotFoundError as exc:
        # Only the module itself (or its package) missing is an extra problem; a missing
        # dependency *inside* an installed module is a broken install and stays as is.
        if exc.name is not None and module.split(".")[0] != exc.name.split(".")[0]:
            raise
        raise MissingExtraError(module, extra=extra, feature=feature) from None
