"""The tool graph: which tool can supply which required parameter of another.

An edge ``producer -> consumer`` on ``parameter`` says the producer's result can fill
that required parameter of the consumer. Two rules make edges, both decided from the two
tools alone (:mod:`toolsift.index.graph_rules` reads each tool's signature):

``output``
    A named field of the producer's result has the parameter's name key (words,
    analysed: ``userId`` = ``user_ids``), or the producer's resource followed by the
    field's key does (``get_user`` returning ``id`` feeds ``user_id``). Types must agree
    where both are known (integer and number agree), and boolean fields never feed
    anything: a success flag is not an input, and a producer that itself requires the
    same key (``get_user(user_id)`` returning ``id``) cannot supply it. Score ``.75 * name + .25 * description``,
    name 1 for the same key and .9 for the resource-qualified one, description the
    cosine of the two descriptions' analysed term sets; so an output edge scores .675 to 1.
``family``
    Two operations on one resource (CRUD: the same name with another verb,
    ``create_order`` / ``cancel_order``): a ``create`` or ``read`` tool feeds the
    ``read``, ``update`` or ``delete`` tools of its resource, through their first
    required parameter that names the resource or an identity (``order_id``,
    ``file_path``, ``name``). Score .6: below any output match.

Each (consumer, parameter) keeps its :data:`MAX_PRODUCERS` best producers (score, then
catalogue order), so a parameter like ``name`` that half a catalogue returns does not
grow the graph quadratically. The graph is a function of the catalogue (in order) and
the analyzer only; an update rebuilds the edges from cached signatures and equals a fresh
build (tested).
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from ..analyze import Analyzer
from ..errors import IndexCorruptError
from ..schema import Catalog
from .graph_rules import OPERATIONS, Field, Signature, tool_signature
from .store import column_values
from .arrowcols import column


__all__ = ["FAMILY_SCORE", "IDENTITY_WORDS", "MAX_PRODUCERS", "OPERATION_CODES", "Dependency", "ToolGraph"]

#: Operations in the order of the stored ``operation`` codes (-1: none).
OPERATION_CODES: tuple[str, ...] = tuple(OPERATIONS)
#: Producers kept per (consumer, parameter).
MAX_PRODUCERS = 5
#: Score of a family edge (below every output match, which scores at least .675).
FAMILY_SCORE = 0.6
#: Last words of a parameter that names an identity (analysed forms).
IDENTITY_WORDS = frozenset({"id", "ids", "key", "name", "path", "uuid", "code", "number", "token", "url", "handl", "handle"})
_NUMERIC = frozenset({"integer", "number", "int", "float", "double"})
_UNTYPED = frozenset({"", "any"})


@dataclass(frozen=True, slots=True)
class Dependency:
    """One edge of the tool graph.

    Attributes:
        producer: Id of the tool whose result supplies the parameter.
        consumer: Id of the tool that needs it.
        parameter: The consumer's required parameter.
        reason: ``"output <field>"`` (a field of the producer's result matches) or
            ``"family <operation> <resource>"`` (CRUD operations on one resource).
        score: Match strength in (0, 1]; higher is surer.
    """

    producer: str
    consumer: str
    parameter: str
    reason: str
    score: float


def _types_agree(a: str, b: str) -> bool:
    if a in _UNTYPED or b in _UNTYPED or a == b:
        return True
    return a in _NUMERIC and b in _NUMERIC


def _cosine(a: frozenset[str], b: frozenset[str]) -> float:
    if not a or not b:
        return 0.0
    return len(a & b) / math.sqrt(len(a) * len(b))


def _edges(sigs: Sequence[Signature]) -> tuple[np.ndarray, np.ndarray, list[str], list[str], np.ndarray]:
    """Edges over signatures in catalogue order: (producer, consumer, parameter, reason, score)."""
    # Output fields by the key they offer: their own, and their producer's resource + it.
    offers: dict[tuple[str, ...], list[tuple[int, Field, float]]] = defaultdict(list)
    families: dict[tuple[str, ...], list[int]] = defaultdict(list)
    for t, s in enumerate(sigs):
        for o in s.outputs:
            if not o.key or o.type == "boolean":
                continue
            offers[o.key].append((t, o, 1.0))
            if s.resource and s.resource[-len(o.key):] != o.key:
                offers[s.resource + o.key].append((t, o, 0.9))
        if s.resource and s.operation in ("create", "read"):
            families[s.resource].append(t)
    needs = [{f.key for f in s.inputs} for s in sigs]
    producers, consumers, params, reasons, scores = [], [], [], [], []
    for c, s in enumerate(sigs):
        family_param = None
        if s.resource and s.operation in ("read", "update", "delete"):
            res = set(s.resource)
            family_param = next((p for p in s.inputs if p.key and p.type != "boolean"
                                 and (res & set(p.key) or p.key[-1] in IDENTITY_WORDS)), None)
        for p in s.inputs:
            if not p.key or p.type == "boolean":
                continue
            best: dict[int, tuple[float, str]] = {}
            for t, o, name_sim in offers.get(p.key, ()):
                if t == c or not _types_agree(o.type, p.type) or p.key in needs[t]:
                    continue  # a producer that itself needs the value cannot supply it
                sc = 0.75 * name_sim + 0.25 * _cosine(o.terms, p.terms)
                if sc > best.get(t, (0.0, ""))[0]:
                    best[t] = (sc, f"output {o.name}")
            if p is family_param:
                for t in families.get(s.resource, ()):
                    if t != c and sigs[t].operation != s.operation and t not in best and p.key not in needs[t]:
                        best[t] = (FAMILY_SCORE, f"family {sigs[t].operation} {' '.join(s.resource)}")
            for t, (sc, why) in sorted(best.items(), key=lambda kv: (-kv[1][0], kv[0]))[:MAX_PRODUCERS]:
                producers.append(t)
                consumers.append(c)
                params.append(p.name)
                reasons.append(why)
                scores.append(sc)
    return (np.asarray(producers, np.int32), np.asarray(consumers, np.int32), params, reasons,
            np.asarray(scores, np.float32))


def _families(sigs: Sequence[Signature]) -> tuple[np.ndarray, np.ndarray]:
    """Per tool: its family (tools naming one resource with at least two different
    operations, numbered by first member) or -1, and its operation code or -1."""
    ops = np.asarray([OPERATION_CODES.index(s.operation) if s.operation else -1 for s in sigs], np.int8)
    by_res: dict[tuple[str, ...], list[int]] = defaultdict(list)
    for t, s in enumerate(sigs):
        if s.resource and s.operation:
            by_res[s.resource].append(t)
    family = np.full(len(sigs), -1, np.int32)
    n = 0
    for members in by_res.values():
        if len({int(ops[t]) for t in members}) >= 2:
            family[members] = n
            n += 1
    return family, ops


class ToolGraph:
    """Producer -> consumer edges over one catalogue (positions), sorted by consumer,
    then parameter order, then score descending.

    Build with :meth:`build`; :meth:`from_arrow` / :meth:`to_arrow` persist it with the
    index (``graph.arrow``). Signatures are kept (or re-derived on demand) so that
    :meth:`updated` rebuilds the edges of an edited catalogue without re-reading
    unchanged tools.
    """

    def __init__(self, producer: np.ndarray, consumer: np.ndarray, parameter: Sequence[str],
                 reason: Sequence[str], score: np.ndarray, n_tools: int, family: np.ndarray, operation: np.ndarray,
                 signatures: list[Signature] | None = None) -> None:
        self.producer = np.asarray(producer, np.int32)
        self.consumer = np.asarray(consumer, np.int32)
        self.parameter = list(parameter)
        self.reason = list(reason)
        self.score = np.asarray(score, np.float32)
        self.n_tools = n_tools
        #: Per tool: CRUD family number (-1: none) and operation code (OPERATION_CODES, -1: none).
        self.family = np.asarray(family, np.int32)
        self.operation = np.asarray(operation, np.int8)
        self._members: dict[int, list[int]] | None = None
        self._signatures = signatures
        # Edge rows of each consumer (CSR over the consumer-sorted edges).
        self.consumer_ptr = np.searchsorted(self.consumer, np.arange(n_tools + 1)).astype(np.int64)
        self._out: np.ndarray | None = None
        self._lazy: dict[int, Signature] = {}
        self._caps: dict[int, tuple | None] = {}
        # Python lists of the arrays a query walks: an element read from a list costs a
        # fraction of a NumPy scalar's (completion reads a few hundred per query).
        self.producers = self.producer.tolist()
        self.ptr = self.consumer_ptr.tolist()
        self.families = self.family.tolist()
        self.operations = self.operation.tolist()

    @classmethod
    def build(cls, catalog: Catalog, analyzer: Analyzer) -> ToolGraph:
        """The graph of ``catalog`` with names and descriptions analysed by ``analyzer``."""
        memo: dict = {}  # one Field per distinct (name, type, description): catalogues repeat them
        sigs = [tool_signature(t, analyzer, memo) for t in catalog]
        return cls.from_signatures(sigs)

    @classmethod
    def from_signatures(cls, sigs: list[Signature]) -> ToolGraph:
        """The graph of tools with these signatures (catalogue order)."""
        family, ops = _families(sigs)
        return cls(*_edges(sigs), n_tools=len(sigs), family=family, operation=ops, signatures=sigs)

    def __len__(self) -> int:
        return int(self.producer.size)

    @property
    def has_signatures(self) -> bool:
        """Whether every tool's signature is cached (a graph built in this process)."""
        return self._signatures is not None

    def signatures(self, catalog: Catalog, analyzer: Analyzer) -> list[Signature]:
        """Every tool's signature (derived from ``catalog`` once for a loaded graph)."""
        if self._signatures is None:
            self._signatures = [self.signature_at(i, catalog, analyzer) for i in range(len(catalog))]
        return self._signatures

    def signature_at(self, pos: int, catalog: Catalog, analyzer: Analyzer) -> Signature:
        """The signature of the tool at catalogue position ``pos`` (cached: a loaded
        index decodes only the tools a query reaches)."""
        if self._signatures is not None:
            return self._signatures[pos]
        got = self._lazy.get(pos)
        if got is None:
            got = self._lazy[pos] = tool_signature(catalog[pos], analyzer)
        return got

    def updated(self, old_catalog: Catalog, keep: Sequence[int], fresh: Mapping[int, object], added: Sequence,
                analyzer: Analyzer) -> ToolGraph:
        """The graph after an update: tools ``keep`` (old positions, in order), those at
        new positions ``fresh`` replaced by new tools, then ``added`` appended."""
        old = self.signatures(old_catalog, analyzer)
        sigs = [old[i] for i in keep]
        for j, tool in fresh.items():
            sigs[j] = tool_signature(tool, analyzer)  # type: ignore[arg-type]
        sigs.extend(tool_signature(t, analyzer) for t in added)
        return ToolGraph.from_signatures(sigs)

    def family_of(self, tool: int) -> list[int]:
        """Catalogue positions of the tools in ``tool``'s CRUD family (itself included;
        empty when it has none)."""
        f = self.families[tool]
        if f < 0:
            return []
        if self._members is None:
            members: dict[int, list[int]] = defaultdict(list)
            for t, g in enumerate(self.families):
                if g >= 0:
                    members[g].append(t)
            self._members = dict(members)
        return self._members[f]

    def capability_at(self, pos: int, catalog: Catalog, analyzer: Analyzer) -> tuple | None:
        """What the tool at ``pos`` can do, as a hashable key: operation, resource, input
        and output keys; ``None`` for a tool naming no CRUD operation (two such tools
        are never known to do the same)."""
        if pos not in self._caps:
            sig = self.signature_at(pos, catalog, analyzer)
            got = None
            if sig.operation is not None and sig.resource:
                got = (sig.operation, sig.resource, frozenset(f.key for f in sig.inputs),
                       frozenset(f.key for f in sig.outputs))
            self._caps[pos] = got
        return self._caps[pos]

    def into(self, consumer: int) -> range:
        """Edge rows whose consumer is catalogue position ``consumer``."""
        return range(self.ptr[consumer], self.ptr[consumer + 1])

    def out_of(self, producer: int) -> np.ndarray:
        """Edge rows whose producer is catalogue position ``producer``."""
        if self._out is None:
            self._out = np.argsort(self.producer, kind="stable")
        order = self._out
        lo, hi = np.searchsorted(self.producer[order], [producer, producer + 1])
        return np.sort(order[lo:hi])

    def dependency(self, row: int, catalog: Catalog) -> Dependency:
        """Edge ``row`` as a :class:`Dependency` with tool ids."""
        ids = catalog.ids
        return Dependency(ids[int(self.producer[row])], ids[int(self.consumer[row])], self.parameter[row],
                          self.reason[row], float(self.score[row]))

    # ---------------------------------------------------------------- persistence
    def nodes_to_arrow(self) -> pa.Table:
        """Per tool family and operation code as an Arrow table (``graph_tools.arrow``)."""
        return pa.table({"family": column(self.family, pa.int32()), "operation": column(self.operation, pa.int8())})

    def to_arrow(self) -> pa.Table:
        """The edges as an Arrow table (``graph.arrow``)."""
        return pa.table({"producer": column(self.producer, pa.int32()),
                         "consumer": column(self.consumer, pa.int32()),
                         "parameter": column(self.parameter, pa.string()),
                         "reason": column(self.reason, pa.string()),
                         "score": column(self.score, pa.float32())})

    @classmethod
    def from_arrow(cls, table: pa.Table, nodes: pa.Table, n_tools: int, *, where: str) -> ToolGraph:
        """Read :meth:`to_arrow`'s and :meth:`nodes_to_arrow`'s tables back, checking
        positions, codes and order.

        Raises:
            IndexCorruptError: A column is missing or of the wrong type, a position is
                out of range, or the edges are not sorted by consumer.
        """
        want = {"producer": pa.int32(), "consumer": pa.int32(), "parameter": pa.string(),
                "reason": pa.string(), "score": pa.float32()}
        for name, typ in want.items():
            if name not in table.column_names or table.schema.field(name).type != typ:
                raise IndexCorruptError(f"{where}: column {name!r} missing or not {typ}")
        prod = column_values(table.column("producer"), np.int32)
        cons = column_values(table.column("consumer"), np.int32)
        for name, arr in (("producer", prod), ("consumer", cons)):
            if arr.size and (arr.min() < 0 or arr.max() >= n_tools):
                raise IndexCorruptError(f"{where}: {name} position out of range (0..{n_tools - 1})")
        if cons.size and np.any(np.diff(cons) < 0):
            raise IndexCorruptError(f"{where}: edges are not sorted by consumer")
        score = column_values(table.column("score"), np.float32)
        if not np.all(np.isfinite(score)):
            raise IndexCorruptError(f"{where}: non-finite edge score")
        for name, typ in (("family", pa.int32()), ("operation", pa.int8())):
            if name not in nodes.column_names or nodes.schema.field(name).type != typ:
                raise IndexCorruptError(f"{where}: tool column {name!r} missing or not {typ}")
        if nodes.num_rows != n_tools:
            raise IndexCorruptError(f"{where}: {nodes.num_rows} tool rows for {n_tools} tools")
        family = column_values(nodes.column("family"), np.int32)
        ops = column_values(nodes.column("operation"), np.int8)
        if n_tools and (family.min() < -1 or ops.min() < -1 or ops.max() >= len(OPERATION_CODES)):
            raise IndexCorruptError(f"{where}: family or operation code out of range")
        return cls(prod, cons, table.column("parameter").to_pylist(), table.column("reason").to_pylist(), score,
                   n_tools=n_tools, family=family, operation=ops)
