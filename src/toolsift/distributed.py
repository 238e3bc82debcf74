"""Scale-out on Ray Data (``pip install 'toolsift[ray]'``): batch scoring, and the dense
field embeddings of large catalogues.

**Embeddings.** :class:`TextEmbedder` is a ``map_batches`` callable class that loads the
ONNX encoder once per worker and turns an Arrow batch of texts into the same batch with
an ``embedding`` column (``fixed_size_list<float32>[dim]``); :func:`embed_dataset` maps it
over a dataset. :class:`RayEncoder` wraps that as an encoder object, so
``ToolIndex.build(catalog, preset="hybrid", encoder=RayEncoder())`` (or
:func:`build_index_ray`) embeds a catalogue on the cluster, through the embedding cache
(only texts the cache lacks go to Ray), and gives the index a local build gives: an
encoder's rows do not depend on the batch they are in (``tests/test_distributed_embed.py``
checks the vectors bit for bit).

**Scoring.**
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

import numpy as np
import pyarrow as pa

from .batch.columns import BatchInputError
from .batch.files import FileResult
from .batch.io import check_batch_size, check_compression, file_format, open_writer, source_schema
from .batch.outputs import check_output, temp_output
from .errors import ToolsiftError

__all__ = ["IndexScorer", "RayEncoder", "TextEmbedder", "build_index_ray", "embed_dataset", "score_dataset",
           "score_file_ray"]


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


class TextEmbedder:
    """The ``map_batches`` callable for embeddings: one per Ray worker, holding the
    encoder (loaded once, in the constructor).

    Args:
        encoder: Model folder or ``.onnx`` file (``None``: the default model), as
            :class:`~toolsift.encoders.OnnxEncoder`; it must exist at this path on every node.
        text_column: The column of texts (``str``; a null is embedded as the empty text).
        threads: Cores per worker (default 1: Ray runs one worker per CPU).
    """

    def __init__(self, encoder: str | None = None, *, text_column: str = "text", threads: int = 1) -> None:
        from .encoders import OnnxEncoder

        self.encoder = OnnxEncoder(encoder, threads=threads)
        self.text_column = text_column

    def __call__(self, batch: pa.Table) -> pa.Table:
        """Embed one Ray batch (a ``pyarrow.Table``): the batch plus an ``embedding`` column."""
        if self.text_column not in batch.column_names:
            raise BatchInputError(f"no column {self.text_column!r} to embed (columns: {', '.join(batch.column_names)})")
        texts = ["" if t is None else t for t in batch.column(self.text_column).to_pylist()]
        vecs = np.ascontiguousarray(self.encoder.encode(texts), dtype=np.float32)
        emb = pa.FixedSizeListArray.from_arrays(pa.array(vecs.reshape(-1), pa.float32()), self.encoder.dim)
        return batch.append_column("embedding", emb)


def embed_dataset(ds, *, encoder: str | None = None, text_column: str = "text", workers: int | None = None,
                  batch_size: int = 512, threads: int = 1, cpus_per_worker: float = 1.0):
    """Map :class:`TextEmbedder` over the Ray dataset ``ds``; returns the dataset (lazy)
    with an ``embedding`` column (unit-length ``float32`` rows) after its own columns.

    Args:
        ds: A ``ray.data.Dataset`` with a string column ``text_column``.
        encoder: Model folder or file, the same path on every node (``None``: default model).
        text_column: The column to embed.
        workers: Encoder actors (default: up to one per CPU of the cluster).
        batch_size: Rows per Ray batch (the encoder sorts each by length and batches it
            further).
        threads: Cores per worker.
        cpus_per_worker: CPUs Ray reserves per actor (see :func:`score_dataset`).
    """
    ray = _ray()
    if workers is not None and workers < 1:
        raise BatchInputError(f"workers must be >= 1, got {workers}")
    concurrency = workers if workers is not None else (1, max(1, int(ray.cluster_resources().get("CPU", 1))))
    return ds.map_batches(TextEmbedder, fn_constructor_kwargs={"encoder": encoder, "text_column": text_column,
                                                               "threads": threads},
                          batch_format="pyarrow", batch_size=batch_size, concurrency=concurrency,
                          num_cpus=cpus_per_worker)


class RayEncoder:
    """An encoder object (``dim``, ``fingerprint``, ``encode``) whose ``encode`` runs on
    Ray Data through :func:`embed_dataset`: pass it as ``ToolIndex.build(..., encoder=)``.

    It identifies itself by the model files' fingerprint, which is what
    :class:`~toolsift.encoders.OnnxEncoder` on the same files reports, so its vectors
    share the embedding cache with local builds and the index it builds loads anywhere
    that model is installed.

    Args:
        encoder: Model folder or file, as in :class:`~toolsift.config.IndexConfig`
            (``None``: the default model); the same path on every node.
        address: Ray cluster address; ``None`` starts (or reuses) a local instance.
        workers: Encoder actors (default: up to one per CPU).
        batch_size: Texts per Ray batch.
        cpus_per_worker: CPUs Ray reserves per actor.
    """

    def __init__(self, encoder: str | None = None, *, address: str | None = None, workers: int | None = None,
                 batch_size: int = 512, cpus_per_worker: float = 1.0) -> None:
        from .encoders import OnnxEncoder

        local = OnnxEncoder(encoder, threads=1)  # resolves and checks the files, learns the width
        self.encoder = encoder
        self.dim = local.dim
        self.fingerprint = local.fingerprint
        self.address, self.workers, self.batch_size = address, workers, batch_size
        self.cpus_per_worker = cpus_per_worker

    def encode(self, texts) -> np.ndarray:
        """Embed ``texts`` on the cluster; rows in input order."""
        ray = _ray()
        texts = list(texts)
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        if not texts:
            return out
        if not ray.is_initialized():
            ray.init(address=self.address, include_dashboard=False, log_to_driver=False, configure_logging=False)
        table = pa.table({"row": pa.array(np.arange(len(texts), dtype=np.int64)),
                          "text": pa.array(texts, pa.string())})
        # One block per Ray batch: a single block would go to a single actor.
        ds = ray.data.from_arrow([table.slice(s, self.batch_size) for s in range(0, len(texts), self.batch_size)])
        emb = embed_dataset(ds, encoder=self.encoder, workers=self.workers, batch_size=self.batch_size,
                            cpus_per_worker=self.cpus_per_worker)
        done = 0
        # Rows come back in any order; each carries its position.
        for table in emb.iter_batches(batch_format="pyarrow", batch_size=None):
            rows = table.column("row").to_numpy()
            flat = table.column("embedding").combine_chunks().flatten().to_numpy()
            out[rows] = flat.reshape(len(rows), self.dim)
            done += len(rows)
        if done != len(texts):
            raise ToolsiftError(f"Ray returned {done} embeddings for {len(texts)} texts")
        return out

    def __repr__(self) -> str:
        return f"RayEncoder(encoder={self.encoder!r}, dim={self.dim}, workers={self.workers})"


def build_index_ray(catalog, *, preset: str | None = None, config=None, embed_cache=None, progress: bool = False,
                    **ray_options: Any):
    """``ToolIndex.build`` with the dense fields embedded on Ray Data
    (:class:`RayEncoder`; ``ray_options`` are its keyword options). Texts already in the
    embedding cache are not sent to the cluster."""
    from .presets import preset_config
    from .toolindex import ToolIndex

    if preset is not None and config is not None:
        from .errors import ConfigError

        raise ConfigError("build_index_ray: pass preset= or config=, not both")
    config = config if config is not None else preset_config(preset)
    return ToolIndex.build(catalog, config=config, embed_cache=embed_cache, progress=progress,
                           encoder=RayEncoder(config.encoder, **ray_options))


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
        from pyarrow import csv

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
