"""Prompts for LLM standardization and query rewriting (written for toolsift).

Both prompts ask for one JSON object and show its exact shape, because small local
models follow a concrete skeleton far better than a prose specification. Changing a
prompt changes every cache key, so cached answers never outlive the prompt that made
them.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from ..schema import Tool

__all__ = [
    "REWRITE_SHAPE",
    "REWRITE_SYSTEM",
    "STANDARDIZE_SHAPE",
    "STANDARDIZE_SYSTEM",
    "rewrite_messages",
    "standardize_messages",
    "tool_document",
]

# The argument example in REWRITE_SHAPE is concrete on purpose: a 1.5B model given a
# placeholder ("role_name": "...") copied the placeholder keys into its answer.

# Raw docs longer than this are cut: a pasted spec would crowd out the instructions in a
# small model's context, and the head of a doc carries what standardization needs.
MAX_DOC_CHARS = 6000
# Each of the top-3 docs in the rewrite prompt is cut shorter: three of them share one
# context with twenty descriptions.
MAX_FEEDBACK_DOC_CHARS = 1500

STANDARDIZE_SHAPE = """{
  "description": "one or two sentences: what the tool does, for whom, on what",
  "parameters": [
    {"name": "exact parameter name", "type": "string|integer|number|boolean|array|object",
     "description": "what the value means and its format", "required": true}
  ],
  "response": "what the tool returns: fields, entities, status",
  "examples": ["a user request this tool serves", "...", "..."]
}"""

STANDARDIZE_SYSTEM = f"""You rewrite raw API documentation into a clean, uniform record for a tool search engine.

Read the tool document and produce four fields:
- description: a plain-language summary of what the tool does (1-2 sentences). No code.
- parameters: every input parameter the document defines, with its exact name, a JSON type,
  a short description of its meaning and format, and "required". A parameter is required
  (true) UNLESS the document says it is optional, has a default value, or may be omitted.
  Do not invent parameters the document does not mention. An empty list if there are none.
- response: what the tool returns (fields, entities, status). If the document does not say,
  use an empty string "" rather than guessing.
- examples: 3 to 5 different requests a user might type when they need this tool, in the
  first person, varied in wording, each one sentence.

Answer with ONE JSON object of exactly this shape and nothing else (no markdown):
{STANDARDIZE_SHAPE}"""

REWRITE_SHAPE = """{
  "tool_needs": [
    {"user_intent": "the step as a user would ask for it",
     "tool_description": "what a tool doing this step does, in documentation style",
     "expected_response": "what such a tool returns"}
  ],
  "extracted_arguments": {"patient_name": "full name of the patient",
                          "appointment_date": "date of the appointment, as a calendar date"}
}"""

REWRITE_SYSTEM = f"""You turn a user request into a structured search query for a tool catalogue.

Each tool in the catalogue has a description, input parameters, a response description and
example user requests. You are shown the request, short descriptions of tools a keyword
search found for it, and the full documentation of the top three. Use their vocabulary
when it fits the request, but describe what the REQUEST needs, even if no listed tool fits.

Produce:
- tool_needs: one entry per distinct action the request needs, in order (usually one).
  user_intent: the action phrased as a user request; tool_description: the action phrased
  like a tool's documentation; expected_response: the data or outcome such a tool returns.
- extracted_arguments: the inputs the request supplies, as role name -> ABSTRACT
  description of the role and type, e.g. "recipient_email": "email address of the person
  to notify". NEVER copy concrete values from the request (no names, numbers, dates, places,
  ids): write "date of the appointment", not "10th Oct 2023". An empty object if none.

Answer with ONE JSON object of exactly this shape and nothing else (no markdown):
{REWRITE_SHAPE}"""


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[:limit] + " ...[truncated]"


def tool_document(tool: Tool, *, limit: int = MAX_DOC_CHARS) -> str:
    """The tool as the LLM sees it: the verbatim source payload when the adapter kept
    one (the raw doc is what standardization should read), else the tool's own fields."""
    payload: Any = tool.source if tool.source is not None else {
        k: v for k, v in tool.to_dict().items() if k not in ("id", "tags", "source")}
    try:
        text = json.dumps(payload, ensure_ascii=False, indent=1, default=str)
    except (TypeError, ValueError):
        text = str(payload)
    return _cut(text, limit)


def standardize_messages(tool: Tool) -> list[dict[str, str]]:
    """Chat messages asking for the four-field record of ``tool``."""
    user = f"Tool name: {tool.name}\n\nTool document:\n{tool_document(tool)}"
    return [{"role": "system", "content": STANDARDIZE_SYSTEM}, {"role": "user", "content": user}]


def rewrite_messages(query: str, descriptions: Sequence[str], docs: Sequence[str]) -> list[dict[str, str]]:
    """Chat messages asking for the structured rewrite of ``query``.

    Args:
        query: The raw request.
        descriptions: Standardized descriptions of the BM25 top tools (top-20).
        docs: Full documents of the BM25 top tools (top-3).
    """
    lines = [f"{i + 1}. {' '.join(d.split())}" for i, d in enumerate(descriptions) if d.strip()]
    parts = ["# Tools found by keyword search", "\n".join(lines) or "(none)"]
    if docs:
        parts.append("# Full documentation of the top tools")
        parts.extend(f"## Tool {i + 1}\n{_cut(d, MAX_FEEDBACK_DOC_CHARS)}" for i, d in enumerate(docs))
    parts.append(f"# User request\n{query}")
    return [{"role": "system", "content": REWRITE_SYSTEM},
            {"role": "user", "content": "\n\n".join(parts)}]
