"""Metadata and label filters: the algebra (`nodes`), its reference semantics (`reference`) and
the visitor every evaluator and store translation implements (`visitor`), all re-exported here.
See docs/filters.md.
"""

from . import nodes, reference, visitor
from .nodes import *  # noqa: F403
from .reference import *  # noqa: F403
from .visitor import *  # noqa: F403

__all__: list[str] = []
__all__ += nodes.__all__
__all__ += reference.__all__
__all__ += visitor.__all__
