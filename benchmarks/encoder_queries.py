"""The queries of the encoder benchmark, shared with scripts/bench_sentence_transformers.py
(which runs in a torch venv without toolsift, so this module imports nothing)."""

QUERIES = [
    "send an email to my manager with the quarterly report attached",
    "what's the weather in Lisbon tomorrow",
    "refund the last payment from customer 4411",
    "book a meeting with the design team next Tuesday at 10am",
] * 25
