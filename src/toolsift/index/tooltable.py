"""The tool table: a catalogue stored as Arrow columns, each tool decoded on first access.

``tools.arrow`` of index format 2 has one row per tool:

=========== ================ ==========================================================
column      type             content
=========== ================ ==========================================================
``id``      string           the tool id
``name``    string           the tool name
``payload`` large_binary     the tool as UTF-8 JSON (:meth:`Tool.to_dict`)
``params``  list<uint8>      per parameter, 1 if required; the list offsets are the
                             parameter layout (``param_ptr``) the scorer reads
``fields``  uint8            field presence bits (description 1, parameters 2,
                             response 4, examples 8), as :func:`field_presence`
=========== ================ ==========================================================

Loading used to parse and validate every tool's JSON (70 s at a million tools) although
a search only ever returns ``k`` of them. :class:`StoredCatalog` keeps the columns
(memory-mapped when the index is) and builds a :class:`Tool` the first time it is asked
for; everything the index itself needs per tool (ids, parameter layout, field presence)
comes from the other columns without touching the JSON.
"""

from __future__ import annotations

import bisect
import os
import json
from collections.abc import Iterator, Mapping, Sequence
from typing import Any, NamedTuple

import numpy as np
import pyarrow as pa
from pyarrow._compute import call_function

from ..errors import IndexCorruptError, SchemaError
from ..schema import Catalog, Parameter, Tool
from ..scores import field_presence, presence_bits
from .fields import parameter_layout
from .store import BatchStream, column_values
from .arrowcols import column

__all__ = ["StoredCatalog", "ToolLayout", "TOOL_SCHEMA", "edit_catalog", "tool_batches", "tool_layout",
           "tool_stream", "tool_table"]

TOOL_SCHEMA = pa.schema([("id", pa.string()), ("name", pa.string()), ("payload", pa.large_binary()),
                         ("params", pa.list_(pa.uint8())), ("fields", pa.uint8())])

#: Tools encoded per record batch when saving: bounds the JSON held in memory at once.
_CHUNK = 65_536


class ToolLayout(NamedTuple):
    """Per-tool arrays the scorer reads, derived from the catalogue alone."""

    param_ptr: np.ndarray       # int64[n_tools + 1]
    param_required: np.ndarray  # uint8[n_params]
    present: np.ndarray         # bool[n_tools, 4]


def tool_layout(catalog: Sequence[Tool]) -> ToolLayout:
    """The layout of ``catalog``: read from the columns of a :class:`StoredCatalog`,
    computed from the tools otherwise (both give the same arrays)."""
    if isinstance(catalog, StoredCatalog):
        return catalog.layout()
    ptr, req = parameter_layout(catalog)
    return ToolLayout(ptr, req, field_presence(catalog))


def edit_catalog(catalog: Catalog, keep: Sequence[int], replace: Mapping[int, Tool],
                 add: Sequence[Tool]) -> Catalog:
    """The tools of ``catalog`` at positions ``keep`` (in order), those at positions
    ``replace`` of the kept list swapped for new versions, then ``add``. A stored
    catalogue stays stored (see :meth:`StoredCatalog.edited`). Ids must already be
    known to be unique."""
    if isinstance(catalog, StoredCatalog):
        return catalog.edited(keep, replace, add)
    tools = [replace.get(j) or catalog[i] for j, i in enumerate(keep)]
    return Catalog(tools + list(add), name=catalog.name)


def _batch(tools: Sequence[Tool]) -> pa.RecordBatch:
    ptr, req = parameter_layout(tools)
    params = pa.ListArray.from_arrays(column(ptr, pa.int32()), column(req, pa.uint8()))
    return pa.record_batch([
        column([t.id for t in tools], pa.string()),
        column([t.name for t in tools], pa.string()),
        column([json.dumps(t.to_dict(), ensure_ascii=False, default=str).encode() for t in tools],
                 pa.large_binary()),
        params,
        column(presence_bits(field_presence(tools)), pa.uint8()),
    ], schema=TOOL_SCHEMA)


def tool_table(catalog: Sequence[Tool]) -> pa.Table:
    """The format-2 tool table of ``catalog`` (a stored catalogue's own table, re-used)."""
    if isinstance(catalog, StoredCatalog):
        return catalog.table
    return pa.Table.from_batches(list(tool_batches(catalog)), schema=TOOL_SCHEMA)


def tool_stream(catalog: Sequence[Tool]) -> pa.Table | BatchStream:
    """The tool table for saving: encoded a batch at a time while it is written (the
    JSON of a million tools is half a gigabyte), or a stored catalogue's own table."""
    if isinstance(catalog, StoredCatalog):
        # The next load trusts what this save's checksums cover: payloads read without
        # verified checksums are validated before they are written again.
        if not catalog.trusted:
            catalog.validate()
        return catalog.table
    return BatchStream(TOOL_SCHEMA, tool_batches(catalog))


def tool_batches(catalog: Sequence[Tool]) -> Iterator[pa.RecordBatch]:
    """The tool table of ``catalog`` as record batches of :data:`_CHUNK` tools."""
    for i in range(0, len(catalog), _CHUNK):
        yield _batch(catalog[i:i + _CHUNK])


def _frozen(cls, **values):
    """An instance of frozen dataclass ``cls`` with ``values`` set and ``__post_init__``
    (validation) skipped."""
    obj = object.__new__(cls)
    for k, v in values.items():
        object.__setattr__(obj, k, v)
    return obj


def _unvalidated_tool(d: dict[str, Any]) -> Tool:
    """The tool :meth:`Tool.to_dict` wrote as ``d``, rebuilt without validation (for
    payloads whose checksums were verified; ``Tool.from_dict`` gives an equal tool)."""
    params = tuple(_frozen(Parameter, name=p["name"], type=p["type"], description=p["description"],
                           required=p["required"], example=p.get("example")) for p in d["parameters"])
    return _frozen(Tool, id=d["id"], name=d["name"], description=d["description"], parameters=params,
                   response=d["response"], examples=tuple(d["examples"]), tags=tuple(d["tags"]),
                   source=d.get("source"))


class StoredCatalog(Catalog):
    """A :class:`Catalog` over a tool table; a tool is parsed from its JSON when first
    asked for, then kept.

    ``ids`` and ``layout()`` never decode a tool. Iterating decodes every tool (use
    ``ids`` where the ids are all that is needed).

    Args:
        table: Columns as :data:`TOOL_SCHEMA` (chunked or not; may be memory-mapped).
        name: A label for messages and manifests.
        where: The file the table came from, named in errors.
        payload_file: ``(path, mapping address)`` of a memory-mapped table's file: a
            tool's JSON is then read from the file (``os.pread``) instead of through the
            mapping. Touching a mapped page maps its neighbours too (the kernel's fault-
            around, 64 KB), so decoding the hits of 660 searches of a 1M-tool index made
            608 MB of tools.arrow resident (scale-1M-2026-11-28c.md).

    Raises:
        IndexCorruptError: Missing or mistyped columns, null or duplicate ids.
    """

    def __init__(self, table: pa.Table, *, name: str = "catalog", where: str = "tools.arrow",
                 trusted: bool = False, payload_file: tuple[Any, int] | None = None) -> None:
        self.name = name
        self._trusted = trusted
        self._where = where
        for f in TOOL_SCHEMA:
            if f.name not in table.column_names or table.schema.field(f.name).type != f.type:
                raise IndexCorruptError(f"{where}: column {f.name!r} missing or not {f.type}")
        self.table = table.select(TOOL_SCHEMA.names)
        n = table.num_rows
        for f in TOOL_SCHEMA:
            if self.table.column(f.name).null_count:
                raise IndexCorruptError(f"{where}: column {f.name!r} has nulls")
        # The compute kernel itself: the pyarrow.compute module costs ~40 ms of CPU to
        # import (it generates its functions' docs), and loading an index needs only this.
        if n and call_function("count_distinct", [self.table.column("id")]).as_py() != n:
            raise IndexCorruptError(f"{where}: duplicate tool ids")
        self._n = n
        payload, ids = self.table.column("payload"), self.table.column("id")
        if [len(c) for c in payload.chunks] != [len(c) for c in ids.chunks]:
            # Tables read from one IPC file chunk every column alike; others are re-chunked.
            self.table = self.table.combine_chunks()
            payload, ids = self.table.column("payload"), self.table.column("id")
        keep = [i for i, c in enumerate(payload.chunks) if len(c)]
        self._chunks = [payload.chunks[i] for i in keep]
        self._id_chunks = [ids.chunks[i] for i in keep]
        self._starts = list(np.cumsum([0] + [len(c) for c in self._chunks[:-1]]).tolist())
        self._decoded: list[Tool | None] = [None] * n
        self._ids: list[str] | None = None
        self._pos: dict[str, int] | None = None
        self._file = _PayloadFile(payload_file, self._chunks) if payload_file and hasattr(os, "pread") else None

    # ------------------------------------------------------------ no decoding
    def __len__(self) -> int:
        return self._n

    @property
    def ids(self) -> list[str]:
        """Tool ids in catalogue order, read from the id column."""
        if self._ids is None:
            self._ids = self.table.column("id").to_pylist()
        return self._ids

    def _positions(self) -> dict[str, int]:
        if self._pos is None:
            self._pos = {t: i for i, t in enumerate(self.ids)}
        return self._pos

    def __contains__(self, tool_id: object) -> bool:
        return tool_id in self._positions()

    def position(self, tool_id: str) -> int:
        return self._positions()[tool_id]

    def layout(self) -> ToolLayout:
        """Parameter layout and field presence from the ``params`` and ``fields`` columns."""
        params = self.table.column("params").combine_chunks()
        if isinstance(params, pa.ChunkedArray):  # pragma: no cover - older pyarrow
            params = pa.concat_arrays(params.chunks)
        ptr = column_values(params.offsets, np.int32).astype(np.int64)
        lo = int(ptr[0]) if ptr.size else 0
        ptr = ptr - lo if ptr.size else np.zeros(1, np.int64)
        # The child values the offsets address (``flatten()`` would import pyarrow.compute).
        required = column_values(params.values, np.uint8)[lo:lo + int(ptr[-1])]
        bits = column_values(self.table.column("fields"), np.uint8)
        if ptr.size != self._n + 1 or required.size != ptr[-1]:
            raise IndexCorruptError(f"{self._where}: parameter layout is inconsistent")
        present = ((bits[:, None] >> np.arange(4, dtype=np.uint8)) & 1).astype(bool)
        return ToolLayout(ptr, required, present)

    # ----------------------------------------------------------------- decoding
    def _decode(self, i: int) -> Tool:
        c = bisect.bisect_right(self._starts, i) - 1
        raw = self._chunks[c][i - self._starts[c]].as_py() if self._file is None else \
            self._file.read(c, i - self._starts[c])
        # The id from its own chunk: the full id list costs 0.2 s at a million tools.
        expected = self._id_chunks[c][i - self._starts[c]].as_py()
        where = f"{self._where}[{i}]"
        try:
            data = json.loads(raw)
            tool = _unvalidated_tool(data) if self._trusted else Tool.from_dict(data, where=where)
        except (ValueError, SchemaError, KeyError, TypeError, AttributeError) as exc:  # JSONDecodeError and UnicodeDecodeError are ValueErrors
            raise IndexCorruptError(f"{where}: tool payload is damaged ({exc})") from None
        if tool.id != expected:
            raise IndexCorruptError(f"{where}: payload is tool {tool.id!r}, the id column says {expected!r}")
        self._decoded[i] = tool
        return tool

    def _tool(self, i: int) -> Tool:
        got = self._decoded[i]
        return got if got is not None else self._decode(i)

    def __getitem__(self, i):  # type: ignore[override]
        if isinstance(i, slice):
            return [self._tool(j) for j in range(*i.indices(self._n))]
        i = int(i)
        if i < 0:
            i += self._n
        if not 0 <= i < self._n:
            raise IndexError(f"tool position {i} out of range for {self._n} tools")
        return self._tool(i)

    def __iter__(self) -> Iterator[Tool]:
        for i in range(self._n):
            yield self._tool(i)

    def get(self, tool_id: str) -> Tool:
        pos = self._positions().get(tool_id)
        if pos is None:
            raise KeyError(f"no tool with id {tool_id!r} in {self.name}")
        return self._tool(pos)

    def to_list(self) -> list[dict[str, Any]]:
        return [t.to_dict() for t in self]

    @property
    def trusted(self) -> bool:
        """Whether payloads are decoded without validation (see the class docstring)."""
        return self._trusted

    def validate(self) -> None:
        """Validate every payload as :meth:`Tool.from_dict` does, keeping none of the
        tools (a pass over a million tools would otherwise keep them all).

        Raises:
            IndexCorruptError: A payload is damaged or belongs to another id.
        """
        for c, (chunk, ids) in enumerate(zip(self._chunks, self._id_chunks)):
            for j, (raw, expected) in enumerate(zip(chunk.to_pylist(), ids.to_pylist())):
                where = f"{self._where}[{self._starts[c] + j}]"
                try:
                    tool = Tool.from_dict(json.loads(raw), where=where)
                except (ValueError, SchemaError) as exc:
                    raise IndexCorruptError(f"{where}: tool payload is damaged ({exc})") from None
                if tool.id != expected:
                    raise IndexCorruptError(f"{where}: payload is tool {tool.id!r}, the id column says {expected!r}")

    @property
    def n_decoded(self) -> int:
        """How many tools have been decoded so far."""
        return sum(t is not None for t in self._decoded)

    # ------------------------------------------------------------------ editing
    def edited(self, keep: Sequence[int], replace: Mapping[int, Tool], add: Sequence[Tool]) -> StoredCatalog:
        """The tools at ``keep`` (in that order), those at positions ``replace`` (of the
        kept list) swapped for new versions, then ``add``: as a stored catalogue, so an
        update neither decodes nor re-encodes the unchanged tools."""
        fresh = list(replace.values()) + list(add)
        base = self.table.replace_schema_metadata(None)
        parts = [base] + ([tool_table(fresh)] if fresh else [])
        combined = pa.concat_tables(parts)
        n = self._n
        order = np.asarray(keep, dtype=np.int64).copy()
        if replace:
            order[np.fromiter(replace, np.int64, len(replace))] = n + np.arange(len(replace))
        order = np.concatenate([order, n + len(replace) + np.arange(len(add), dtype=np.int64)])
        out = StoredCatalog(combined.take(column(order)), name=self.name, where=self._where,
                            trusted=self._trusted)
        for j, i in enumerate(order.tolist()):  # carry over what was decoded already
            if i < n and self._decoded[i] is not None:
                out._decoded[j] = self._decoded[i]
        return out

    def __repr__(self) -> str:
        return f"StoredCatalog(name={self.name!r}, tools={len(self)})"


class _PayloadFile:
    """Reads one payload of a memory-mapped tool table from its file (``os.pread``): the
    same bytes, without mapping the pages around them (StoredCatalog's ``payload_file``)."""

    def __init__(self, payload_file: tuple[Any, int], chunks: list[pa.Array]) -> None:
        path, base = payload_file
        self._fd = os.open(path, os.O_RDONLY)
        self._size = os.fstat(self._fd).st_size
        # Per chunk: its value offsets (a view of the mapping) and its values' file offset.
        self._chunks = []
        for chunk in chunks:
            _, offsets, values = chunk.buffers()
            offs = np.frombuffer(offsets, np.int64)[chunk.offset:chunk.offset + len(chunk) + 1]
            self._chunks.append((offs, values.address - base if values is not None else 0))

    def read(self, c: int, j: int) -> bytes:
        offs, at = self._chunks[c]
        lo, hi = int(offs[j]), int(offs[j + 1])
        if not 0 <= at + lo <= at + hi <= self._size:
            raise IndexCorruptError(f"tool payload {j} of chunk {c} lies outside its file")
        got = os.pread(self._fd, hi - lo, at + lo)
        if len(got) != hi - lo:
            raise IndexCorruptError(f"tool payload {j} of chunk {c}: short read")
        return got

    def __del__(self) -> None:
        fd = getattr(self, "_fd", None)
        if fd is not None:
            os.close(fd)
