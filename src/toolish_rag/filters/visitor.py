"""`FilterVisitor`: one abstract method per filter node type and a single exhaustive dispatch, so
a new node type cannot slip past an evaluator or a store translation.
See docs/filters.md#one-visitor-per-evaluator-and-translation.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Generic, Never, NoReturn, TypeVar, final

from .nodes import (
    And,
    Contains,
    EndsWith,
    Eq,
    Exists,
    Filter,
    Gt,
    Gte,
    HasAnyLabel,
    In,
    Lt,
    Lte,
    Ne,
    Nin,
    Not,
    Or,
    StartsWith,
)

__all__ = ['FilterVisitor']

ResultT = TypeVar('ResultT')
"""What visiting a filter produces: ``bool`` for the evaluator, a query for a translator."""


class FilterVisitor(ABC, Generic[ResultT]):
    """Turns a filter into a ``ResultT`` with one method per node type; call `visit` to run it.

    Subclass it and implement every ``visit_<op>`` method; recurse into composite nodes with
    ``self.visit``. See ``docs/custom-store.md`` for an example.
    """

    __slots__ = ()

    @final
    def visit(self, node: Filter) -> ResultT:
        """Dispatch ``node`` to the method for its type."""
        match node:
            case Eq():
                return self.visit_eq(node)
            case Ne():
                return self.visit_ne(node)
            case Gt():
                return self.visit_gt(node)
            case Gte():
                return self.visit_gte(node)
            case Lt():
                return self.visit_lt(node)
            case Lte():
                return self.visit_lte(node)
            case In():
                return self.visit_in(node)
            case Nin():
                return self.visit_nin(node)
            case Contains():
                return self.visit_contains(node)
            case StartsWith():
                return self.visit_starts_with(node)
            case EndsWith():
                return self.visit_ends_with(node)
            case Exists():
                return self.visit_exists(node)
            case HasAnyLabel():
                return self.visit_has_any_label(node)
            case And():
                return self.visit_and(node)
            case Or():
                return self.visit_or(node)
            case Not():
                return self.visit_not(node)
            case _:
                _unknown_node(node)

    @abstractmethod
    def visit_eq(self, node: Eq) -> ResultT: ...

    @abstractmethod
    def visit_ne(self, node: Ne) -> ResultT: ...

    @abstractmethod
    def visit_gt(self, node: Gt) -> ResultT: ...

    @abstractmethod
    def visit_gte(self, node: Gte) -> ResultT: ...

    @abstractmethod
    def visit_lt(self, node: Lt) -> ResultT: ...

    @abstractmethod
    def visit_lte(self, node: Lte) -> ResultT: ...

    @abstractmethod
    def visit_in(self, node: In) -> ResultT: ...

    @abstractmethod
    def visit_nin(self, node: Nin) -> ResultT: ...

    @abstractmethod
    def visit_contains(self, node: Contains) -> ResultT: ...

    @abstractmethod
    def visit_starts_with(self, node: StartsWith) -> ResultT: ...

    @abstractmethod
    def visit_ends_with(self, node: EndsWith) -> ResultT: ...

    @abstractmethod
    def visit_exists(self, node: Exists) -> ResultT: ...

    @abstractmethod
    def visit_has_any_label(self, node: HasAnyLabel) -> ResultT: ...

    @abstractmethod
    def visit_and(self, node: And) -> ResultT: ...

    @abstractmethod
    def visit_or(self, node: Or) -> ResultT: ...

    @abstractmethod
    def visit_not(self, node: Not) -> ResultT: ...


def _unknown_node(node: Never) -> NoReturn:
    # Typed ``Never``: mypy only accepts the call when every member of `Filter` has a case above.
    # At runtime it catches objects that are not filter nodes at all.
    raise TypeError(f'unknown filter node {type(node).__name__}')
