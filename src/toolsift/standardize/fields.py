"""The fields the standardisation rules derive for one tool."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

__all__ = ["Fields"]


@dataclass(frozen=True, slots=True)
class Fields:
    """What the rules derived for one tool.

    Attributes:
        schema: The raw schema recognised (``"apibank"``, ``"apigen"``, ``"gorilla"``,
            ``"toolink"`` or ``"generic"``).
        description: Cleaned description (``""`` if the document has none).
        response: Free text on what the tool returns, ``""`` if the document is silent.
        parameter_descriptions: ``{parameter name: text}`` for parameters whose own
            description is empty and for which the document offers text.
    """

    schema: str
    description: str
    response: str
    parameter_descriptions: Mapping[str, str] = field(default_factory=dict)
