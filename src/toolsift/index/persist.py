"""Saving an index to a directory of Arrow IPC files and reading it back.

Layout: ``tools.arrow`` (id + JSON payload per tool), ``vocab.arrow``, one
``field.NAME.arrow`` per field (the C++ postings as single-row large lists, written
zero-copy from the engine's buffers) and ``dense.NAME.arrow`` per dense field, with a
``manifest.json`` holding the config, counts and every file's size and SHA-256 (see
:mod:`toolsift.index.store`, which writes the directory atomically).
"""

from __future__ import annotations

import json
import os
from datetime import datetime, timezone
from pathlib import Path
from typing import NamedTuple

import numpy as np
import pyarrow as pa

from .. import __version__
from ..analyze import Vocabulary
from ..config import IndexConfig
from ..errors import IndexCorruptError, IndexFormatError, ToolsiftError
from ..schema import FIELDS, Catalog, Tool
from .dense import Int8Matrix
from .dense_field import DenseField
from .field_index import COLUMNS, FieldIndex
from .state import IndexState
from .store import open_table, read_manifest, write_index_dir

__all__ = ["LoadedIndex", "load_index", "save_index"]


class LoadedIndex(NamedTuple):
    """The parts of an index read back from disk."""

    catalog: Catalog
    config: IndexConfig
    vocab: Vocabulary
    fields: dict[str, FieldIndex]
    dense: dict[str, DenseField]


def save_index(path: str | os.PathLike, st: IndexState, config: IndexConfig) -> Path:
    """Write index state ``st`` to directory ``path`` atomically (replacing an existing one).

    Returns:
        The absolute path written.
    """
    tools = pa.table({
        "id": pa.array([t.id for t in st.catalog], pa.string()),
        "payload": pa.array([json.dumps(t.to_dict(), ensure_ascii=False, default=str)
                             for t in st.catalog], pa.large_string()),
    })
    tables: dict[str, pa.Table] = {
        "tools.arrow": tools,
        "vocab.arrow": pa.table({"term": pa.array(st.vocab.to_list(), pa.string())}),
    }
    stats = {}
    for name, fi in st.fields.items():
        cols = {}
        for cname, view in fi.columns().items():
            arr = pa.array(view)  # zero-copy over the engine's buffer
            cols[cname] = pa.LargeListArray.from_arrays(pa.array([0, len(arr)], pa.int64()), arr)
        tables[f"field.{name}.arrow"] = pa.table(cols)
        c = fi.core
        stats[name] = {"n_docs": c.n_docs, "nnz": c.nnz, "avgdl": c.avgdl, "grouped": fi.grouped}
    for name, dn in st.dense.items():
        tables[f"dense.{name}.arrow"] = dn.matrix.to_arrow()
    manifest = {
        "toolsift_version": __version__,
        "created": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "n_tools": len(st.catalog),
        "n_terms": len(st.vocab),
        "catalog_name": st.catalog.name,
        "config": config.to_dict(),
        "fields": stats,
    }
    return write_index_dir(path, tables, manifest)


def load_index(path: str | os.PathLike, *, mmap: bool = True, verify: bool = True) -> LoadedIndex:
    """Read an index directory written by :func:`save_index`.

    Args:
        path: The index directory.
        mmap: Memory-map the postings (zero-copy) instead of reading them into memory.
        verify: Check every file's SHA-256 against the manifest (sizes are always
            checked).

    Raises:
        IndexFormatError: Not an index directory, or written by a newer version.
        IndexCorruptError: A file is truncated, damaged or inconsistent.
    """
    manifest = read_manifest(path, verify=verify)
    try:
        config = IndexConfig.from_dict(manifest["config"])
        n_tools = int(manifest["n_tools"])
        tools_t = open_table(path, "tools.arrow", mmap=False)
        tools = [Tool.from_dict(json.loads(p), where=f"tools.arrow[{i}]")
                 for i, p in enumerate(tools_t.column("payload").to_pylist())]
        catalog = Catalog(tools, name=manifest.get("catalog_name", "catalog"))
        vocab = Vocabulary.from_list(open_table(path, "vocab.arrow", mmap=False).column("term").to_pylist())
        fields = {}
        for name in FIELDS:
            table = open_table(path, f"field.{name}.arrow", mmap=mmap)
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
    except (IndexFormatError, IndexCorruptError):
        raise
    except (KeyError, ValueError, TypeError, ToolsiftError) as exc:
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
            matrix = Int8Matrix.from_arrow(open_table(path, fname, mmap=mmap))
            fi = fields[name]
            groups = (np.frombuffer(memoryview(fi.core.column("doc_group")), np.int32)
                      if fi.grouped else None)
            dense[name] = DenseField(matrix, groups, n_tools)
        except (KeyError, ValueError, TypeError) as exc:
            raise IndexCorruptError(f"{path}/{fname}: {exc}") from None
    return LoadedIndex(catalog, config, vocab, fields, dense)
