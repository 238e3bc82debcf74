"""Saving an index to a directory of Arrow IPC files and reading it back.

Layout: ``tools.arrow`` (the tool table of :mod:`toolsift.index.tooltable`: ids,
names, JSON payloads and the per-tool layout columns; format 1 had id + JSON only),
``vocab.arrow``, one ``field.NAME.arrow`` per field (the C++ postings as single-row
large lists, written zero-copy from the engine's buffers), ``dense.NAME.arrow`` per
dense field, ``ivf.NAME.arrow`` per dense field with an IVF index
(:mod:`toolsift.index.ivf`), ``graph.arrow`` and ``graph_tools.arrow`` (the tool
graph's edges and per-tool families, :mod:`toolsift.index.graph`; an index saved
without it builds the graph on first use), ``query_table.arrow`` (a hybrid index's
static query rows refitted on its documents, :mod:`toolsift.index.query_table`), with a
``manifest.json`` holding the config, counts, the dense fields' null floors
(:func:`toolsift.search.evidence.floor_record`; an index saved without them makes them on
first use) and every file's size and SHA-256 (see :mod:`toolsift.index.store`: the files live in a versioned subfolder and a save commits
by atomically replacing the manifest).
"""

from __future__ import annotations

import json
import os
from datetime import datetime, timezone
from pathlib import Path
from collections.abc import Callable
from typing import Any, NamedTuple

import numpy as np
import pyarrow as pa

from .._version import __version__
from ..analyze import Vocabulary
from ..checking import trusted
from ..config import IndexConfig
from ..errors import IndexCorruptError, IndexFormatError, ToolsiftError
from ..schema import FIELDS, Catalog, Tool
from .dense import Int8Matrix
from .dense_field import DenseField
from .field_index import COLUMNS, FieldIndex
from .gcpause import gc_paused
from .graph import ToolGraph
from .ivf import IvfIndex
from .query_table import QueryTable
from .state import IndexState
from .store import (
    BatchStream,
    column_values,
    leased_manifest,
    manifest_token,
    open_table,
    write_index_dir,
)
from .tooltable import StoredCatalog, tool_stream
from .arrowcols import column

__all__ = ["LoadedIndex", "load_index", "save_index"]


class LoadedIndex(NamedTuple):
    """The parts of an index read back from disk."""

    catalog: Catalog
    config: IndexConfig
    vocab: Vocabulary
    fields: dict[str, FieldIndex]
    dense: dict[str, DenseField]
    graph: ToolGraph | None = None
    query_table: QueryTable | None = None
    #: The manifest's record of the encoder that made the dense vectors
    #: (``{"fingerprint": str, "dim": int}``), ``None`` when it has none (a BM25 index, or
    #: one saved before encoders were recorded).
    encoder: dict[str, Any] | None = None
    #: The manifest's null floors (``{"settings": dict, "fields": {field: float}}``,
    #: :func:`toolsift.search.evidence.floor_record`), ``None`` when it has none.
    null_floors: dict[str, Any] | None = None


def save_index(path: str | os.PathLike, st: IndexState, config: IndexConfig, *,
               encoder: dict[str, Any] | None = None,
               null_floors: dict[str, Any] | Callable[[], dict[str, Any] | None] | None = None) -> Path:
    """Write index state ``st`` to directory ``path`` atomically (replacing an existing one).

    ``encoder`` (``{"fingerprint", "dim"}``, :func:`toolsift.index.embed.encoder_record`)
    is recorded in the manifest when the index has dense fields, so a load can tell
    whether the encoder in use made its vectors; so are ``null_floors``
    (:func:`toolsift.search.evidence.floor_record`), so a loaded index's first search
    need not make them; given as a callable, they are made once the files are written (a
    1M index's floors build the IVF prefilter, 183 MB, which then no longer adds to the
    writing's peak: scale-1M-2026-11-28c.md).

    Returns:
        The absolute path written.
    """
    tables: dict[str, pa.Table | BatchStream] = {
        "tools.arrow": tool_stream(st.catalog),
        "vocab.arrow": pa.table({"term": column(st.vocab.to_list(), pa.string())}),
    }
    stats = {}
    for name, fi in st.fields.items():
        cols = {}
        for cname, view in fi.columns().items():
            arr = column(view)  # zero-copy over the engine's buffer
            cols[cname] = pa.LargeListArray.from_arrays(column([0, len(arr)], pa.int64()), arr)
        tables[f"field.{name}.arrow"] = pa.table(cols)
        c = fi.core
        stats[name] = {"n_docs": c.n_docs, "nnz": c.nnz, "avgdl": c.avgdl, "grouped": fi.grouped}
    for name, dn in st.dense.items():
        tables[f"dense.{name}.arrow"] = _dense_table(dn, st.fields[name])
        if dn.ivf is not None:
            tables[f"ivf.{name}.arrow"] = dn.ivf.to_arrow()
    qt = getattr(st, "query_table", None)
    if qt is not None:
        tables["query_table.arrow"] = qt.to_arrow()
    if st.graph is not None:
        tables["graph.arrow"] = st.graph.to_arrow()
        tables["graph_tools.arrow"] = st.graph.nodes_to_arrow()
    manifest = {
        "toolsift_version": __version__,
        "created": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "n_tools": len(st.catalog),
        "n_terms": len(st.vocab),
        "catalog_name": st.catalog.name,
        "config": config.to_dict(),
        "fields": stats,
    }
    if st.dense and encoder is not None:
        manifest["encoder"] = {"fingerprint": str(encoder["fingerprint"]), "dim": int(encoder["dim"])}
    if st.dense and null_floors is not None:
        manifest["null_floors"] = null_floors
    if st.graph is not None:
        manifest["graph"] = {"n_edges": len(st.graph)}
    return write_index_dir(path, tables, manifest)


def _encoder_record(manifest: dict, dense: dict[str, DenseField], where: str) -> dict[str, Any] | None:
    rec = manifest.get("encoder")
    if rec is None:
        return None
    fp, dim = (rec.get("fingerprint"), rec.get("dim")) if isinstance(rec, dict) else (None, None)
    if not isinstance(fp, str) or not fp or isinstance(dim, bool) or not isinstance(dim, int):
        raise IndexCorruptError(f"{where}: manifest.json 'encoder' is not {{fingerprint: str, dim: int}}: {rec!r}")
    for name, dn in dense.items():
        if dn.matrix.codes.shape[1] != dim:
            raise IndexCorruptError(f"{where}: dense.{name}.arrow has width {dn.matrix.codes.shape[1]}, "
                                    f"the manifest's encoder {dim}")
    return {"fingerprint": fp, "dim": dim}


def _floor_record(manifest: dict, dense: dict[str, DenseField], where: str) -> dict[str, Any] | None:
    rec = manifest.get("null_floors")
    if rec is None:
        return None
    settings, fields = (rec.get("settings"), rec.get("fields")) if isinstance(rec, dict) else (None, None)
    if (not isinstance(settings, dict) or not isinstance(fields, dict) or not set(fields) <= set(dense)
            or not all(type(v) is float and -1.0 <= v <= 1.0 for v in fields.values())):
        raise IndexCorruptError(f"{where}: manifest.json 'null_floors' is not {{settings: {{...}}, fields: "
                                f"{{dense field: cosine}}}}: {rec!r}")
    return {"settings": settings, "fields": fields}


#: Times a load starts over when a concurrent save replaced the index under it.
_LOAD_ATTEMPTS = 20


def _is_string(t: pa.DataType) -> bool:
    return pa.types.is_string(t) or pa.types.is_large_string(t)


def _is_int_list(t: pa.DataType) -> bool:
    return (pa.types.is_list(t) or pa.types.is_large_list(t)) and pa.types.is_integer(t.value_type)


def load_index(path: str | os.PathLike, *, mmap: bool = True, verify: bool = True) -> LoadedIndex:
    """Read an index directory written by :func:`save_index`.

    A load racing a save of the same directory sees the old or the new index: when the
    manifest changes while files are read, the load starts over from the new manifest.

    Args:
        path: The index directory.
        mmap: Memory-map the postings (zero-copy) instead of reading them into memory.
        verify: Check every file's SHA-256 against the manifest. ``verify=False`` skips
            only that (reading every byte); still checked are the manifest's own
            checksum, every file's size, Arrow structure (offsets, valid UTF-8), column
            names and types, that every file was written by the manifest's save
            (``save_id``), postings structure (sorted, in-range ids; consistent
            lengths) and counts across files. What it cannot see is a flipped bit inside
            a number (a term frequency, a document length, an int8 code or a scale):
            such damage gives wrong scores instead of an error.

    Raises:
        IndexFormatError: Not an index directory, or written by a newer version.
        IndexCorruptError: A file is truncated, damaged or inconsistent.
    """
    for _ in range(_LOAD_ATTEMPTS):
        token = manifest_token(path)
        try:
            with gc_paused():
                return _load(path, mmap=mmap, verify=verify)
        except IndexFormatError:
            if manifest_token(path) == token:
                raise
            # A save committed while we read: the files we had may be gone; read the new one.
    raise IndexCorruptError(f"{path}: the index changed during {_LOAD_ATTEMPTS} load attempts in a row")


def _load_tools(ddir: Path, manifest: dict, *, mmap: bool, save_id: str | None, verify: bool) -> Catalog:
    name = manifest.get("catalog_name", "catalog")
    if manifest.get("format_version", 1) >= 2:
        # Tools stay as JSON in the (memory-mapped) table until one is asked for.
        # With verified checksums the payloads are what the save wrote from validated
        # tools, so decoding need not validate them again.
        base: list[int] = []
        table = open_table(ddir, "tools.arrow", mmap=mmap, save_id=save_id, base_out=base)
        return StoredCatalog(table, name=name, where=f"{ddir}/tools.arrow", trusted=verify,
                             payload_file=(ddir / "tools.arrow", base[0]) if base else None)
    # Format 1: id + JSON only, so the layout columns need every tool decoded.
    tools_t = open_table(ddir, "tools.arrow", mmap=False, save_id=save_id,
                         columns={"id": _is_string, "payload": _is_string})
    tools = [Tool.from_dict(json.loads(p), where=f"tools.arrow[{i}]")
             for i, p in enumerate(tools_t.column("payload").to_pylist())]
    return Catalog(tools, name=name)


def _load(path: str | os.PathLike, *, mmap: bool, verify: bool) -> LoadedIndex:
    # The lease keeps a concurrent save from deleting this generation while its files
    # are opened (see toolsift.index.store.leased_manifest).
    with leased_manifest(path, verify=verify) as (manifest, ddir):
        return _load_generation(path, manifest, ddir, mmap=mmap, verify=verify)


def _load_generation(path: str | os.PathLike, manifest: dict, ddir: Path, *, mmap: bool,
                     verify: bool) -> LoadedIndex:
    sid = manifest.get("save_id")
    try:
        # The config a save wrote from a checked IndexConfig, under the manifest's verified
        # checksum: its fields are not checked again (toolsift.checking.trusted).
        with trusted():
            config = IndexConfig.from_dict(manifest["config"])
        n_tools = int(manifest["n_tools"])
        catalog = _load_tools(ddir, manifest, mmap=mmap, save_id=sid, verify=verify)
        terms = open_table(ddir, "vocab.arrow", mmap=False, save_id=sid, columns={"term": _is_string})
        vocab = Vocabulary.from_list(terms.column("term").to_pylist())
        if len(vocab) != manifest.get("n_terms", len(vocab)):
            raise IndexCorruptError(f"{ddir}/vocab.arrow: {len(vocab)} terms, manifest says {manifest['n_terms']}")
        fields = {}
        for name in FIELDS:
            table = open_table(ddir, f"field.{name}.arrow", mmap=mmap, save_id=sid,
                               columns={c: _is_int_list for c in COLUMNS[:-1]})
            arrays = {}
            for cname in COLUMNS:
                if cname in table.column_names:
                    col = table.column(cname)
                    if col.num_chunks != 1 or len(col) != 1:
                        raise IndexCorruptError(f"field.{name}.arrow: column {cname} has an unexpected shape")
                    arrays[cname] = col.chunk(0).values
            fields[name] = FieldIndex.from_arrays(arrays, n_tools=n_tools, bm25=config.bm25)
            if fields[name].core.n_terms != len(vocab):
                raise IndexCorruptError(f"field.{name}.arrow: term count disagrees with vocab.arrow")
            stats = manifest.get("fields", {}).get(name)
            c = fields[name].core
            if isinstance(stats, dict) and (stats.get("n_docs"), stats.get("nnz")) != (c.n_docs, c.nnz):
                raise IndexCorruptError(f"field.{name}.arrow: {c.n_docs} documents / {c.nnz} postings, "
                                        f"manifest says {stats.get('n_docs')} / {stats.get('nnz')}")
    except (IndexFormatError, IndexCorruptError):
        raise
    except (KeyError, ValueError, TypeError, AttributeError, ToolsiftError) as exc:
        raise IndexCorruptError(f"{path}: index is inconsistent: {exc}") from None
    if len(catalog) != n_tools:
        raise IndexCorruptError(f"{path}: manifest says {n_tools} tools, tools.arrow has {len(catalog)}")
    dense = {}
    for name in FIELDS:
        if config.retriever(name) == "bm25":
            continue
        fname = f"dense.{name}.arrow"
        if fname not in manifest.get("files", {}):
            raise IndexCorruptError(f"{path}: {fname} is missing although field {name!r} is dense")
        try:
            table = open_table(ddir, fname, mmap=mmap, save_id=sid)
            matrix = Int8Matrix.from_arrow(table)
            fi = fields[name]
            groups = (_stored_rows(table) if "tool" in table.column_names
                      else np.frombuffer(memoryview(fi.core.column("doc_group")), np.int32) if fi.grouped else None)
            dense[name] = DenseField(matrix, groups, n_tools)
        except (KeyError, ValueError, TypeError) as exc:
            raise IndexCorruptError(f"{ddir}/{fname}: {exc}") from None
        iname = f"ivf.{name}.arrow"
        if iname in manifest.get("files", {}):  # optional: without it the field is scanned
            try:
                ivf = IvfIndex.from_arrow(open_table(ddir, iname, mmap=mmap, save_id=sid), matrix=matrix)
            except (KeyError, ValueError, TypeError, pa.ArrowException) as exc:
                raise IndexCorruptError(f"{ddir}/{iname}: {exc}") from None
            dense[name] = dense[name].with_ivf(ivf)
    graph = None
    if "graph.arrow" in manifest.get("files", {}):
        where = f"{ddir}/graph.arrow"
        graph = ToolGraph.from_arrow(open_table(ddir, "graph.arrow", mmap=False, save_id=sid),
                                     open_table(ddir, "graph_tools.arrow", mmap=False, save_id=sid), n_tools,
                                     where=where)
        if len(graph) != manifest.get("graph", {}).get("n_edges", len(graph)):
            raise IndexCorruptError(f"{where}: {len(graph)} edges, manifest says {manifest['graph']['n_edges']}")
    qt = None
    if "query_table.arrow" in manifest.get("files", {}):
        qt = QueryTable.from_arrow(open_table(ddir, "query_table.arrow", mmap=False, save_id=sid),
                                   where=f"{ddir}/query_table.arrow")
    return LoadedIndex(catalog, config, vocab, fields, dense, graph, qt,
                       _encoder_record(manifest, dense, str(path)), _floor_record(manifest, dense, str(path)))


def _dense_table(dn: DenseField, fi: FieldIndex) -> pa.Table:
    """A dense field's file: its matrix, and the tool of each row (``tool``) when its
    rows are not the BM25 field's documents (a field stored as its non-empty rows only,
    :mod:`.dense_rows`; format 3); otherwise a load takes the BM25 field's map."""
    table = dn.matrix.to_arrow()
    if dn.groups is None:
        return table
    same = fi.grouped and fi.core.n_docs == dn.matrix.n_rows and np.array_equal(
        np.frombuffer(memoryview(fi.core.column("doc_group")), np.int32), dn.groups)
    return table if same else table.append_column("tool", column(dn.groups, pa.int64()))


def _stored_rows(table: pa.Table) -> np.ndarray:
    """The ``tool`` column of a dense file (zero-copy), checked ascending (a tool's rows
    are contiguous); the range is checked by :class:`DenseField`."""
    col = table.column("tool")
    if col.type != pa.int64() or col.null_count or col.num_chunks > 1:
        raise ValueError(f"column 'tool' must be one chunk of int64 without nulls, got {col.type}")
    # column_values reads the buffers: to_numpy imports pandas (~0.25 s of a CLI search).
    rows = column_values(col, np.int64)
    if rows.size > 1 and (np.diff(rows) < 0).any():
        raise ValueError("column 'tool' must be ascending")
    return rows
