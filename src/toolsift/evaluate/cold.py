"""Cold-start methods: what a new user gets on an unseen catalogue, and the baselines and
peers they would compare with, all from the tools and the raw query text alone.

No method here reads a label, a feedback example or a weight trained on the set itself:
the corpus is the dataset's raw tools converted by toolsift's adapters, the query is the
raw request (or, for the ``*-structured`` methods, the authors' LLM rewrite of it, the
input an agent's LLM would send). They are the same on every fold, so they are run once over all queries.

=================  =====================================================================
``default``        ``ToolIndex.build(catalog)`` and ``search_batch(texts, k=100)`` with the
                   default preset, ``hybrid``: hybrid (BM25 + dense) description, response
                   and examples fields, MiniLM document vectors, static query encoder,
                   multi-step requests split (exactly the README's first two lines)
``default-complete`` as ``default``, with the top 10 completed into a tool set
                   (``ToolIndex.complete``: producers of missing inputs, CRUD steps the
                   query asks for, near-duplicates out; ``docs/graph.md``); the
                   default ranking continues below it
``default-transformer``  ``default`` with queries embedded by MiniLM itself
``default-densehalf``  ``default`` with BM25's share of the hybrid fields at 0: its
                   dense half alone (parameters stay BM25)
``default-onevector``  ``default`` with ``split_steps`` off: one query vector for the
                   whole request
``default-structured``
                   as ``default``, but each query is the MFTR authors' LLM rewrite
                   (tool needs + extracted arguments) with the original text as its
                   request (``toolsift eval --rewrite-only`` drops it): what a calling
                   LLM sends to ``find_tools``; scored with the structured
                   weights (``hybrid-structured-lodo-<set>``); raw tools, no feedback
``default-bm25``   ``default`` with ``preset="bm25"``: BM25 fields, no model (the preset
                   one argument away; "BM25 fields" in the docs)
``default-bm25-complete``, ``default-bm25-structured``
                   ``default-complete`` and ``default-structured`` on the ``bm25`` preset
                   (``structured-lodo-<set>`` weights)
``bm25s-fulldoc``  the bm25s package over one flat text per tool (see :func:`flat_text`);
                   bm25s defaults (Lucene BM25, k1 1.5, b .75, token pattern ``\\w\\w+``)
                   with its English stop words and the PyStemmer English stemmer, as the
                   bm25s README sets it up
``dense-fulldoc``  cosine of all-MiniLM-L6-v2 embeddings (toolsift's OnnxEncoder, the
                   ``dense`` extra's int8 model) of the same flat text and the query
``peer-*``         other tool retrievers on PyPI, each given the tools as OpenAI-style
                   function schemas (:func:`openai_tool`); see :mod:`.peers`
=================  =====================================================================

The names before the hybrid preset became the default (``default-hybrid``,
``default-hybrid-*``) are accepted as aliases (:data:`METHOD_ALIASES`).
"""

from __future__ import annotations

import hashlib
import re
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import Any, Literal

import numpy as np

from ..config import IndexConfig
from ..errors import ConfigError
from ..schema import Catalog, Tool
from .output import MethodOutput, MethodUnavailable

__all__ = ["COLD_METHODS", "BASELINE_METHODS", "STRUCTURED_METHODS", "METHOD_ALIASES", "TRAINED_METHODS", "canonical_method", "default_config", "structured_config", "run_cold", "openai_tool", "flat_text", "ranked_run", "scores_run", "tie_keys",
           "BM25S_SETTINGS"]

_DEPTH = 100

#: The bm25s settings of ``bm25s-fulldoc`` (reported by ``toolsift eval`` and the docs).
BM25S_SETTINGS: dict[str, Any] = {"method": "lucene", "k1": 1.5, "b": 0.75, "stopwords": "en",
                                  "stemmer": "PyStemmer english", "token_pattern": r"(?u)\b\w\w+\b"}

# snake_case, kebab-case, dotted and camelCase identifiers -> words.
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")
_SEPARATORS = re.compile(r"[_\-./\s]+")


def _split_identifier(name: str) -> str:
    return " ".join(w for part in _SEPARATORS.split(name) for w in _CAMEL.split(part) if w)


def openai_tool(tool: Tool) -> dict[str, Any]:
    """The tool as an OpenAI function schema, built from its toolsift fields (what a user
    exporting the catalogue from toolsift would hand another retriever).

    Parameter types are left out when they are not JSON Schema types; enum values that
    the adapters folded into a parameter's description stay there.
    """
    props: dict[str, Any] = {}
    for p in tool.parameters:
        prop: dict[str, Any] = {"type": p.type if p.type in _JSON_TYPES else "string"}
        if p.description:
            prop["description"] = p.description
        props[p.name] = prop
    fn = {"name": tool.name, "description": tool.description,
          "parameters": {"type": "object", "properties": props,
                         "required": [p.name for p in tool.parameters if p.required]}}
    return {"type": "function", "function": fn}


_JSON_TYPES = frozenset({"string", "integer", "number", "boolean", "array", "object", "null"})


def _schema_words(schema: Mapping[str, Any], out: list[str]) -> None:
    props = schema.get("properties")
    if not isinstance(props, Mapping):
        return
    for key, prop in props.items():
        out.append(str(key))
        split = _split_identifier(str(key))
        if split != key:
            out.append(split)
        if not isinstance(prop, Mapping):
            continue
        if isinstance(prop.get("description"), str):
            out.append(prop["description"])
        enum = prop.get("enum")
        if isinstance(enum, list):
            out.extend(v for v in enum if isinstance(v, str))
        _schema_words(prop, out)
        if isinstance(prop.get("items"), Mapping):
            _schema_words(prop["items"], out)


def flat_text(schema: Mapping[str, Any]) -> str:
    """One flat text per tool from its OpenAI function schema: the name as written and
    split into words, the description, and for every (nested) parameter its key as
    written and split, its description and its string enum values."""
    fn = schema.get("function", schema)
    name = str(fn.get("name", ""))
    parts = [name]
    if _split_identifier(name) != name:
        parts.append(_split_identifier(name))
    if isinstance(fn.get("description"), str):
        parts.append(fn["description"])
    if isinstance(fn.get("parameters"), Mapping):
        _schema_words(fn["parameters"], parts)
    return "\n".join(p for p in parts if p)


def ranked_run(ranked: Sequence[Sequence[str]], query_ids: Sequence[str]) -> dict[str, dict[str, float]]:
    """A run from ranked id lists: score ``len - rank``, so trec_eval keeps each list's
    order (no ties)."""
    return {qid: {tid: float(len(ids) - r) for r, tid in enumerate(ids)} for qid, ids in zip(query_ids, ranked)}


def tie_keys(tool_ids: Sequence[str]) -> np.ndarray:
    """``int64`` per tool: a fixed pseudo-random order (a hash of the id) used to break
    score ties in every cold-start run. Neither the catalogue's order nor the ids' spelling
    can leak into a ranking through it."""
    return np.fromiter((int.from_bytes(hashlib.blake2b(t.encode(), digest_size=7).digest(), "little")
                        for t in tool_ids), dtype=np.int64, count=len(tool_ids))


def scores_run(scores: np.ndarray, query_ids: Sequence[str], tool_ids: Sequence[str]) -> dict[str, dict[str, float]]:
    """A run from ``[queries, tools]`` scores, ranked by score with ties broken by
    :func:`tie_keys`, the same for every cold-start method.

    Why it matters: ToolLink and APIBank have many tools with identical text, so a third of
    ToolLink's queries have exact ties in the top 10, and on ToolLink the catalogue order
    happens to put relevant tools first among duplicates. Ties by catalogue position gave
    BM25 N@10 .504, ties by tool id descending (pytrec_eval's rule) .459; methods with
    fewer ties (dense) looked worse or better only through that.
    """
    depth = min(_DEPTH, scores.shape[1])
    keys = np.broadcast_to(tie_keys(tool_ids), scores.shape)
    order = np.lexsort((keys, -scores), axis=1)[:, :depth]
    return ranked_run([[tool_ids[j] for j in row] for row in order], query_ids)


def _depth(catalog: Catalog) -> int:
    return min(_DEPTH, len(catalog))


#: The list size ``default-complete`` completes (the cut of completeness@10).
COMPLETE_K = 10


def _search_run(catalog: Catalog, texts: Sequence[str], qids: Sequence[str], config: IndexConfig, *,
                complete: bool = False) -> tuple[dict, dict]:
    from ..toolindex import ToolIndex

    # All cores for the build (encoding) and the batch: threads change speed, not results.
    index = ToolIndex.build(catalog, config=replace(config, threads=0))
    hits = index.search_batch(list(texts), k=_depth(catalog))
    # search breaks ties by catalogue position; re-rank ties by the shared neutral rule.
    keys = dict(zip((t.id for t in catalog), tie_keys([t.id for t in catalog])))
    ordered = [sorted(hs, key=lambda h: (-h.score, keys[h.id])) for hs in hits]
    if complete:
        # The completed set on top, then the rest of the same ranking.
        k = min(COMPLETE_K, len(catalog))
        done = [index.complete(t, hs[:2 * k], k=k) for t, hs in zip(texts, ordered)]
        ordered = [top + [h for h in hs if h.id not in {x.id for x in top}] for top, hs in zip(done, ordered)]
    ranked = [[h.id for h in hs] for hs in ordered]
    return ranked_run(ranked, qids), {"config": config.to_dict(), **({"complete_k": COMPLETE_K} if complete else {})}


def structured_config(dataset: str | None, *, hybrid: bool = False) -> tuple[IndexConfig, str]:
    """:func:`default_config` with the structured-query weights made explicit: on a shared
    benchmark their leave-one-dataset-out twin (``[hybrid-]structured-lodo-<set>``), else
    the shipped ``[hybrid-]structured-default``. Returns the config and the name of the
    structured weights (``"none"`` when none are shipped: the raw weights score them)."""
    from ..kernels.params import shipped_params

    cfg, _ = default_config(dataset, hybrid=hybrid)
    prefix = "hybrid-" if hybrid else ""
    for name in ([f"{prefix}structured-lodo-{dataset}"] if dataset else []) + [f"{prefix}structured-default"]:
        try:
            return replace(cfg, structured_params=shipped_params(name)), name
        except ConfigError:
            continue
    return replace(cfg, structured_params=cfg.params), "none"


def default_config(dataset: str | None, *, hybrid: bool = False) -> tuple[IndexConfig, str]:
    """The ``bm25`` preset (``hybrid``: the ``hybrid`` preset) as a user gets it, except
    that on one of the shared benchmarks the shipped weights are replaced by their
    leave-one-dataset-out twin (trained on the other sets only), since the shipped ones
    saw this set's queries; the hybrid twin carries its own BM25 share
    ``hybrid_weight``. Returns the config and the name of the weights used."""
    from ..kernels.params import shipped_weights
    from ..presets import preset_config

    base = preset_config("hybrid" if hybrid else "bm25")
    prefix = "hybrid-" if hybrid else ""
    names = ([f"{prefix}lodo-{dataset}"] if dataset else []) + ([f"{prefix}default"] if hybrid else [])
    if hybrid and dataset:
        names.append(f"lodo-{dataset}")  # no hybrid weights shipped: the BM25 ones
    for name in names:
        try:
            doc = shipped_weights(name)
        except ConfigError:
            continue
        hw = doc.get("index_config", {}).get("hybrid_weight", base.hybrid_weight) if hybrid else base.hybrid_weight
        return replace(base, params=doc["params"], hybrid_weight=hw), name
    return base, "default"


def _default_bm25(catalog: Catalog, texts: Sequence[str], qids: Sequence[str], *, encoder: str | None = None,
                  dataset: str | None = None) -> tuple[dict, dict]:
    # preset="bm25" (with LODO weights on a shared set): BM25 fields, no model.
    cfg, weights = default_config(dataset)
    run, note = _search_run(catalog, texts, qids, cfg)
    return run, {"weights": weights, **note}


def _default_structured(catalog: Catalog, texts: Sequence[Any], qids: Sequence[str], *, encoder: str | None = None,
                        dataset: str | None = None, hybrid: bool = False) -> tuple[dict, dict]:
    if hybrid:
        _dense_guard(encoder)
    base, weights = structured_config(dataset, hybrid=hybrid)
    raw_weights = default_config(dataset, hybrid=hybrid)[1]
    if hybrid:
        # As default: a custom document encoder has no fitted static table.
        base = replace(base, encoder=encoder, query_encoder=base.query_encoder if encoder is None else "transformer")
    run, note = _search_run(catalog, texts, qids, base)
    return run, {"weights": raw_weights, "structured_weights": weights, **note}


def _default_hybrid_structured(*args, **kw) -> tuple[dict, dict]:
    return _default_structured(*args, hybrid=True, **kw)


def _default_bm25_structured(*args, **kw) -> tuple[dict, dict]:
    return _default_structured(*args, hybrid=False, **kw)


def _default_complete(catalog: Catalog, texts: Sequence[str], qids: Sequence[str], *, encoder: str | None = None,
                      dataset: str | None = None, hybrid: bool = True) -> tuple[dict, dict]:
    if hybrid:
        _dense_guard(encoder)
    cfg, weights = default_config(dataset, hybrid=hybrid)
    if hybrid:
        cfg = replace(cfg, encoder=encoder, query_encoder=cfg.query_encoder if encoder is None else "transformer")
    run, note = _search_run(catalog, texts, qids, cfg, complete=True)
    return run, {"weights": weights, **note}


def _default_bm25_complete(*args, **kw) -> tuple[dict, dict]:
    return _default_complete(*args, hybrid=False, **kw)


def _dense_guard(encoder: str | None):
    from ..encoders import EncoderError
    from ..toolindex import get_encoder

    try:
        # threads=0: encoding the whole catalogue and query set is batch work.
        return get_encoder(IndexConfig(encoder=encoder, threads=0))
    except (ImportError, EncoderError) as exc:
        raise MethodUnavailable(f"needs the dense extra (pip install 'toolsift[dense]'): {exc}") from None


def _default_hybrid(catalog: Catalog, texts: Sequence[str], qids: Sequence[str], *, encoder: str | None = None,
                    dataset: str | None = None, query_encoder: Literal["static", "transformer"] = "static",
                    ) -> tuple[dict, dict]:
    _dense_guard(encoder)
    base, weights = default_config(dataset, hybrid=True)
    # A custom document encoder has no fitted static table: its queries use the model.
    cfg = replace(base, encoder=encoder, query_encoder=query_encoder if encoder is None else "transformer")
    run, note = _search_run(catalog, texts, qids, cfg)
    return run, {"weights": weights, **note}


def _default_hybrid_transformer(catalog: Catalog, texts: Sequence[str], qids: Sequence[str], *,
                                encoder: str | None = None, dataset: str | None = None) -> tuple[dict, dict]:
    return _default_hybrid(catalog, texts, qids, encoder=encoder, dataset=dataset, query_encoder="transformer")


def _default_hybrid_densehalf(catalog: Catalog, texts: Sequence[str], qids: Sequence[str], *,
                              encoder: str | None = None, dataset: str | None = None) -> tuple[dict, dict]:
    """``default`` with BM25's share of the hybrid fields set to 0: the dense half
    alone (the parameters field stays BM25, as in the preset)."""
    _dense_guard(encoder)
    base, weights = default_config(dataset, hybrid=True)
    cfg = replace(base, encoder=encoder, hybrid_weight=0.0, query_encoder="static" if encoder is None else "transformer")
    run, note = _search_run(catalog, texts, qids, cfg)
    return run, {"weights": weights, **note}


def _default_hybrid_onevector(catalog: Catalog, texts: Sequence[str], qids: Sequence[str], *,
                              encoder: str | None = None, dataset: str | None = None) -> tuple[dict, dict]:
    """``default`` with ``split_steps`` off: one query vector per request (the
    hybrid preset before multi-step requests were split)."""
    _dense_guard(encoder)
    base, weights = default_config(dataset, hybrid=True)
    cfg = replace(base, encoder=encoder, split_steps=False, query_encoder="static" if encoder is None else "transformer")
    run, note = _search_run(catalog, texts, qids, cfg)
    return run, {"weights": weights, **note}


def _docs(catalog: Catalog) -> list[str]:
    return [flat_text(openai_tool(t)) for t in catalog]


def bm25s_scores(docs: Sequence[str], queries: Sequence[str], *, stem: bool = True) -> np.ndarray:
    """``[queries, docs]`` BM25 scores with the bm25s package and :data:`BM25S_SETTINGS`
    (``stem=False``: without the stemmer, as bm25s's minimal example runs)."""
    try:
        import bm25s
        import Stemmer
    except ImportError as exc:
        raise MethodUnavailable(f"bm25s-fulldoc needs bm25s and PyStemmer (pip install 'toolsift[peers]'): "
                                f"{exc}") from None
    stemmer = Stemmer.Stemmer("english").stemWords if stem else None
    kw = dict(stopwords=BM25S_SETTINGS["stopwords"], stemmer=stemmer, show_progress=False,
              token_pattern=BM25S_SETTINGS["token_pattern"])
    retriever = bm25s.BM25(method=BM25S_SETTINGS["method"], k1=BM25S_SETTINGS["k1"], b=BM25S_SETTINGS["b"])
    retriever.index(bm25s.tokenize(list(docs), **kw), show_progress=False)
    vocab = retriever.vocab_dict
    q_tokens = bm25s.tokenize(list(queries), return_ids=False, **kw)
    out = np.zeros((len(queries), len(docs)), dtype=np.float32)
    for i, toks in enumerate(q_tokens):
        # bm25s rejects terms outside the corpus vocabulary; they score 0 anyway.
        known = [t for t in toks if t in vocab]
        if known:
            out[i] = retriever.get_scores(known)
    return out


def _bm25s(catalog: Catalog, texts: Sequence[str], qids: Sequence[str], *, stem: bool = True,
           **_) -> tuple[dict, dict]:
    scores = bm25s_scores(_docs(catalog), texts, stem=stem)
    settings = BM25S_SETTINGS if stem else {**BM25S_SETTINGS, "stemmer": None}
    return scores_run(scores, qids, [t.id for t in catalog]), {"bm25s": settings}


def _bm25s_nostem(catalog: Catalog, texts: Sequence[str], qids: Sequence[str], **kw) -> tuple[dict, dict]:
    return _bm25s(catalog, texts, qids, stem=False, **kw)


def _dense(catalog: Catalog, texts: Sequence[str], qids: Sequence[str], *, encoder: str | None = None
           ) -> tuple[dict, dict]:
    from ..index.dense_field import encode_texts

    enc = _dense_guard(encoder)
    scores = encode_texts(enc, list(texts)) @ encode_texts(enc, _docs(catalog)).T
    return scores_run(scores, qids, [t.id for t in catalog]), {"encoder": encoder or "default"}


def _peer(name: str) -> Callable[..., tuple[dict, dict]]:
    def run(catalog: Catalog, texts: Sequence[str], qids: Sequence[str], **_) -> tuple[dict, dict]:
        from .peers import PEERS

        ranked, note = PEERS[name](catalog, [openai_tool(t) for t in catalog], texts, k=_depth(catalog))
        return ranked_run(ranked, qids), note

    return run


_RUNNERS: dict[str, Callable[..., tuple[dict, dict]]] = {
    "default": _default_hybrid,
    "default-complete": _default_complete,
    "default-transformer": _default_hybrid_transformer,
    "default-densehalf": _default_hybrid_densehalf,
    "default-onevector": _default_hybrid_onevector,
    "default-structured": _default_hybrid_structured,
    "default-bm25": _default_bm25,
    "default-bm25-complete": _default_bm25_complete,
    "default-bm25-structured": _default_bm25_structured,
    "bm25s-fulldoc": _bm25s,
    "bm25s-fulldoc-nostem": _bm25s_nostem,
    "dense-fulldoc": _dense,
    "peer-ratel": _peer("ratel"),
    "peer-toolpicker": _peer("toolpicker"),
    "peer-dehydrator": _peer("dehydrator"),
    "peer-langchain": _peer("langchain"),
    "peer-graphtoolcall": _peer("graphtoolcall"),
}

#: Every cold-start method, in table order.
COLD_METHODS: tuple[str, ...] = tuple(_RUNNERS)
#: Names from before the hybrid preset was the default, and the method each now is.
METHOD_ALIASES: dict[str, str] = {
    "default-hybrid": "default",
    "default-hybrid-transformer": "default-transformer",
    "default-hybrid-densehalf": "default-densehalf",
    "default-hybrid-onevector": "default-onevector",
    "default-hybrid-structured": "default-structured",
}
#: Methods whose queries are the structured (LLM-rewritten) ones: ``run_cold(structured=...)``.
STRUCTURED_METHODS: tuple[str, ...] = ("default-structured", "default-bm25-structured")
#: What ``toolsift eval DATASET`` adds to a table when no ``--method`` is given.
BASELINE_METHODS: tuple[str, ...] = ("default", "default-complete", "default-bm25", "bm25s-fulldoc", "dense-fulldoc",
                                     "peer-ratel")
#: The methods that score with trained weights (leave-one-dataset-out ones on a shared set).
TRAINED_METHODS: tuple[str, ...] = ("default", "default-complete", "default-transformer", "default-densehalf",
                                    "default-onevector", "default-bm25", "default-bm25-complete",
                                    *STRUCTURED_METHODS)


def canonical_method(method: str) -> str:
    """``method`` with an old name (:data:`METHOD_ALIASES`) replaced by today's."""
    return METHOD_ALIASES.get(method, method)


def run_cold(method: str, catalog: Catalog, queries: Sequence[tuple[str, str]], *,
             encoder: str | None = None, dataset: str | None = None,
             structured: Sequence[Any] | None = None) -> MethodOutput:
    """Run one cold-start method over every query.

    Args:
        method: One of :data:`COLD_METHODS` (or an old name of :data:`METHOD_ALIASES`).
        catalog: The tools as a user would load them (adapters only, no LLM).
        queries: ``(query id, raw text)`` pairs; nothing else about a query is used.
        encoder: Encoder directory for the dense methods (default: the bundled MiniLM).
        dataset: The shared benchmark's folder name (e.g. ``"mftr-apibank"``): the
            trained methods (:data:`TRAINED_METHODS`) then score with the weights trained
            without it (``[hybrid-]lodo-<dataset>``).
        structured: For :data:`STRUCTURED_METHODS`: one structured query per query
            (a :class:`~toolsift.schema.Query` or its dict form; ``None`` falls back to the
            raw text).

    Returns:
        The run (top 100 per query, ``search`` order for ranked-list methods), wall
        time including index build, and a note with the settings used.

    Raises:
        ValueError: Unknown method.
        MethodUnavailable: An optional dependency is missing (the message names the extra),
            or a structured method got no structured queries.
    """
    method = canonical_method(method)
    if method not in _RUNNERS:
        raise ValueError(f"unknown cold-start method {method!r} (methods: {', '.join(COLD_METHODS)})")
    if len(catalog) == 0:
        raise ValueError("cold-start evaluation needs a non-empty catalogue")
    qids = [q for q, _ in queries]
    texts: list[Any] = [t for _, t in queries]
    llm: bool | str = False
    if method in STRUCTURED_METHODS:
        if structured is None:
            raise MethodUnavailable("needs structured (LLM-rewritten) queries; this data set has none")
        if len(structured) != len(texts):
            raise ValueError(f"structured: {len(structured)} queries for {len(texts)} query ids")
        texts = [t if s is None else s for t, s in zip(texts, structured)]
        llm = "the queries (rewritten by the data set's authors)"
    t0 = time.perf_counter()
    kw = {"dataset": dataset} if method in TRAINED_METHODS else {}
    run, note = _RUNNERS[method](catalog, texts, qids, encoder=encoder, **kw)
    note = {"method": method, "labels": False, "llm": llm, "feedback": False, **note}
    return MethodOutput(run, time.perf_counter() - t0, len(qids) * len(catalog), [note])
