"""No other tenant's record can take, or block, an edge of this tenant's graph.

Each test builds a tenant's graph, walks it under the tenant's scope (through the `graph_context`
tool, so the text is what a model reads), adds another tenant's records that used to compete for
the same edge (a longer title, more similar entities, a module of the same name whose document id
sorts first, a document at the exact path a link's stem names) and rebuilds: the tenant's walk must
not change. Builders run with their defaults, no ``scope_keys`` (the ``toolish-rag graph build``
default).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pytest

from toolish_rag import DocumentBuilder, Entity, PropertyFilter as F, ToolishRag
from toolish_rag.content import Document
from toolish_rag.embedding import HashingEmbeddingModel
from toolish_rag.graph_builders import (
    CodeGraphBuilder,
    ExactNameLinker,
    GraphBuilder,
    StructureBuilder,
    VectorLinker,
    build_graph,
)
from toolish_rag.stores import InMemoryStore

pytestmark = pytest.mark.asyncio


def _store() -> InMemoryStore:
    return InMemoryStore(HashingEmbeddingModel(64))


def _doc(doc_id: str, title: str, texts: Sequence[str], *, uri: str | None = None, tenant: str) -> Document:
    builder = DocumentBuilder(uri or f'file:///docs/{doc_id}.md', title, id=doc_id, metadata={'tenant': tenant})
    for text in texts:
        builder.add_chunk(None, text)
    return builder.build()


async def _walk(store: InMemoryStore, tenant: str, ids: Sequence[str], hops: int = 1) -> str:
    rag = ToolishRag(store, name='kb').with_metadata_filter(F.eq('tenant', tenant))
    result = await rag.run_tool('graph_context', {'ids': list(ids), 'hops': hops})
    return str(result.return_value)


async def _unchanged_by(
    store: InMemoryStore, builder: GraphBuilder, ids: Sequence[str], foreign: Sequence[Document | Entity]
) -> tuple[str, str]:
    """Acme's walk from ``ids`` before and after ``foreign`` records are added and the graph rebuilt."""
    assert not (await build_graph(store, builder))[0].failures
    before = await _walk(store, 'acme', ids)
    await store.upsert(foreign)
    assert not (await build_graph(store, builder))[0].failures
    return before, await _walk(store, 'acme', ids)


async def test_a_foreign_longer_title_never_takes_a_tenants_mention() -> None:
    """The title probe: globex's "Project Zeus launch plan" took acme's edge to "Project Zeus" (longest match)."""
    store = _store()
    await store.upsert(
        [
            _doc('zeus', 'Project Zeus', ['Zeus ships in May.'], tenant='acme'),
            _doc('question', 'Questions', ['Is there a Project Zeus launch plan?'], tenant='acme'),
        ]
    )
    foreign = [_doc('g-plan', 'Project Zeus launch plan', ['Globex only.'], tenant='globex')]
    before, after = await _unchanged_by(store, ExactNameLinker(), ['question-0'], foreign)
    assert 'Project Zeus' in before and 'MENTIONS' in before
    assert after == before
    # Both names are kept: the chunk names "Project Zeus" and "Project Zeus launch plan".
    targets = {r.target for r in await store.list_relations(origin='exact') if r.source == 'question-0'}
    assert targets == {'zeus', 'g-plan'}


async def test_overlapping_names_all_link() -> None:
    """Every whole-word name a chunk writes links, overlapping ones included ("New York City" and "New York")."""
    store = _store()
    await store.upsert(
        [
            _doc('nyc', 'New York City', ['A city.'], tenant='acme'),
            _doc('ny', 'New York', ['A state.'], tenant='acme'),
            _doc('trip', 'Trip', ['We flew to New York City.'], tenant='acme'),
        ]
    )
    await build_graph(store, ExactNameLinker())
    assert {r.target for r in await store.list_relations(origin='exact')} == {'nyc', 'ny'}


async def test_foreign_entities_never_take_a_tenants_similarity_slots() -> None:
    """Globex's entities more similar to acme's chunk took every ``top_k`` slot: acme's entity lost its edge."""
    store = _store()
    await store.upsert(
        [
            _doc('ops', 'Ops', ['kubernetes cluster autoscaler scales nodes'], tenant='acme'),
            Entity(id='acme-auto', name='cluster autoscaler', metadata={'tenant': 'acme'}),
        ]
    )
    foreign = [
        Entity(id=f'globex-{i}', name='kubernetes cluster autoscaler scales nodes', metadata={'tenant': 'globex'})
        for i in range(4)
    ]
    before, after = await _unchanged_by(store, VectorLinker(threshold=0.3), ['ops-0'], foreign)
    assert 'cluster autoscaler' in before
    assert after == before


async def test_a_foreign_document_at_a_links_exact_path_never_hides_its_stem_match() -> None:
    """``[setup](setup)`` matched acme's ``setup.md`` by stem only while no document sat at ``setup`` exactly."""
    store = _store()
    await store.upsert(
        [
            _doc('guide', 'Guide', ['Read [the setup](setup) first.'], uri='file:///kb/guide.md', tenant='acme'),
            _doc('setup', 'Setup', ['Install it.'], uri='file:///kb/setup.md', tenant='acme'),
        ]
    )
    foreign = [_doc('g-setup', 'Globex setup', ['Globex only.'], uri='file:///kb/setup', tenant='globex')]
    before, after = await _unchanged_by(store, StructureBuilder(), ['guide-0'], foreign)
    assert 'LINKS_TO' in before and 'Setup' in before
    assert after == before


def _python(root: Path, name: str, text: str, doc_id: str, tenant: str) -> Document:
    path = root / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding='utf-8')
    builder = DocumentBuilder(path.as_uri(), name, id=doc_id, metadata={'tenant': tenant})
    builder.add_chunk(None, text)
    return builder.build()


async def test_a_foreign_module_of_the_same_name_never_blocks_a_tenants_module(tmp_path: Path) -> None:
    """Globex's ``utils.py`` (document id sorting first) blocked acme's: 'module 'utils' is already stored'."""
    store = _store()
    await store.upsert(
        [
            _python(tmp_path / 'acme', 'utils.py', 'def helper():\n    return 1\n', 'z-utils', 'acme'),
            _python(
                tmp_path / 'acme',
                'main.py',
                'import utils\n\ndef run():\n    return utils.helper()\n',
                'z-main',
                'acme',
            ),
        ]
    )
    foreign = [_python(tmp_path / 'globex', 'utils.py', 'def helper():\n    return 2\n', 'a-utils', 'globex')]
    before, after = await _unchanged_by(store, CodeGraphBuilder(), ['z-main-0'], foreign)
    run = next(e.id for e in await store.list_entities() if e.name == 'main.run' and e.metadata['tenant'] == 'acme')
    walked = await _walk(store, 'acme', [run])
    assert 'CALLS' in walked and 'utils.helper' in walked
    assert after == before
    # Each tenant's modules resolve among their own: globex's module is a node of its own, not acme's.
    utils = [e for e in await store.list_entities() if e.name == 'utils']
    assert sorted(str(e.metadata['tenant']) for e in utils) == ['acme', 'globex'] and utils[0].id != utils[1].id


async def test_the_default_graph_equals_the_scoped_one_for_a_tenants_walk(tmp_path: Path) -> None:
    """Under acme's scope, every builder's default graph walks exactly like its ``scope_keys=('tenant',)`` one."""
    records: list[Document | Entity] = [
        _doc('zeus', 'Project Zeus', ['Zeus ships in May.'], tenant='acme'),
        _doc('question', 'Questions', ['Is there a Project Zeus launch plan? See [zeus](zeus.md).'], tenant='acme'),
        _doc('g-plan', 'Project Zeus launch plan', ['Globex plans Zeus.'], tenant='globex'),
        Entity(id='acme-zeus', name='Zeus', metadata={'tenant': 'acme'}),
        Entity(id='globex-zeus', name='Zeus', metadata={'tenant': 'globex'}),
    ]

    def builders(scope: tuple[str, ...]) -> list[GraphBuilder]:
        return [StructureBuilder(scope), ExactNameLinker(scope), VectorLinker(threshold=0.2, scope_keys=scope)]

    walks = []
    for scope in ((), ('tenant',)):
        store = _store()
        await store.upsert(records)
        await build_graph(store, *builders(scope))
        walks.append(await _walk(store, 'acme', ['question-0', 'zeus'], hops=2))
    assert walks[0] == walks[1]
