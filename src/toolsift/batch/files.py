"""File to file: ``toolsift score`` and ``toolsift rank`` without the argument parsing.

The input is streamed batch by batch, scored on the calling thread while the next batch
is read and the previous one written (:mod:`toolsift.batch.pipeline`), with an optional
progress bar showing pairs (or queries) per second. The output is written next to its
final name and renamed into place when complete, so a failed run leaves no half file.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa

from .api import BATCH_SIZE, load_index
from .columns import BatchInputError
from .io import check_compression, file_format, open_source, open_writer, source_rows, source_schema
from .outputs import check_output, temp_output
from .pipeline import run_stages
from .rank import Ranker
from .scorer import PairScorer

__all__ = ["FileResult", "rank_file", "score_file", "write_batches"]

#: Input batches read ahead of the scoring (outputs queued: two).
_READ_AHEAD = 8


@dataclass(frozen=True)
class FileResult:
    """What a file run did.

    Attributes:
        rows_in: Input rows (pairs, or queries for ranking).
        rows_out: Output rows.
        errors: Rows with an error (``on_error="column"``).
        seconds: Wall-clock time from the first read to the closed output.
    """

    rows_in: int
    rows_out: int
    errors: int
    seconds: float


def write_batches(batches: Iterator[pa.RecordBatch], out: str | os.PathLike, schema: pa.Schema, *,
                  work: Callable[[pa.RecordBatch], pa.RecordBatch], progress: bool = False,
                  total: int | None = None, unit: str = "pair", compression: str | None = None) -> FileResult:
    """``work`` every batch and write the results to ``out`` (format by extension,
    ``compression`` as :func:`~toolsift.batch.io.open_writer`)."""
    out = check_output(out)
    fmt = file_format(out)
    tmp = temp_output(out)
    try:
        writer = open_writer(tmp, schema, fmt=fmt, compression=compression)
    except BaseException as exc:
        tmp.unlink(missing_ok=True)
        if _is_io(exc):
            raise _write_error(out, exc) from None
        raise
    bar = None
    if progress:
        from tqdm.auto import tqdm

        from ..progress import SHOW_AFTER_S

        # Shown only once the run has lasted SHOW_AFTER_S, like every other bar: a file
        # rejected in its first batch prints its error, not a 0% bar before it.
        bar = tqdm(total=total, unit=unit, unit_scale=True, desc="toolsift", leave=False, delay=SHOW_AFTER_S)
    counts = {"in": 0, "out": 0, "err": 0}

    def step(batch: pa.RecordBatch) -> pa.RecordBatch:
        res = work(batch)
        counts["in"] += batch.num_rows
        if bar is not None:
            bar.update(batch.num_rows)
        return res

    def sink(res: pa.RecordBatch) -> None:
        counts["out"] += res.num_rows
        if "error" in res.schema.names:
            counts["err"] += res.num_rows - res.column("error").null_count
        try:
            writer.write_batch(res)
        except BaseException as exc:
            if _is_io(exc):
                raise _write_error(out, exc) from None
            raise

    t0 = time.perf_counter()
    try:
        # Inputs are small (a scored file's strings arrive dictionary-encoded: a few MB a
        # batch) and the first batches are the slow ones (the distinct queries' analysis
        # and tables): reading runs ahead meanwhile instead of stopping after two.
        run_stages(batches, step, sink, read_ahead=_READ_AHEAD)
        try:
            writer.close()
            os.replace(tmp, out)
        except BaseException as exc:
            if _is_io(exc):
                raise _write_error(out, exc) from None
            raise
    except BaseException:
        try:
            writer.close()
        except BaseException:  # noqa: BLE001 - the first error is the one to report
            pass
        finally:
            tmp.unlink(missing_ok=True)
        raise
    finally:
        if bar is not None:
            bar.close()
    return FileResult(counts["in"], counts["out"], counts["err"], time.perf_counter() - t0)


def _is_io(exc: BaseException) -> bool:
    return isinstance(exc, (OSError, pa.ArrowException)) and not isinstance(exc, BatchInputError)


def _write_error(out: Path, exc: BaseException) -> BatchInputError:
    """An output that cannot be written (disk full, no permission, ...) as one typed line."""
    reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc).splitlines()[0]
    return BatchInputError(f"{out}: cannot write the output: {reason}")


def score_file(index, pairs: str | os.PathLike, out: str | os.PathLike, *, progress: bool = False,
               batch_size: int = BATCH_SIZE, compression: str | None = None, **options) -> FileResult:
    """Score the pairs file ``pairs`` into ``out`` (options as
    :func:`~toolsift.batch.score_batches`; ``compression``: ``none``, ``lz4``, ``zstd``
    or ``snappy``, default lz4 for Parquet, see :func:`~toolsift.batch.io.check_compression`)."""
    check_output(out, inputs=(pairs, index))  # never overwrite what is read
    check_compression(compression, file_format(out))  # a bad codec fails before any work
    scorer = PairScorer(load_index(index), **options)
    dictionary = (scorer.query_column, scorer.tool_column)
    schema = scorer.output_schema(source_schema(pairs, dictionary=dictionary))  # bad columns fail before any work
    # The row count (a Parquet footer read) lets frequent queries get their tables early.
    total = source_rows(pairs)
    if scorer.expected_rows is None:
        scorer.expected_rows = total
    batches = open_source(pairs, batch_size=batch_size, dictionary=dictionary)
    return write_batches(batches, out, schema, work=scorer.score_batch, progress=progress,
                         total=total if progress else None, compression=compression)


def rank_file(index, queries: str | os.PathLike, out: str | os.PathLike, *, k: int, progress: bool = False,
              batch_size: int = 1024, compression: str | None = None, **options) -> FileResult:
    """Rank every query of the file ``queries`` into ``out`` (options as
    :func:`~toolsift.batch.rank_batches`, ``compression`` as :func:`score_file`)."""
    check_output(out, inputs=(queries, index))
    check_compression(compression, file_format(out))
    ranker = Ranker(load_index(index), k=k, **options)
    schema = ranker.output_schema(source_schema(queries))
    return write_batches(open_source(queries, batch_size=batch_size), out, schema, work=ranker.rank_batch,
                         progress=progress, total=source_rows(queries) if progress else None, unit="query",
                         compression=compression)
