"""A static query encoder fitted into a transformer's vector space.

A text's vector is the weighted mean of per-token vectors from one table, L2-normalised:
one tokenizer call and a few row gathers, tens of microseconds, whatever the size of the
transformer that encoded the documents. The table is *fitted* (by
:mod:`toolsift.encoders.static_fit`) so that the weighted mean of a text's token vectors
reproduces the transformer's embedding of that text; query vectors then live in the same
space as the documents' transformer vectors and are scored against them directly
(docs/dense.md, "Query encoder").

The table file (``.npz``) holds:

* ``codes``: ``int8[vocab, dim]`` and ``scales``: ``float32[vocab]``, one row per
  WordPiece token, symmetric per-row quantization (``row ≈ codes * scale``);
* ``weights``: ``float32[vocab]``, each token's weight in the mean (SIF-style: frequent
  tokens weigh less; 0 for tokens that carry nothing, such as punctuation);
* ``meta``: JSON (format version, teacher model fingerprint, how it was fitted).

The tokenizer is the teacher's own ``tokenizer.json`` (for the default table, the vendored
all-MiniLM-L6-v2 one), lower-cased and accent-stripped by its normaliser.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
from collections.abc import Callable, Sequence
from itertools import chain
from pathlib import Path
from typing import Any

import numpy as np

from toolsift.encoders.errors import EncoderError, EncoderInputError
from toolsift.encoders.fingerprint import file_sha256
from toolsift.encoders.models import VENDORED_TOKENIZER
from toolsift.encoders.wordpiece import FastWordPiece
from toolsift.kernels.buffers import freeze
from toolsift.kernels.int8 import mean_rows

__all__ = ["StaticEncoder", "StaticTable", "DEFAULT_TABLE", "TABLE_FORMAT"]

#: The shipped table for all-MiniLM-L6-v2 (made by scripts/fit_static_encoder.py).
DEFAULT_TABLE = Path(__file__).resolve().parents[1] / "models" / "static-minilm" / "table.npz"
TABLE_FORMAT = "toolsift.static-table"
TABLE_VERSION = 1
# The teacher's truncation length: a query longer than this is cut as the transformer cuts it.
_MAX_TOKENS = 256
# Texts per slice of encode(): at most 256 tokens x 384 floats each, ~400 MB worst case.
_CHUNK = 1024
# Calls served over the refitted rows before the encoder merges them into a copy of the
# table (~5 ms once): a fresh process's first queries skip the copy, a busy one then pays
# no per-call lookup (5-15 us a query, docs/results/first-query-2026-11-28.md).
_OVERLAY_CALLS = 64
# Token ids of one call up to which refitted rows are gathered token by token (with
# repeats) rather than per distinct token: a query's, without np.unique's sort.
_GATHER_ALL = 512


class StaticTable:
    """Token vectors, weights and metadata of a static encoder.

    Args:
        codes: ``int8[vocab, dim]`` quantized token vectors.
        scales: ``float32[vocab]`` per-row scales (``vector = codes * scale``).
        weights: ``float32[vocab]`` token weights in a text's mean.
        meta: JSON-able description (teacher fingerprint, fit settings).
    """

    def __init__(self, codes: np.ndarray, scales: np.ndarray, weights: np.ndarray,
                 meta: dict[str, Any] | None = None) -> None:
        codes = np.ascontiguousarray(codes, dtype=np.int8)
        scales = np.ascontiguousarray(scales, dtype=np.float32)
        weights = np.ascontiguousarray(weights, dtype=np.float32)
        if codes.ndim != 2 or scales.shape != (codes.shape[0],) or weights.shape != (codes.shape[0],):
            raise EncoderError(f"static table: inconsistent shapes codes {codes.shape}, scales {scales.shape}, "
                               f"weights {weights.shape}")
        if not (np.isfinite(scales).all() and np.isfinite(weights).all()):
            raise EncoderError("static table: non-finite scales or weights")
        self.codes, self.scales, self.weights = codes, scales, weights
        self.meta = dict(meta or {})

    @classmethod
    def from_vectors(cls, vectors: np.ndarray, weights: np.ndarray, meta: dict[str, Any] | None = None
                     ) -> StaticTable:
        """Quantize float token vectors (``float[vocab, dim]``) per row to int8."""
        v = np.asarray(vectors, dtype=np.float32)
        amax = np.abs(v).max(axis=1) if v.size else np.zeros(v.shape[0], np.float32)
        scales = (amax / 127.0).astype(np.float32)
        safe = np.where(scales > 0, scales, 1.0)
        codes = np.clip(np.rint(v / safe[:, None]), -127, 127).astype(np.int8)
        return cls(codes, scales, weights, meta)

    @property
    def vocab_size(self) -> int:
        """Rows in the table."""
        return self.codes.shape[0]

    @property
    def dim(self) -> int:
        """Vector width."""
        return self.codes.shape[1]

    def vectors(self) -> np.ndarray:
        """``float32[vocab, dim]`` dequantized token vectors."""
        return self.codes.astype(np.float32) * self.scales[:, None]

    def save(self, path: str | os.PathLike[str]) -> Path:
        """Write the table as ``.npz`` (temp file + rename)."""
        from toolsift.atomic import write_atomic
        import io

        buf = io.BytesIO()
        meta = {**self.meta, "format": TABLE_FORMAT, "format_version": TABLE_VERSION}
        np.savez(buf, codes=self.codes, scales=self.scales, weights=self.weights,
                 meta=np.frombuffer(json.dumps(meta, sort_keys=True).encode(), dtype=np.uint8))
        path = Path(path)
        write_atomic(path, buf.getvalue())
        return path

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> StaticTable:
        """Read a table written by :meth:`save`.

        Raises:
            EncoderError: Missing, unreadable or foreign file.
        """
        path = Path(path)
        if not path.is_file():
            raise EncoderError(f"static encoder table not found: {path}")
        try:
            arrays = _mapped_npz(path)
            if arrays is None:  # a compressed table: read (and decompress) it whole
                with np.load(path, allow_pickle=False) as z:
                    arrays = {k: z[k] for k in ("meta", "codes", "scales", "weights")}
            meta = json.loads(bytes(arrays["meta"]).decode())
            if meta.get("format") != TABLE_FORMAT:
                raise EncoderError(f"{path}: not a toolsift static encoder table")
            if meta.get("format_version", 0) > TABLE_VERSION:
                raise EncoderError(f"{path}: table format {meta.get('format_version')} is newer than this "
                                   f"toolsift reads ({TABLE_VERSION}); upgrade toolsift")
            return cls(arrays["codes"], arrays["scales"], arrays["weights"], meta)
        except EncoderError:
            raise
        except Exception as exc:  # zipfile / numpy / json raise many untyped errors
            raise EncoderError(f"cannot read static encoder table {path}: {exc}") from exc


def _mapped_npz(path: Path) -> dict[str, np.ndarray] | None:
    """The arrays of an ``.npz`` whose members are all stored uncompressed, as read-only
    views of one memory map of the file (``None`` if any member is compressed).

    ``np.load`` reads every byte of a member and checks its CRC: 11.7 MB and ~15 ms CPU
    for the shipped table, in the first query of every process, when a query reads a few
    dozen rows. A map reads only the pages of the rows used; the format is unchanged.
    """
    import mmap
    import struct
    import zipfile

    from numpy.lib import format as npy

    with open(path, "rb") as f, zipfile.ZipFile(f) as zf:
        infos = zf.infolist()
        if any(i.compress_type != zipfile.ZIP_STORED for i in infos):
            return None
        buf = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)  # stays valid after close
    out: dict[str, np.ndarray] = {}
    for info in infos:
        # Local header: 30 bytes, then the name and an extra field of their own lengths.
        if buf[info.header_offset:info.header_offset + 4] != b"PK\x03\x04":
            raise ValueError(f"bad local header for {info.filename}")
        name_len, extra_len = struct.unpack("<HH", buf[info.header_offset + 26:info.header_offset + 30])
        start = info.header_offset + 30 + name_len + extra_len
        member = _MemberReader(buf, start, info.file_size)
        version = npy.read_magic(member)
        header = npy.read_array_header_1_0 if version == (1, 0) else npy.read_array_header_2_0
        shape, fortran, dtype = header(member)
        if dtype.hasobject or fortran:
            raise ValueError(f"{info.filename}: object or Fortran-ordered array")
        count = int(np.prod(shape, dtype=np.int64))
        if member.pos + count * dtype.itemsize > info.file_size:
            raise ValueError(f"{info.filename}: truncated")
        a = np.frombuffer(buf, dtype=dtype, count=count, offset=start + member.pos).reshape(shape)
        out[info.filename.removesuffix(".npy")] = a
    return out


class _MemberReader:
    """A file-like ``read`` over one stored zip member of a map (for numpy's header parser)."""

    def __init__(self, buf: Any, start: int, size: int) -> None:
        self.buf, self.start, self.size, self.pos = buf, start, size, 0

    def read(self, n: int = -1, /) -> bytes:
        n = self.size - self.pos if n < 0 else max(0, min(n, self.size - self.pos))
        got = self.buf[self.start + self.pos:self.start + self.pos + n]
        self.pos += n
        return got


class StaticEncoder:
    """Encode texts with a static token table (see the module docstring).

    Same interface as :class:`~toolsift.encoders.OnnxEncoder` (``dim``, ``encode``), so
    it can stand in for it anywhere: as the query encoder of a hybrid index (the default)
    or as a document encoder for catalogues too large for a transformer.

    Args:
        table: A ``.npz`` written by :meth:`StaticTable.save`, a :class:`StaticTable`, or
            ``None`` for the shipped all-MiniLM-L6-v2 table.
        tokenizer: The ``tokenizer.json`` of the table's vocabulary; ``None`` for the
            vendored all-MiniLM-L6-v2 tokenizer.

    Raises:
        EncoderError: A file is missing or unreadable, the ``tokenizers`` package is not
            installed, or the tokenizer's vocabulary does not match the table.
    """

    # Set by with_rows on an encoder with refitted rows (the overlay; see _rows).
    _over_scales: np.ndarray
    _slot: np.ndarray
    _calls: int

    #: Not looked up in the embedding cache: encoding a text is cheaper than reading it back.
    cache_worthy = False
    #: A text's first this many token ids make its vector.
    max_tokens = _MAX_TOKENS

    def __init__(self, table: str | os.PathLike[str] | StaticTable | None = None, *,
                 tokenizer: str | os.PathLike[str] | None = None) -> None:
        if isinstance(table, StaticTable):
            self._table, self.path = table, None
        else:
            self.path = Path(DEFAULT_TABLE if table is None else table)
            self._table = StaticTable.load(self.path)
        # Refitted rows over the table (with_rows): (sorted token ids, codes, row multipliers).
        self._over: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None
        self._merged: StaticTable | None = None
        self.tokenizer_path = Path(VENDORED_TOKENIZER if tokenizer is None else tokenizer)
        self._tok: Any = None
        self._fast = FastWordPiece.from_file(self.tokenizer_path)
        if self._fast is None:  # tokenizers does every text: loaded now
            vocab = self._tokenizer.get_vocab_size(with_added_tokens=True)
        else:
            # A query's ASCII text never needs tokenizers (~80 ms to load): it is loaded
            # for the first text the fast path does not take.
            if importlib.util.find_spec("tokenizers") is None:
                raise EncoderError("the static encoder needs the package 'tokenizers': pip install tokenizers")
            vocab = self._fast.vocab_size
        if vocab != self.table.vocab_size:
            raise EncoderError(f"static encoder: tokenizer {self.tokenizer_path} has {vocab} tokens, "
                               f"the table {self.table.vocab_size} rows")
        # Rows premultiplied by their weight and scale: a text's vector is then a plain
        # sum of int8 rows times one float each. Read-only, so the core reads them in
        # place with the GIL released (nothing writes a table's rows once made).
        self._row_mult = freeze((self.table.weights * self.table.scales).astype(np.float32))
        self._codes = freeze(self.table.codes)
        self._fingerprint: str | None = None
        self._fingerprint_of: Callable[[], str] | None = None

    @property
    def table(self) -> StaticTable:
        """The token table (with :meth:`with_rows`' rows in place, merged on first use)."""
        if self._merged is not None:
            return self._merged
        if self._over is None:
            return self._table
        if self._merged is None:
            ids, codes, _ = self._over
            t = self._table
            merged_codes, scales = t.codes.copy(), t.scales.copy()
            merged_codes[ids] = codes
            scales[ids] = self._over_scales
            self._merged = StaticTable(merged_codes, scales, t.weights, {**t.meta, "refined_tokens": int(ids.size)})
        return self._merged

    @property
    def _tokenizer(self) -> Any:
        """``tokenizers``' Tokenizer of :attr:`tokenizer_path`, loaded on first use."""
        if self._tok is None:
            self._tok = load_tokenizer(self.tokenizer_path)
        return self._tok

    def with_table(self, table: StaticTable, fingerprint: Callable[[], str]) -> StaticEncoder:
        """This encoder with ``table`` (same vocabulary) in place of its own, sharing the
        tokenizers already loaded (an index's refitted rows: no file read again).
        ``fingerprint`` makes the new encoder's fingerprint when first asked for."""
        if table.vocab_size != self.table.vocab_size:
            raise EncoderError(f"static encoder: the table has {table.vocab_size} rows, the tokenizer "
                               f"{self.table.vocab_size} tokens")
        enc = object.__new__(StaticEncoder)
        enc.__dict__.update(self.__dict__)
        enc._table, enc.path, enc._over, enc._merged = table, None, None, None
        enc._row_mult = freeze((table.weights * table.scales).astype(np.float32))
        enc._codes = freeze(table.codes)
        enc._fingerprint, enc._fingerprint_of = None, fingerprint
        return enc

    def with_rows(self, token_ids: np.ndarray, codes: np.ndarray, scales: np.ndarray,
                  fingerprint: Callable[[], str]) -> StaticEncoder:
        """This encoder with the rows of ``token_ids`` (sorted, distinct) replaced by
        ``codes`` / ``scales``: the same vectors, bit for bit, as :meth:`with_table` of the
        merged table, without copying the table (an index's refitted rows: a first query
        reads the few rows it uses instead of copying 11.7 MB). The rows are looked up per
        call (:meth:`_rows`); the merged :attr:`table` is made only when asked for."""
        token_ids = np.ascontiguousarray(token_ids, dtype=np.int64)
        codes = np.ascontiguousarray(codes, dtype=np.int8)
        scales = np.ascontiguousarray(scales, dtype=np.float32)
        if self._over is not None:
            raise EncoderError("static encoder: rows can replace a table's rows only once")
        if codes.shape != (token_ids.size, self.dim) or scales.shape != (token_ids.size,):
            raise EncoderError(f"static encoder: rows of shape {codes.shape} / {scales.shape} for "
                               f"{token_ids.size} tokens of width {self.dim}")
        if token_ids.size and (token_ids[0] < 0 or token_ids[-1] >= self._codes.shape[0]
                               or np.any(np.diff(token_ids) <= 0)):
            raise EncoderError("static encoder: row ids must be sorted, distinct and inside the table")
        enc = object.__new__(StaticEncoder)
        enc.__dict__.update(self.__dict__)
        enc.path = None
        # Each row's multiplier as the merged table's would be: its weight times its scale.
        mult = freeze((self._table.weights[token_ids] * scales).astype(np.float32))
        enc._over, enc._over_scales, enc._merged = (token_ids, freeze(codes), mult), scales, None
        # Each token's row among the refitted ones, -1 for the table's own (120 KB).
        slot = np.full(self._codes.shape[0], -1, np.int32)
        slot[token_ids] = np.arange(token_ids.size, dtype=np.int32)
        enc._slot, enc._calls = freeze(slot), 0
        enc._fingerprint, enc._fingerprint_of = None, fingerprint
        return enc

    def merged_rows(self) -> tuple[np.ndarray, np.ndarray]:
        """``(codes int8[tokens, dim], mult float32[tokens])``, read-only: every token's row
        with :meth:`with_rows`' rows in place, premultiplied as :func:`mean_rows` reads
        them (the overlay is merged into a copy of the table now if it was not yet; the
        same rows, so the same sums). What the engine's one-call search reads."""
        if self._over is not None:
            merged = self.table
            self._codes, self._row_mult = freeze(merged.codes), freeze((merged.weights * merged.scales).astype(np.float32))
            self._over = None  # after the rows it reads: a racing call sees either whole
        return self._codes, self._row_mult

    @property
    def wordpiece(self) -> FastWordPiece | None:
        """The WordPiece fast path of this encoder's tokenizer (``None``: every text goes
        to ``tokenizers``)."""
        return self._fast

    def _rows(self, ids: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(codes, mult, ids)`` for :func:`mean_rows`: the table's own, or, with
        refitted rows, a compact table of the rows of ``ids`` (refitted rows first) and
        ``ids`` renumbered into it. Same rows in the same order: same sums. After
        :data:`_OVERLAY_CALLS` calls the rows are merged into a copy of the table."""
        over = self._over  # read once: a racing call may merge meanwhile
        if over is None:
            return self._codes, self._row_mult, ids
        self._calls += 1
        if self._calls > _OVERLAY_CALLS:  # a busy encoder: the merged table, once
            codes, mult = self.merged_rows()
            return codes, mult, ids
        _, over_codes, over_mult = over
        # A query's few tokens are gathered in their order (no sort); a batch's distinct ones.
        uniq, inv = (ids, None) if ids.size <= _GATHER_ALL else np.unique(ids, return_inverse=True)
        codes, mult = self._codes[uniq], self._row_mult[uniq]
        slot = self._slot[uniq]
        hit = np.flatnonzero(slot >= 0)
        if hit.size:
            codes[hit], mult[hit] = over_codes[slot[hit]], over_mult[slot[hit]]
        if inv is None:
            return codes, mult, np.arange(ids.size, dtype=np.int64)
        return codes, mult, inv.reshape(-1).astype(np.int64, copy=False)

    @property
    def dim(self) -> int:
        """Embedding width (the teacher's: 384 for all-MiniLM-L6-v2)."""
        return self._codes.shape[1]

    @property
    def fingerprint(self) -> str:
        """SHA-256 over the table and tokenizer files (what decides every vector)."""
        if self._fingerprint is None and self._fingerprint_of is not None:
            self._fingerprint = self._fingerprint_of()
        if self._fingerprint is None:
            h = hashlib.sha256(b"toolsift.static/1")
            if self.path is not None:
                h.update(file_sha256(self.path).encode())
            else:
                for a in (self.table.codes, self.table.scales, self.table.weights):
                    h.update(np.ascontiguousarray(a).tobytes())
            h.update(file_sha256(self.tokenizer_path).encode())
            self._fingerprint = h.hexdigest()
        return self._fingerprint

    def token_ids(self, texts: Sequence[str]) -> list[list[int]]:
        """WordPiece ids of each text (no special tokens, at most 256 tokens each)."""
        if self._fast is None:
            return [e.ids[:_MAX_TOKENS] for e in self._batch(list(texts))]
        # The WordPiece fast path text by text, for a query's few texts and a build's
        # many alike: on the texts it takes it gives tokenizers' ids at a sixth of
        # tokenizers' CPU (batch call on all cores included: 0.7 against 4.3 CPU s for
        # 21k tool texts, docs/results/scale-1M-2026-11-28b.md). Texts it does not take
        # (accents, added tokens, dropped control characters) go to tokenizers together.
        got: list[list[int] | None] = [self._fast.ids(t) for t in texts]
        rest = [i for i, ids in enumerate(got) if ids is None]
        if rest:
            for i, e in zip(rest, self._batch([texts[i] for i in rest])):
                got[i] = e.ids
        return [ids[:_MAX_TOKENS] for ids in got]  # type: ignore[index]

    def _batch(self, texts: list[str]) -> list[Any]:
        """tokenizers' encodings of ``texts`` (without offsets where the version can)."""
        if len(texts) == 1:
            return [self._tokenizer.encode(texts[0], add_special_tokens=False)]
        fast = getattr(self._tokenizer, "encode_batch_fast", None)  # tokenizers >= 0.20: no offsets
        return (fast or self._tokenizer.encode_batch)(texts, add_special_tokens=False)

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        """``float32[len(texts), dim]`` unit rows (a zero row for a text with no token of
        weight: empty, blank or punctuation only).

        Raises:
            EncoderInputError: ``texts`` is a single ``str`` or holds a non-string.
        """
        if isinstance(texts, (str, bytes)):
            raise EncoderInputError("texts must be a sequence of str, not a single str; wrap it in a list")
        texts = list(texts)
        for i, text in enumerate(texts):
            if not isinstance(text, str):
                raise EncoderInputError(f"texts[{i}]: expected str, got {type(text).__name__}")
        if len(texts) == 1:  # a query: no chunking, its ids straight into the kernel
            codes, mult, ids = self._rows(np.array(self.token_ids(texts)[0], dtype=np.int64))
            return mean_rows(codes, mult, np.array([0, ids.size], np.int64), ids)
        out = np.empty((len(texts), self.dim), dtype=np.float32)
        # A slice of texts at a time: a catalogue's token ids at once would be large.
        for start in range(0, len(texts), _CHUNK):
            chunk = self.token_ids(texts[start:start + _CHUNK])
            ptr = np.zeros(len(chunk) + 1, dtype=np.int64)
            np.cumsum([len(x) for x in chunk], out=ptr[1:])
            flat = np.fromiter(chain.from_iterable(chunk), dtype=np.int64, count=int(ptr[-1]))
            codes, mult, flat = self._rows(flat)
            out[start:start + _CHUNK] = mean_rows(codes, mult, ptr, flat)
        return out

    def __repr__(self) -> str:
        return f"StaticEncoder(table={str(self.path) if self.path else '<in memory>'!r}, dim={self.dim})"


def load_tokenizer(path: Path) -> Any:
    """A ``tokenizers.Tokenizer`` from ``path`` with padding and truncation off."""
    try:
        import tokenizers
    except ImportError as exc:
        raise EncoderError("the static encoder needs the package 'tokenizers': pip install tokenizers "
                           "(or toolsift[dense])") from exc
    if not path.is_file():
        raise EncoderError(f"tokenizer file not found: {path}")
    try:
        tok = tokenizers.Tokenizer.from_file(str(path))
    except Exception as exc:  # the Rust side raises plain Exception
        raise EncoderError(f"cannot read tokenizer {path}: {exc}") from exc
    tok.no_padding()
    tok.no_truncation()
    return tok
