"""Open a saved index and check its dense vectors against the encoder in use: the body of
:meth:`toolsift.ToolIndex.load`, which passes what this returns to the constructor."""

from __future__ import annotations

import os
import warnings
from typing import Any

from ..encoders.cache import EmbedCacheArg
from ..errors import EncoderMismatchError
from ..kernels.launch import using_threads
from .embed import config_fingerprint, embed_fields, encoder_record, get_document_encoder
from .ivf import fields_with_ivf
from .persist import load_index
from .query_table import build_query_table, refits

__all__ = ["UnrecordedEncoderWarning", "open_index"]


class UnrecordedEncoderWarning(UserWarning):
    """A saved dense or hybrid index records no encoder (saved before toolsift recorded
    one): its vectors are assumed to come from the encoder in use."""


def open_index(path: str | os.PathLike, *, mmap: bool, verify: bool, reencode: bool,
               embed_cache: EmbedCacheArg) -> dict[str, Any]:
    """The keyword arguments of ``ToolIndex(...)`` for the index directory ``path``
    (see :meth:`toolsift.ToolIndex.load` for the arguments and the errors)."""
    got = load_index(path, mmap=mmap, verify=verify)
    dense, info = got.dense, got.encoder
    qt, floors = got.query_table, got.null_floors
    if got.config.uses_dense:
        current = config_fingerprint(got.config)
        stale = info is None or current is None or info["fingerprint"] != current
        if stale and reencode:
            enc = get_document_encoder(got.config)
            with using_threads(got.config.threads):
                dense = embed_fields(got.catalog, got.config, encoder=enc, embed_cache=embed_cache)
                # The query table is fitted on the document vectors: refit it.
                qt = build_query_table(got.catalog, got.config, dense)
            dense = fields_with_ivf(dense, got.config) if dense else dense
            info = encoder_record(enc)
            floors = None  # made for the old vectors
        elif info is None:
            warnings.warn(f"{path}: the index records no encoder (saved by an older toolsift); its vectors "
                          f"are assumed to be the current encoder's ({current}). "
                          f"Load with reencode=True and save to record it.", UnrecordedEncoderWarning,
                          stacklevel=3)
            dims = {d.matrix.codes.shape[1] for d in dense.values()}
            info = {"fingerprint": current, "dim": dims.pop()} if current and len(dims) == 1 else None
        elif stale:
            raise EncoderMismatchError(str(path), info["fingerprint"], current)
    if qt is None and dense and refits(got.config):
        # An index saved before query tables existed says transformer queries in its
        # config, so this runs only for a hand-edited config: refit from the vectors.
        qt = build_query_table(got.catalog, got.config, dense)
    return dict(catalog=got.catalog, config=got.config, vocab=got.vocab, fields=got.fields, dense=dense,
                graph=got.graph, query_table=qt, encoder_info=info, embed_cache=embed_cache, null_floors=floors)
