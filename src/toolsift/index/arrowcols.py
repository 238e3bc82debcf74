"""Arrow arrays built from buffers, for writing indexes without importing pandas.

``pa.array`` asks pyarrow's pandas shim whether its input is a pandas object, and the
shim's first question imports pandas (~0.3 CPU s, once per process) even for a NumPy
array. Saving an index only ever needs plain numeric arrays and lists of strings or
bytes, so they are assembled from their buffers here (NumPy input without a copy).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pyarrow as pa

__all__ = ["column"]

_NUMPY = {pa.int8(): np.int8, pa.uint8(): np.uint8, pa.int16(): np.int16, pa.int32(): np.int32,
          pa.int64(): np.int64, pa.uint32(): np.uint32, pa.uint64(): np.uint64, pa.float32(): np.float32,
          pa.float64(): np.float64}
_OFFSETS = {pa.string(): np.int32, pa.binary(): np.int32, pa.large_string(): np.int64,
            pa.large_binary(): np.int64}


def column(values: np.ndarray | Sequence, type: pa.DataType | None = None) -> pa.Array:
    """What ``pa.array(values, type)`` gives for a numeric type (no nulls; a NumPy array of
    that dtype is wrapped, not copied; ``type=None`` takes the array's dtype) or a string
    / binary type (a sequence of ``str``, ``bytes`` or ``None`` for a null).

    Raises:
        TypeError: Another Arrow type.
    """
    if type is None:
        type = pa.from_numpy_dtype(np.asarray(values).dtype)
    if type in _OFFSETS:
        data = [b"" if v is None else v.encode() if isinstance(v, str) else bytes(v) for v in values]
        offsets = np.zeros(len(data) + 1, dtype=_OFFSETS[type])
        np.cumsum([len(d) for d in data], out=offsets[1:])
        valid = np.fromiter((v is not None for v in values), bool, len(data))
        nulls = len(data) - int(valid.sum())
        bitmap = pa.py_buffer(np.packbits(valid, bitorder="little")) if nulls else None
        return pa.Array.from_buffers(type, len(data), [bitmap, pa.py_buffer(offsets), pa.py_buffer(b"".join(data))],
                                     null_count=nulls)
    if type not in _NUMPY:
        raise TypeError(f"column: unsupported Arrow type {type}")
    arr = np.ascontiguousarray(values, dtype=_NUMPY[type]).reshape(-1)
    return pa.Array.from_buffers(type, len(arr), [None, pa.py_buffer(arr)])
