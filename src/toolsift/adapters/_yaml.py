"""Reading YAML catalogues safely: a SafeLoader that bounds what aliases expand to.

A YAML "billion laughs" document (anchors whose aliases reference other aliases) is a
kilobyte on disk and hundreds of millions of characters once anything walks it; PyYAML
shares the aliased nodes, so parsing alone is cheap and the cost lands later, in code
that cannot tell. The loader here counts the expanded size while composing and stops
at a budget proportional to the file.
"""

from __future__ import annotations

from typing import Any

from ..errors import CatalogFormatError

__all__ = ["YAML_ALIAS_EXPANSION", "load_yaml"]

#: Characters of scalar text aliases may add to a YAML document beyond its own length,
#: as a multiple of that length (plus a floor for small files). Anchors shared a few
#: times stay far below it; an alias bomb (aliases of aliases) exceeds it at once.
YAML_ALIAS_EXPANSION = 10
_YAML_ALIAS_FLOOR = 1_000_000


def load_yaml(text: str, label: str) -> Any:
    """Parse YAML text with bounded alias expansion.

    Raises:
        CatalogFormatError: Naming ``label`` (and line/column for syntax errors); also for
            aliases expanding past ``YAML_ALIAS_EXPANSION`` times the text's length.
    """
    import yaml  # optional dependency: only YAML specs need it

    budget = max(_YAML_ALIAS_FLOOR, YAML_ALIAS_EXPANSION * len(text))

    class BoundedLoader(yaml.SafeLoader):
        """SafeLoader that counts what aliases expand to while composing the node tree.

        Each node's expanded size (scalar characters plus one per node) is known when it
        is composed; an alias adds its anchor's size. Going over ``budget`` stops the
        parse before anything walks the shared structure (which is where the cost of a
        "billion laughs" document lies).
        """

        def __init__(self, stream: str) -> None:
            super().__init__(stream)
            self.expanded = 0
            self.sizes: dict[int, int] = {}

        def compose_node(self, parent: Any, index: Any) -> Any:
            if self.check_event(yaml.AliasEvent):
                anchor = self.peek_event().anchor
                node = super().compose_node(parent, index)
                self.expanded += self.sizes.get(id(node), 1)
                if self.expanded > budget:
                    raise CatalogFormatError(
                        f"{label}: YAML aliases expand the document beyond {budget:,} characters "
                        f"(at alias *{anchor}); refusing a possible alias bomb"
                    )
                return node
            start = self.expanded
            node = super().compose_node(parent, index)
            if isinstance(node, yaml.ScalarNode):
                self.expanded += len(node.value) + 1
            else:
                self.expanded += 1
            self.sizes[id(node)] = self.expanded - start
            return node

    try:
        return yaml.load(text, Loader=BoundedLoader)  # noqa: S506 - a SafeLoader subclass
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark
        pos = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        raise CatalogFormatError(f"{label}: invalid YAML{pos}: {exc.problem or exc}") from None
    except (yaml.YAMLError, RecursionError) as exc:
        raise CatalogFormatError(f"{label}: invalid YAML: {exc}"[:300]) from None
