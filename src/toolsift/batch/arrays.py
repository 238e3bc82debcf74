"""Arrow arrays to and from NumPy through their buffers, without pandas.

pyarrow imports pandas (when installed) on the first ``pa.array``, ``pa.scalar`` or
``Array.to_numpy(zero_copy_only=False)`` call, to check whether the argument is a pandas
object: ~0.3 CPU-seconds, a tenth of a whole ``toolsift score`` run. The batch scorer's
conversions are all of plain fixed-width columns, so they are made here from the
buffers (zero-copy where the layout allows).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pyarrow as pa

__all__ = ["float32_column", "int_values", "string_array", "valid_mask"]


def valid_mask(arr: pa.Array) -> np.ndarray | None:
    """``bool[len(arr)]``: which entries are not null; ``None`` when none is."""
    if not arr.null_count:
        return None
    bitmap = arr.buffers()[0]
    if bitmap is None:  # a null-typed array: every entry is null
        return np.zeros(len(arr), dtype=bool)
    bits = np.unpackbits(np.frombuffer(bitmap, np.uint8), bitorder="little", count=len(arr) + arr.offset)
    return bits[arr.offset:].astype(bool)


def int_values(arr: pa.Array, *, null: int = 0) -> np.ndarray:
    """An integer array's values as NumPy (zero-copy view when it has no nulls), with
    ``null`` where it is null."""
    if not pa.types.is_integer(arr.type):
        raise TypeError(f"expected an integer array, got {arr.type}")
    dtype = np.dtype(arr.type.to_pandas_dtype())  # a NumPy dtype; pandas is not imported
    values = np.frombuffer(arr.buffers()[1], dtype=dtype, count=len(arr) + arr.offset)[arr.offset:]
    valid = valid_mask(arr)
    if valid is None:
        return values
    values = values.copy()
    values[~valid] = null
    return values


def float32_column(values: np.ndarray, valid: np.ndarray | None = None) -> pa.Array:
    """Contiguous float32 ``values`` as an Arrow column without a copy, null where
    ``valid`` is False."""
    values = np.ascontiguousarray(values, dtype=np.float32)
    bitmap, nulls = None, 0
    if valid is not None:
        bitmap = pa.py_buffer(np.packbits(valid, bitorder="little"))
        nulls = int(valid.size - np.count_nonzero(valid))
    return pa.Array.from_buffers(pa.float32(), values.size, [bitmap, pa.py_buffer(values)], null_count=nulls)


def string_array(values: Sequence[str]) -> pa.Array:
    """Python strings as an Arrow string array (``large_string`` past 2 GiB of text)."""
    data = [v.encode("utf-8") for v in values]
    offsets = np.zeros(len(data) + 1, np.int64)
    np.cumsum(np.fromiter(map(len, data), np.int64, count=len(data)), out=offsets[1:])
    if offsets[-1] < 2**31:
        return pa.Array.from_buffers(pa.string(), len(data), [None, pa.py_buffer(offsets.astype(np.int32)),
                                                               pa.py_buffer(b"".join(data))])
    return pa.Array.from_buffers(pa.large_string(), len(data), [None, pa.py_buffer(offsets),
                                                                 pa.py_buffer(b"".join(data))])
