"""Deterministic, rule-based standardisation of raw tool docs into the four MFTR fields.

The MFTR paper standardises raw documentation with an LLM. This package does it with
rules (:mod:`toolsift.standardize.rules`), so any catalogue can be standardised offline,
reproducibly and without cost:

* ``description``: the raw description, cleaned (for Gorilla with domain and
  functionality; for ToolLink the prose, not the code stub);
* ``parameters``: the adapter's parameters unchanged, except that empty descriptions
  are filled from prose that names the parameter;
* ``response``: what the document says the tool returns, or ``""``;
* ``examples``: only the intents passed in by the caller (document expansion from
  feedback, e.g. training queries of labelled tools), never generated.

Example:
    >>> from toolsift.adapters import load_catalog
    >>> from toolsift.standardize import standardize_catalog
    >>> raw = load_catalog("apigen/tools.json")
    >>> std = standardize_catalog(raw, examples={"apigen_tool_7": ["Find flights to Oslo"]})
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace

from ..schema import Catalog, Parameter, Tool
from .rules import Fields, clean_text, derive_fields, schema_of

__all__ = ["Fields", "derive_fields", "schema_of", "standardize_catalog", "standardize_tool"]


def _examples(values: Iterable[str], limit: int | None) -> tuple[str, ...]:
    """Whitespace-normalised, non-empty, first occurrence of each (case-insensitive),
    at most ``limit``, in the order given."""
    if isinstance(values, (str, bytes)):
        # A bare string would otherwise become one example per character.
        raise TypeError("examples must be a sequence of strings, not a single string")
    out: list[str] = []
    seen: set[str] = set()
    for value in values:
        if not isinstance(value, str):
            raise TypeError(f"examples must be strings, got {type(value).__name__}")
        text = " ".join(value.split())
        key = text.casefold()
        if text and key not in seen:
            seen.add(key)
            out.append(text)
            if limit is not None and len(out) >= limit:
                break
    return tuple(out)


def _parameters(tool: Tool, fields: Fields) -> tuple[Parameter, ...]:
    """The tool's parameters with cleaned descriptions; empty ones filled when the
    rules found text. Names, types, required flags and examples are kept as they are."""
    out = []
    for p in tool.parameters:
        description = clean_text(p.description) or fields.parameter_descriptions.get(p.name, "")
        out.append(p if description == p.description else replace(p, description=description))
    return tuple(out)


def standardize_tool(tool: Tool, *, examples: Sequence[str] = ()) -> Tool:
    """Standardise one tool into the four MFTR fields.

    Reads the raw ToolRet record in ``tool.source`` when there is one (apibank,
    apigen, gorilla-huggingface and toolink schemas are recognised by shape) and
    otherwise the tool's own fields. The input is not modified.

    Args:
        tool: The tool, typically from :func:`toolsift.adapters.toolret_tool`.
        examples: User intents the tool serves, e.g. training queries it is labelled
            for. They are whitespace-normalised and de-duplicated; the tool's own
            examples are dropped, so ``()`` leaves it with none.

    Returns:
        A new tool with the same ``id``, ``name``, ``tags`` and ``source``.

    Raises:
        TypeError: ``examples`` is a single string or holds a non-string.
    """
    fields = derive_fields(tool)
    return replace(
        tool,
        description=fields.description,
        parameters=_parameters(tool, fields),
        response=fields.response,
        examples=_examples(examples, None),
    )


def standardize_catalog(
    catalog: Catalog,
    *,
    examples: Mapping[str, Sequence[str]] | None = None,
    max_examples: int = 5,
) -> Catalog:
    """Standardise every tool of ``catalog`` (see :func:`standardize_tool`).

    Args:
        catalog: The raw catalogue; not modified.
        examples: ``{tool id: user intents}``, typically the training-fold queries of
            each labelled tool. Tools absent from it get no examples; ids absent from
            the catalogue are ignored. ``None`` switches examples off entirely.
        max_examples: Keep at most this many distinct intents per tool, the first ones
            in the order given.

    Returns:
        A new catalogue with the same name, ids and order.

    Raises:
        ValueError: ``max_examples`` is negative or not an integer.
        TypeError: A value of ``examples`` is a single string or holds a non-string.
    """
    if isinstance(max_examples, bool) or not isinstance(max_examples, int) or max_examples < 0:
        raise ValueError(f"max_examples must be an integer >= 0, got {max_examples!r}")
    given = examples or {}
    tools = []
    for tool in catalog:
        intents = _examples(given.get(tool.id, ()), max_examples) if max_examples else ()
        tools.append(standardize_tool(tool, examples=intents))
    return Catalog(tools, name=catalog.name)
