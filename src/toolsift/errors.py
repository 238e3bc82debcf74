"""Typed errors raised by toolsift.

Every error names what is wrong and where (a tool id, a list position, a file), so a
caller can fix the input without reading a stack trace.
"""

from __future__ import annotations

__all__ = [
    "ToolsiftError",
    "SchemaError",
    "CatalogFormatError",
    "QueryError",
    "ConfigError",
    "FormatError",
    "IndexFormatError",
    "IndexCorruptError",
    "IndexNotFoundError",
]


class ToolsiftError(Exception):
    """Base class of every error toolsift raises on purpose."""


class SchemaError(ToolsiftError, ValueError):
    """A tool, parameter or query violates the toolsift schema.

    Attributes:
        where: Location of the offending item, e.g. ``"tools[3] (id='send_mail').name"``.
    """

    def __init__(self, where: str, message: str) -> None:
        self.where = where
        super().__init__(f"{where}: {message}" if where else message)


class CatalogFormatError(ToolsiftError, ValueError):
    """A catalogue file or payload cannot be read in the requested format."""


class QueryError(SchemaError):
    """A query is empty, too long or malformed."""


class ConfigError(ToolsiftError, ValueError):
    """An index or scoring configuration value is out of range or of the wrong type."""


class FormatError(ToolsiftError, ValueError):
    """An unknown tool-schema format name (or OpenAI API) was asked for."""


class IndexFormatError(ToolsiftError):
    """An index directory is missing files or was written by an incompatible version."""


class IndexCorruptError(IndexFormatError):
    """An index file does not match the checksum or size recorded in its manifest."""


class IndexNotFoundError(IndexFormatError, FileNotFoundError):
    """No index directory at the given path (also a :class:`FileNotFoundError`, so
    ``except FileNotFoundError`` catches it as it would for any missing file)."""

    def __init__(self, message: str) -> None:
        # OSError's own __init__ would read a one-argument call as (message) alone;
        # keep str(exc) the message, like every other toolsift error.
        super().__init__(message)

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""
