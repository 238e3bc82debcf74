"""Query planning: a batch of queries becomes the texts each field is searched with.

Every tool need contributes one text to the description, response and examples fields
(its tool description with its user intent and the query's original request,
expected response and user intent; :func:`description_query`); every extracted argument
contributes one text to the parameters field. Texts are analysed once with the index's
analyzer, and texts for dense or hybrid fields are embedded with one encoder call over
the distinct strings (a raw query is the same string in three fields: encoded once).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..analyze import TermBatch
from ..config import IndexConfig
from ..csr import row_of
from ..index.dense_field import encode_texts
from ..index.query_table import query_encoder_for
from ..index.fields import argument_text
from ..index.state import IndexState
from ..schema import FIELDS, Query, ToolNeed
from .query import is_raw

__all__ = ["FieldTexts", "QueryPlan", "plan_queries"]


@dataclass(frozen=True)
class FieldTexts:
    """The texts one field is searched with, CSR by query.

    Attributes:
        texts: The raw strings, query by query.
        ptr: ``int64[nq + 1]``: query ``q``'s texts are ``texts[ptr[q]:ptr[q+1]]``.
        terms: The analysed texts (term ids; -1 for words the index never saw).
        vectors: ``float32[len(texts), dim]`` unit embeddings for dense or hybrid
            fields, else ``None``.
        codes: ``(int8[len(texts), dim], float32[len(texts)])``: ``vectors`` quantized
            as the documents are (once per plan, shared by candidates and scoring), or
            ``None``.
        owner: ``int64[len(texts)]``: the query each text belongs to.
    """

    texts: list[str]
    ptr: np.ndarray
    terms: TermBatch
    vectors: np.ndarray | None = None
    codes: tuple[np.ndarray, np.ndarray] | None = None
    owner: np.ndarray = field(default=None, repr=False)  # type: ignore[arg-type, assignment]  # derived when not given

    def __post_init__(self) -> None:
        # int64[len(texts)]: the query each text belongs to (the engine's text_query).
        # A plan passes one array to every field with the same ptr.
        if self.owner is None:
            object.__setattr__(self, "owner", read_only(row_of(self.ptr)))


@dataclass(frozen=True)
class QueryPlan:
    """Everything candidate generation and scoring need to know about a batch of queries.

    Attributes:
        queries: The parsed queries.
        fields: Per field, its texts (see :class:`FieldTexts`).
        arg_names: Per query, the argument each parameter-field text stands for
            (``None`` where the text is a need's intent standing in for arguments).
        penalize: ``uint8[nq]``: whether the missing-parameter penalty applies.
    """

    queries: list[Query]
    fields: dict[str, FieldTexts]
    arg_names: list[list[str | None]]
    penalize: np.ndarray

    def __len__(self) -> int:
        return len(self.queries)

    @property
    def need_ptr(self) -> np.ndarray:
        """``int64[nq + 1]``: CSR pointer of tool needs per query."""
        return self.fields["description"].ptr

    @property
    def arg_ptr(self) -> np.ndarray:
        """``int64[nq + 1]``: CSR pointer of parameter-field texts per query."""
        return self.fields["parameters"].ptr


def plan_queries(st: IndexState, config: IndexConfig, queries: list[Query]) -> QueryPlan:
    """Analyse (and, for dense fields, embed) the texts of ``queries``."""
    if len(queries) == 1 and config.no_argument_params == "intent" and is_raw(queries[0]) \
            and (not st.dense or queries[0].text.strip()):
        return _plan_one_raw(st, config, queries[0])
    return _plan(st, config, queries)


def _plan_one_raw(st: IndexState, config: IndexConfig, q: Query) -> QueryPlan:
    """:func:`_plan` of one raw-text query (the usual single search): the same text in
    every field (the parameters field sees the intent), so one :class:`FieldTexts`
    serves all four, and the dense fields share its one embedding (the text is not
    blank: a blank one takes :func:`_plan`, which gives it zero vectors)."""
    terms = st.vocab.encode_batch([config.analyzer.tokenize(q.text)], grow=False)
    read_only(terms.terms)
    read_only(terms.offsets)
    ptr = np.array([0, 1], dtype=np.int64)
    owner = read_only(np.zeros(1, dtype=np.int64))
    one = FieldTexts([q.text], ptr, terms, None, None, owner)
    fields = dict.fromkeys(FIELDS, one)
    if st.dense:
        vec, codes = _embed_one(st, config, q.text)
        dense = FieldTexts([q.text], ptr, terms, vec, codes, owner)
        fields.update(dict.fromkeys((f for f in FIELDS if f in st.dense), dense))
    return QueryPlan([q], fields, [[None]], np.zeros(1, dtype=np.uint8))


def _plan(st: IndexState, config: IndexConfig, queries: list[Query]) -> QueryPlan:
    """:func:`plan_queries`, for any batch."""
    texts: dict[str, list[str]] = {f: [] for f in FIELDS}
    need_ptr = np.zeros(len(queries) + 1, dtype=np.int64)
    arg_ptr = np.zeros(len(queries) + 1, dtype=np.int64)
    penalize = np.zeros(len(queries), dtype=np.uint8)
    arg_names: list[list[str | None]] = []
    for i, q in enumerate(queries):
        request = q.text if config.request_in_description else ""
        for need in q.needs:
            texts["description"].append(description_query(need, intent=config.intent_in_description,
                                                          request=request))
            texts["response"].append(need.expected_response)
            texts["examples"].append(need.user_intent)
        if q.arguments:
            names: list[str | None] = list(q.arguments)
            texts["parameters"].extend(argument_text(a, d, split_identifiers=config.split_identifiers)
                                       for a, d in q.arguments.items())
            penalize[i] = 1
        elif config.penalize_without_arguments and not is_raw(q):
            names = []
            penalize[i] = 1
        elif config.no_argument_params == "intent":
            names = [None] * len(q.needs)
            texts["parameters"].extend(n.user_intent for n in q.needs)
        else:
            names = []
        arg_names.append(names)
        need_ptr[i + 1] = len(texts["description"])
        arg_ptr[i + 1] = len(texts["parameters"])

    analyse = _analyser(st, config)
    vectors, codes = _embed(st, config, texts)
    need_owner = read_only(row_of(need_ptr))
    if len(queries) == 1 and arg_ptr[1] == need_ptr[1]:
        arg_ptr, arg_owner = need_ptr, need_owner  # one query, one text per need in each field (raw text)
    else:
        arg_owner = read_only(row_of(arg_ptr))
    fields = {
        f: FieldTexts(texts[f], arg_ptr if f == "parameters" else need_ptr, analyse(texts[f]), vectors.get(f),
                      codes.get(f), arg_owner if f == "parameters" else need_owner)
        for f in FIELDS
    }
    return QueryPlan(queries, fields, arg_names, penalize)


def description_query(need: ToolNeed, *, intent: bool = True, request: str = "") -> str:
    """The description field's query text of a structured need: its tool description,
    its user intent (IndexConfig.intent_in_description) and the query's original request
    (IndexConfig.request_in_description), in that order. Blank texts are left out and a
    text equal to one before it is not repeated (a raw query's one text stays one)."""
    parts: list[str] = []
    for text in (need.tool_description, need.user_intent if intent else "", request):
        if text.strip() and text not in parts:
            parts.append(text)
    return " ".join(parts)


def _analyser(st: IndexState, config: IndexConfig):
    """Texts -> :class:`TermBatch` for one plan. A raw query is the same text in every
    field: its term batch is made once and shared (read-only), and a text that recurs
    across fields or queries is tokenized once."""
    tokenize = _memo(config.analyzer.tokenize)
    batches: dict[tuple[str, ...], TermBatch] = {}

    def analyse(texts: list[str]) -> TermBatch:
        key = tuple(texts)
        got = batches.get(key)
        if got is None:
            got = st.vocab.encode_batch([tokenize(t) for t in texts], grow=False)
            read_only(got.terms)
            read_only(got.offsets)
            batches[key] = got
        return got

    return analyse


def read_only(a: np.ndarray) -> np.ndarray:
    """``a``, made read-only. The engine reads a read-only array that owns its data as
    it is; any other it copies first, as another thread could change it while the engine
    runs without the GIL (a search passes each term batch to eight engine calls)."""
    a.flags.writeable = False
    return a


def _memo(fn):
    cache: dict[str, list[str]] = {}

    def tokenize(text: str) -> list[str]:
        got = cache.get(text)
        if got is None:
            got = cache[text] = fn(text)
        return got

    return tokenize


def _embed(st: IndexState, config: IndexConfig, texts: dict[str, list[str]]
           ) -> tuple[dict[str, np.ndarray], dict[str, tuple[np.ndarray, np.ndarray]]]:
    """Unit embeddings of the dense fields' texts and their int8 codes: one query-encoder
    call (by default the static table, no transformer pass) and one quantization, each
    distinct non-blank string once (a raw query is the same string in three fields)."""
    names = [f for f in FIELDS if f in st.dense]
    if not names:
        return {}, {}
    flat = [t for f in names for t in texts[f]]
    if all(len(texts[f]) == 1 for f in names) and flat.count(flat[0]) == len(flat) and flat[0].strip():
        # The same one text in every dense field: embedded and quantized once.
        vec, one = _embed_one(st, config, flat[0])
        return dict.fromkeys(names, vec), dict.fromkeys(names, one)
    from ..kernels.int8 import quantize_rows

    vecs = encode_texts(query_encoder_for(st, config), flat)
    q_codes, q_scales = quantize_rows(vecs)
    out: dict[str, np.ndarray] = {}
    codes: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    start = 0
    for f in names:
        end = start + len(texts[f])
        out[f] = vecs[start:end]
        codes[f] = (q_codes[start:end], q_scales[start:end])
        start = end
    return out, codes


def _embed_one(st: IndexState, config: IndexConfig, text: str) -> tuple[np.ndarray, tuple[np.ndarray, np.ndarray]]:
    """One non-blank text's unit embedding and its int8 codes, read-only: the fields
    that search with it share the rows."""
    from ..kernels.int8 import quantize_trusted

    # The encoder's own fresh unit rows: finite and C-contiguous, no checks to pay.
    vec = encode_texts(query_encoder_for(st, config), [text])
    qc, qs = quantize_trusted(vec)
    return read_only(vec), (read_only(qc), read_only(qs))
