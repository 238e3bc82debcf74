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
from .lazy import lazy_exports
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


# Lazy so that importing the schema or adapters never needs the compiled core.
__getattr__, __dir__ = lazy_exports(__name__, {
    "ToolIndex": "toolindex", "IndexConfig": "toolindex", "Hit": "toolindex",
    "load_catalog": "adapters", "demo_catalog_path": "adapters",
}, globals())
