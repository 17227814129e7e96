"""Python code as a graph: modules, classes and functions, with CONTAINS, IMPORTS and CALLS edges.

`CodeGraphBuilder` reads the ``.py`` files stored documents name, analyses them with `ast` and
writes entities and relations; calls are resolved statically or dropped. See docs/graph.md (Code graph).
"""

from ._builder import CodeGraphBuilder
from ._model import CODE_ENTITY_PREFIX, code_entity_id

__all__ = ['CODE_ENTITY_PREFIX', 'CodeGraphBuilder', 'code_entity_id']
