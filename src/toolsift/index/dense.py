"""Int8 embedding matrices: quantized rows, Arrow exchange and memory-mapped files.

One :class:`Int8Matrix` holds the embeddings of one field (one row per tool, parameter or
example, in the field's document order) as ``int8`` codes with one ``float32`` scale per
row: 4x smaller than float32 and scored with integer dot products
(:mod:`toolsift.kernels.int8`).

In Arrow the matrix is a table with two columns, ``codes: fixed_size_list<int8>[d]`` and
``scale: float32``. Reading a table or a memory-mapped file does not copy: ``codes`` and
``scales`` are NumPy views of the Arrow buffers, so a loaded index is served straight
from the page cache.

Example:
    >>> m = Int8Matrix.quantize(embeddings)                  # doctest: +SKIP
    >>> m.save("description.int8.arrow")                     # doctest: +SKIP
    >>> m = Int8Matrix.load("description.int8.arrow")        # memory-mapped  # doctest: +SKIP
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from pathlib import Path

import numpy as np
import pyarrow as pa
from pyarrow import ipc

from ..errors import IndexCorruptError, IndexFormatError
from ..kernels.buffers import ALIGN, aligned, freeze, frozen
from .arrowcols import column

__all__ = ["INT8_FORMAT", "INT8_FORMAT_VERSION", "Int8Matrix", "freeze"]

INT8_FORMAT = "toolsift-int8-matrix"
INT8_FORMAT_VERSION = 1

_K_FORMAT = b"toolsift.format"
_K_VERSION = b"toolsift.format_version"
_K_SHA = b"toolsift.sha256"
_K_PAD = b"toolsift.pad"  # aligns int8 values in the file (align_in_file)


def _digest(codes: np.ndarray, scales: np.ndarray) -> str:
    # Over the payload buffers rather than the file: the IPC framing is pyarrow's business
    # and truncation of it is already caught by the reader.
    h = hashlib.sha256()
    h.update(np.ascontiguousarray(codes).view(np.uint8).reshape(-1).tobytes())
    h.update(np.ascontiguousarray(scales).view(np.uint8).tobytes())
    return h.hexdigest()


def _fsync_dir(directory: Path) -> None:
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:  # some platforms cannot open directories; the rename is still atomic
        return
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _view(arr: pa.Array, dtype: type[np.generic], count: int) -> np.ndarray:
    """NumPy view (no copy) of a primitive Arrow array's values, honouring its offset."""
    buf = arr.buffers()[1]
    if count == 0 or buf is None:
        return np.empty(0, dtype=dtype)
    item = np.dtype(dtype).itemsize
    return np.frombuffer(buf, dtype=dtype, count=count, offset=arr.offset * item)


def align_in_file(table: pa.Table, column: str) -> pa.Table:
    """``table`` (with its final schema metadata) with a padding entry added to that
    metadata so that, written as one Arrow IPC file, the int8 values of ``column`` start
    on a 64-byte boundary of the file: a memory-mapped load then scans them in place
    (:func:`toolsift.kernels.int8.aligned`; IPC aligns buffers to 8 bytes only).

    ``column`` is a ``fixed_size_list<int8>`` column (an :class:`Int8Matrix` table) or
    a ``large_list<int8>`` one that comes first (an IVF table: the buffers before it
    are then the same whatever the lists' lengths). Any other table, or one no padding
    aligns, is returned as it is; loading it copies the values into aligned memory.
    """
    if column not in table.column_names or not table.num_rows:
        return table
    ctype = table.schema.field(column).type
    if not ((pa.types.is_fixed_size_list(ctype) or pa.types.is_large_list(ctype)) and ctype.value_type == pa.int8()):
        return table
    probe = _probe(table)
    meta = dict(table.schema.metadata or {})
    for pad in range(0, ALIGN + 1, 8):
        pad_meta = {**meta, _K_PAD: b"." * pad} if pad else meta
        if _values_offset(probe.replace_schema_metadata(pad_meta), column) % ALIGN == 0:
            return table.replace_schema_metadata(pad_meta)
    return table


def _probe(table: pa.Table) -> pa.Table:
    """A small table whose IPC record batch metadata has the same size as ``table``'s
    (row counts, buffer offsets and lengths are fixed-size fields): its first row, or
    for one row of list columns each list cut to at most one value."""
    if table.num_rows > 1:
        return table.slice(0, 1)
    cols = []
    for col in table.columns:
        arr = _single_chunk(col)
        if pa.types.is_large_list(arr.type):
            values = arr.flatten()
            arr = pa.LargeListArray.from_arrays(column([0, min(1, len(values))], pa.int64()), values.slice(0, 1))
        cols.append(arr)
    return pa.Table.from_arrays(cols, schema=table.schema)


def _values_offset(table: pa.Table, column: str) -> int:
    """File offset of ``column``'s int8 values when ``table`` is written as one IPC file."""
    sink = pa.BufferOutputStream()
    with ipc.new_file(sink, table.schema) as writer:
        writer.write_table(table)
    whole = sink.getvalue()
    values = _single_chunk(ipc.open_file(pa.BufferReader(whole)).read_all().column(column)).flatten()
    return values.buffers()[1].address + values.offset - whole.address


def _single_chunk(col: pa.ChunkedArray) -> pa.Array:
    # combine_chunks() copies even a lone chunk of a nested type; take it as is instead.
    # No chunk at all (a field without rows): combine_chunks() would import pandas for it.
    if col.num_chunks == 0:
        return pa.nulls(0, col.type)
    return col.chunk(0) if col.num_chunks == 1 else col.combine_chunks()


class Int8Matrix:
    """Rows quantized to int8 with one symmetric float32 scale per row.

    ``row[i] ≈ codes[i] * scales[i]`` with ``scales[i] = max|row[i]| / 127``; an all-zero
    row has scale 0. Instances are immutable: arrays from :meth:`from_arrow` and
    :meth:`load` share memory with Arrow buffers or a file mapping and are read-only, and
    arrays something else could still write are copied (see :func:`freeze` for handing
    over fresh ones without a copy). The scan reads them without the GIL.

    Attributes:
        codes: ``int8[n, d]``, C-contiguous.
        scales: ``float32[n]``, finite and >= 0.
    """

    __slots__ = ("_keepalive", "codes", "scales")

    def __init__(self, codes: np.ndarray, scales: np.ndarray, *, _keepalive: object = None) -> None:
        """Wrap existing codes and scales (no copy when they already have the right layout).

        Args:
            codes: ``int8[n, d]``.
            scales: ``float32[n]``, finite and >= 0.

        Raises:
            ValueError: Wrong dtype, shape, length or a negative / non-finite scale.
        """
        codes = np.asarray(codes)
        scales = np.asarray(scales)
        if codes.ndim != 2:
            raise ValueError(f"codes must be 2-D (rows, dim), got shape {codes.shape}")
        if codes.dtype != np.int8:
            raise ValueError(f"codes must have dtype int8, got {codes.dtype}")
        if scales.ndim != 1 or scales.shape[0] != codes.shape[0]:
            raise ValueError(
                f"scales must have shape ({codes.shape[0]},) (one per row), got {scales.shape}"
            )
        if scales.dtype != np.float32:
            raise ValueError(f"scales must have dtype float32, got {scales.dtype}")
        bad = ~np.isfinite(scales) | (scales < 0)
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            raise ValueError(f"scales[{i}]={scales[i]} must be finite and >= 0")
        # Aligned for the scan: arrays made by toolsift are allocated so (no copy here);
        # a caller's or a file's that are not are copied once.
        self.codes = aligned(frozen(np.ascontiguousarray(codes)))
        self.scales = frozen(np.ascontiguousarray(scales))
        self._keepalive = _keepalive  # Arrow table / memory map the views point into

    # ---------------------------------------------------------------- construction

    @classmethod
    def quantize(cls, x: np.ndarray) -> Int8Matrix:
        """Quantize float32 rows (e.g. L2-normalised embeddings).

        Args:
            x: ``float32[n, d]``; other float dtypes are converted.

        Raises:
            ValueError: ``x`` is not 2-D, not floating point, or not finite.
        """
        from ..kernels.int8 import quantize_rows

        codes, scales = quantize_rows(x)
        return cls(freeze(codes), freeze(scales))

    def dequantize(self) -> np.ndarray:
        """Return the approximated rows, ``float32[n, d] = codes * scales[:, None]``."""
        return self.codes.astype(np.float32) * self.scales[:, None]

    # ---------------------------------------------------------------- properties

    @property
    def n_rows(self) -> int:
        """Number of rows ``n``."""
        return int(self.codes.shape[0])

    @property
    def dim(self) -> int:
        """Row dimension ``d``."""
        return int(self.codes.shape[1])

    @property
    def nbytes(self) -> int:
        """Bytes of codes plus scales (``n * (d + 4)``)."""
        return int(self.codes.nbytes + self.scales.nbytes)

    def __len__(self) -> int:
        return self.n_rows

    def __repr__(self) -> str:
        return f"Int8Matrix(n_rows={self.n_rows}, dim={self.dim})"

    # ---------------------------------------------------------------- Arrow

    def to_arrow(self) -> pa.Table:
        """Return a table with ``codes: fixed_size_list<int8>[d]`` and ``scale: float32``.

        The table's buffers wrap this matrix's arrays without copying.
        """
        flat = column(self.codes.reshape(-1), pa.int8())
        codes = pa.FixedSizeListArray.from_arrays(flat, self.dim)
        scale = column(self.scales, pa.float32())
        return pa.Table.from_arrays([codes, scale], names=["codes", "scale"])

    @classmethod
    def from_arrow(cls, table: pa.Table) -> Int8Matrix:
        """View a table written by :meth:`to_arrow` as a matrix, without copying.

        ``codes`` becomes ``np.frombuffer`` over the int8 buffer of the fixed-size list's
        child, ``scales`` over the float32 buffer. A column split into several chunks is
        combined first, which copies it.

        Raises:
            ValueError: Missing columns, wrong types or nulls.
        """
        names = set(table.column_names)
        for col in ("codes", "scale"):
            if col not in names:
                raise ValueError(f"table has no {col!r} column (columns: {table.column_names})")
        ctype = table.schema.field("codes").type
        if not (pa.types.is_fixed_size_list(ctype) and ctype.value_type == pa.int8()):
            raise ValueError(f"column 'codes' must be fixed_size_list<int8>, got {ctype}")
        stype = table.schema.field("scale").type
        if stype != pa.float32():
            raise ValueError(f"column 'scale' must be float32, got {stype}")
        d = ctype.list_size
        n = table.num_rows
        codes_arr = _single_chunk(table.column("codes"))
        scale_arr = _single_chunk(table.column("scale"))
        if codes_arr.null_count or scale_arr.null_count:
            raise ValueError("columns 'codes' and 'scale' must not hold nulls")
        # The child sliced by the parent's offset (no copy), as flatten() would give it
        # without importing pyarrow.compute (~40 ms of a search process's CPU); the
        # child's own offset is then honoured by _view.
        child = codes_arr.values.slice(codes_arr.offset * d, n * d)
        if child.null_count:
            raise ValueError("column 'codes' must not hold null codes")
        codes = _view(child, np.int8, n * d).reshape(n, d)
        scales = _view(scale_arr, np.float32, n)
        return cls(codes, scales, _keepalive=(table, codes_arr, scale_arr))

    # ---------------------------------------------------------------- files

    def save(self, path: str | os.PathLike) -> Path:
        """Write the matrix as one Arrow IPC file, atomically.

        The file goes to a temporary sibling, is fsynced and then renamed over ``path``,
        so readers see the old file or the new one, never a half-written one. The schema
        metadata carries the format name, version and a SHA-256 of codes and scales.

        Returns:
            The absolute path written.
        """
        path = Path(path).absolute()
        path.parent.mkdir(parents=True, exist_ok=True)
        table = self.to_arrow()
        meta = {
            _K_FORMAT: INT8_FORMAT.encode(),
            _K_VERSION: str(INT8_FORMAT_VERSION).encode(),
            _K_SHA: _digest(self.codes, self.scales).encode(),
        }
        table = align_in_file(table.replace_schema_metadata(meta), "codes")
        fd, tmp_name = tempfile.mkstemp(prefix=f".{path.name}.tmp-", dir=path.parent)
        os.close(fd)
        tmp = Path(tmp_name)
        try:
            with pa.OSFile(str(tmp), "wb") as sink, ipc.new_file(sink, table.schema) as writer:
                writer.write_table(table)
            fd = os.open(tmp, os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)
            os.replace(tmp, path)
        except BaseException:
            tmp.unlink(missing_ok=True)
            raise
        _fsync_dir(path.parent)
        return path

    @classmethod
    def load(cls, path: str | os.PathLike, *, mmap: bool = True, verify: bool = True) -> Int8Matrix:
        """Read a file written by :meth:`save`; memory-mapped (zero-copy) when ``mmap``.

        Args:
            path: The ``.arrow`` file.
            mmap: Map the file instead of reading it into memory.
            verify: Check the SHA-256 of codes and scales (reads every page once).

        Raises:
            IndexFormatError: The file is missing, or is not an int8 matrix file of a
                version this toolsift reads.
            IndexCorruptError: The file is truncated, unreadable or fails its checksum.
        """
        path = Path(path)
        if not path.is_file():
            raise IndexFormatError(f"{path}: int8 matrix file is missing")
        try:
            source = pa.memory_map(str(path), "r") if mmap else pa.OSFile(str(path), "rb")
            with source:
                # Buffers of a memory map share its mapped region, which outlives close().
                table = ipc.open_file(source).read_all()
        except (pa.ArrowException, OSError, ValueError) as exc:
            raise IndexCorruptError(f"{path}: cannot read Arrow IPC file ({exc})") from None
        meta = table.schema.metadata or {}
        if meta.get(_K_FORMAT) != INT8_FORMAT.encode():
            raise IndexFormatError(f"{path}: not a {INT8_FORMAT} file")
        try:
            version = int(meta.get(_K_VERSION, b""))
        except ValueError:
            raise IndexCorruptError(f"{path}: unreadable format version") from None
        if version > INT8_FORMAT_VERSION:
            raise IndexFormatError(
                f"{path}: format version {version} is newer than this toolsift reads "
                f"({INT8_FORMAT_VERSION})"
            )
        try:
            matrix = cls.from_arrow(table)
        except ValueError as exc:
            raise IndexCorruptError(f"{path}: {exc}") from None
        if verify and _digest(matrix.codes, matrix.scales).encode() != meta.get(_K_SHA):
            raise IndexCorruptError(f"{path}: SHA-256 mismatch (the file is damaged)")
        return matrix
