"""Ablation of the static query encoder's fit (docs/dense.md, "Query encoder").

For each shared set: MiniLM vectors of the ``hybrid`` preset's dense documents (tool
cards, responses, example intents; tool texts only) and of the raw queries, then a flat
dense ranking of the description field (tool cards) by the query vectors. The figure is
N@10 with static query vectors divided by N@10 with the transformer's own query vectors
(1.0 = as good as MiniLM). Variants:

* ``prior``: each token's own MiniLM vector, SIF-weighted (model2vec-style);
* ``stdlib``: the shipped table (ridge fit on Python standard library docstrings);
* ``others``: fitted on the other four sets' tool texts (the issue's lead);
* ``stdlib+own``: the shipped table refitted on this catalogue's documents (what an index
  does at build time), ``+spans`` also on its tools' names and description sentences;
* ``lam=…``: the refit's ridge strength.

No query is used to fit anything; queries only score. Vectors go through the evaluation
embedding cache; the shipped table is read from the package. Run:

    python scripts/static_encoder_ablation.py [--sets mftr-apibank,...]
"""

from __future__ import annotations

import argparse
import re
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from coldstart_lib import SETS, load_set
from fit_static_encoder import stdlib_texts

from toolsift.config import IndexConfig
from toolsift.encoders import OnnxEncoder
from toolsift.encoders.static import StaticEncoder, StaticTable
from toolsift.encoders.static_fit import fit_vectors, mean_matrix, sif_weights, single_token_prior, token_counts
from toolsift.evaluate.cold import scores_run
from toolsift.evaluate.embcache import eval_encoder_cache
from toolsift.evaluate.metrics import evaluate
from toolsift.index.dense_field import encode_texts
from toolsift.index.embed import get_encoder
from toolsift.index.fields import field_documents
from toolsift.presets import preset_config

CFG = preset_config("hybrid")
_SENTENCE = re.compile(r"(?<=[.!?;])\s+")


def tool_spans(tool) -> list[str]:
    """Query-length texts of a tool: its name in words, and each sentence of its
    description when there are several (the variant measured and not kept)."""
    name = re.sub(r"([a-z0-9])([A-Z])", r"\1 \2", tool.name).replace("_", " ").replace(".", " ").strip()
    parts = [p.strip() for p in _SENTENCE.split(tool.description or "") if len(p.strip()) >= 12]
    return list(dict.fromkeys(([name] if name else []) + (parts if len(parts) > 1 else [])))


def teacher(texts: list[str]) -> np.ndarray:
    with eval_encoder_cache():
        return encode_texts(get_encoder(IndexConfig(threads=0, query_encoder="transformer")), texts)


def documents(cs) -> tuple[list[str], np.ndarray, np.ndarray]:
    """Distinct non-blank dense documents, their vectors, and the tool cards' vectors."""
    fd = field_documents(cs.catalog, name_in_description=CFG.name_in_description,
                         split_identifiers=CFG.split_identifiers, parameter_format=CFG.parameter_format,
                         tool_card=CFG.tool_card)
    texts = list(dict.fromkeys(t for f in ("description", "response", "examples") for t in fd[f].texts if t.strip()))
    return texts, teacher(texts), teacher(fd["description"].texts)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sets", default=",".join(SETS))
    args = ap.parse_args()
    shipped = StaticEncoder()
    base, w, tok = shipped.table.vectors(), shipped.table.weights, shipped
    onnx = OnnxEncoder(threads=0)
    prior = single_token_prior(onnx, base.shape[0])
    st_texts = stdlib_texts()
    w_prior = sif_weights(token_counts(tok.token_ids(st_texts), base.shape[0]))
    data = {s: load_set(s) for s in SETS}
    docs = {s: documents(data[s]) for s in SETS}
    for s in args.sets.split(","):
        t0 = time.time()
        cs = data[s]
        texts, y, cards = docs[s]
        qy = teacher(cs.texts)

        def ndcg(q: np.ndarray) -> float:
            run = scores_run(q @ cards.T, cs.query_ids, [t.id for t in cs.catalog])  # noqa: B023 - called within this iteration
            return evaluate(cs.qrels, run, metrics=("ndcg@10",)).mean["ndcg@10"]  # noqa: B023 - called within this iteration

        def encode(vecs: np.ndarray, weights: np.ndarray) -> np.ndarray:
            return StaticEncoder(StaticTable.from_vectors(vecs, weights)).encode(cs.texts)  # noqa: B023 - called within this iteration

        def refit(corpus: list[str], targets: np.ndarray, start: np.ndarray, weights: np.ndarray,
                  lam: float = 0.05) -> np.ndarray:
            return fit_vectors(mean_matrix(tok.token_ids(corpus), weights), targets, start, lam=lam, iters=30)

        ref = ndcg(qy)
        res = {"transformer N@10": round(ref, 4), "prior": ndcg(encode(prior, w_prior)) / ref,
               "stdlib": ndcg(encode(base, w)) / ref}
        others = [o for o in SETS if o != s]
        o_texts = [t for o in others for t in docs[o][0]]
        o_y = np.concatenate([docs[o][1] for o in others])
        res["others"] = ndcg(encode(refit(o_texts, o_y, prior, w_prior), w_prior)) / ref
        res["stdlib+own"] = ndcg(encode(refit(texts, y, base, w), w)) / ref
        spans = list(dict.fromkeys(x for t in cs.catalog for x in tool_spans(t)))
        sy = teacher(spans)
        res["stdlib+own+spans"] = ndcg(encode(refit(texts + spans, np.concatenate([y, sy]), base, w), w)) / ref
        for lam in (0.01, 0.2):
            res[f"stdlib+own+spans lam={lam}"] = ndcg(encode(
                refit(texts + spans, np.concatenate([y, sy]), base, w, lam), w)) / ref
        print(s, {k: round(v, 3) for k, v in res.items()}, f"{time.time() - t0:.0f} s", flush=True)


if __name__ == "__main__":
    main()
