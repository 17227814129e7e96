"""`CodeGraphBuilder`: analyse every stored Python module, then write those whose fingerprint changed.

See docs/graph.md (Code graph).
"""

from __future__ import annotations

import ast
import asyncio
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from urllib.parse import urlparse

from ...content import Entity
from ...protocols import DocumentInfo
from ..base import (
    BuildReport,
    DocumentGraph,
    DocumentInput,
    GraphBuildStore,
    build_documents,
    fingerprint,
    iter_documents,
)
from ._model import (
    CODE_BUILDER,
    CODE_ENTITY_PREFIX,
    CODE_GRAPH_VERSION,
    ModuleOutcome,
    SourceUnavailable,
    resolution_group,
)
from ._sources import module_name_of, read_source
from ._symbols import Module, collect
from ._writer import module_graph

__all__ = ['CodeGraphBuilder', 'analyse_modules', 'is_python_document']


@dataclass(frozen=True, slots=True)
class CodeGraphBuilder:
    """Modules, classes and functions of stored Python sources, and how they contain, import and call each other.

    Names resolve (CALLS, IMPORTS) only among the modules of one group, and entity ids are per
    group: by default modules of one source identity (metadata but the per-file keys, and labels),
    so another tenant's module of the same name never blocks or replaces this tenant's; with
    ``scope_keys``, modules whose values of these keys are equal. Entities and relations carry their
    chunk's full metadata and labels whatever the keys (see docs/graph.md).
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
        failed = sorted(document_id for document_id, outcome in analysis.items() if isinstance(outcome, str))
        if len(report.failures) == len(failed):  # no write failed: only modules that kept their old graph
            kept = await store.list_relations(document_ids=failed, origin=self.name) if failed else []
            await _delete_stale_entities(
                store, known, analysis.values(), {i for r in kept for i in (r.source, r.target)}
            )
        return report


async def _delete_stale_entities(
    store: GraphBuildStore, known: Mapping[str, Entity], outcomes: Iterable[ModuleOutcome | str], kept: set[str]
) -> None:
    """Remove this builder's entities that no module derives any more (a deleted function or file).

    ``kept``: ids the stored graph of a module that failed this run still names (it keeps its old graph).
    """
    wanted = kept | {e.id for o in outcomes if isinstance(o, ModuleOutcome) for e in o.graph.entities}
    stale = [eid for eid in known if eid.startswith(CODE_ENTITY_PREFIX) and eid not in wanted]
    if stale:
        await store.delete_entities(stale)


def is_python_document(info: DocumentInfo) -> bool:
    """A document is Python source when its uri's path ends in ``.py``."""
    return urlparse(info.uri).path.lower().endswith('.py')


def analyse_modules(inputs: Sequence[DocumentInput], scope_keys: Sequence[str]) -> dict[str, ModuleOutcome | str]:
    """Every document's desired graph and mark, or why it cannot be built (blocking: run it in a thread).

    A module that cannot be read, parsed or analysed (a RecursionError on a deeply nested
    expression included) is that module's one-line failure; the others are built.
    """
    outcomes: dict[str, ModuleOutcome | str] = {}
    groups: dict[str, dict[str, Module]] = {}
    for document in inputs:
        if not document.chunks:  # no stored text, nothing to describe (ingestion never stores such a file)
            outcomes[document.id] = ModuleOutcome(
                DocumentGraph(), fingerprint(CODE_BUILDER, CODE_GRAPH_VERSION, 'empty')
            )
            continue
        try:
            module = _load(document, scope_keys)
        except Exception as e:  # SourceUnavailable says why; anything else is named by its type
            outcomes[document.id] = _reason(e)
            continue
        group = groups.setdefault(resolution_group(module.scope, scope_keys, module.labels), {})
        other = group.get(module.name)
        if other is not None:  # one group, one module per name: inputs come by document id, the first keeps it
            outcomes[document.id] = f'module {module.name!r} is already stored as document {other.document.id!r}'
            continue
        group[module.name] = module
    for group in groups.values():
        for module in group.values():
            try:
                outcomes[module.document.id] = module_graph(module, group, scope_keys)
            except Exception as e:
                outcomes[module.document.id] = f'{str(module.source.path)!r} cannot be analysed: {_reason(e)}'
    return outcomes


def _reason(error: Exception) -> str:
    """One line: a `SourceUnavailable`'s own message, any other error's type and message."""
    message = ' '.join(str(error).split())
    return message if isinstance(error, SourceUnavailable) else f'{type(error).__name__}: {message}'


def _load(document: DocumentInput, scope_keys: Sequence[str]) -> Module:
    source = read_source(document)
    name, is_package = module_name_of(source.path)
    try:
        tree = ast.parse(source.text, filename=str(source.path))
    except (SyntaxError, ValueError) as e:
        raise SourceUnavailable(f'{str(source.path)!r} is not valid Python: {e}') from None
    except RecursionError as e:  # nesting deeper than `ast` builds (`x = 1 + 1 + ...`, thousands of terms)
        raise SourceUnavailable(f'{str(source.path)!r} nests too deeply to analyse: RecursionError: {e}') from None
    module = Module(name, is_package, document, source, tree, dict(document.chunks[0].metadata))
    try:
        collect(module)
    except RecursionError as e:
        raise SourceUnavailable(f'{str(source.path)!r} nests too deeply to analyse: RecursionError: {e}') from None
    return module
