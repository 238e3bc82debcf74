"""Scale-out of batch scoring on Ray Data (``pip install 'toolsift[ray]'``).

The scorer is mapped over a ``ray.data.Dataset`` of pairs with
``Dataset.map_batches`` and a callable class, :class:`IndexScorer`, that opens the saved
index once per worker (``ToolIndex.load`` memory-maps it, so workers on one machine
share its pages) and keeps its query store and tables for every batch it scores. The
scores are the single-process ones bit for bit: each pair's score depends only on the
query, the tool and the index, never on which other pairs share its batch.

On a cluster, the index directory must be readable at the same path on every node
(shared storage); see docs/batch.md.

Example:
    >>> import ray, toolsift.distributed as td                          # doctest: +SKIP
    >>> ds = ray.data.read_parquet("s3://bucket/pairs/")                # doctest: +SKIP
    >>> td.score_dataset(ds, "/mnt/shared/index").write_parquet("s3://bucket/scores/")  # doctest: +SKIP
"""

from __future__ import annotations

import os
import re
import time
from pathlib import Path
from typing import Any

import pyarrow as pa

from .batch.columns import BatchInputError
from .batch.files import FileResult
from .batch.io import check_batch_size, check_compression, file_format, open_writer, source_schema
from .batch.outputs import check_output, temp_output
from .errors import ToolsiftError

__all__ = ["IndexScorer", "score_dataset", "score_file_ray"]


def _ray():
    try:
        import ray
        import ray.data
    except ImportError:
        raise ToolsiftError("the Ray engine needs Ray Data: pip install 'toolsift[ray]'") from None
    return ray


class IndexScorer:
    """The ``map_batches`` callable: one per Ray worker, holding the memory-mapped index.

    Args:
        index: Path of the saved index (the same path on every node).
        options: Keyword options of :class:`~toolsift.batch.PairScorer`.
    """

    def __init__(self, index: str, **options: Any) -> None:
        from .batch.scorer import PairScorer
        from .toolindex import ToolIndex

        self.scorer = PairScorer(ToolIndex.load(index), **options)

    def __call__(self, batch: pa.Table) -> pa.Table:
        """Score one Ray batch (a ``pyarrow.Table``)."""
        out = [self.scorer.score_batch(b) for b in batch.to_batches() if b.num_rows]
        if not out:
            return self.scorer.output_schema(batch.schema).empty_table()
        return pa.Table.from_batches(out)


def score_dataset(ds, index: str | os.PathLike, *, workers: int | None = None, batch_size: int = 262_144,
                  threads: int = 1, cpus_per_worker: float = 1.0, **options: Any):
    """Map the scorer over the Ray dataset ``ds`` of pairs; returns the scored dataset
    (lazy, as Ray datasets are): the input columns kept, then the score columns.

    Args:
        ds: A ``ray.data.Dataset`` with the columns :func:`~toolsift.batch.score_batches`
            expects.
        index: Path of a saved index, readable by every worker.
        workers: Scorer actors (default: as many as Ray schedules, up to one per CPU).
        batch_size: Rows per scored batch.
        threads: Threads per worker (default 1: Ray runs one worker per CPU).
        cpus_per_worker: CPUs Ray reserves per scorer actor. When the actors would
            reserve every CPU of the cluster, Ray has none left for the tasks that read
            the input and the job stalls: use a fraction (e.g. 0.5) on small clusters.
        options: Other options of :func:`~toolsift.batch.score_batches` (``query_column``,
            ``tool_column``, ``keep``, ``on_error``, ``query_format``, ``table_mb`` ...).
            With ``on_error="raise"`` a row is named by its position in its worker's
            stream, not in the dataset; prefer ``on_error="column"`` on Ray.
    """
    _ray()
    index = str(Path(index).resolve())
    if not Path(index).is_dir():
        raise BatchInputError(f"{index}: no index directory (it must be on storage every worker can read)")
    if workers is not None and workers < 1:
        raise BatchInputError(f"workers must be >= 1, got {workers}")
    concurrency = workers if workers is not None else (1, max(1, int(_ray().cluster_resources().get("CPU", 1))))
    return ds.map_batches(IndexScorer, fn_constructor_kwargs={"index": index, "threads": threads, **options},
                          batch_format="pyarrow", batch_size=batch_size, concurrency=concurrency,
                          num_cpus=cpus_per_worker)


def _read(ray, path: Path, query_column: str, tool_column: str):
    fmt = file_format(path)
    if fmt == "parquet":
        return ray.data.read_parquet(str(path))
    if fmt == "csv":
        import pyarrow.csv as csv

        names = source_schema(path).names
        return ray.data.read_csv(str(path), convert_options=csv.ConvertOptions(
            column_types={n: pa.string() for n in names}))
    if fmt == "jsonl":
        return ray.data.read_json(str(path), lines=True)
    raise BatchInputError(f"{path}: the Ray engine reads Parquet, CSV or JSON Lines, not {fmt}")


def score_file_ray(index: str | os.PathLike, pairs: str | os.PathLike, out: str | os.PathLike, *,
                   address: str | None = None, workers: int | None = None, batch_size: int = 262_144,
                   progress: bool = False, threads: int | None = None, compression: str | None = None,
                   **options: Any) -> FileResult:
    """``toolsift score --engine ray``: score the file ``pairs`` on Ray into the file
    ``out``, rows in input order (the driver writes what the workers return).

    Args:
        index: Saved index directory, on storage every node reads at this path.
        pairs: Pairs file (Parquet file or directory, CSV, JSONL).
        out: Output file (format by extension).
        address: Ray cluster address; ``None`` starts (or reuses) a local instance.
        workers: Scorer actors.
        batch_size: Rows per scored batch.
        progress: Show Ray's progress bars.
        threads: Threads per worker (default 1).
        compression: Output codec, as :func:`~toolsift.batch.files.score_file`.
        options: As :func:`~toolsift.batch.score_batches`.
    """
    ray = _ray()
    from .batch.scorer import PairScorer
    from .toolindex import ToolIndex

    pairs, out = Path(pairs), Path(out)
    if not pairs.exists():
        raise BatchInputError(f"{pairs}: no such file or directory")
    check_output(out, inputs=(pairs, index))  # never overwrite what is read
    check_batch_size(batch_size)
    check_compression(compression, file_format(out))
    # Check columns and options on the driver before any cluster work.
    local = PairScorer(ToolIndex.load(index), **options)
    schema = local.output_schema(source_schema(pairs))
    if not ray.is_initialized():
        ray.init(address=address, include_dashboard=False, log_to_driver=False, configure_logging=False)
    ctx = ray.data.DataContext.get_current()
    ctx.execution_options.preserve_order = True
    ctx.enable_progress_bars = progress
    t0 = time.perf_counter()
    cpus = float(ray.cluster_resources().get("CPU", 1))
    n = workers or max(1, int(cpus))
    # Leave one CPU for the read tasks (they ask for one each): actors reserving every
    # CPU would starve them and the job would stall.
    per_worker = min(1.0, max(0.1, (cpus - 1.0) / n))
    ds = score_dataset(_read(ray, pairs, local.query_column, local.tool_column), index, workers=n,
                       batch_size=batch_size, threads=1 if threads in (None, 0) else threads,
                       cpus_per_worker=per_worker, **options)
    tmp = temp_output(out)
    writer = None
    rows = errors = 0
    try:
        for table in ds.iter_batches(batch_format="pyarrow", batch_size=None):
            for b in table.to_batches():
                if writer is None:
                    writer = open_writer(tmp, b.schema, fmt=file_format(out), compression=compression)
                writer.write_batch(b)
                rows += b.num_rows
                if "error" in b.schema.names:
                    errors += b.num_rows - b.column("error").null_count
        if writer is None:
            writer = open_writer(tmp, schema, fmt=file_format(out), compression=compression)
        writer.close()
        os.replace(tmp, out)
    except BaseException as exc:
        if writer is not None:
            writer.close()
        tmp.unlink(missing_ok=True)
        cause = _toolsift_cause(exc)
        if cause is not None and cause is not exc:
            # A bad row on a worker: report it as toolsift's own error, not Ray's wrapper.
            raise cause from None
        raise
    return FileResult(rows, rows, errors, time.perf_counter() - t0)


def _toolsift_cause(exc: BaseException) -> ToolsiftError | None:
    """The toolsift error behind a Ray exception, if any.

    Ray Data re-raises a worker's exception as ``UserCodeException`` carrying only the
    remote traceback's text, so the error is recovered from its last line.
    """
    seen = set()
    e: BaseException | None = exc
    while e is not None and id(e) not in seen:
        seen.add(id(e))
        if isinstance(e, ToolsiftError):
            return e
        e = getattr(e, "cause", None) or e.__cause__
    found = re.findall(r"^toolsift\.[\w.]*?(\w+Error): (.+)$", str(exc), flags=re.MULTILINE)
    if found:
        kind, message = found[-1]
        return ToolsiftError(f"on a Ray worker: {message}" if kind == "BatchRowError" else
                             f"on a Ray worker: {kind}: {message}")
    return None
