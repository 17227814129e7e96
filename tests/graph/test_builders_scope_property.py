"""Property (issue 28, item 1): under tenant a's scope, the graph every builder builds over a two-tenant
store walks exactly like the graph it builds over tenant a's records alone.

Random corpora of two tenants (documents titled with overlapping names, chunks naming them and
linking to paths either tenant may hold, entities of either tenant, Python modules of the same names
in both, document ids in random order) go into one store; tenant a's records alone into another.
Every builder runs with its defaults (no ``scope_keys``: the ``graph build`` default), and once with
``scope_keys=('tenant',)`` and a vector ``top_k``: structure, code, extraction (a `FunctionModel`
naming the names its passage writes), exact names, vectors. Then, under ``tenant == 'a'``: the
neighbours of every node, a walk from every node, and the `graph_context` tool's text from each
document are equal on both stores. So no record of tenant b takes, blocks or adds an edge of tenant a.

The default run draws a few small corpora (a few seconds); ``-m slow`` draws many more.
"""

from __future__ import annotations

import asyncio
import itertools
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings, strategies as st
from pydantic_ai.messages import ModelMessage, ModelResponse, ToolCallPart, UserPromptPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from toolish_rag import DocumentBuilder, Entity, PropertyFilter as F, ToolishRag
from toolish_rag.content import Document
from toolish_rag.embedding import HashingEmbeddingModel
from toolish_rag.graph import NeighbourRequest, NodeRequest, WalkRequest, walk
from toolish_rag.graph_builders import (
    CodeGraphBuilder,
    ExactNameLinker,
    ExtractionBuilder,
    GraphBuilder,
    StructureBuilder,
    VectorLinker,
    build_graph,
)
from toolish_rag.stores import InMemoryStore

TENANT_A = F.eq('tenant', 'a')
NAMES = ['Zeus', 'Project Zeus', 'Project Zeus launch plan', 'launch plan', 'Atlas', 'Atlas Rocket']
WORDS = [*NAMES, 'the', 'is', 'ready', 'see', 'report']
PATHS = ['setup', 'setup.md', 'guide.md', 'zeus.md', 'notes/setup.md']
MODULES = ['utils', 'main', 'helpers']


@dataclass(frozen=True)
class Module:
    tenant: str
    name: str
    text: str
    doc_id: str


@dataclass(frozen=True)
class Corpus:
    documents: tuple[Document, ...]
    entities: tuple[Entity, ...]
    modules: tuple[Module, ...]

    def tenant_a(self) -> Corpus:
        return Corpus(
            tuple(d for d in self.documents if d.metadata['tenant'] == 'a'),
            tuple(e for e in self.entities if e.metadata['tenant'] == 'a'),
            tuple(m for m in self.modules if m.tenant == 'a'),
        )


tenants = st.sampled_from(['a', 'b'])
prefixes = st.sampled_from(['a', 'm', 'z'])  # document ids in random order: no tenant always sorts first


@st.composite
def sentences(draw: st.DrawFn) -> str:
    words = draw(st.lists(st.sampled_from(WORDS), min_size=1, max_size=6))
    link = draw(st.none() | st.sampled_from(PATHS))
    return ' '.join(words) + (f' See [it]({link}).' if link else '.')


@st.composite
def module_text(draw: st.DrawFn, name: str) -> str:
    """A module defining ``f0``/``f1`` that call functions of the other modules (imported by name)."""
    others = [m for m in MODULES if m != name]
    calls = draw(st.lists(st.tuples(st.sampled_from(others), st.sampled_from(['f0', 'f1'])), max_size=3))
    imports = sorted({m for m, _ in calls})
    lines = [f'import {m}' for m in imports] + ['']
    for i, function in enumerate(('f0', 'f1')):
        body = [f'    {m}.{f}()' for m, f in calls[i::2]] or ['    return None']
        lines += [f'def {function}():', *body, '']
    return '\n'.join(lines)


@st.composite
def corpora(draw: st.DrawFn) -> Corpus:
    documents = []
    for i in range(draw(st.integers(1, 5))):
        tenant = draw(tenants)
        builder = DocumentBuilder(
            f'file:///kb/{draw(st.sampled_from(PATHS))}',
            draw(st.sampled_from(NAMES)),
            id=f'{draw(prefixes)}-doc{i}',
            metadata={'tenant': tenant},
        )
        for text in draw(st.lists(sentences(), min_size=1, max_size=2)):
            builder.add_chunk(None, text)
        documents.append(builder.build())
    entities = [
        Entity(
            id=f'{draw(prefixes)}-entity{i}',
            name=draw(st.sampled_from(NAMES)),
            description=' '.join(draw(st.lists(st.sampled_from(WORDS), max_size=3))),
            metadata={'tenant': draw(tenants)},
        )
        for i in range(draw(st.integers(0, 4)))
    ]
    modules = [
        Module(tenant, name, draw(module_text(name)), f'{draw(prefixes)}-{tenant}-{name}')
        for tenant in ('a', 'b')
        for name in draw(st.lists(st.sampled_from(MODULES), unique=True, max_size=3))
    ]
    return Corpus(tuple(documents), tuple(entities), tuple(modules))


def _extractor(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    """A model that extracts every name of `NAMES` its passage writes, each related to the next."""
    asked = messages[-1]
    prompt = ' '.join(str(p.content) for p in asked.parts if isinstance(p, UserPromptPart))
    found = [name for name in NAMES if name in prompt]
    answer: dict[str, Any] = {
        'entities': [{'name': name, 'type': 'thing', 'description': f'{name} as named'} for name in found],
        'relations': [{'source': s, 'target': t, 'type': 'relates to'} for s, t in itertools.pairwise(found)],
    }
    return ModelResponse(parts=[ToolCallPart(info.output_tools[0].name, answer)])


def _builders(scoped: bool) -> list[GraphBuilder]:
    keys = ('tenant',) if scoped else ()
    return [
        StructureBuilder(keys),
        CodeGraphBuilder(keys),
        ExtractionBuilder(FunctionModel(_extractor, model_name='names')),
        ExactNameLinker(keys),
        VectorLinker(top_k=2, threshold=0.2, scope_keys=keys) if scoped else VectorLinker(threshold=0.2),
    ]


def _module_documents(modules: Sequence[Module], root: Path) -> list[Document]:
    documents = []
    for module in modules:
        path = root / module.tenant / f'{module.name}.py'
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(module.text, encoding='utf-8')
        builder = DocumentBuilder(
            path.as_uri(), f'{module.name}.py', id=module.doc_id, metadata={'tenant': module.tenant}
        )
        builder.add_chunk(None, module.text)
        documents.append(builder.build())
    return documents


async def _built(corpus: Corpus, root: Path, scoped: bool) -> InMemoryStore:
    store = InMemoryStore(HashingEmbeddingModel(64))
    await store.upsert([*corpus.documents, *corpus.entities, *_module_documents(corpus.modules, root)])
    for report in await build_graph(store, *_builders(scoped)):
        assert not report.failures, report
    return store


async def _seen(store: InMemoryStore, ids: tuple[str, ...], documents: Sequence[str]) -> list[Any]:
    """What tenant a sees of the graph around ``ids``: nodes, neighbours, a walk, the tool's text per document."""
    nodes = await store.graph_nodes(NodeRequest(ids, TENANT_A))
    hop = await store.neighbours(NeighbourRequest(ids, 'both', filter=TENANT_A))
    walked = await walk(store, WalkRequest(ids, hops=2, max_nodes=200, filter=TENANT_A))
    rag = ToolishRag(store, name='kb').with_metadata_filter(TENANT_A)
    texts = [
        (await rag.run_tool('graph_context', {'ids': [doc], 'hops': 2, 'max_nodes': 30})).return_value
        for doc in documents
    ]
    return [nodes, hop, walked, texts]


async def _check(corpus: Corpus, scoped: bool) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        whole = await _built(corpus, root, scoped)
        alone = await _built(corpus.tenant_a(), root, scoped)
        documents = sorted(info.id for info in await alone.list_documents())
        chunks = [f'{d}-{i}' for d in documents for i in range(8)]
        entities = [e.id for e in await alone.list_entities()]
        ids = tuple(sorted({*documents, *chunks, *entities}))
        seen_alone = await _seen(alone, ids, documents)
        assert await _seen(whole, ids, documents) == seen_alone


def _probe() -> Corpus:
    """The issue's scenarios at once: a longer foreign title, a foreign module of the same name sorting first."""

    def doc(doc_id: str, title: str, text: str, tenant: str, path: str) -> Document:
        builder = DocumentBuilder(f'file:///kb/{path}', title, id=doc_id, metadata={'tenant': tenant})
        builder.add_chunk(None, text)
        return builder.build()

    return Corpus(
        (
            doc('m-doc0', 'Project Zeus', 'Zeus is ready.', 'a', 'zeus.md'),
            doc('m-doc1', 'Atlas', 'Is there a Project Zeus launch plan? See [it](setup).', 'a', 'guide.md'),
            doc('m-doc2', 'Setup', 'the report', 'a', 'setup.md'),
            doc('a-doc3', 'Project Zeus launch plan', 'launch plan', 'b', 'setup'),
        ),
        (
            Entity(id='m-entity0', name='Atlas Rocket', metadata={'tenant': 'a'}),
            *(Entity(id=f'a-entity{i}', name='Project Zeus launch plan', metadata={'tenant': 'b'}) for i in range(3)),
        ),
        (
            Module('a', 'utils', 'def f0():\n    return None\n', 'z-a-utils'),
            Module('a', 'main', 'import utils\n\ndef f0():\n    utils.f0()\n', 'z-a-main'),
            Module('b', 'utils', 'def f1():\n    return None\n', 'a-b-utils'),
        ),
    )


SETTINGS = settings(
    max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large]
)


@pytest.mark.parametrize('scoped', [False, True], ids=['default', 'scope_keys'])
@SETTINGS
@given(corpus=corpora())
@example(corpus=_probe())
def test_a_tenants_graph_is_the_graph_of_its_records_alone(corpus: Corpus, scoped: bool) -> None:
    asyncio.run(_check(corpus, scoped))


@pytest.mark.slow
@pytest.mark.parametrize('scoped', [False, True], ids=['default', 'scope_keys'])
@settings(SETTINGS, max_examples=300)
@given(corpus=corpora())
def test_a_tenants_graph_is_the_graph_of_its_records_alone_many(corpus: Corpus, scoped: bool) -> None:
    asyncio.run(_check(corpus, scoped))
