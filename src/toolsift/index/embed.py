"""Dense fields: the sentence encoder (one per process and setting) and embedding a
catalogue's field documents through the embedding cache (:mod:`toolsift.encoders.cache`),
re-using unchanged tools' rows on updates."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np

from ..config import IndexConfig
from ..encoders.cache import EmbedCacheArg, cached, resolve_store
from ..encoders.fingerprint import encoder_fingerprint
from ..schema import FIELDS, Catalog
from ..kernels.buffers import aligned_empty
from .dense import Int8Matrix, freeze
from ..progress import progress_counter
from .dense_field import DenseField, encode_int8, encode_int8_into
from .dense_rows import compacts, expand_rows, kept_rows, owners
from .fields import field_counts, field_texts
from .state import IndexState

__all__ = [
    "config_fingerprint",
    "document_encoder",
    "get_document_encoder",
    "embed_fields",
    "encoder_record",
    "encoder_wrapper",
    "get_encoder",
    "get_query_encoder",
    "update_dense",
]



#: Tools per slice when a cheap encoder embeds a field a slice at a time (_embed_streamed).
_TOOLS_PER_SLICE = 16_384

_ENCODERS: dict[tuple, Any] = {}
_ENCODER_LOCK = threading.Lock()
_WRAPPERS: list[Callable[[Any, IndexConfig], Any]] = []


def get_encoder(config: IndexConfig, *, threads: int | None = None):
    """The sentence encoder a config asks for, loaded once per process (as the active
    :func:`encoder_wrapper` functions wrap it, if any); its large ``encode`` calls use
    ``threads`` cores (``None``: ``config.threads``; a single text always runs on one)."""
    key = (config.encoder, config.threads if threads is None else threads)
    with _ENCODER_LOCK:
        enc = _ENCODERS.get(key)
        if enc is None:
            if config.encoder == "static":
                enc = _ENCODERS[key] = _static(config.static_table)
            else:
                from ..encoders import OnnxEncoder

                enc = _ENCODERS[key] = OnnxEncoder(config.encoder, threads=key[1])
        wrappers = list(_WRAPPERS)
    # Outside the lock: a wrapper may hash model files on first use.
    for wrap in wrappers:
        enc = wrap(enc, config)
    return enc


def get_document_encoder(config: IndexConfig):
    """The encoder of tool texts (builds, updates, re-encoding loads): :func:`get_encoder`
    with ``config.embed_threads`` cores (default all), so a build a user waits for uses
    the machine while queries stay on one thread. Same model, same vectors."""
    return get_encoder(config, threads=config.embed_threads)


def _static(table: str | None):
    from ..encoders.static import StaticEncoder

    key = ("static", table)
    enc = _ENCODERS.get(key)
    if enc is None:
        enc = _ENCODERS[key] = StaticEncoder(table)
    return enc


def get_query_encoder(config: IndexConfig):
    """The encoder of dense fields' query texts: the static table fitted into the
    document encoder's space (``query_encoder="static"``), else the document encoder."""
    if config.query_encoder == "static" or config.encoder == "static":
        with _ENCODER_LOCK:
            return _static(config.static_table)
    return get_encoder(config)


@contextmanager
def encoder_wrapper(wrap: Callable[[Any, IndexConfig], Any]) -> Iterator[None]:
    """While the block runs, :func:`get_encoder` returns ``wrap(encoder, config)`` instead
    of the shared encoder (for every thread of the process; nested wrappers apply in
    the order they were entered). ``wrap`` must return an object with the encoder's ``dim`` and
    ``encode`` that gives the same vectors, e.g. evaluation's embedding cache
    (:mod:`toolsift.evaluate.embcache`); the shared encoders themselves are not changed.
    """
    with _ENCODER_LOCK:
        _WRAPPERS.append(wrap)
    try:
        yield
    finally:
        with _ENCODER_LOCK:
            # By identity from the end: the same wrapper may be active twice, nested.
            for i in range(len(_WRAPPERS) - 1, -1, -1):
                if _WRAPPERS[i] is wrap:
                    del _WRAPPERS[i]
                    break


def config_fingerprint(config: IndexConfig) -> str | None:
    """The fingerprint of the document encoder :func:`get_encoder` gives for ``config``,
    without loading a model when none is loaded yet (only its files are hashed): an index
    load checks it, and a search may never need the transformer."""
    with _ENCODER_LOCK:
        enc = _ENCODERS.get((config.encoder, config.embed_threads)) or _ENCODERS.get((config.encoder, config.threads))
    if enc is not None:
        return encoder_fingerprint(enc)
    if config.encoder == "static":  # documents embedded by the static table: its own hash
        with _ENCODER_LOCK:
            return _static(config.static_table).fingerprint
    from ..encoders import OnnxEncoder, resolve_model
    from ..encoders.fingerprint import onnx_fingerprint

    # The same files and truncation length get_encoder's OnnxEncoder would use.
    files = resolve_model(config.encoder, None)
    max_length = (OnnxEncoder.__init__.__kwdefaults__ or {})["max_length"]
    return onnx_fingerprint(files.model, files.tokenizer, max_length=max_length)


def document_encoder(config: IndexConfig, *, encoder: Any = None, embed_cache: EmbedCacheArg = None) -> Any:
    """The document encoder (``encoder``, else :func:`get_document_encoder`) looking texts
    up in the embedding cache first: what every document-side encode of a build, update
    or re-encoding load goes through."""
    return cached(encoder if encoder is not None else get_document_encoder(config), resolve_store(embed_cache))


def encoder_record(encoder: Any) -> dict[str, Any] | None:
    """What a saved index records about the encoder that made its vectors:
    ``{"fingerprint": str, "dim": int}``, or ``None`` for an encoder without a fingerprint."""
    fp = encoder_fingerprint(encoder)
    return None if fp is None else {"fingerprint": fp, "dim": int(encoder.dim)}


def embed_fields(catalog: Catalog, config: IndexConfig, *, progress: bool = False, encoder: Any = None,
                 embed_cache: EmbedCacheArg = None, compact: dict[str, bool] | None = None) -> dict[str, DenseField]:
    """Int8 embeddings of every dense or hybrid field's documents.

    Args:
        catalog: The tools.
        config: Which fields are dense and how their documents are written.
        progress: Show a progress bar (with ETA) when encoding outlasts a second.
        encoder: The document encoder (``None``: :func:`get_document_encoder`).
        embed_cache: Where known texts' vectors are looked up and new ones stored
            (:func:`toolsift.encoders.cache.resolve_store`; ``False``: nowhere).
        compact: Per field, whether it keeps only its non-empty documents' rows
            (:mod:`.dense_rows`), instead of deciding by its share of empty documents
            (an update embeds new tools in the layout of the field they join).
    """
    names = [f for f in FIELDS if config.retriever(f) != "bm25"]
    if not names:
        return {}
    enc = document_encoder(config, encoder=encoder, embed_cache=embed_cache)
    options: dict[str, Any] = dict(name_in_description=config.name_in_description,
                                   split_identifiers=config.split_identifiers,
                                   parameter_format=config.parameter_format, tool_card=config.tool_card)
    if not getattr(enc, "cache_worthy", True):
        return _embed_streamed(catalog, names, enc, options, progress=progress, compact=compact or {})
    # One encoder pass over all fields' texts: a parameter text and an example intent are
    # often the same string, and encode_int8 encodes each distinct string once. An empty
    # document (no response text, a tool without examples) is no evidence: it gets a zero
    # row, so its cosine is 0 as its BM25 score is, not the similarity to the empty
    # string's embedding (positive for most queries: it ranked tools by what they lack).
    # A mostly-empty field keeps only its non-empty documents' rows (.dense_rows).
    docs = {name: _rows_kept(name, *field_texts(catalog, name, **options), len(catalog), (compact or {}).get(name))
            for name in names}
    texts = [t for f in names for t in docs[f][0]]
    m = encode_int8(enc, texts, progress=progress)
    del texts
    out, start = {}, 0
    for name in names:
        n = len(docs[name][0])
        out[name] = DenseField(Int8Matrix(m.codes[start:start + n], m.scales[start:start + n]), docs[name][1],
                               len(catalog))
        start += n
    return out


def _rows_kept(name: str, texts: list[str], counts: np.ndarray | None, n_tools: int, compact: bool | None
               ) -> tuple[list[str], np.ndarray | None]:
    """A field's documents to embed and their tools (``None``: one per tool, in order):
    every document, or only the non-empty ones of a field :func:`.dense_rows.compacts`
    (``compact``: decided by the caller)."""
    kept = kept_rows(texts)
    if compacts(name, kept.size, len(texts)) if compact is None else compact:
        return [texts[i] for i in kept], owners(counts, n_tools)[kept]
    return texts, _groups(counts, n_tools)


def _groups(counts: np.ndarray | None, n_tools: int) -> np.ndarray | None:
    """Owning tool of each document of a multi-document field (``None``: one per tool)."""
    return None if counts is None else np.repeat(np.arange(n_tools, dtype=np.int64), counts)


def _embed_streamed(catalog: Catalog, names: list[str], enc: Any, options: dict[str, Any], *,
                    progress: bool, compact: dict[str, bool]) -> dict[str, DenseField]:
    """:func:`embed_fields` for an encoder whose vectors do not depend on the batch and
    that is not worth caching (the static token table): field by field, a slice of tools
    at a time, so a million tools' texts are never all held (the descriptions alone were
    ~0.4 GB) and a text repeated across slices is simply encoded again (microseconds).
    The rows are the ones the one-pass path gives."""
    n_tools = len(catalog)
    counts = {name: field_counts(catalog, name) for name in names}
    n_docs = {name: n_tools if c is None else int(c.sum()) for name, c in counts.items()}
    out = {}
    with progress_counter(progress, "embed", total=sum(n_docs.values()), unit="text") as bar:
        for name in names:
            # Zero-filled: pages no row is written to are never touched (no memory).
            codes = aligned_empty((n_docs[name], enc.dim), np.int8, zeros=True)  # aligned for the scan
            scales = np.zeros(n_docs[name], dtype=np.float32)
            # The non-empty documents' rows are written one after another (kept: their
            # positions among all documents); a mostly-empty field then keeps just those
            # (.dense_rows), any other moves them to their own rows.
            row, first, kept = 0, 0, []
            for start in range(0, n_tools, _TOOLS_PER_SLICE):
                texts, _ = field_texts(catalog[start:start + _TOOLS_PER_SLICE], name, **options)
                keep = kept_rows(texts)
                encode_int8_into(enc, [texts[i] for i in keep], codes[row:row + keep.size],
                                 scales[row:row + keep.size])
                kept.append(keep + first)
                row, first = row + keep.size, first + len(texts)
                bar.update(len(texts))
            pos = np.concatenate(kept) if kept else np.zeros(0, np.int64)
            if compact[name] if name in compact else compacts(name, pos.size, n_docs[name]):
                matrix = Int8Matrix(freeze(codes[:pos.size]), freeze(scales[:pos.size]))
                out[name] = DenseField(matrix, owners(counts[name], n_tools)[pos], n_tools)
                continue
            expand_rows(codes, scales, pos)
            out[name] = DenseField(Int8Matrix(freeze(codes), freeze(scales)), _groups(counts[name], n_tools),
                                   n_tools)
    return out


def update_dense(st: IndexState, catalog: Catalog, config: IndexConfig, fresh_ids: set[str], *,
                 encoder: Any = None, embed_cache: EmbedCacheArg = None) -> dict[str, DenseField]:
    """Dense fields for ``catalog``: rows of unchanged tools are reused, only new or
    replaced tools are embedded (``encoder`` and ``embed_cache`` as :func:`embed_fields`)."""
    new_ids = catalog.ids  # ids only: unchanged tools of a stored catalogue stay encoded
    fresh = [catalog[i] for i, tid in enumerate(new_ids) if tid in fresh_ids]
    # New tools' rows in the layout of the field they join (.dense_rows): a field keeps
    # only non-empty rows when it has fewer rows than documents.
    compact = {name: dn.matrix.n_rows != st.fields[name].core.n_docs for name, dn in st.dense.items()}
    new_dense = embed_fields(Catalog(fresh), config, encoder=encoder, embed_cache=embed_cache,
                             compact=compact) if fresh else {}
    fresh_pos = {t.id: i for i, t in enumerate(fresh)}
    old_pos = {tid: i for i, tid in enumerate(st.catalog.ids)}
    out = {}
    for name, dn in st.dense.items():
        def rows_of(field: DenseField, n: int) -> list[np.ndarray]:
            g = field.groups if field.groups is not None else np.arange(n)
            starts = np.searchsorted(g, np.arange(n))
            ends = np.searchsorted(g, np.arange(n), side="right")
            return [np.arange(a, b) for a, b in zip(starts, ends)]

        old_rows = rows_of(dn, len(st.catalog))
        fresh_field = new_dense.get(name)
        fresh_rows = rows_of(fresh_field, len(fresh)) if fresh_field is not None else []
        codes, scales, groups = [], [], []
        for t_new, tid in enumerate(new_ids):
            if tid in fresh_pos:
                assert fresh_field is not None  # fresh tools come with their field
                src, r = fresh_field.matrix, fresh_rows[fresh_pos[tid]]
            else:
                src, r = dn.matrix, old_rows[old_pos[tid]]
            codes.append(src.codes[r])
            scales.append(src.scales[r])
            groups.append(np.full(r.size, t_new, dtype=np.int64))
        dim = dn.matrix.codes.shape[1]
        rows = sum(c.shape[0] for c in codes)
        matrix = Int8Matrix(freeze(np.concatenate(codes, out=aligned_empty((rows, dim), np.int8)) if codes
                                   else np.zeros((0, dim), np.int8)),
                            freeze(np.concatenate(scales) if scales else np.zeros(0, np.float32)))
        g = np.concatenate(groups) if groups else np.zeros(0, np.int64)
        # One row per tool in order stays ungrouped; rows of fields stored compactly
        # (.dense_rows), before or in this update, need their row map.
        one_each = g.size == len(catalog) and bool((g == np.arange(g.size)).all())
        out[name] = DenseField(matrix, None if dn.groups is None and one_each else g, len(catalog))
    return out
