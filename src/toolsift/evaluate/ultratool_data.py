"""UltraTool's English test set as a benchmark: ``data/English-dataset/test.json`` (JSON
Lines: question, plan steps, gold tool calls) plus the distractor tools of
``test_set/tool_creation.json``. The corpus is the distinct tools by name; a task's labels
are its gold tools. Every missing file or malformed record raises :class:`DatasetError`
naming the path and line."""

from __future__ import annotations

import json
import logging
import os
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..adapters._common import located, require_name, text_or_empty
from ..adapters._jsonschema import describe_output, parameters_from_schema
from ..schema import Catalog, Tool
from .data_files import DatasetError
from .data_files import existing as _existing

__all__ = ["UltraQuery", "UltraToolDataset", "ultratool_tool"]

logger = logging.getLogger(__name__)

_ULTRA_DIR = Path("data") / "English-dataset"
# Plan steps are numbered "1. Create file", "1.2 Use the ...".
_STEP_NUMBER = re.compile(r"^\s*\d+(?:\.\d+)*\.?\s*")
_NO_TOOL = frozenset({"", "null", "none", "no tool required"})
_CALL = re.compile(r"^\s*([^\s(]+)\s*\(")


@dataclass(frozen=True, slots=True)
class UltraQuery:
    """One UltraTool task.

    Attributes:
        id: ``"ultratool_q{n}"``, ``n`` the 0-based line of ``test.json``.
        question: The user's task, surrounding whitespace removed.
        steps: Text of every plan step, leading numbering (``"1.2 "``) removed,
            including the steps that need no tool (section headers, "get the info").
        labels: Distinct names of the gold tools (``tools[*].name``), in file order.
        step_tools: For each step, the name of the tool it calls, or ``None`` when the
            plan says ``"null"`` or ``"No tool required"``.
        domain: UltraTool's domain label (``"Finance"``, ...).
    """

    id: str
    question: str
    steps: tuple[str, ...]
    labels: tuple[str, ...]
    step_tools: tuple[str | None, ...] = ()
    domain: str = ""

    def tool_steps(self) -> Iterator[tuple[str, str]]:
        """``(step text, tool name)`` for the steps that call a tool."""
        for text, tool in zip(self.steps, self.step_tools):
            if tool is not None:
                yield text, tool


def ultratool_tool(raw: Mapping[str, Any]) -> Tool:
    """Convert one UltraTool tool document.

    Parameters come from the ``arguments`` JSON Schema (UltraTool never lists
    ``required``, so every parameter is required under toolsift's rule); the response
    text is built from the ``results`` schema.

    Args:
        raw: ``{"name", "description", "arguments", "results"}``.

    Returns:
        The tool; its id is its name, since UltraTool identifies tools by name.

    Raises:
        SchemaError: With a location relative to ``raw``.
    """
    name = require_name(raw)
    return Tool(
        id=name,
        name=name,
        description=text_or_empty(raw.get("description"), ".description"),
        parameters=parameters_from_schema(raw.get("arguments"), where=".arguments"),
        response=describe_output(raw.get("results"), where=".results"),
        source=raw,
    )


@dataclass(frozen=True, eq=False)
class UltraToolDataset:
    """UltraTool's English test set as a retrieval benchmark.

    UltraTool ships no retrieval corpus: the corpus here is every distinct tool (by
    name) of ``test.json`` (the gold tools) and of ``test_set/tool_creation.json`` (its
    two distractors per task and its reference tools), in first-seen order. A name seen
    twice with a different document keeps the first (the shipped data has none).

    Attributes:
        name: ``"ultratool"``.
        root: The folder the data set was loaded from.
        tools: The corpus; tool id = tool name.
        queries: The 1000 tasks in file order.
        conflicts: Names met again with a different document (first one kept).
    """

    name: str
    root: Path
    tools: Catalog
    queries: tuple[UltraQuery, ...]
    conflicts: tuple[str, ...] = ()

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> UltraToolDataset:
        """Load a folder such as ``shared/data/ultratool``.

        Args:
            path: The folder holding ``data/English-dataset/``.

        Returns:
            The loaded data set.

        Raises:
            DatasetError: A file is missing, a line is not valid JSON, or a record lacks
                ``question``/``plan``/``tools``.
            SchemaError: A tool document is malformed; the message names file and line.
        """
        root = _existing(Path(path), "data set", folder=True)
        english = _existing(root / _ULTRA_DIR, "UltraTool English data", folder=True)
        test_path = _existing(english / "test.json", "UltraTool test")
        creation_path = _existing(english / "test_set" / "tool_creation.json",
                                  "UltraTool tool_creation")
        corpus: dict[str, Tool] = {}
        docs: dict[str, Any] = {}
        conflicts: list[str] = []

        def add(raw: Any, where: str) -> None:
            with located(where):
                if not isinstance(raw, Mapping):
                    raise DatasetError(f"{where}: expected a tool object, got "
                                       f"{type(raw).__name__}")
                name = require_name(raw)
                if name in docs:
                    if docs[name] != raw and name not in conflicts:
                        conflicts.append(name)
                    return
                corpus[name] = ultratool_tool(raw)
                docs[name] = raw

        queries = []
        for line, record in _jsonl(test_path):
            where = f"{test_path}:{line + 1}"
            for i, raw in enumerate(_field(record, "tools", list, where)):
                add(raw, f"{where} tools[{i}]")
            queries.append(_ultra_query(record, line, where))
        for line, record in _jsonl(creation_path):
            where = f"{creation_path}:{line + 1}"
            for i, raw in enumerate(_field(record, "toolset", list, where)):
                add(raw, f"{where} toolset[{i}]")
            for i, ref in enumerate(_field(record, "reference", list, where)):
                if isinstance(ref, Mapping) and isinstance(ref.get("tool"), Mapping):
                    add(ref["tool"], f"{where} reference[{i}].tool")
        if conflicts:
            logger.warning("%s: %d tool names have differing documents; kept the first: %s",
                           root, len(conflicts), conflicts[:5])
        return cls(
            name="ultratool",
            root=root,
            tools=Catalog(corpus.values(), name="ultratool"),
            queries=tuple(queries),
            conflicts=tuple(conflicts),
        )

    def qrels(self) -> dict[str, dict[str, int]]:
        """Relevance judgements ``{query id: {tool name: 1}}`` from each task's gold tools.

        Returns:
            A fresh dictionary the caller may modify.
        """
        return {q.id: {name: 1 for name in q.labels} for q in self.queries}

    def __repr__(self) -> str:
        return f"UltraToolDataset(tools={len(self.tools)}, queries={len(self.queries)})"


def _jsonl(path: Path) -> Iterator[tuple[int, Any]]:
    """``(0-based line number, record)`` for each non-blank line of a JSON Lines file."""
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError as exc:
        raise DatasetError(f"{path}: cannot read the file ({exc.strerror or exc})") from None
    for n, text in enumerate(lines):
        if not text.strip():
            continue
        try:
            yield n, json.loads(text)
        except ValueError as exc:
            raise DatasetError(f"{path}:{n + 1}: invalid JSON: {exc}") from None


def _field(record: Any, key: str, kind: type, where: str) -> Any:
    if not isinstance(record, Mapping):
        raise DatasetError(f"{where}: expected a JSON object, got {type(record).__name__}")
    value = record.get(key)
    if not isinstance(value, kind):
        raise DatasetError(f"{where}: {key!r} missing or not a {kind.__name__}")
    return value


def _step_tool(call: Any, where: str) -> str | None:
    if call is None or (isinstance(call, str) and call.strip().lower() in _NO_TOOL):
        return None
    m = _CALL.match(call) if isinstance(call, str) else None
    if m is None:
        raise DatasetError(f"{where}: cannot read a tool name from the call {call!r:.80}")
    return m.group(1)


def _ultra_query(record: Mapping[str, Any], line: int, where: str) -> UltraQuery:
    question = _field(record, "question", str, where).strip()
    steps: list[str] = []
    step_tools: list[str | None] = []
    for i, step in enumerate(_field(record, "plan", list, where)):
        at = f"{where} plan[{i}]"
        text = _field(step, "step", str, at)
        steps.append(_STEP_NUMBER.sub("", text, count=1).strip())
        step_tools.append(_step_tool(step.get("tool"), at + ".tool"))
    labels: list[str] = []
    for tool in record["tools"]:
        name = tool["name"]  # checked when the tool joined the corpus
        if name not in labels:
            labels.append(name)
    domain = record.get("domain")
    return UltraQuery(
        id=f"ultratool_q{line}",
        question=question,
        steps=tuple(steps),
        labels=tuple(labels),
        step_tools=tuple(step_tools),
        domain=domain if isinstance(domain, str) else "",
    )
