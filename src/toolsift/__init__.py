"""toolsift: find the few right tools for an LLM request, fast, and say why."""

from __future__ import annotations

from .errors import (
    CatalogFormatError,
    ConfigError,
    FormatError,
    IndexCorruptError,
    IndexFormatError,
    QueryError,
    SchemaError,
    ToolsiftError,
)
from ._version import __version__ as __version__
from .schema import FIELDS, Catalog, Parameter, Query, Tool, ToolNeed

__all__ = [
    "FIELDS",
    "Catalog",
    "CatalogFormatError",
    "ConfigError",
    "FormatError",
    "IndexConfig",
    "IndexCorruptError",
    "IndexFormatError",
    "Hit",
    "Parameter",
    "Query",
    "QueryError",
    "SchemaError",
    "Tool",
    "ToolIndex",
    "ToolNeed",
    "ToolsiftError",
    "demo_catalog_path",
    "load_catalog",
]


def __getattr__(name: str):
    # Lazy so that importing the schema or adapters never needs the compiled core.
    if name in ("ToolIndex", "IndexConfig", "Hit"):
        from . import toolindex

        return getattr(toolindex, name)
    if name in ("load_catalog", "demo_catalog_path"):
        from . import adapters

        return getattr(adapters, name)
    raise AttributeError(f"module 'toolsift' has no attribute {name!r}")
