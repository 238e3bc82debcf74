"""Reading and writing record batches: Arrow objects in memory, or files by extension.

Inputs are streamed batch by batch (memory bounded by the batch size, not the file):

=====================================  ============================================
``.parquet`` / ``.pq`` / a directory   ``pyarrow.parquet`` / ``pyarrow.dataset``; the
                                       string columns named in ``dictionary`` are
                                       read dictionary-encoded (no string copies)
``.arrow`` / ``.feather`` / ``.ipc``   Arrow IPC file (or stream)
``.csv``                               ``pyarrow.csv.open_csv`` (all columns strings)
``.jsonl`` / ``.ndjson`` / ``.json``   ``pyarrow.json.open_json`` (JSON Lines)
=====================================  ============================================

Outputs use the same extensions (a directory is not an output format).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Iterator, Sequence
from typing import Any, TypeAlias
from pathlib import Path

import pyarrow as pa

from .columns import BatchInputError

__all__ = ["BatchSource", "COMPRESSIONS", "FORMATS", "PARQUET_COMPRESSION", "check_batch_size", "check_compression",
           "file_format", "open_source", "open_writer", "source_rows", "source_schema"]

FORMATS = {".parquet": "parquet", ".pq": "parquet", ".arrow": "ipc", ".feather": "ipc", ".ipc": "ipc",
           ".csv": "csv", ".jsonl": "jsonl", ".ndjson": "jsonl", ".json": "jsonl"}

#: Output compression codecs (Parquet takes all; Arrow IPC all but ``snappy``; CSV and
#: JSON Lines are written uncompressed).
COMPRESSIONS = ("none", "lz4", "zstd", "snappy")
#: Parquet's default codec. Measured on the 10M-pair benchmark output (8 columns): lz4
#: costs ~0.17 CPU-seconds more than none (~0.5 s vs ~0.34 s) and writes 119 MB instead
#: of 272 MB; zstd ~0.7 s for 104 MB; snappy as lz4 but larger. Halving the file is
#: worth a few percent of the job.
PARQUET_COMPRESSION = "lz4"

#: What the batch API accepts as input.
BatchSource: TypeAlias = pa.Table | pa.RecordBatch | pa.RecordBatchReader | Iterable[pa.RecordBatch] | str | os.PathLike


def file_format(path: str | os.PathLike) -> str:
    """``parquet``, ``ipc``, ``csv`` or ``jsonl`` from ``path``'s extension (a directory
    is a Parquet dataset).

    Raises:
        BatchInputError: An unknown extension.
    """
    p = Path(path)
    if p.is_dir():
        return "parquet"
    fmt = FORMATS.get(p.suffix.lower())
    if fmt is None:
        raise BatchInputError(f"{p}: unknown file type {p.suffix or '(none)'!r}; use one of "
                              f"{', '.join(sorted(FORMATS))}")
    return fmt


def check_batch_size(batch_size: object) -> int:
    """``batch_size`` if it is a positive integer.

    Raises:
        BatchInputError: Anything else (``0`` would never finish a batch).
    """
    if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
        raise BatchInputError(f"batch_size must be a positive integer, got {batch_size!r}")
    return batch_size


def _unreadable(path: Path, fmt: str, exc: BaseException) -> BatchInputError:
    """A file pyarrow cannot read (empty, truncated, corrupt, not that format) as one line."""
    reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else (str(exc).strip().splitlines() or ["?"])[0]
    return BatchInputError(f"{path}: cannot read as {fmt}: {reason}")


#: What pyarrow raises for a file it cannot read (its ArrowInvalid is also a ValueError,
#: its IO errors OSErrors); our own BatchInputError is let through.
_READ_ERRORS = (pa.ArrowException, OSError)


def source_rows(source: BatchSource) -> int | None:
    """Number of rows of ``source`` when known without reading it (else ``None``)."""
    if isinstance(source, (pa.Table, pa.RecordBatch)):
        return source.num_rows
    if isinstance(source, (str, os.PathLike)) and file_format(source) == "parquet":
        try:
            if Path(source).is_file():
                # The footer's count: pyarrow.dataset would import pandas (~0.6 s).
                import pyarrow.parquet as pq

                return pq.ParquetFile(source).metadata.num_rows
            import pyarrow.dataset as ds

            return ds.dataset(source, format="parquet").count_rows()
        except _READ_ERRORS as exc:
            raise _unreadable(Path(source), "parquet", exc) from None
    return None


def open_source(source: BatchSource, *, batch_size: int, dictionary: Sequence[str] = ()) -> Iterator[pa.RecordBatch]:
    """Record batches of ``source`` (at most ``batch_size`` rows each, files streamed).

    Raises:
        BatchInputError: A missing or unreadable file, or an unsupported source type.
    """
    check_batch_size(batch_size)
    if isinstance(source, pa.Table):
        return iter(source.to_batches(max_chunksize=batch_size))
    if isinstance(source, pa.RecordBatch):
        return iter(pa.Table.from_batches([source]).to_batches(max_chunksize=batch_size))
    if isinstance(source, (str, os.PathLike)):
        return _read_file(Path(source), batch_size, dictionary)
    if isinstance(source, pa.RecordBatchReader) or isinstance(source, Iterable):
        return _rebatch(iter(source), batch_size)
    try:
        import pyarrow.dataset as ds

        if isinstance(source, ds.Dataset):
            return iter(source.to_batches(batch_size=batch_size))
    except ImportError:  # pragma: no cover - part of pyarrow
        pass
    raise BatchInputError(f"cannot read pairs from a {type(source).__name__}: pass a pyarrow Table, RecordBatch, "
                          "RecordBatchReader, dataset or a file path")


def _rebatch(batches: Iterator[pa.RecordBatch], size: int) -> Iterator[pa.RecordBatch]:
    for b in batches:
        if not isinstance(b, pa.RecordBatch):
            raise BatchInputError(f"expected pyarrow RecordBatches, got a {type(b).__name__}")
        for off in range(0, max(b.num_rows, 1), size):
            yield b.slice(off, size)


def _read_file(path: Path, batch_size: int, dictionary: Sequence[str]) -> Iterator[pa.RecordBatch]:
    if not path.exists():
        raise BatchInputError(f"{path}: no such file or directory")
    fmt = file_format(path)
    try:
        for batch in _read_format(path, fmt, batch_size, dictionary):
            # Full validation checks UTF-8 (pyarrow's JSON reader passes invalid bytes
            # through, to fail later in to_pylist); Arrow does it at memory speed.
            batch.validate(full=True)
            yield batch
    except _READ_ERRORS as exc:
        if isinstance(exc, BatchInputError):
            raise
        raise _unreadable(path, fmt, exc) from None


def _string_columns(schema: pa.Schema, names: Sequence[str]) -> list[str]:
    """The columns of ``names`` that hold plain strings: only those may be read
    dictionary-encoded (pyarrow fails on a list column with a bare ``KeyError``)."""
    out = []
    for n in names:
        i = schema.get_field_index(n)
        if i >= 0 and (pa.types.is_string(schema.field(i).type) or pa.types.is_large_string(schema.field(i).type)):
            out.append(n)
    return out


def _read_format(path: Path, fmt: str, batch_size: int, dictionary: Sequence[str]) -> Iterator[pa.RecordBatch]:
    if fmt == "parquet":
        if path.is_dir():
            import pyarrow.dataset as ds

            fmt_opts = ds.ParquetFileFormat(default_fragment_scan_options=ds.ParquetFragmentScanOptions(pre_buffer=False))
            yield from ds.dataset(path, format=fmt_opts).to_batches(batch_size=batch_size)
            return
        import pyarrow.parquet as pq

        # No pre-buffering: pyarrow keeps every pre-buffered column chunk until the file
        # is closed, so peak memory grew with the file (+128 MB for 30M pairs, ~4 MB per
        # million rows); without it, it stays at a few row groups.
        pf = pq.ParquetFile(path, read_dictionary=_string_columns(pq.read_schema(path), dictionary),
                            pre_buffer=False)
        yield from pf.iter_batches(batch_size=batch_size)
    elif fmt == "ipc":
        import pyarrow.ipc as ipc

        try:
            reader = ipc.open_file(path)
            for i in range(reader.num_record_batches):
                yield from _rebatch(iter([reader.get_batch(i)]), batch_size)
        except pa.ArrowInvalid:
            yield from _rebatch(iter(ipc.open_stream(path)), batch_size)
    elif fmt == "csv":
        import pyarrow.csv as csv

        # Every column as text: an id column of digits must not turn into integers.
        names = csv.open_csv(path).schema.names
        reader = csv.open_csv(path, read_options=csv.ReadOptions(block_size=1 << 24),
                              convert_options=csv.ConvertOptions(column_types={n: pa.string() for n in names}))
        yield from _rebatch(iter(reader), batch_size)
    else:
        import pyarrow.json as pj

        yield from _rebatch(iter(pj.open_json(path)), batch_size)


class _JsonlWriter:
    def __init__(self, path: Path) -> None:
        self._f = open(path, "w", encoding="utf-8")  # noqa: SIM115 - closed by close(), across batches

    def write_batch(self, batch: pa.RecordBatch) -> None:
        for row in batch.to_pylist():
            self._f.write(json.dumps(row, ensure_ascii=False, allow_nan=False, default=str) + "\n")

    def close(self) -> None:
        self._f.close()


def plain_schema(schema: pa.Schema) -> pa.Schema:
    """``schema`` with dictionary-encoded columns declared as their value type."""
    return pa.schema([f.with_type(f.type.value_type) if pa.types.is_dictionary(f.type) else f for f in schema],
                     metadata=schema.metadata)


def _decoded(batch: pa.RecordBatch) -> pa.RecordBatch:
    if not any(pa.types.is_dictionary(t) for t in batch.schema.types):
        return batch
    return pa.RecordBatch.from_arrays(
        [c.dictionary_decode() if pa.types.is_dictionary(c.type) else c for c in batch.columns],
        schema=plain_schema(batch.schema))


class _DecodingWriter:
    """Writes dictionary columns as their values: string columns (``tool_id`` ...) come
    back as strings whatever the reader did to read them fast (CSV has no dictionary
    type; Arrow IPC would keep the encoding in the file's schema)."""

    def __init__(self, writer: Any) -> None:
        self._w = writer

    def write_batch(self, batch: pa.RecordBatch) -> None:
        self._w.write_batch(_decoded(batch))

    def close(self) -> None:
        self._w.close()


def _csv_writer(path: Path, schema: pa.Schema) -> _DecodingWriter:
    import pyarrow.csv as csv

    return _DecodingWriter(csv.CSVWriter(path, plain_schema(schema)))


def check_compression(compression: str | None, fmt: str) -> str | None:
    """The codec an output of format ``fmt`` is written with: ``compression``, or the
    format's default when it is ``None`` (``None``: uncompressed).

    Raises:
        BatchInputError: An unknown codec, or one the format cannot use.
    """
    if compression is None:
        return PARQUET_COMPRESSION if fmt == "parquet" else None
    if not isinstance(compression, str) or compression.lower() not in COMPRESSIONS:
        raise BatchInputError(f"compression must be one of {', '.join(COMPRESSIONS)}, got {compression!r}")
    codec = compression.lower()
    if fmt in ("csv", "jsonl") and codec != "none":
        raise BatchInputError(f"compression={codec!r}: {fmt} output is written uncompressed; use Parquet or Arrow IPC")
    if fmt == "ipc" and codec == "snappy":
        raise BatchInputError("compression='snappy': Arrow IPC files take none, lz4 or zstd")
    return None if codec == "none" else codec


def open_writer(path: str | os.PathLike, schema: pa.Schema, *, fmt: str | None = None,
                compression: str | None = None):
    """A writer for ``path`` with ``write_batch(batch)`` and ``close()``, in format
    ``fmt`` (default: by extension), compressed with ``compression`` (see
    :func:`check_compression`).

    Raises:
        BatchInputError: ``path`` is a directory, or a bad ``compression``.
    """
    path = Path(path)
    if path.is_dir():
        raise BatchInputError(f"{path}: is a directory; name an output file")
    fmt = fmt or file_format(path)
    codec = check_compression(compression, fmt)
    if fmt == "parquet":
        import pyarrow.parquet as pq

        # Dictionary pages only for dictionary columns, and no column statistics: trying
        # dictionaries on the score columns (pyarrow's default) tripled the write time,
        # and min/max statistics cost as much again as the rest of the write.
        # The Arrow schema is not stored in the file: columns read dictionary-encoded for
        # speed (query, tool_id) are dictionary pages in Parquet anyway, and a reader then
        # gets them back as plain strings, as they were in the input.
        dict_cols = [f.name for f in schema if pa.types.is_dictionary(f.type)]
        return pq.ParquetWriter(path, schema, use_dictionary=dict_cols or False, compression=codec or "none",
                                write_statistics=False, store_schema=False)
    if fmt == "ipc":
        import pyarrow.ipc as ipc

        return _DecodingWriter(ipc.new_file(path, plain_schema(schema), options=ipc.IpcWriteOptions(compression=codec)))
    if fmt == "csv":
        return _csv_writer(path, schema)
    return _JsonlWriter(path)


def source_schema(path: str | os.PathLike, *, dictionary: Sequence[str] = ()) -> pa.Schema:
    """The schema of a file (or Parquet directory) without reading its rows, as
    :func:`open_source` will return its batches."""
    path = Path(path)
    if not path.exists():
        raise BatchInputError(f"{path}: no such file or directory")
    fmt = file_format(path)
    try:
        return _format_schema(path, fmt, dictionary)
    except _READ_ERRORS as exc:
        if isinstance(exc, BatchInputError):
            raise
        raise _unreadable(path, fmt, exc) from None


def _format_schema(path: Path, fmt: str, dictionary: Sequence[str]) -> pa.Schema:
    if fmt == "parquet":
        if path.is_file():
            import pyarrow.parquet as pq

            names = _string_columns(pq.read_schema(path), dictionary)
            return pq.ParquetFile(path, read_dictionary=names).schema_arrow
        import pyarrow.dataset as ds

        return ds.dataset(path, format="parquet").schema
    if fmt == "ipc":
        import pyarrow.ipc as ipc

        try:
            return ipc.open_file(path).schema
        except pa.ArrowInvalid:
            return ipc.open_stream(path).schema
    if fmt == "csv":
        import pyarrow.csv as csv

        return pa.schema([(n, pa.string()) for n in csv.open_csv(path).schema.names])
    import pyarrow.json as pj

    return pj.open_json(path).schema
