"""The code builder's graph writer: one module's entities, CONTAINS, DEFINED_IN, IMPORTS and CALLS, and its mark.

See docs/graph.md (Code graph).
"""

from __future__ import annotations

import ast
import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

from ...content import Entity, Relation
from ..base import DERIVED_SCOPE_VERSION, DocumentGraph, chunks_digest, derived_relation, fingerprint
from ._analysis import Resolver, calls_of, prefixes
from ._model import CODE_BUILDER, CODE_GRAPH_VERSION, EntityKind, ModuleOutcome, code_entity_id
from ._symbols import Module, absolute

__all__ = ['module_graph']

_DESCRIPTION_CHARS = 300


@dataclass(slots=True)
class _GraphWriter:
    """Accumulates one module's entities and relations (one relation per type, source and target)."""

    module: Module
    scope_keys: Sequence[str]
    entities: dict[str, Entity] = field(default_factory=dict)
    relations: dict[tuple[str, str, str], Relation] = field(default_factory=dict)

    def entity_id(self, kind: EntityKind, qualname: str) -> str:
        return code_entity_id(kind, qualname, self.module.scope, self.scope_keys, self.module.labels)

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


def module_graph(module: Module, group: Mapping[str, Module], scope_keys: Sequence[str]) -> ModuleOutcome:
    """Entities, CONTAINS, DEFINED_IN, IMPORTS and CALLS of one module, and its mark."""
    resolver = Resolver(group)
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
        sites = calls_of(resolver, module, definition)
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


def _imports(module: Module, resolver: Resolver, writer: _GraphWriter) -> None:
    """IMPORTS to every stored module an import statement (anywhere in the module) names."""
    source_id = writer.entity_id('module', module.name)
    imports = (n for n in ast.walk(module.tree) if isinstance(n, ast.Import | ast.ImportFrom))
    for node in sorted(imports, key=lambda n: (n.lineno, n.col_offset)):  # source order: first occurrence wins
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = absolute(module, node.level, node.module)
            if base is None:
                continue
            for alias in node.names:
                # `from pkg import sub` imports the submodule when there is one; else names in `pkg`
                sub = f'{base}.{alias.name}'
                names.append(sub if alias.name != '*' and resolver.table(sub) is not None else base)
        for name in names:
            target = next((p for p in (name, *prefixes(name)) if resolver.table(p) is not None), None)
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


def _module_description(module: Module) -> str:
    doc = _first_line(ast.get_docstring(module.tree, clean=True))
    return f'module {module.name}\n{doc}' if doc else f'module {module.name}'
