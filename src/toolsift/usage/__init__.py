"""Learning from usage: what agents actually call makes the ranking better.

* :class:`UsageLog` - the embedded usage log (SQLite, WAL, size and age caps,
  arguments not stored by default; schema in :mod:`toolsift.usage.store`).
* :class:`UsageRecorder` - the gateway's hook (``Gateway(index, recorder=...)``), and
  :func:`record_use` for library users.
* :func:`attribute` / :class:`AttributionRules` - which uses are (query -> tool)
  positives and weak negatives, with per-session caps.
* :func:`learn` / :func:`learn_index` / :class:`LearnConfig` - example intents from
  trusted positives and retrained field weights, as a new index version
  (``toolsift learn INDEX --usage usage.db OUT``).
* :class:`Relearner` - relearn in a running gateway on a schedule or a signal, with
  an atomic index swap and rollback.

See docs/usage-learning.md. Importing this package does not load the compiled core.
"""

from __future__ import annotations

from ..lazy import lazy_exports

# Names are imported on first use: the CLI imports toolsift.usage.cli, which must not
# pull in the trainer (Numba) just to build its argument parser.
_WHERE = {
    "AttributionRules": "attribution", "Evidence": "attribution", "IntentEvidence": "attribution",
    "attribute": "attribution", "intent_key": "attribution",
    "LearnConfig": "learner", "LearnResult": "learner", "learn": "learner", "learn_index": "learner",
    "UnknownToolsWarning": "learner",
    "trusted_intents": "learner",
    "UsageRecorder": "recorder", "intent_of": "recorder", "outcome_of": "recorder", "record_use": "recorder",
    "Relearner": "relearn", "GatewayLearning": "relearn",
    "OUTCOMES": "store", "SCHEMA_VERSION": "store", "UsageLog": "store", "UsageLogError": "store",
}


__getattr__, __dir__ = lazy_exports(__name__, _WHERE, globals())


__all__ = [
    "OUTCOMES",
    "SCHEMA_VERSION",
    "AttributionRules",
    "Evidence",
    "GatewayLearning",
    "IntentEvidence",
    "LearnConfig",
    "LearnResult",
    "Relearner",
    "UnknownToolsWarning",
    "UsageLog",
    "UsageLogError",
    "UsageRecorder",
    "attribute",
    "intent_key",
    "intent_of",
    "learn",
    "learn_index",
    "outcome_of",
    "record_use",
    "trusted_intents",
]
