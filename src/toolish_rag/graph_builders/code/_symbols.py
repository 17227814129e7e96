"""The code builder's symbol tables: what each name of a module, class or function scope is bound to.

Static and conservative: anything analysis cannot follow is `Opaque`. See docs/graph.md (Code graph).
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Literal, TypeAlias

from ...content import Metadata
from ..base import DocumentInput, fingerprint
from ._sources import Source

__all__ = [
    'OPAQUE',
    'AnnotatedAttr',
    'Binder',
    'Binding',
    'Bindings',
    'ClassInfo',
    'Def',
    'Definition',
    'From',
    'Instance',
    'Mod',
    'Module',
    'Opaque',
    'absolute',
    'collect',
]


@dataclass(frozen=True, slots=True)
class Def:
    """Bound to a class or function defined in a stored module."""

    qualname: str
    kind: Literal['class', 'function']


@dataclass(frozen=True, slots=True)
class Mod:
    """Bound to a module (stored or not)."""

    name: str


@dataclass(frozen=True, slots=True)
class From:
    """Bound by ``from module import name``: resolved lazily, through re-exports."""

    module: str
    name: str


@dataclass(frozen=True, slots=True)
class Instance:
    """The first parameter of a method: an instance (or the class) of ``cls``."""

    cls: str


@dataclass(frozen=True, slots=True)
class Opaque:
    """Bound by anything static analysis cannot follow (an assignment, a parameter, a loop)."""


OPAQUE = Opaque()


@dataclass(frozen=True, slots=True)
class AnnotatedAttr:
    """A class attribute declared with a type (``wrapped: AbstractToolset[T]``): an instance of that class.

    The annotation is kept as source text (a stable digest) and resolved in ``module`` when read.
    """

    module: str
    annotation: str


Binding: TypeAlias = Def | Mod | From | Instance | Opaque | AnnotatedAttr
Bindings: TypeAlias = dict[str, set[Binding]]


@dataclass(slots=True)
class ClassInfo:
    qualname: str
    module: str
    bases: list[ast.expr]
    members: Bindings = field(default_factory=dict)


@dataclass(slots=True)
class Definition:
    """A class or function entity: every ``def``/``class`` statement of that qualified name (overloads)."""

    qualname: str
    kind: Literal['class', 'function']
    parent: str
    nodes: list[ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef] = field(default_factory=list)
    method_of: str | None = None
    """The class whose body defines this function directly."""


@dataclass(slots=True)
class Module:
    """One stored module: its source, definitions and module-level symbol table."""

    name: str
    is_package: bool
    document: DocumentInput
    source: Source
    tree: ast.Module
    scope: Metadata
    """The first chunk's metadata: its ``scope_keys`` values group modules for resolution and ids."""
    definitions: dict[str, Definition] = field(default_factory=dict)
    bindings: Bindings = field(default_factory=dict)
    stars: list[str] = field(default_factory=list)
    classes: dict[str, ClassInfo] = field(default_factory=dict)
    digest: str = ''

    @property
    def package(self) -> str:
        return self.name if self.is_package else self.name.rpartition('.')[0]

    @property
    def labels(self) -> frozenset[str]:
        """The first chunk's labels: with ``scope``, what groups modules when no ``scope_keys`` are given."""
        return self.document.chunks[0].labels


def absolute(module: Module, level: int, target: str | None) -> str | None:
    """The absolute module a (possibly relative) ``from`` import names; ``None`` if it climbs too far."""
    if level == 0:
        return target
    parts = module.package.split('.') if module.package else []
    if level - 1 > len(parts):
        return None
    base = parts[: len(parts) - (level - 1)]
    return '.'.join([*base, *([target] if target else [])]) or None


def _import_bindings(module: Module, node: ast.Import | ast.ImportFrom) -> Iterator[tuple[str, Binding]]:
    """The names an import statement binds, and to what."""
    if isinstance(node, ast.Import):
        for alias in node.names:
            if alias.asname:
                yield alias.asname, Mod(alias.name)
            else:
                head = alias.name.partition('.')[0]
                yield head, Mod(head)
        return
    base = absolute(module, node.level, node.module)
    for alias in node.names:
        if alias.name == '*':
            continue
        yield alias.asname or alias.name, (From(base, alias.name) if base else OPAQUE)


class Binder(ast.NodeVisitor):
    """Collects the names one scope binds, without descending into nested scopes.

    ``on_definition`` sees each ``def``/``class`` statement of the scope; what it returns is the
    binding of that name (the module and class scopes bind entities; a function scope binds opaque).
    """

    def __init__(
        self,
        module: Module,
        on_definition: Callable[[ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef], Binding],
        *,
        annotations: bool = False,
    ) -> None:
        self.module = module
        self.on_definition = on_definition
        self.annotations = annotations
        """A class body: an annotated name is an instance of its annotation's class."""
        self.bindings: Bindings = {}
        self.declared_global: set[str] = set()
        self.declared_nonlocal: set[str] = set()
        self.stars: list[str] = []

    def bind(self, name: str, binding: Binding) -> None:
        self.bindings.setdefault(name, set()).add(binding)

    def scan(self, body: Iterable[ast.AST]) -> Binder:
        for statement in body:
            self.visit(statement)
        return self

    def _definition(self, node: ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) -> None:
        self.bind(node.name, self.on_definition(node))

    visit_FunctionDef = visit_AsyncFunctionDef = visit_ClassDef = _definition

    def visit_Lambda(self, node: ast.Lambda) -> None:
        pass

    def _comprehension(self, node: ast.AST) -> None:
        pass  # its targets are its own scope's

    visit_ListComp = visit_SetComp = visit_DictComp = visit_GeneratorExp = _comprehension

    def visit_AnnAssign(self, node: ast.AnnAssign) -> None:
        if self.annotations and isinstance(node.target, ast.Name):
            self.bind(node.target.id, AnnotatedAttr(self.module.name, ast.unparse(node.annotation)))
        else:
            self.generic_visit(node)

    def visit_Name(self, node: ast.Name) -> None:
        if isinstance(node.ctx, ast.Store | ast.Del):
            self.bind(node.id, OPAQUE)

    def visit_Import(self, node: ast.Import) -> None:
        for name, binding in _import_bindings(self.module, node):
            self.bind(name, binding)

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        for name, binding in _import_bindings(self.module, node):
            self.bind(name, binding)
        if any(alias.name == '*' for alias in node.names):
            base = absolute(self.module, node.level, node.module)
            if base:
                self.stars.append(base)

    def visit_Global(self, node: ast.Global) -> None:
        self.declared_global.update(node.names)

    def visit_Nonlocal(self, node: ast.Nonlocal) -> None:
        self.declared_nonlocal.update(node.names)

    def visit_ExceptHandler(self, node: ast.ExceptHandler) -> None:
        if node.name:
            self.bind(node.name, OPAQUE)
        self.generic_visit(node)

    def visit_MatchAs(self, node: ast.MatchAs) -> None:
        if node.name:
            self.bind(node.name, OPAQUE)
        self.generic_visit(node)

    def visit_MatchStar(self, node: ast.MatchStar) -> None:
        if node.name:
            self.bind(node.name, OPAQUE)

    def visit_MatchMapping(self, node: ast.MatchMapping) -> None:
        if node.rest:
            self.bind(node.rest, OPAQUE)
        self.generic_visit(node)


def collect(module: Module) -> None:
    """Fill ``module``'s definitions, classes and module-level bindings (recursing into class bodies)."""

    def scope_binder(
        prefix: str, method_of: str | None
    ) -> Callable[[ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef], Binding]:
        def on_definition(node: ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) -> Binding:
            qualname = f'{prefix}.{node.name}'
            kind: Literal['class', 'function'] = 'class' if isinstance(node, ast.ClassDef) else 'function'
            known = module.definitions.get(qualname)
            if known is None or known.kind != kind:  # a redefinition of another kind: the last one wins
                known = module.definitions[qualname] = Definition(qualname, kind, prefix)
            known.nodes.append(node)
            if isinstance(node, ast.ClassDef):
                known.method_of = None
                cls = module.classes[qualname] = ClassInfo(qualname, module.name, list(node.bases))
                binder = Binder(module, scope_binder(qualname, qualname), annotations=True)
                cls.members = binder.scan(node.body).bindings
            else:
                known.method_of = method_of
            return Def(qualname, kind)

        return on_definition

    binder = Binder(module, scope_binder(module.name, None)).scan(module.tree.body)
    module.bindings = binder.bindings
    module.stars = binder.stars
    for qualname in [q for q, d in module.definitions.items() if d.kind == 'function']:
        module.classes.pop(qualname, None)  # a class later redefined as a function
    module.digest = fingerprint(
        module.name,
        _bindings_key(module.bindings),
        module.stars,
        sorted((c.qualname, [ast.dump(b) for b in c.bases], _bindings_key(c.members)) for c in module.classes.values()),
        sorted((d.qualname, d.kind) for d in module.definitions.values()),
    )


def _bindings_key(bindings: Bindings) -> list[tuple[str, list[str]]]:
    return sorted((name, sorted(map(repr, targets))) for name, targets in bindings.items())
