"""What the stdio and HTTP upstream transports share to cap a ``tools/call`` result: the
error code and the bounded count of JSON values (its own module, so neither transport
imports the other)."""

from __future__ import annotations

from typing import Any

__all__ = ["RESULT_TOO_LARGE", "count_items"]

#: The ``data.toolsift`` code of an answer dropped for its size.
RESULT_TOO_LARGE = "result_too_large"


def count_items(value: Any, limit: int) -> int:
    """JSON values below ``value`` (array elements, object members), counting stops
    once past ``limit``."""
    count, stack = 0, [value]
    while stack and count <= limit:
        v = stack.pop()
        if isinstance(v, dict):
            count += len(v)
            stack.extend(v.values())
        elif isinstance(v, list):
            count += len(v)
            stack.extend(v)
    return count
