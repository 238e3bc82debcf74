"""The index's own static query table: the shipped token table refined on the catalogue.

The shipped table (:mod:`toolsift.encoders.static`) was fitted on general tool-like text.
When an index embeds its dense fields it holds, for every field document, the
transformer's vector of that text: exactly the data the table is fitted on. So the build
refits the rows of the tokens that occur in the catalogue, with the shipped rows as the
prior (:func:`toolsift.encoders.static_fit.fit_vectors`), and the index's queries are then
embedded with the shipped table overridden by those rows. Only tool texts are used — what
every index has — never a query.

Fitting on query-length *spans* of each tool as well (its name in words, each
sentence of its description) was measured and not kept: it brought the static vectors
closer to the transformer's on a flat dense ranking but lowered hybrid N@10 on two of five
sets (docs/dense.md, "Query encoder").

The fit reads the stored int8 vectors (dequantized), not the encoder's float output, so an
index updated in place and one rebuilt from the same catalogue refit from the same
numbers and embed queries identically.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from .dense_field import DenseField
from .arrowcols import column
from .store import column_values

if TYPE_CHECKING:  # the encoders load with the first static query or fit, not with a BM25 index
    from ..encoders.static import StaticEncoder
__all__ = ["QueryTable", "fit_query_table", "build_query_table", "query_encoder_for", "refits", "LAMBDA",
           "MAX_TEXTS"]

#: Ridge strength toward the shipped rows (docs/dense.md, "Query encoder").
LAMBDA = 0.05
#: Texts the refit reads at most (a deterministic, evenly spaced sample above this):
#: the fit is a few sparse products per iteration over these texts.
MAX_TEXTS = 200_000
_ITERS = 30


class QueryTable:
    """Rows of the static table refitted on one catalogue.

    Attributes:
        token_ids: ``int32[u]`` the refitted tokens (sorted).
        codes: ``int8[u, dim]`` and ``scales``: ``float32[u]``: their rows.
    """

    def __init__(self, token_ids: np.ndarray, codes: np.ndarray, scales: np.ndarray) -> None:
        self.token_ids = np.ascontiguousarray(token_ids, dtype=np.int32)
        self.codes = np.ascontiguousarray(codes, dtype=np.int8)
        self.scales = np.ascontiguousarray(scales, dtype=np.float32)
        n = self.token_ids.shape[0]
        if self.codes.ndim != 2 or self.codes.shape[0] != n or self.scales.shape != (n,):
            raise ValueError(f"query table: inconsistent shapes {self.token_ids.shape}, {self.codes.shape}, "
                             f"{self.scales.shape}")

    def __len__(self) -> int:
        return int(self.token_ids.shape[0])

    def to_arrow(self):
        """``pyarrow.Table``: ``token_id int32``, ``codes fixed_size_list<int8>[dim]``,
        ``scale float32``."""
        import pyarrow as pa

        dim = self.codes.shape[1]
        codes = pa.FixedSizeListArray.from_arrays(column(self.codes.reshape(-1), pa.int8()), dim)
        return pa.table({"token_id": column(self.token_ids, pa.int32()), "codes": codes,
                         "scale": column(self.scales, pa.float32())})

    @classmethod
    def from_arrow(cls, table, *, where: str) -> QueryTable:
        """Inverse of :meth:`to_arrow` (copies: the table is small).

        Raises:
            IndexCorruptError: Missing columns or inconsistent shapes.
        """
        import pyarrow as pa

        from ..errors import IndexCorruptError

        try:
            codes_col = table.column("codes").combine_chunks()
            if not pa.types.is_fixed_size_list(codes_col.type) or codes_col.type.value_type != pa.int8():
                raise ValueError(f"codes has type {codes_col.type}")
            dim = codes_col.type.list_size
            # column_values reads the buffers: to_numpy would import pandas (index/store.py),
            # and the child sliced by hand is flatten() without pyarrow.compute.
            child = codes_col.values.slice(codes_col.offset * dim, len(codes_col) * dim)
            codes = column_values(child, np.int8).reshape(-1, dim)
            ids = column_values(table.column("token_id"), np.int32)
            scales = column_values(table.column("scale"), np.float32)
            out = cls(ids, codes, scales)
        except (KeyError, ValueError, TypeError, pa.ArrowException) as exc:
            raise IndexCorruptError(f"{where}: not a query table: {exc}") from None
        if out.token_ids.size and (out.token_ids.min() < 0 or np.any(np.diff(out.token_ids) <= 0)):
            raise IndexCorruptError(f"{where}: token ids are not sorted and distinct")
        if not np.isfinite(out.scales).all():
            raise IndexCorruptError(f"{where}: non-finite scales")
        return out

    def encoder(self, base: StaticEncoder) -> StaticEncoder:
        """``base`` with these rows in place of its own."""
        t = base.table
        if self.token_ids.size and (int(self.token_ids.max()) >= t.vocab_size or self.codes.shape[1] != t.dim):
            from ..errors import IndexCorruptError

            raise IndexCorruptError(f"query table does not fit the static table ({t.vocab_size} tokens, "
                                    f"{t.dim} dims)")
        # The rows over the base table, not a copy of it (a first query reads only the rows
        # it uses); the base's tokenizers; a fingerprint hashed only when a cache asks.
        return base.with_rows(self.token_ids, self.codes, self.scales,
                              lambda: f"{base.fingerprint}+{_digest(self)}")


def _digest(qt: QueryTable) -> str:
    import hashlib

    h = hashlib.sha256()
    for a in (qt.token_ids, qt.codes, qt.scales):
        h.update(a.tobytes())
    return h.hexdigest()[:16]


def fit_query_table(base: StaticEncoder, dense: dict[str, DenseField], texts: dict[str, Sequence[str]],
                    *, lam: float = LAMBDA) -> QueryTable:
    """Refit ``base``'s rows on the dense fields' documents (``texts[field]`` in row
    order), from their stored vectors; duplicates count once."""
    from ..encoders.static import StaticTable
    from ..encoders.static_fit import fit_vectors, mean_matrix

    # First the distinct non-empty texts and where their rows are, then (after the
    # sample cap) only those rows dequantized: never a float copy of a whole field.
    where: dict[str, tuple[str, int]] = {}
    for name in sorted(dense):
        m, ts = dense[name].matrix, texts[name]
        for i in np.flatnonzero(m.scales > 0).tolist():
            t = ts[i]
            if t not in where and t.strip():
                where[t] = (name, i)
    if not where:
        return QueryTable(np.zeros(0, np.int32), np.zeros((0, base.dim), np.int8), np.zeros(0, np.float32))
    corpus = list(where)
    if len(corpus) > MAX_TEXTS:
        pick = np.linspace(0, len(corpus) - 1, MAX_TEXTS).astype(np.int64)
        corpus = [corpus[i] for i in pick]
    y = np.empty((len(corpus), base.dim), np.float32)
    for name in sorted(dense):
        sel = [(k, where[t][1]) for k, t in enumerate(corpus) if where[t][0] == name]
        if sel:
            at, rows = np.array([k for k, _ in sel]), np.array([r for _, r in sel])
            m = dense[name].matrix
            y[at] = m.codes[rows].astype(np.float32) * m.scales[rows, None]
    y /= np.maximum(np.linalg.norm(y, axis=1, keepdims=True), 1e-12)
    ids = base.token_ids(corpus)
    x = mean_matrix(ids, base.table.weights)
    prior = base.table.vectors()
    used = np.flatnonzero(np.asarray((x != 0).sum(axis=0)).ravel())
    fitted = fit_vectors(x, y, prior, lam=lam, iters=_ITERS)[used]
    q = StaticTable.from_vectors(fitted, np.ones(used.size, np.float32))
    return QueryTable(used.astype(np.int32), q.codes, q.scales)


def refits(config) -> bool:
    """Whether an index with ``config`` refits a query table (static queries against
    transformer documents)."""
    return config.uses_dense and config.query_encoder == "static" and config.encoder != "static"


def build_query_table(catalog, config, dense: dict[str, DenseField] | None) -> QueryTable | None:
    """The query table of an index (``None`` unless :func:`refits`)."""
    from .embed import get_query_encoder
    from .fields import field_documents

    if not dense or not refits(config):
        return None
    base = get_query_encoder(config)
    dim = next(iter(dense.values())).matrix.dim
    if dim != base.dim:
        from ..errors import ConfigError

        raise ConfigError(f"config.query_encoder: the static table is {base.dim}-dimensional, the document "
                          f"encoder gives {dim} dimensions; use query_encoder='transformer' or a static_table "
                          "fitted for that encoder")
    fd = field_documents(catalog, name_in_description=config.name_in_description,
                         split_identifiers=config.split_identifiers, parameter_format=config.parameter_format,
                         tool_card=config.tool_card)
    return fit_query_table(base, dense, {f: _row_texts(fd[f].texts, dn) for f, dn in dense.items()})


def _row_texts(texts: list[str], dn: DenseField) -> list[str]:
    """The text of each of ``dn``'s rows: every document's, or for a field stored as
    its non-empty rows only (:mod:`.dense_rows`) the non-blank documents'."""
    if dn.matrix.n_rows == len(texts):
        return texts
    from .dense_rows import kept_rows

    kept = [texts[i] for i in kept_rows(texts)]
    if len(kept) != dn.matrix.n_rows:
        raise ValueError(f"dense field has {dn.matrix.n_rows} rows for {len(texts)} documents "
                         f"({len(kept)} non-empty)")
    return kept


def query_encoder_for(st, config):
    """The encoder of ``st``'s query texts: the static table with the index's refitted
    rows when it has them (made once per state)."""
    from .embed import get_query_encoder

    # A static query encoder (the table, with this state's rows) is fixed for the state
    # and table path: found without the encoder registry's lock on every search.
    key = (config.query_encoder, config.encoder, config.static_table)
    enc = getattr(st, "_query_encoder", None)
    if enc is not None and enc[0] == key:
        return enc[1]
    base = get_query_encoder(config)
    if getattr(base, "table", None) is None:  # a transformer: the registry decides (wrappers)
        return base
    qt = getattr(st, "query_table", None)
    enc = (key, base if qt is None or not len(qt) else qt.encoder(base))
    st._query_encoder = enc  # same value if two first queries race
    return enc[1]
