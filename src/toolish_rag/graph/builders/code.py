"""Python code as a graph: modules, classes and functions, with CONTAINS, IMPORTS and CALLS edges.

`CodeGraphBuilder` reads every stored document whose uri names a ``.py`` file, parses it with the
standard library's `ast`, and writes:

* an entity per module, class and function (methods included; functions nested in functions are
  not entities, their calls count as their enclosing function's). Its ``name`` is the qualified
  name (``pkg.mod.Class.method``) and its label ``module``, ``class`` or ``function``. There are
  **no short aliases**: the exact-name linker matches aliases as whole words, and an alias ``run``
  would link every chunk that says "run";
* ``CONTAINS`` module -> class/function, class -> method/nested class; ``IMPORTS`` module -> module
  (stored modules only); ``CALLS`` function -> function or class, weighted by the number of call
  sites; ``DEFINED_IN`` entity -> the chunk holding its ``def``/``class`` line (a module: its first
  chunk), so a walk lands on code the model can read.

**Where the source comes from.** Ingestion reads ``.py`` files with
`toolish_rag.ingest._readers.python.read_python`, which keeps every chunk an exact slice of the file,
but chunks alone lose the first line's indentation and the line numbers `ast` needs (and another
reader may have stored the document). So the builder reads the file
the document's ``file://`` uri names and accepts it only if every stored chunk's ``urtext`` is
found at its ``start_char``/``end_char`` (or, without offsets, in order): the graph always
describes the text the store holds, a file edited or removed since ingestion is reported as a
failure (re-ingest it) and never silently described instead.

**Module names** follow Python's rule for regular packages: the file's stem, under each parent
directory holding an ``__init__.py`` (namespace packages are not guessed).

**Scope.** Every relation carries the full metadata and labels of the chunk it was read from (its
``provenance``: the call site, the import, the ``def`` line), and every entity those of the chunk
holding its definition (a module: its first chunk), so a scope filter on any key, negative
predicates included, hides what was derived from a module it hides. Ingestion gives every chunk
its document's metadata, so these are the module's. With ``scope_keys``, names resolve only among
modules whose values of those keys are equal, and **entity ids** carry a digest of those values
(``py:<digest>:<kind>:<name>``; ``py:<kind>:<name>`` without), so two tenants storing the same
module get two sets of nodes. Two modules of one qualified name within one such group are one
name too many: the second (by document id) is reported, not built.

**Calls are resolved statically or dropped, never guessed.** Resolved: a name bound in the module
(``def``/``class``, ``import x``, ``import x as y``, ``from x import f [as g]``, relative imports,
re-exports followed through stored modules, ``from x import *`` of stored modules) or by an import
inside the function; attribute chains through modules and classes (``x.f()``, ``pkg.mod.f()``,
``Class.method()``); ``self.m()``/``cls.m()`` in a method, looked up along the class's MRO (C3 over
stored base classes, subscripted ones like ``Base[T]`` included; a base that is not stored is
assumed not to define the name); ``self.attr.m()`` when the class body declares ``attr: SomeClass``
(an annotation naming one stored class, ``SomeClass[T]`` or ``'SomeClass'``; not a union);
``super().m()`` and ``super(C, self).m()``, along the MRO after the class. A call of a class is an
edge to the **class** entity, not to ``__init__``: "what calls X" for a class means where it is
instantiated, a class need not define ``__init__`` (or inherits it), and the class node exists
either way. Anything else (a local variable, a parameter other than ``self``, a call on a call's
result, a name bound two different ways, a builtin, a module that is not stored) yields no edge.

**Idempotent.** A module's fingerprint covers the builder's configuration, its chunks and source,
its module name and scope, and the symbol table (bindings, classes, bases, members; not bodies) of
every module its resolution consulted, present or absent: renaming a function elsewhere changes
the CALLS of the modules that call it, so exactly those are rebuilt. Entities the builder no longer
derives (a deleted function) are removed after a run without failures.
"""

from __future__ import annotations

import ast
import asyncio
import bisect
import hashlib
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal, TypeAlias
from urllib.parse import urlparse
from urllib.request import url2pathname

from ...content import Chunk, Entity, Metadata, Relation
from ...protocols import DocumentInfo
from .base import (
    DERIVED_SCOPE_VERSION,
    BuildReport,
    DocumentGraph,
    DocumentInput,
    GraphBuildStore,
    build_documents,
    chunks_digest,
    derived_relation,
    fingerprint,
    iter_documents,
    scope_group,
    scope_of,
)

__all__ = ['CODE_ENTITY_PREFIX', 'CodeGraphBuilder', 'code_entity_id']

CODE_BUILDER = 'code'
"""The code builder's name: its relations' origin and its ledger key."""

CODE_GRAPH_VERSION = 1
"""Bumped whenever the builder derives other relations from the same sources (part of every mark)."""

CODE_ENTITY_PREFIX = 'py:'
"""Every entity this builder writes has an id starting with this: how it recognises its own stale ones."""

EntityKind: TypeAlias = Literal['module', 'class', 'function']

_DESCRIPTION_CHARS = 300


def code_entity_id(
    kind: EntityKind, qualname: str, scope: Metadata | None = None, scope_keys: Sequence[str] = ()
) -> str:
    """The id of a module, class or function entity: ``py:[<scope digest>:]<kind>:<qualified name>``.

    The digest is of ``scope``'s values of ``scope_keys`` (none: no digest), the keys names resolve within.
    """
    scoped = scope_of(scope or {}, scope_keys)
    prefix = _scope_digest(scope_group(scoped, scope_keys)) + ':' if scoped else ''
    return f'{CODE_ENTITY_PREFIX}{prefix}{kind}:{qualname}'


def _scope_digest(group: str) -> str:
    return hashlib.sha256(group.encode('utf-8', 'surrogatepass')).hexdigest()[:12]


# -- the builder -----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class CodeGraphBuilder:
    """Modules, classes and functions of stored Python sources, and how they contain, import and call each other.

    ``scope_keys``: names resolve (CALLS, IMPORTS) only among modules whose values of these keys are
    equal, and entity ids are per such group. Entities and relations carry their chunk's full
    metadata and labels whatever the keys (see the module).
    """

    scope_keys: tuple[str, ...] = ()

    @property
    def name(self) -> str:
        return CODE_BUILDER

    async def build(self, store: GraphBuildStore) -> BuildReport:
        """Analyse every stored Python module, then write the modules whose fingerprint changed."""
        infos = [i for i in await store.list_documents() if is_python_document(i)]
        inputs = [document async for document in iter_documents(store, infos)]
        # Reading files, parsing and resolving are blocking and CPU-bound: one thread for the lot.
        analysis = await asyncio.to_thread(analyse_modules, inputs, self.scope_keys)
        known = {e.id: e for e in await store.list_entities()}

        async def graph_of(document: DocumentInput) -> DocumentGraph:
            outcome = analysis[document.id]
            if isinstance(outcome, str):
                raise SourceUnavailable(outcome)
            return outcome.graph

        def mark_of(document: DocumentInput) -> str:
            outcome = analysis[document.id]
            return outcome.mark if isinstance(outcome, ModuleOutcome) else 'unavailable'

        report = await build_documents(store, self.name, inputs, mark_of, graph_of, known_entities=known)
        if not report.failures:
            await _delete_stale_entities(store, known, analysis.values())
        return report


class SourceUnavailable(Exception):
    """A stored Python document whose source cannot be read, parsed or matched with its chunks."""


@dataclass(frozen=True, slots=True)
class ModuleOutcome:
    """One module's desired graph and its ledger mark."""

    graph: DocumentGraph
    mark: str


async def _delete_stale_entities(
    store: GraphBuildStore, known: Mapping[str, Entity], outcomes: Iterable[ModuleOutcome | str]
) -> None:
    """Remove this builder's entities that no module derives any more (a deleted function or file)."""
    wanted = {e.id for o in outcomes if isinstance(o, ModuleOutcome) for e in o.graph.entities}
    stale = [eid for eid in known if eid.startswith(CODE_ENTITY_PREFIX) and eid not in wanted]
    if stale:
        await store.delete_entities(stale)


def is_python_document(info: DocumentInfo) -> bool:
    """A document is Python source when its uri's path ends in ``.py``."""
    return urlparse(info.uri).path.lower().endswith('.py')


# -- reading sources -------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Source:
    """A module's verified source text and where each stored chunk lies in it."""

    text: str
    path: Path
    starts: tuple[int, ...]
    """Chunk start offsets, ascending (parallel to ``chunks``)."""
    ends: tuple[int, ...]
    chunks: tuple[Chunk, ...]
    line_starts: tuple[int, ...]

    def chunk_at(self, offset: int) -> Chunk:
        """The earliest chunk holding ``offset`` (overlapping chunks), else the last one before it, else the first."""
        i = bisect.bisect_right(self.starts, offset)
        if i == 0:
            return self.chunks[0]
        j = i - 1
        while j > 0 and self.ends[j - 1] > offset:  # chunks are sequential: their ends grow with their starts
            j -= 1
        return self.chunks[j]

    def offset(self, node: ast.stmt | ast.expr) -> int:
        """The character offset of ``node`` (`ast` gives a line and a UTF-8 byte column)."""
        start = self.line_starts[node.lineno - 1]
        end = self.line_starts[node.lineno] if node.lineno < len(self.line_starts) else len(self.text)
        line = self.text[start:end]
        return start + len(line.encode('utf-8', 'surrogatepass')[: node.col_offset].decode('utf-8', 'replace'))


def local_path(uri: str) -> Path | None:
    """The local file a ``file://`` uri (or a plain absolute path) names, if it is one."""
    parsed = urlparse(uri)
    if parsed.scheme == 'file':
        return Path(url2pathname(parsed.path))
    if not parsed.scheme and uri.startswith('/'):
        return Path(uri)
    return None


def read_source(document: DocumentInput) -> _Source:
    """The file behind ``document``, verified against every stored chunk (`SourceUnavailable` if it differs)."""
    from ...ingest._readers.text import decode_text  # the ingestion package is heavy: only when reading code

    path = local_path(document.info.uri)
    if path is None:
        raise SourceUnavailable(f'{document.info.uri!r} is not a local file: its source cannot be read')
    try:
        text = decode_text(path.read_bytes())
    except OSError as e:
        raise SourceUnavailable(f'cannot read {str(path)!r}: {e.strerror or e}') from None
    except Exception as e:  # ReadError (binary): the message says why
        raise SourceUnavailable(f'cannot read {str(path)!r}: {e}') from None
    spans: list[tuple[int, int, Chunk]] = []
    pos = 0
    for chunk in document.chunks:
        start = chunk.start_char if chunk.start_char is not None else text.find(chunk.urtext, pos)
        end = start + len(chunk.urtext)
        if start < 0 or text[start:end] != chunk.urtext:
            raise SourceUnavailable(
                f'{str(path)!r} no longer holds the stored text of chunk {chunk.id!r}: re-ingest it'
            )
        pos = start
        spans.append((start, end, chunk))
    spans.sort(key=lambda s: (s[0], s[1]))
    line_starts = [0]
    line_starts.extend(i + 1 for i, ch in enumerate(text) if ch == '\n')
    return _Source(
        text,
        path,
        tuple(s for s, _, _ in spans),
        tuple(e for _, e, _ in spans),
        tuple(c for _, _, c in spans),
        tuple(line_starts),
    )


def module_name_of(path: Path) -> tuple[str, bool]:
    """``(dotted module name, is_package)`` by Python's rule: the stem under each parent with an ``__init__.py``."""
    is_package = path.name == '__init__.py'
    parts = [] if is_package else [path.stem]
    folder = path.parent
    while (folder / '__init__.py').is_file() and folder.name:
        parts.append(folder.name)
        if folder.parent == folder:
            break
        folder = folder.parent
    if not parts:  # an __init__.py whose folder is no package of its own: name it after the folder
        parts = [path.parent.name or path.stem]
    return '.'.join(reversed(parts)), is_package


# -- symbol tables ---------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Def:
    """Bound to a class or function defined in a stored module."""

    qualname: str
    kind: Literal['class', 'function']


@dataclass(frozen=True, slots=True)
class _Mod:
    """Bound to a module (stored or not)."""

    name: str


@dataclass(frozen=True, slots=True)
class _From:
    """Bound by ``from module import name``: resolved lazily, through re-exports."""

    module: str
    name: str


@dataclass(frozen=True, slots=True)
class _Self:
    """The first parameter of a method: an instance (or the class) of ``cls``."""

    cls: str


@dataclass(frozen=True, slots=True)
class _Opaque:
    """Bound by anything static analysis cannot follow (an assignment, a parameter, a loop)."""


_OPAQUE = _Opaque()


@dataclass(frozen=True, slots=True)
class _Annotated:
    """A class attribute declared with a type (``wrapped: AbstractToolset[T]``): an instance of that class.

    The annotation is kept as source text (a stable digest) and resolved in ``module`` when read.
    """

    module: str
    annotation: str


_Binding: TypeAlias = _Def | _Mod | _From | _Self | _Opaque | _Annotated
_Bindings: TypeAlias = dict[str, set[_Binding]]


@dataclass(slots=True)
class _Class:
    qualname: str
    module: str
    bases: list[ast.expr]
    members: _Bindings = field(default_factory=dict)


@dataclass(slots=True)
class _Definition:
    """A class or function entity: every ``def``/``class`` statement of that qualified name (overloads)."""

    qualname: str
    kind: Literal['class', 'function']
    parent: str
    nodes: list[ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef] = field(default_factory=list)
    method_of: str | None = None
    """The class whose body defines this function directly."""


@dataclass(slots=True)
class _Module:
    """One stored module: its source, definitions and module-level symbol table."""

    name: str
    is_package: bool
    document: DocumentInput
    source: _Source
    tree: ast.Module
    scope: Metadata
    """The first chunk's metadata: its ``scope_keys`` values group modules for resolution and ids."""
    definitions: dict[str, _Definition] = field(default_factory=dict)
    bindings: _Bindings = field(default_factory=dict)
    stars: list[str] = field(default_factory=list)
    classes: dict[str, _Class] = field(default_factory=dict)
    digest: str = ''

    @property
    def package(self) -> str:
        return self.name if self.is_package else self.name.rpartition('.')[0]


def _absolute(module: _Module, level: int, target: str | None) -> str | None:
    """The absolute module a (possibly relative) ``from`` import names; ``None`` if it climbs too far."""
    if level == 0:
        return target
    parts = module.package.split('.') if module.package else []
    if level - 1 > len(parts):
        return None
    base = parts[: len(parts) - (level - 1)]
    return '.'.join([*base, *([target] if target else [])]) or None


def _import_bindings(module: _Module, node: ast.Import | ast.ImportFrom) -> Iterator[tuple[str, _Binding]]:
    """The names an import statement binds, and to what."""
    if isinstance(node, ast.Import):
        for alias in node.names:
            if alias.asname:
                yield alias.asname, _Mod(alias.name)
            else:
                head = alias.name.partition('.')[0]
                yield head, _Mod(head)
        return
    base = _absolute(module, node.level, node.module)
    for alias in node.names:
        if alias.name == '*':
            continue
        yield alias.asname or alias.name, (_From(base, alias.name) if base else _OPAQUE)


class _Binder(ast.NodeVisitor):
    """Collects the names one scope binds, without descending into nested scopes.

    ``on_definition`` sees each ``def``/``class`` statement of the scope; what it returns is the
    binding of that name (the module and class scopes bind entities; a function scope binds opaque).
    """

    def __init__(
        self,
        module: _Module,
        on_definition: Callable[[ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef], _Binding],
        *,
        annotations: bool = False,
    ) -> None:
        self.module = module
        self.on_definition = on_definition
        self.annotations = annotations
        """A class body: an annotated name is an instance of its annotation's class."""
        self.bindings: _Bindings = {}
        self.declared_global: set[str] = set()
        self.declared_nonlocal: set[str] = set()
        self.stars: list[str] = []

    def bind(self, name: str, binding: _Binding) -> None:
        self.bindings.setdefault(name, set()).add(binding)

    def scan(self, body: Iterable[ast.AST]) -> _Binder:
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
            self.bind(node.target.id, _Annotated(self.module.name, ast.unparse(node.annotation)))
        else:
            self.generic_visit(node)

    def visit_Name(self, node: ast.Name) -> None:
        if isinstance(node.ctx, ast.Store | ast.Del):
            self.bind(node.id, _OPAQUE)

    def visit_Import(self, node: ast.Import) -> None:
        for name, binding in _import_bindings(self.module, node):
            self.bind(name, binding)

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        for name, binding in _import_bindings(self.module, node):
            self.bind(name, binding)
        if any(alias.name == '*' for alias in node.names):
            base = _absolute(self.module, node.level, node.module)
            if base:
                self.stars.append(base)

    def visit_Global(self, node: ast.Global) -> None:
        self.declared_global.update(node.names)

    def visit_Nonlocal(self, node: ast.Nonlocal) -> None:
        self.declared_nonlocal.update(node.names)

    def visit_ExceptHandler(self, node: ast.ExceptHandler) -> None:
        if node.name:
            self.bind(node.name, _OPAQUE)
        self.generic_visit(node)

    def visit_MatchAs(self, node: ast.MatchAs) -> None:
        if node.name:
            self.bind(node.name, _OPAQUE)
        self.generic_visit(node)

    def visit_MatchStar(self, node: ast.MatchStar) -> None:
        if node.name:
            self.bind(node.name, _OPAQUE)

    def visit_MatchMapping(self, node: ast.MatchMapping) -> None:
        if node.rest:
            self.bind(node.rest, _OPAQUE)
        self.generic_visit(node)


def _collect(module: _Module) -> None:
    """Fill ``module``'s definitions, classes and module-level bindings (recursing into class bodies)."""

    def scope_binder(
        prefix: str, method_of: str | None
    ) -> Callable[[ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef], _Binding]:
        def on_definition(node: ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) -> _Binding:
            qualname = f'{prefix}.{node.name}'
            kind: Literal['class', 'function'] = 'class' if isinstance(node, ast.ClassDef) else 'function'
            known = module.definitions.get(qualname)
            if known is None or known.kind != kind:  # a redefinition of another kind: the last one wins
                known = module.definitions[qualname] = _Definition(qualname, kind, prefix)
            known.nodes.append(node)
            if isinstance(node, ast.ClassDef):
                known.method_of = None
                cls = module.classes[qualname] = _Class(qualname, module.name, list(node.bases))
                binder = _Binder(module, scope_binder(qualname, qualname), annotations=True)
                cls.members = binder.scan(node.body).bindings
            else:
                known.method_of = method_of
            return _Def(qualname, kind)

        return on_definition

    binder = _Binder(module, scope_binder(module.name, None)).scan(module.tree.body)
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


def _bindings_key(bindings: _Bindings) -> list[tuple[str, list[str]]]:
    return sorted((name, sorted(map(repr, targets))) for name, targets in bindings.items())


# -- resolution ------------------------------------------------------------------------------


@dataclass(slots=True)
class _Scope:
    """A function, lambda, comprehension or class scope on the way from a call site out to the module."""

    bindings: _Bindings
    declared_global: set[str]
    kind: Literal['function', 'class', 'comprehension']
    method_of: str | None = None
    """For a method's own scope: its class (zero-argument ``super()`` works there)."""
    declared_nonlocal: set[str] = field(default_factory=set)


class _Resolver:
    """Resolves names and attribute chains among the stored modules of one scope group.

    Every module whose table it consults (or whose absence it relies on) is recorded in
    ``consulted``, with its digest or ``None``: the fingerprint of the module being resolved.
    """

    def __init__(self, modules: Mapping[str, _Module]) -> None:
        self.modules = modules
        self.consulted: dict[str, str | None] = {}
        self._mro: dict[str, list[_Class]] = {}

    def table(self, name: str) -> _Module | None:
        module = self.modules.get(name)
        self.consulted[name] = module.digest if module is not None else None
        return module

    def final(
        self, bindings: set[_Binding], seen: frozenset[tuple[str, str]] = frozenset()
    ) -> _Def | _Mod | _Self | None:
        """What a set of bindings of one name resolves to, if they all agree."""
        results = {self._follow(b, seen) for b in bindings}
        if len(results) != 1:
            return None
        return results.pop()

    def _follow(self, binding: _Binding, seen: frozenset[tuple[str, str]]) -> _Def | _Mod | _Self | None:
        if isinstance(binding, _From):
            return self.attribute_of_module(binding.module, binding.name, seen)
        if isinstance(binding, _Opaque):
            return None
        if isinstance(binding, _Annotated):
            module = self.table(binding.module)
            if module is None:
                return None
            cls = self.class_of(ast.parse(binding.annotation, mode='eval').body, module)
            return _Self(cls) if cls is not None else None
        return binding

    def attribute_of_module(
        self, module_name: str, name: str, seen: frozenset[tuple[str, str]] = frozenset()
    ) -> _Def | _Mod | _Self | None:
        """``module.name``: the module's binding (followed through re-exports), else its submodule."""
        submodule = f'{module_name}.{name}'
        if (module_name, name) in seen:  # `from . import x` inside the package itself: the submodule
            return _Mod(submodule) if self.table(submodule) is not None else None
        seen = seen | {(module_name, name)}
        module = self.table(module_name)
        if module is not None and name in module.bindings:
            return self.final(module.bindings[name], seen)
        if module is not None:
            for star in reversed(module.stars):
                starred = self.table(star)
                if starred is None:
                    break  # an unknown module might define it: do not guess past it
                if name in starred.bindings and not name.startswith('_'):
                    return self.final(starred.bindings[name], seen)
        return _Mod(submodule) if self.table(submodule) is not None else None

    def mro(self, qualname: str) -> list[_Class]:
        """The stored classes of ``qualname``'s MRO (C3; left-to-right depth-first if C3 fails)."""
        if qualname in self._mro:
            return self._mro[qualname]
        self._mro[qualname] = []  # a cyclic hierarchy (broken code) ends here
        cls = self._class(qualname)
        if cls is None:
            return []
        module = self.modules[cls.module]
        bases: list[list[_Class]] = []
        for expression in cls.bases:
            base = self.class_of(expression, module)
            if base is not None:
                bases.append(self.mro(base))
        result = [cls, *_c3([*bases, [b[0] for b in bases if b]])]
        self._mro[qualname] = result
        return result

    def _class(self, qualname: str) -> _Class | None:
        for module_name in _prefixes(qualname):
            module = self.table(module_name)
            if module is not None and qualname in module.classes:
                return module.classes[qualname]
        return None

    def class_of(self, node: ast.expr, module: _Module) -> str | None:
        """The stored class a base or an annotation names: ``C``, ``mod.C``, ``C[T]``, ``'C'``; else ``None``.

        A union (``C | None``, ``Optional[C]``) names no single class: ``None``.
        """
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            try:
                node = ast.parse(node.value, mode='eval').body
            except SyntaxError:
                return None
        if isinstance(node, ast.Subscript):
            node = node.value
        found = self.expression(node, module, [])
        return found.qualname if isinstance(found, _Def) and found.kind == 'class' else None

    def member(self, classes: Sequence[_Class], name: str) -> _Def | _Self | None:
        """``name`` looked up along ``classes`` (an MRO): the first class binding it decides."""
        for cls in classes:
            if name in cls.members:
                found = self.final(cls.members[name])
                return found if isinstance(found, _Def | _Self) else None
        return None

    def name(self, name: str, module: _Module, chain: Sequence[_Scope]) -> _Def | _Mod | _Self | None:
        """A bare name at a point inside ``chain`` (innermost scope last): local, enclosing, then global."""
        for i in range(len(chain) - 1, -1, -1):
            scope = chain[i]
            if scope.kind == 'class' and i != len(chain) - 1:
                continue  # class bodies are not visible to the functions inside them
            if name in scope.declared_global:
                break
            if name in scope.declared_nonlocal:
                continue
            if name in scope.bindings:
                return self.final(scope.bindings[name])
        if name in module.bindings:
            return self.final(module.bindings[name])
        for star in reversed(module.stars):
            starred = self.table(star)
            if starred is None:
                return None
            if name in starred.bindings and not name.startswith('_'):
                return self.final(starred.bindings[name])
        return None

    def expression(self, node: ast.expr, module: _Module, chain: Sequence[_Scope]) -> _Def | _Mod | _Self | None:
        """What a name or attribute chain refers to, or ``None``."""
        if isinstance(node, ast.Name):
            return self.name(node.id, module, chain)
        if not isinstance(node, ast.Attribute):
            return None
        if isinstance(node.value, ast.Call) and _is_super(node.value):
            return self._super_member(node.value, node.attr, module, chain)
        owner = self.expression(node.value, module, chain)
        if isinstance(owner, _Mod):
            return self.attribute_of_module(owner.name, node.attr)
        if isinstance(owner, _Self):
            return self.member(self.mro(owner.cls), node.attr)
        if isinstance(owner, _Def) and owner.kind == 'class':
            return self.member(self.mro(owner.qualname), node.attr)
        return None

    def _super_member(self, call: ast.Call, name: str, module: _Module, chain: Sequence[_Scope]) -> _Def | _Self | None:
        method = next((s for s in reversed(chain) if s.kind != 'comprehension'), None)
        if method is None or method.method_of is None:
            return None
        if not call.args:
            return self.member(self.mro(method.method_of)[1:], name)
        if len(call.args) != 2:
            return None
        start = self.expression(call.args[0], module, chain)
        if not isinstance(start, _Def) or start.kind != 'class':
            return None
        mro = self.mro(method.method_of)
        names = [c.qualname for c in mro]
        after = mro[names.index(start.qualname) + 1 :] if start.qualname in names else self.mro(start.qualname)[1:]
        return self.member(after, name)


def _is_super(call: ast.Call) -> bool:
    return isinstance(call.func, ast.Name) and call.func.id == 'super' and not call.keywords


def _prefixes(qualname: str) -> Iterator[str]:
    """``a.b.C.D`` -> ``a.b.C``, ``a.b``, ``a``: where the module part of a qualified name may end."""
    parts = qualname.split('.')
    for end in range(len(parts) - 1, 0, -1):
        yield '.'.join(parts[:end])


def _c3(sequences: list[list[_Class]]) -> list[_Class]:
    """C3 linearisation of the bases' MROs; falls back to left-to-right, depth-first, deduplicated."""
    pending = [list(s) for s in sequences if s]
    result: list[_Class] = []
    while pending:
        for seq in pending:
            head = seq[0]
            if not any(head in s[1:] for s in pending):
                break
        else:
            seen = {id(c) for c in result}
            for c in (c for s in sequences for c in s):
                if id(c) not in seen:
                    seen.add(id(c))
                    result.append(c)
            return result
        result.append(head)
        pending = [[c for c in s if c is not head] for s in pending]
        pending = [s for s in pending if s]
    return result


# -- calls -----------------------------------------------------------------------------------


def _function_scope(
    module: _Module, node: ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda, method_of: str | None
) -> _Scope:
    """A function's local bindings: parameters (the first one of a method is ``self``/``cls``) and its body's."""
    binder = _Binder(module, lambda _definition: _OPAQUE)
    arguments = node.args
    positional = [*arguments.posonlyargs, *arguments.args]
    for arg in [*positional, *arguments.kwonlyargs, arguments.vararg, arguments.kwarg]:
        if arg is not None:
            binder.bind(arg.arg, _OPAQUE)
    if method_of is not None and positional and not _is_static(node):
        binder.bindings[positional[0].arg] = {_Self(method_of)}  # reassigned in the body: opaque joins, unknown
    if isinstance(node, ast.Lambda):
        binder.visit(node.body)
    else:
        binder.scan(node.body)
    return _Scope(binder.bindings, binder.declared_global, 'function', method_of, binder.declared_nonlocal)


def _is_static(node: ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda) -> bool:
    if isinstance(node, ast.Lambda):
        return True
    return any(isinstance(d, ast.Name) and d.id == 'staticmethod' for d in node.decorator_list)


@dataclass(slots=True)
class _CallSites:
    """Resolved call sites of one function: target -> (count, offset of the first)."""

    targets: dict[_Def, tuple[int, int]] = field(default_factory=dict)

    def add(self, target: _Def, offset: int) -> None:
        count, first = self.targets.get(target, (0, offset))
        self.targets[target] = (count + 1, min(first, offset))


class _CallWalker(ast.NodeVisitor):
    """Walks one function body, resolving every call site with the scopes in force there."""

    def __init__(self, resolver: _Resolver, module: _Module, chain: list[_Scope], sites: _CallSites) -> None:
        self.resolver = resolver
        self.module = module
        self.chain = chain
        self.sites = sites

    def visit_Call(self, node: ast.Call) -> None:
        target = self.resolver.expression(node.func, self.module, self.chain)
        if isinstance(target, _Def):
            self.sites.add(target, self.module.source.offset(node))
        self.generic_visit(node)

    def _nested_function(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        for expression in [*node.decorator_list, *node.args.defaults, *node.args.kw_defaults]:
            if expression is not None:
                self.visit(expression)
        self._inside(_function_scope(self.module, node, None), node.body)

    visit_FunctionDef = visit_AsyncFunctionDef = _nested_function

    def visit_Lambda(self, node: ast.Lambda) -> None:
        for expression in [*node.args.defaults, *node.args.kw_defaults]:
            if expression is not None:
                self.visit(expression)
        self._inside(_function_scope(self.module, node, None), [node.body])

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        for expression in [*node.decorator_list, *node.bases, *(k.value for k in node.keywords)]:
            self.visit(expression)
        binder = _Binder(self.module, lambda _definition: _OPAQUE).scan(node.body)
        self._inside(_Scope(binder.bindings, binder.declared_global, 'class'), node.body)

    def _comprehension(self, node: ast.ListComp | ast.SetComp | ast.GeneratorExp | ast.DictComp) -> None:
        binder = _Binder(self.module, lambda _definition: _OPAQUE)
        for generator in node.generators:
            binder.visit(generator.target)
        parts: list[ast.AST] = [*node.generators]
        parts.extend([node.key, node.value] if isinstance(node, ast.DictComp) else [node.elt])
        self._inside(_Scope(binder.bindings, set(), 'comprehension'), parts)

    visit_ListComp = visit_SetComp = visit_GeneratorExp = visit_DictComp = _comprehension

    def _inside(self, scope: _Scope, body: Sequence[ast.AST]) -> None:
        self.chain.append(scope)
        try:
            for item in body:
                self.visit(item)
        finally:
            self.chain.pop()


def _calls_of(resolver: _Resolver, module: _Module, definition: _Definition) -> _CallSites:
    """Every resolved call in the bodies of a function entity (all its overloads)."""
    sites = _CallSites()
    for node in definition.nodes:
        if isinstance(node, ast.ClassDef):
            continue
        scope = _function_scope(module, node, definition.method_of)
        walker = _CallWalker(resolver, module, [scope], sites)
        for statement in node.body:
            walker.visit(statement)
    return sites


# -- one module's graph ----------------------------------------------------------------------


def analyse_modules(inputs: Sequence[DocumentInput], scope_keys: Sequence[str]) -> dict[str, ModuleOutcome | str]:
    """Every document's desired graph and mark, or why it cannot be built (blocking: run it in a thread)."""
    outcomes: dict[str, ModuleOutcome | str] = {}
    groups: dict[str, dict[str, _Module]] = {}
    for document in inputs:
        if not document.chunks:  # no stored text, nothing to describe (ingestion never stores such a file)
            outcomes[document.id] = ModuleOutcome(
                DocumentGraph(), fingerprint(CODE_BUILDER, CODE_GRAPH_VERSION, 'empty')
            )
            continue
        try:
            module = _load(document, scope_keys)
        except SourceUnavailable as e:
            outcomes[document.id] = str(e)
            continue
        group = groups.setdefault(scope_group(module.scope, scope_keys), {})
        other = group.get(module.name)
        if other is not None:  # inputs come by document id: the first keeps the name
            outcomes[document.id] = f'module {module.name!r} is already stored as document {other.document.id!r}'
            continue
        group[module.name] = module
    for group in groups.values():
        for module in group.values():
            outcomes[module.document.id] = _module_graph(module, group, scope_keys)
    return outcomes


def _load(document: DocumentInput, scope_keys: Sequence[str]) -> _Module:
    source = read_source(document)
    name, is_package = module_name_of(source.path)
    try:
        tree = ast.parse(source.text, filename=str(source.path))
    except (SyntaxError, ValueError) as e:
        raise SourceUnavailable(f'{str(source.path)!r} is not valid Python: {e}') from None
    module = _Module(name, is_package, document, source, tree, dict(document.chunks[0].metadata))
    _collect(module)
    return module


@dataclass(slots=True)
class _GraphWriter:
    """Accumulates one module's entities and relations (one relation per type, source and target)."""

    module: _Module
    scope_keys: Sequence[str]
    entities: dict[str, Entity] = field(default_factory=dict)
    relations: dict[tuple[str, str, str], Relation] = field(default_factory=dict)

    def entity_id(self, kind: EntityKind, qualname: str) -> str:
        return code_entity_id(kind, qualname, self.module.scope, self.scope_keys)

    def entity(self, kind: EntityKind, qualname: str, description: str, offset: int | None) -> str:
        entity_id = self.entity_id(kind, qualname)
        chunk = self.module.source.chunks[0] if offset is None else self.module.source.chunk_at(offset)
        self.entities[entity_id] = Entity(
            id=entity_id,
            name=qualname,
            description=description,
            metadata=chunk.metadata,  # scoped like the text it describes: a filter hiding the chunk hides it
            labels=chunk.labels | {kind},
        )
        self.relation('DEFINED_IN', entity_id, chunk.id, offset, target_kind='chunk')
        return entity_id

    def relation(
        self,
        type: str,
        source: str,
        target: str,
        offset: int | None,
        *,
        weight: float = 1.0,
        target_kind: Literal['entity', 'chunk'] = 'entity',
    ) -> None:
        key = (type, source, target)
        if key in self.relations:
            return
        chunk = self.module.source.chunks[0] if offset is None else self.module.source.chunk_at(offset)
        self.relations[key] = derived_relation(
            chunk, CODE_BUILDER, source, 'entity', target, target_kind, type, weight=weight
        )

    def graph(self) -> DocumentGraph:
        return DocumentGraph(
            tuple(sorted(self.relations.values(), key=lambda r: r.id)),
            tuple(sorted(self.entities.values(), key=lambda e: e.id)),
        )


def _module_graph(module: _Module, group: Mapping[str, _Module], scope_keys: Sequence[str]) -> ModuleOutcome:
    """Entities, CONTAINS, DEFINED_IN, IMPORTS and CALLS of one module, and its mark."""
    resolver = _Resolver(group)
    writer = _GraphWriter(module, scope_keys)
    module_id = writer.entity('module', module.name, _module_description(module), None)
    for definition in module.definitions.values():
        node = definition.nodes[-1]  # the binding in force: the last definition (overloads, redefinitions)
        entity_id = writer.entity(definition.kind, definition.qualname, _description(node), module.source.offset(node))
        parent = module.definitions.get(definition.parent)
        if definition.parent == module.name:
            writer.relation('CONTAINS', module_id, entity_id, module.source.offset(node))
        elif parent is not None and parent.kind == 'class':
            writer.relation(
                'CONTAINS', writer.entity_id('class', parent.qualname), entity_id, module.source.offset(node)
            )
    _imports(module, resolver, writer)
    for definition in module.definitions.values():
        if definition.kind != 'function':
            continue
        source_id = writer.entity_id('function', definition.qualname)
        sites = _calls_of(resolver, module, definition)
        for target, (count, offset) in sorted(sites.targets.items(), key=lambda t: t[1][1]):
            writer.relation('CALLS', source_id, writer.entity_id(target.kind, target.qualname), offset, weight=count)
    mark = fingerprint(
        CODE_BUILDER,
        CODE_GRAPH_VERSION,
        DERIVED_SCOPE_VERSION,
        list(scope_keys),
        module.name,
        module.is_package,
        module.scope,
        chunks_digest(module.document.chunks),
        hashlib.sha256(module.source.text.encode('utf-8', 'surrogatepass')).hexdigest(),
        sorted(resolver.consulted.items(), key=lambda kv: kv[0]),
    )
    return ModuleOutcome(writer.graph(), mark)


def _imports(module: _Module, resolver: _Resolver, writer: _GraphWriter) -> None:
    """IMPORTS to every stored module an import statement (anywhere in the module) names."""
    source_id = writer.entity_id('module', module.name)
    imports = (n for n in ast.walk(module.tree) if isinstance(n, ast.Import | ast.ImportFrom))
    for node in sorted(imports, key=lambda n: (n.lineno, n.col_offset)):  # source order: first occurrence wins
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = _absolute(module, node.level, node.module)
            if base is None:
                continue
            for alias in node.names:
                # `from pkg import sub` imports the submodule when there is one; else names in `pkg`
                sub = f'{base}.{alias.name}'
                names.append(sub if alias.name != '*' and resolver.table(sub) is not None else base)
        for name in names:
            target = next((p for p in (name, *_prefixes(name)) if resolver.table(p) is not None), None)
            if target is not None and target != module.name:
                writer.relation('IMPORTS', source_id, writer.entity_id('module', target), module.source.offset(node))


def _first_line(docstring: str | None) -> str:
    return docstring.strip().splitlines()[0].strip() if docstring and docstring.strip() else ''


def _description(node: ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) -> str:
    """What the model reads on the entity: its signature and the first line of its docstring."""
    if isinstance(node, ast.ClassDef):
        bases = ', '.join(ast.unparse(b) for b in node.bases)
        head = f'class {node.name}({bases})' if bases else f'class {node.name}'
    else:
        prefix = 'async def' if isinstance(node, ast.AsyncFunctionDef) else 'def'
        returns = f' -> {ast.unparse(node.returns)}' if node.returns is not None else ''
        head = f'{prefix} {node.name}({ast.unparse(node.args)}){returns}'
    if len(head) > _DESCRIPTION_CHARS:
        head = head[: _DESCRIPTION_CHARS - 1] + '…'
    doc = _first_line(ast.get_docstring(node, clean=True))
    return f'{head}\n{doc}' if doc else head


def _module_description(module: _Module) -> str:
    doc = _first_line(ast.get_docstring(module.tree, clean=True))
    return f'module {module.name}\n{doc}' if doc else f'module {module.name}'
