"""Helpers shared by the catalogue adapters: locating errors and unwrapping tool lists.

Every adapter reports problems relative to the payload it was given
(``tools[3] (name='send_mail').inputSchema``), so a user can find the offending entry
in their own file without knowing how toolsift stores tools internally.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

from ..errors import CatalogFormatError, SchemaError

__all__ = [
    "item_label",
    "relocate",
    "located",
    "tool_list",
    "map_tools",
    "text_or_empty",
    "require_name",
    "read_json",
    "read_bytes",
    "checked_path",
]

T = TypeVar("T")


def item_label(prefix: str, index: int, item: Any) -> str:
    """Position label for one list entry, with its name when it has one.

    Args:
        prefix: Path of the list inside the payload, e.g. ``"tools"``.
        index: Position in that list.
        item: The entry itself; its ``name`` (or, failing that, ``id``) is shown to make
            the label readable.

    Returns:
        ``"tools[3] (name='send_mail')"``, ``"tools[3] (id='apibank_tool_3')"``, or
        ``"tools[3]"`` when neither exists.
    """
    label = f"{prefix}[{index}]"
    name = None
    if isinstance(item, Mapping):
        name = item.get("name")
        # Chat Completions tools keep the name one level down.
        if name is None and isinstance(item.get("function"), Mapping):
            name = item["function"].get("name")
        if not (isinstance(name, str) and name.strip()):
            # Benchmark records have no top-level name, but a unique id.
            rid = item.get("id")
            if isinstance(rid, str) and rid.strip():
                return f"{label} (id={rid[:80]!r})"
    if isinstance(name, str) and name.strip():
        label += f" (name={name[:80]!r})"
    return label


def _message(exc: SchemaError) -> str:
    text = str(exc)
    prefix = f"{exc.where}: "
    return text[len(prefix):] if exc.where and text.startswith(prefix) else text


# Locations written by toolsift.schema: "tool 'x'.description", "parameter 'a'.type",
# "parameter.name". Their tail is re-attached to the caller's path so the final message
# reads as one path instead of repeating the tool name.
_SCHEMA_WHERE = re.compile(
    r"^(?:tool|parameter) (['\"]).*?\1(?P<rest>[.\[].*)$"  # tool 'x'.description
    r"|^parameter(?P<bare>\..*)$",  # parameter.name
    re.S,
)


def _relative(where: str) -> str | None:
    if where.startswith((".", "[")):
        return where
    m = _SCHEMA_WHERE.match(where)
    if m:
        return m.group("rest") or m.group("bare")
    return None


def relocate(where: str, exc: SchemaError) -> SchemaError:
    """``exc`` re-labelled as happening inside ``where``.

    Adapters raise errors with a *relative* location that starts with ``"."`` or
    ``"["`` (``".inputSchema.properties['to']"``); those, and the locations
    :mod:`toolsift.schema` writes (``"tool 'x'.description"``), are appended to
    ``where`` so the result reads as one path:
    ``"tools[3] (name='x').inputSchema.properties['to']: ..."``. Any other location is
    kept whole after ``where``. The error class is preserved so callers can still catch
    e.g. :class:`~toolsift.errors.QueryError`.
    """
    rel = _relative(exc.where)
    if rel is not None:
        return type(exc)(where + rel, _message(exc))
    return type(exc)(where, str(exc))


@contextmanager
def located(where: str) -> Iterator[None]:
    """Re-raise any :class:`SchemaError` from the block via :func:`relocate`."""
    try:
        yield
    except SchemaError as exc:
        raise relocate(where, exc) from None


def tool_list(payload: Any, *, fmt: str, keys: Sequence[str] = ("tools",)) -> tuple[str, list[Any]]:
    """Find the list of tool entries in ``payload``.

    Args:
        payload: A list of tools, or an object holding the list under one of ``keys``.
        fmt: Format name, for error messages.
        keys: Keys under which an object may hold the list.

    Returns:
        ``(prefix, entries)`` where ``prefix`` names the list in error locations.

    Raises:
        CatalogFormatError: If no list of tools can be found.
    """
    if isinstance(payload, list):
        return "tools", payload
    if isinstance(payload, Mapping):
        for key in keys:
            if key in payload:
                entries = payload[key]
                if not isinstance(entries, list):
                    raise CatalogFormatError(
                        f"{fmt}: {key!r} must be a list of tools, got {type(entries).__name__}"
                    )
                return key, entries
        raise CatalogFormatError(
            f"{fmt}: expected a list of tools or an object with "
            f"{' or '.join(repr(k) for k in keys)}; got an object with keys {sorted(payload)[:8]}"
        )
    raise CatalogFormatError(
        f"{fmt}: expected a list of tools or an object, got {type(payload).__name__}"
    )


def map_tools(
    prefix: str, entries: Sequence[Any], convert: Callable[[Mapping[str, Any]], T | None]
) -> list[T]:
    """Convert each entry, naming its position in any :class:`SchemaError`.

    Args:
        prefix: Path of the list inside the payload, e.g. ``"result.tools"``.
        entries: The raw tool entries.
        convert: ``convert(entry)`` returns a tool, or ``None`` to skip the entry. It
            raises :class:`SchemaError` with a location relative to the entry.

    Returns:
        The converted tools, in order.

    Raises:
        SchemaError: If an entry is not an object or cannot be converted.
    """
    out: list[T] = []
    for i, entry in enumerate(entries):
        where = item_label(prefix, i, entry)
        if not isinstance(entry, Mapping):
            raise SchemaError(where, f"expected a tool object, got {type(entry).__name__}")
        with located(where):
            tool = convert(entry)
        if tool is not None:
            out.append(tool)
    return out


def text_or_empty(value: Any, where: str) -> str:
    """``value`` if it is a string, ``""`` if it is missing or null.

    Raises:
        SchemaError: If ``value`` is present but not a string.
    """
    if value is None:
        return ""
    if not isinstance(value, str):
        raise SchemaError(where, f"expected a string, got {type(value).__name__}")
    return value


def require_name(entry: Mapping[str, Any], key: str = "name", *, path: str | None = None) -> str:
    """The tool name under ``key``.

    Args:
        entry: The object holding the name.
        key: Key of the name in ``entry``.
        path: Relative location for errors; defaults to ``"." + key``.

    Raises:
        SchemaError: If the name is missing, not a string or blank.
    """
    name = entry.get(key)
    if not isinstance(name, str) or not name.strip():
        got = "missing" if name is None else f"got {name!r}"[:80]
        raise SchemaError(path or f".{key}", f"a tool needs a non-empty string name ({got})")
    return name


def _shown(text: str) -> str:
    """A path as messages show it: as is when short and printable, else quoted and cut."""
    if len(text) <= 200 and text.isprintable():
        return text
    return repr(text[:60] + "...") if len(text) > 60 else repr(text)


def checked_path(path: str | os.PathLike[str]) -> Path:
    """``path`` as a :class:`~pathlib.Path`, after checks that give a clear error.

    Args:
        path: A file path given by the caller.

    Returns:
        The path.

    Raises:
        CatalogFormatError: If ``path`` is empty, contains a NUL byte, is JSON text
            passed where a path was expected, or is not a path at all.
    """
    try:
        text = os.fsdecode(os.fspath(path))
    except (TypeError, ValueError) as exc:
        raise CatalogFormatError(f"not a usable file path: {exc}"[:200]) from None
    if not text.strip():
        raise CatalogFormatError("the file path is empty")
    if "\x00" in text:
        hint = ""
        if text.lstrip().startswith(("{", "[")):
            hint = "; it looks like JSON text: pass the parsed payload (json.loads) instead"
        raise CatalogFormatError(
            f"{_shown(text)}: not a usable file path (it contains a NUL byte){hint}"
        )
    return Path(text)


def read_bytes(path: str | os.PathLike[str]) -> tuple[Path, bytes]:
    """Read a whole file, every failure a :class:`CatalogFormatError` naming the file.

    Returns:
        ``(path, content)``.
    """
    p = checked_path(path)
    try:
        return p, p.read_bytes()
    except FileNotFoundError:
        text = str(p)
        if text.lstrip().startswith(("{", "[")):
            raise CatalogFormatError(
                f"{_shown(text)}: no such file; it looks like JSON text: pass the parsed "
                "payload (json.loads) or a file path"
            ) from None
        raise CatalogFormatError(f"{p}: no such file") from None
    except OSError as exc:
        raise CatalogFormatError(
            f"{_shown(str(p))}: cannot read the file ({exc.strerror or exc})"
        ) from None
    except ValueError as exc:
        # e.g. a lone surrogate the file system encoding cannot represent
        raise CatalogFormatError(f"{_shown(str(p))}: not a usable file path ({exc})"[:300]) from None


def read_json(path: str | os.PathLike[str]) -> Any:
    """Parse a UTF-8 JSON file.

    Args:
        path: The file to read.

    Returns:
        The parsed payload.

    Raises:
        CatalogFormatError: Naming the file, and the line and column for invalid JSON;
            also for a path that cannot name a file (empty, NUL byte, JSON text).
    """
    p, raw = read_bytes(path)
    try:
        text = raw.decode("utf-8-sig")  # tolerate a BOM written by Windows editors
    except UnicodeDecodeError as exc:
        raise CatalogFormatError(
            f"{p}: not UTF-8 text (invalid byte at offset {exc.start})"
        ) from None
    return parse_json_text(text, p)


def parse_json_text(text: str, label: object) -> Any:
    """Parse JSON text; a syntax error names ``label`` with its line and column."""
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise CatalogFormatError(
            f"{label}: invalid JSON at line {exc.lineno}, column {exc.colno}: {exc.msg}"
        ) from None
    except RecursionError:
        raise CatalogFormatError(f"{label}: JSON nested too deeply to read") from None
