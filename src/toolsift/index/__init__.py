"""Per-field indexes and their storage."""

from .field_index import FieldIndex
from .fields import FieldDocs, field_documents, name_words, parameter_layout

__all__ = ["FieldIndex", "FieldDocs", "field_documents", "name_words", "parameter_layout"]
