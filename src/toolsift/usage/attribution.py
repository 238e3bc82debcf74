"""Attribution: which logged uses say "this query wanted that tool".

The rules (also in docs/usage-learning.md):

1. Only a **successful** use counts (arguments validated and the tool ran without error).
   A failed call never adds or removes evidence.
2. A successful ``call_tool``/``use_tool`` is attributed to the **latest** ``find_tools``
   of the same session (same gateway run, same session id) made at most ``window_s``
   seconds before it: a (query intent -> tool) positive. Uses without such a find, and
   finds or uses without a session, give nothing. ``use_tool``'s own query is the
   gateway's choice, not the agent's, so it is not a positive unless
   ``count_use_tool_queries`` is set. A library ``record_use`` is a direct positive.
3. Per find, at most ``max_tools_per_find`` distinct tools are credited (the first
   ones used): a session calling many tools after one search is probing, not choosing.
4. Per session (the *voter*): one vote per (intent, tool), at most
   ``max_intents_per_tool`` intents per tool and ``max_votes`` votes in all, first
   ones in time. 1,000 uses from one session are worth no more than a few.
5. Tools a find returned that the session did not use successfully within the window
   are weak negatives of that intent, if the find got a positive at all (an agent that
   used nothing may just have given up).

How much evidence makes an intent trusted is decided when learning
(:class:`~toolsift.usage.learn.LearnConfig`: distinct voters, majority).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Annotated, Literal

from ..checking import Strict, check_fields
from .store import FindRow, UsageLog, UseRow

__all__ = ["AttributionRules", "IntentEvidence", "Evidence", "attribute", "intent_key"]

_SPACE = re.compile(r"\s+")
_TRIM = re.compile(r"^[\W_]+|[\W_]+$")


def intent_key(text: str) -> str:
    """The form under which two intents are the same: case-folded, whitespace collapsed,
    punctuation trimmed at both ends."""
    return _TRIM.sub("", _SPACE.sub(" ", text).strip().casefold())


@dataclass(frozen=True)
class AttributionRules:
    """The attribution settings (see the module docstring for the rules).

    Attributes:
        window_s: A use counts for a find at most this many seconds later.
        max_tools_per_find: Distinct tools credited to one find.
        max_intents_per_tool: Distinct intents one voter may credit to one tool.
        max_votes: (intent, tool) votes one voter may give in all.
        count_use_tool_queries: Also count ``use_tool``'s own query as a positive.
        voter: ``"session"`` (default) or ``"client"``: what one vote belongs to; with
            ``"client"``, all sessions of a recorded client identity are one voter
            (rows without a client fall back to their session).
    """

    window_s: Annotated[float, Strict(gt=0, allow_inf_nan=False)] = 300.0
    max_tools_per_find: Annotated[int, Strict(ge=1)] = 3
    max_intents_per_tool: Annotated[int, Strict(ge=1)] = 3
    max_votes: Annotated[int, Strict(ge=1)] = 100
    count_use_tool_queries: Annotated[bool, Strict()] = False
    voter: Literal["session", "client"] = "session"

    def __post_init__(self) -> None:
        check_fields(self, "rules")


@dataclass
class IntentEvidence:
    """What the log says about one intent.

    Attributes:
        text: The intent as first seen (what becomes an example).
        positives: Tool id -> voters that used it successfully after this intent.
        negatives: Tool id -> voters it was returned to and who did not use it.
        first_seen: Time of the first vote.
        clients: Tool id -> distinct client identities behind its positive voters
            (all voters with no recorded client are one identity, ``"anonymous"``).
            Sessions cost an attacker nothing; identities (an auth principal, the
            HTTP peer) do, so trust counts these too (``LearnConfig.min_clients``).
    """

    text: str
    positives: dict[str, set[str]] = field(default_factory=dict)
    negatives: dict[str, set[str]] = field(default_factory=dict)
    first_seen: float = 0.0
    clients: dict[str, set[str]] = field(default_factory=dict)


@dataclass
class Evidence:
    """Attributed evidence per intent key, plus counts of what was read and dropped."""

    intents: dict[str, IntentEvidence] = field(default_factory=dict)
    stats: dict[str, int] = field(default_factory=dict)

    def bump(self, key: str, n: int = 1) -> None:
        self.stats[key] = self.stats.get(key, 0) + n


class _Voter:
    """Per-voter budget (rule 4)."""

    __slots__ = ("votes", "per_tool", "seen")

    def __init__(self) -> None:
        self.votes = 0
        self.per_tool: dict[str, int] = {}
        self.seen: set[tuple[str, str]] = set()


def _voter_id(row: FindRow | UseRow, rules: AttributionRules) -> str | None:
    if rules.voter == "client" and row.client:
        return f"client:{row.client}"
    if row.session is None:
        return None
    return f"{row.run}/{row.session}"


#: The one identity of every vote without a recorded client: sessions (and library
#: records) cost nothing to make, so any number of them is still one identity.
ANONYMOUS = "anonymous"


def _client_id(row: FindRow | UseRow) -> str:
    """The identity behind a vote: the recorded client, else the one anonymous identity."""
    return f"client:{row.client}" if row.client else ANONYMOUS


def attribute(log: UsageLog | tuple[Iterable[FindRow], Iterable[UseRow]], *,
              rules: AttributionRules | None = None) -> Evidence:
    """Apply the attribution rules to a whole log.

    Args:
        log: A :class:`UsageLog`, or ``(finds, uses)`` rows (oldest first).
        rules: The settings; default :class:`AttributionRules()`.
    """
    rules = rules or AttributionRules()
    finds, uses = (log.finds(), log.uses()) if isinstance(log, UsageLog) else log
    ev = Evidence()
    voters: dict[str, _Voter] = {}
    # Events per session, merged in time order (a find before a use at the same instant).
    sessions: dict[tuple[str, str | None], list[tuple[float, int, int, FindRow | UseRow]]] = {}
    for f in finds:
        ev.bump("finds")
        if f.session is None:
            ev.bump("finds_without_session")
            continue
        sessions.setdefault((f.run, f.session), []).append((f.ts, 0, f.id, f))
    direct: list[UseRow] = []
    for u in uses:
        ev.bump("uses")
        if u.outcome != "success":
            ev.bump("failed_uses_ignored")
            continue
        if u.via == "record_use" and u.intent:
            direct.append(u)
            continue
        if u.session is None:
            ev.bump("uses_without_session")
            continue
        sessions.setdefault((u.run, u.session), []).append((u.ts, 1, u.id, u))

    def vote(voter: str | None, intent: str, tool: str, ts: float, row: FindRow | UseRow) -> bool:
        key = intent_key(intent)
        if not key or voter is None:
            return False
        b = voters.setdefault(voter, _Voter())
        if (key, tool) in b.seen:
            ev.bump("duplicate_votes")
            return True  # already counted: the find still had a positive
        if b.votes >= rules.max_votes or b.per_tool.get(tool, 0) >= rules.max_intents_per_tool:
            ev.bump("votes_over_session_cap")
            return False
        b.seen.add((key, tool))
        b.votes += 1
        b.per_tool[tool] = b.per_tool.get(tool, 0) + 1
        item = ev.intents.get(key)
        if item is None:
            item = ev.intents[key] = IntentEvidence(text=" ".join(intent.split()), first_seen=ts)
        item.positives.setdefault(tool, set()).add(voter)
        item.clients.setdefault(tool, set()).add(_client_id(row))
        ev.bump("positives")
        return True

    for u in direct:
        # A library record without a session is its own voter: the application vouches for it.
        voter = _voter_id(u, rules) or f"record:{u.id}"
        vote(voter, u.intent or "", u.tool_id, u.ts, u)  # no intent: no key, no vote

    for events in sessions.values():
        events.sort(key=lambda e: (e[0], e[1], e[2]))
        last: FindRow | None = None
        credited: dict[int, list[str]] = {}  # find id -> tools credited
        finds_seen: list[FindRow] = []
        for _, kind, _, row in events:
            if kind == 0:
                last = row  # type: ignore[assignment]
                finds_seen.append(row)  # type: ignore[arg-type]
                continue
            use: UseRow = row  # type: ignore[assignment]
            if use.via == "use_tool" and rules.count_use_tool_queries and use.intent:
                vote(_voter_id(use, rules), use.intent, use.tool_id, use.ts, use)
            if last is None or use.ts - last.ts > rules.window_s:
                ev.bump("uses_without_find")
                continue
            tools = credited.setdefault(last.id, [])
            if use.tool_id in tools:
                continue
            if len(tools) >= rules.max_tools_per_find:
                ev.bump("uses_over_find_cap")
                continue
            if vote(_voter_id(last, rules), last.intent, use.tool_id, use.ts, last):
                tools.append(use.tool_id)
        # Rule 5: returned but not used, for finds that got a positive.
        for f in finds_seen:
            used = credited.get(f.id)
            find_voter = _voter_id(f, rules)
            if not used or find_voter is None:
                continue
            item = ev.intents.get(intent_key(f.intent))
            if item is None:
                continue
            for tool in f.returned:
                if tool not in used:
                    item.negatives.setdefault(tool, set()).add(find_voter)
    return ev
