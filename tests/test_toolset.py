"""`ToolishRag` through real pydantic-ai agents.

Every test runs a real `Agent` driven by pydantic-ai's own `FunctionModel` (a scripted
sequence of tool calls, see `helpers.Script`) over a real `InMemoryStore` with the
deterministic `HashingEmbeddingModel`, and checks what the model was offered and what it
got back.
"""

from __future__ import annotations

import asyncio
import itertools
import re
from dataclasses import dataclass
from typing import Any

import pytest
from helpers import (
    FINAL,
    Call,
    Returned,
    Script,
    block_ids,
    compose_store,
    expanded_ids,
    handbook_corpus,
    handbook_entities,
    memory_store,
    returns,
)
from pydantic_ai import Agent, ModelRetry, RunContext
from pydantic_ai.exceptions import UnexpectedModelBehavior, UserError
from pydantic_ai.models.test import TestModel

from toolish_rag import (
    DocumentBuilder,
    EntityFilter,
    PropertyFilter as F,
    RagEvent,
    SearchHit,
    ToolishRag,
    matches,
)
from toolish_rag._tool_names import ToolName
from toolish_rag.capability import EagerResultsPart
from toolish_rag.content import Chunk, Document, Entity
from toolish_rag.stores import InMemoryStore
from toolish_rag.testing import selective_corpus
from toolish_rag.toolset._render import NO_DOCUMENTS, NO_RESULTS

BASE_CAPABILITIES = ('vector', 'text', 'regex', 'expand', 'sections')
SUBSETS = [
    frozenset(c) for n in range(len(BASE_CAPABILITIES) + 1) for c in itertools.combinations(BASE_CAPABILITIES, n)
]
NAVIGATION_TOOLS: list[ToolName] = ['list_documents', 'outline', 'read_section']


@dataclass
class Deps:
    tenant: str | None


def expected_tools(caps: frozenset[str]) -> list[str]:
    out = []
    if 'vector' in caps:
        out.append('vector_search')
    if 'text' in caps:
        out.append('text_search')
    if {'vector', 'text'} <= caps or 'hybrid' in caps:
        out.append('hybrid_search')
    if 'regex' in caps:
        out.append('regex_search')
    if 'expand' in caps:
        out += ['broaden_chunk', 'zoom_out']
    if 'sections' in caps:
        out += NAVIGATION_TOOLS
    if 'expand' in caps:  # verifying a citation fetches its chunk by id
        out.append('verify_citations')
    return out


@pytest.fixture
def corpus() -> list[Document]:
    return handbook_corpus()


@pytest.fixture
async def store(corpus: list[Document]) -> InMemoryStore:
    s = memory_store()
    await s.upsert([*corpus, *handbook_entities()])
    await s.record_graph_built(['test'])  # the full tool set, graph tools included
    return s


def all_records(corpus: list[Document]) -> list[Chunk | Entity]:
    return [*(c for d in corpus for c in d.chunks), *handbook_entities()]


async def run(rag: Any, steps: list[Any], **kwargs: Any) -> tuple[Script, list[Returned], Any]:
    """Run a fresh agent with ``rag`` per run (``toolsets=``) and return the script, tool results and run result."""
    script = Script(steps)
    agent: Agent[Any, str] = Agent(script.model, deps_type=Deps)
    result = await agent.run('question', toolsets=[rag], **kwargs)
    assert result.output == FINAL
    return script, returns(result.all_messages()), result


async def run_capable(rag: Any, steps: list[Any], **kwargs: Any) -> tuple[Script, list[Returned], str]:
    """As `run`, with ``rag.capability()`` (which runs eager searches); the third item is what they sent the model."""
    script = Script(steps)
    agent: Agent[Any, str] = Agent(script.model, deps_type=Deps)
    result = await agent.run('question', capabilities=[rag.capability()], **kwargs)
    assert result.output == FINAL
    messages = result.all_messages()
    return (
        script,
        returns(messages),
        '\n\n'.join(p.content for m in messages for p in m.parts if isinstance(p, EagerResultsPart)),
    )


def hit_ids(r: Returned) -> list[str]:
    assert not r.retried, r.text
    return [h.id for h in r.metadata['hits']]


# -- 1. capabilities -> tools ------------------------------------------------------------------------


def tool_args(corpus: list[Document]) -> dict[str, dict[str, Any]]:
    chunk = corpus[0].chunks[1]
    return {
        'vector_search': {'query': 'refunds paid'},
        'text_search': {'query': 'refunds'},
        'hybrid_search': {'query': 'refunds'},
        'regex_search': {'pattern': 'ERR-[0-9]{4}'},
        'broaden_chunk': {'chunk_id': chunk.id, 'chunks_to_add': 1},
        'zoom_out': {'id': chunk.id},
        'list_documents': {},
        'outline': {'document': corpus[0].title},
        'read_section': {'section': chunk.section_ids[0]},
        'verify_citations': {
            'claims': [{'text': 'Receipts are kept.', 'citations': [{'chunk_id': chunk.id, 'quote': chunk.urtext}]}]
        },
    }


@pytest.mark.parametrize('caps', SUBSETS, ids=lambda c: '+'.join(sorted(c)) or 'none')
async def test_each_capability_subset_yields_exactly_its_tools(caps: frozenset[str], corpus: list[Document]) -> None:
    inner = memory_store()
    await inner.upsert(corpus)
    store = compose_store(caps)(inner)
    rag: ToolishRag[Any] = ToolishRag(store, name='docs')
    expected = [f'docs_{t}' for t in expected_tools(caps)]
    args = tool_args(corpus)
    script, got, _ = await run(rag, [Call(name, args[name.removeprefix('docs_')]) for name in expected])

    assert script.tool_names == expected
    assert rag.tool_names == expected
    # Every offered tool works against the store and returns results.
    assert [r.tool for r in got] == expected
    for r in got:
        if r.tool in ('docs_list_documents', 'docs_outline'):  # navigation answers: documents and sections, no hits
            assert hit_ids(r) == []
            listed = {d.id for d in corpus if f'(document id {d.id}' in r.text}
            assert listed == ({d.id for d in corpus} if r.tool == 'docs_list_documents' else {corpus[0].id}), r.text
        else:
            assert hit_ids(r), r.text
    assert SUBSETS.count(caps) == 1 and len(SUBSETS) == 2 ** len(BASE_CAPABILITIES)
    if not caps:
        assert script.instructions is None
        assert store.calls == []
    else:
        assert script.instructions is not None
        for name in expected:
            if name.endswith('_search') or name.removeprefix('docs_') in NAVIGATION_TOOLS:
                assert name in script.instructions
    if 'sections' in caps:
        assert {'document_page', 'chunk_outlines', 'read_section'} <= set(store.calls)
    if caps & {'vector', 'text'}:
        assert rag.with_eager_search_about('refunds').tool_names == expected
    else:
        with pytest.raises(ValueError, match='no search to preload'):
            rag.with_eager_search_about('refunds')


async def test_native_hybrid_search_is_used_and_alone_gives_the_hybrid_tool(corpus: list[Document]) -> None:
    inner = memory_store()
    await inner.upsert(corpus)
    only_hybrid = compose_store(frozenset({'hybrid'}))(inner)
    script, got, _ = await run(ToolishRag(only_hybrid), [Call('docs_hybrid_search', {'query': 'refunds'})])
    assert script.tool_names == ['docs_hybrid_search']
    assert hit_ids(got[0])
    assert only_hybrid.calls == ['hybrid_search']

    full = compose_store(frozenset({'vector', 'text', 'hybrid'}))(inner)
    _, got, _ = await run(ToolishRag(full), [Call('docs_hybrid_search', {'query': 'refunds'})])
    assert hit_ids(got[0])
    assert full.calls == ['hybrid_search'], 'a store with native hybrid search must not be fused by the core'

    fused = compose_store(frozenset({'vector', 'text'}))(inner)
    _, got, _ = await run(ToolishRag(fused), [Call('docs_hybrid_search', {'query': 'refunds'})])
    assert hit_ids(got[0])
    assert sorted(fused.calls) == ['text_search', 'vector_search']


async def test_exclude_tools_and_without_tools(store: InMemoryStore) -> None:
    rag: ToolishRag[Any] = ToolishRag(store, exclude_tools={'regex_search'})
    narrowed = rag.without_tools('hybrid_search', 'broaden_chunk')
    script, _, _ = await run(narrowed, [])
    navigation = [f'docs_{t}' for t in NAVIGATION_TOOLS]
    verify = 'docs_verify_citations'
    assert script.tool_names == [
        'docs_vector_search',
        'docs_text_search',
        'docs_zoom_out',
        *navigation,
        verify,
        'docs_graph_context',
        'docs_multihop_search',
    ]
    assert script.instructions is not None
    assert 'docs_regex_search' not in script.instructions
    assert 'docs_hybrid_search' not in script.instructions
    # The original is unchanged.
    assert 'docs_hybrid_search' in rag.tool_names and 'docs_regex_search' not in rag.tool_names
    # Navigation tools are excluded like any other; the instructions then do not name them.
    script, _, _ = await run(narrowed.without_tools('list_documents', 'outline'), [])
    assert script.tool_names == [
        'docs_vector_search',
        'docs_text_search',
        'docs_zoom_out',
        'docs_read_section',
        verify,
        'docs_graph_context',
        'docs_multihop_search',
    ]
    assert 'docs_list_documents' not in (script.instructions or '')
    assert 'docs_outline' not in (script.instructions or '')
    script, _, _ = await run(narrowed.without_tools(*NAVIGATION_TOOLS), [])
    assert script.tool_names == [
        'docs_vector_search',
        'docs_text_search',
        'docs_zoom_out',
        verify,
        'docs_graph_context',
        'docs_multihop_search',
    ]
    assert not any(t in (script.instructions or '') for t in navigation)
    with pytest.raises(ValueError, match='unknown tool'):
        ToolishRag(store, exclude_tools={'grep'})
    with pytest.raises(ValueError, match='unknown tool'):
        rag.without_tools('grep')  # type: ignore[arg-type]


async def test_an_excluded_tool_cannot_be_called(store: InMemoryStore) -> None:
    events: list[RagEvent] = []
    rag = ToolishRag(store, listener=events.append).without_tools('regex_search')
    _, got, _ = await run(
        rag, [Call('docs_regex_search', {'pattern': 'ERR'}), Call('docs_text_search', {'query': 'ERR'})]
    )
    assert got[0].retried and 'docs_regex_search' in got[0].text
    assert [e.tool for e in events] == ['text_search']


async def test_instructions_name_only_offered_expansion_tools(store: InMemoryStore) -> None:
    script, _, _ = await run(ToolishRag(store).without_tools('zoom_out'), [])
    assert 'docs_zoom_out' not in (script.instructions or '')
    script, _, _ = await run(ToolishRag(store).without_tools('broaden_chunk'), [])
    assert 'docs_zoom_out' in (script.instructions or '')


async def test_search_tools_tell_the_model_the_top_k_maximum(store: InMemoryStore) -> None:
    script, _, _ = await run(ToolishRag(store, max_top_k=37), [])
    for tool in script.infos[0].function_tools:
        if tool.name.endswith('_search'):
            schema = tool.parameters_json_schema['properties']['top_k']
            assert (
                '37' in (tool.description or '') or schema.get('maximum') == 37 or '37' in schema.get('description', '')
            )


async def test_the_model_cannot_widen_scope_through_arguments(store: InMemoryStore, corpus: list[Document]) -> None:
    script, _, _ = await run(ToolishRag(store).with_metadata_filter(F.eq('tenant', 'acme')), [])
    params = {t.name: set(t.parameters_json_schema['properties']) for t in script.infos[0].function_tools}
    assert params == {
        'docs_vector_search': {'query', 'top_k', 'threshold'},
        'docs_text_search': {'query', 'top_k', 'threshold'},
        'docs_hybrid_search': {'query', 'top_k', 'threshold'},
        'docs_regex_search': {'pattern', 'top_k'},
        'docs_broaden_chunk': {'chunk_id', 'chunks_to_add'},
        'docs_zoom_out': {'id'},
        'docs_list_documents': {'title_contains', 'offset', 'limit'},
        'docs_outline': {'document'},
        'docs_read_section': {'section', 'document', 'offset'},
        'docs_graph_context': {'query', 'ids', 'hops', 'edge_types', 'direction', 'max_nodes', 'order'},
        'docs_multihop_search': {'query', 'top_k'},
        'docs_verify_citations': {'claims'},
    }
    # A filter (or group_by) smuggled in as an extra argument is rejected, not honoured, by every tool.
    smuggled = {'op': 'eq', 'key': 'tenant', 'value': 'globex'}
    globex = corpus[1]
    calls = [
        Call('docs_vector_search', {'query': 'refunds', 'filter': smuggled}),
        Call('docs_text_search', {'query': 'refunds', 'top_k': 20, 'filter': smuggled}),
        Call('docs_hybrid_search', {'query': 'refunds', 'filter': smuggled}),
        Call('docs_regex_search', {'pattern': 'refund', 'filter': smuggled}),
        Call('docs_broaden_chunk', {'chunk_id': corpus[0].chunks[0].id, 'filter': smuggled}),
        Call('docs_zoom_out', {'id': corpus[0].chunks[0].id, 'filter': smuggled}),
        Call('docs_list_documents', {'filter': smuggled}),
        Call('docs_outline', {'document': globex.title, 'filter': smuggled}),
        Call('docs_read_section', {'section': globex.id, 'filter': smuggled}),
        Call('docs_verify_citations', {'claims': [{'text': 'x', 'citations': []}], 'filter': smuggled}),
        Call('docs_multihop_search', {'query': 'refunds', 'filter': smuggled}),
        Call('docs_text_search', {'query': 'refunds', 'group_by': 'document'}),
    ]
    _, got, _ = await run(
        ToolishRag(store, max_retries=20).with_metadata_filter(F.eq('tenant', 'acme')),
        [*calls, Call('docs_text_search', {'query': 'refunds', 'top_k': 20})],
    )
    assert [r.tool for r in got] == [c.tool for c in calls] + ['docs_text_search']
    for r in got[: len(calls)]:
        assert r.retried, r.text
        refused = 'group_by' if r is got[len(calls) - 1] else 'filter'
        assert refused in r.text and ('not permitted' in r.text or f'takes no {refused} argument' in r.text), r.text
    assert {h.record.metadata['tenant'] for h in got[-1].metadata['hits']} == {'acme'}


# -- 2. two RAGs on one agent -----------------------------------------------------------------------


async def test_two_rags_on_one_agent_do_not_clash(store: InMemoryStore, corpus: list[Document]) -> None:
    code_inner = memory_store()
    b = DocumentBuilder('file:///src/refund.py', 'refund.py', metadata={'lang': 'python'})
    s = b.section('refund')
    b.add_chunk(s, 'def refund(order):\n    return order.total  # refund the full amount')
    b.add_chunk(s, 'def ship(order):\n    raise NotImplementedError')
    code_doc = b.build()
    await code_inner.upsert([code_doc])
    code_store = compose_store(frozenset({'text', 'regex'}))(code_inner)

    docs = ToolishRag(store, name='docs', description='Customer handbooks')
    code = ToolishRag(code_store, name='code', description='Source code')
    script = Script(
        [
            [Call('docs_text_search', {'query': 'refund'}), Call('code_text_search', {'query': 'refund'})],
            [Call('docs_regex_search', {'pattern': 'def '}), Call('code_regex_search', {'pattern': 'def '})],
        ]
    )
    result = await Agent(script.model, toolsets=[docs, code]).run('question')
    assert result.output == FINAL
    assert script.tool_names == [*docs.tool_names, 'code_text_search', 'code_regex_search']
    assert len(set(script.tool_names)) == len(script.tool_names)
    assert 'reference collection "docs"' in (script.instructions or '')
    assert 'reference collection "code"' in (script.instructions or '')

    got = {r.tool: r for r in returns(result.all_messages())}
    docs_ids = {r.id for r in all_records(corpus)}
    code_ids = {c.id for c in code_doc.chunks}
    assert set(hit_ids(got['docs_text_search'])) <= docs_ids and hit_ids(got['docs_text_search'])
    assert set(hit_ids(got['code_text_search'])) <= code_ids and hit_ids(got['code_text_search'])
    assert got['docs_regex_search'].text == NO_RESULTS  # no 'def ' in the handbooks
    assert hit_ids(got['code_regex_search']) == [c.id for c in code_doc.chunks]


async def test_two_rags_with_the_same_name_are_refused(store: InMemoryStore) -> None:
    script = Script([])
    agent = Agent(script.model, toolsets=[ToolishRag(store), ToolishRag(store)])
    with pytest.raises(UserError, match='docs_vector_search'):
        await agent.run('question')


def test_name_must_be_an_identifier(store: InMemoryStore) -> None:
    with pytest.raises(ValueError, match='identifier'):
        ToolishRag(store, name='my docs')


# -- 3. bad arguments: retry, then success ---------------------------------------------------------------


_CHUNK = handbook_corpus()[0].chunks[0].id


def _bad(name: str, tool: str, bad: dict[str, Any] | str, fixes: list[str], good: dict[str, Any]) -> Any:
    return pytest.param(f'docs_{tool}', bad, fixes, good, id=name)


BAD_CALLS = [
    _bad('empty query', 'vector_search', {'query': ''}, ['the query is empty'], {'query': 'refunds'}),
    _bad('blank query', 'hybrid_search', {'query': '   '}, ['the query is empty'], {'query': 'refunds'}),
    _bad('long query', 'text_search', {'query': 'refund ' * 400}, ['over 2000 characters'], {'query': 'refunds'}),
    _bad('top_k 0', 'text_search', {'query': 'a', 'top_k': 0}, ['between 1 and 50', 'you sent 0'], {'query': 'a'}),
    _bad('top_k 51', 'vector_search', {'query': 'a', 'top_k': 51}, ['between 1 and 50', 'sent 51'], {'query': 'a'}),
    _bad('regex top_k', 'regex_search', {'pattern': 'ERR', 'top_k': -1}, ['top_k must be'], {'pattern': 'ERR'}),
    _bad(
        'vector threshold',
        'vector_search',
        {'query': 'a', 'threshold': 1.5},
        ['-1.0 and 1.0', 'cosine'],
        {'query': 'a'},
    ),
    _bad(
        'text threshold', 'text_search', {'query': 'a', 'threshold': -0.1}, ['0.0 and 1.0', 'Omit it'], {'query': 'a'}
    ),
    _bad('hybrid threshold', 'hybrid_search', {'query': 'a', 'threshold': 2}, ['0.0 and 1.0'], {'query': 'a'}),
    _bad(
        'backreference', 'regex_search', {'pattern': '(a)\\1'}, ['invalid regular', 'backreferences'], {'pattern': 'E'}
    ),
    _bad('unclosed group', 'regex_search', {'pattern': '(unclosed'}, ['invalid regular', 'RE2'], {'pattern': 'E'}),
    _bad('empty pattern', 'regex_search', {'pattern': ''}, ['the pattern is empty'], {'pattern': 'E'}),
    _bad(
        'unknown chunk',
        'broaden_chunk',
        {'chunk_id': 'nope'},
        ["'nope' was not found", 'search again'],
        {'chunk_id': _CHUNK},
    ),
    _bad('unknown zoom id', 'zoom_out', {'id': 'nope'}, ["'nope' was not found", 'section id'], {'id': _CHUNK}),
    _bad(
        'chunks_to_add 11',
        'broaden_chunk',
        {'chunk_id': _CHUNK, 'chunks_to_add': 11},
        ['between 0 and 10', 'sent 11'],
        {'chunk_id': _CHUNK},
    ),
    _bad(
        'chunks_to_add -1',
        'broaden_chunk',
        {'chunk_id': _CHUNK, 'chunks_to_add': -1},
        ['between 0 and 10'],
        {'chunk_id': _CHUNK},
    ),
    _bad(
        'top_k not a number', 'text_search', {'query': 'a', 'top_k': 'many'}, ['top_k', 'valid integer'], {'query': 'a'}
    ),
    _bad('missing query', 'vector_search', {'top_k': 3}, ['query', 'Field required'], {'query': 'a', 'top_k': 3}),
    _bad('malformed json', 'text_search', '{"query": "refunds", ', ['json'], {'query': 'refunds'}),
]


@pytest.mark.parametrize(('tool', 'bad', 'fixes', 'good'), BAD_CALLS)
async def test_bad_arguments_get_a_retry_that_says_how_to_fix_them(
    store: InMemoryStore, tool: str, bad: dict[str, Any] | str, fixes: list[str], good: dict[str, Any]
) -> None:
    _, got, _ = await run(ToolishRag(store), [Call(tool, bad), Call(tool, good)])
    assert [(r.tool, r.retried) for r in got] == [(tool, True), (tool, False)]
    for fix in fixes:
        assert fix.lower() in got[0].text.lower(), got[0].text
    assert got[1].text.strip()


async def test_retry_budget_is_enforced(store: InMemoryStore) -> None:
    bad = Call('docs_text_search', {'query': ''})
    good = Call('docs_text_search', {'query': 'refunds'})
    _, got, _ = await run(ToolishRag(store), [bad, bad, bad, good])
    assert [r.retried for r in got] == [True, True, True, False]
    with pytest.raises(UnexpectedModelBehavior):
        await run(ToolishRag(store, max_retries=1), [bad, bad, good])


# -- 4. scoping -------------------------------------------------------------------------------------------


async def test_per_run_scope_via_run_toolsets(store: InMemoryStore, corpus: list[Document]) -> None:
    rag: ToolishRag[Any] = ToolishRag(store)
    scoped = rag.with_metadata_filter(F.eq('tenant', 'acme'))
    steps = [
        Call('docs_vector_search', {'query': 'refunds', 'top_k': 50}),
        Call('docs_text_search', {'query': 'refunds', 'top_k': 50}),
        Call('docs_hybrid_search', {'query': 'refunds', 'top_k': 50}),
        Call('docs_regex_search', {'pattern': '.', 'top_k': 50}),
    ]
    acme = {r.id for r in all_records(corpus) if r.metadata.get('tenant') == 'acme'}
    _, got, _ = await run(scoped, steps)
    for r in got:
        ids = set(hit_ids(r))
        assert ids and ids <= acme, r.tool
        assert set(block_ids(r.text)) == ids
    assert set(hit_ids(got[0])) == acme  # vector search with a large top_k reaches every in-scope record
    # The unscoped original sees both tenants.
    _, got, _ = await run(rag, steps[:1])
    assert {h.record.metadata['tenant'] for h in got[0].metadata['hits']} == {'acme', 'globex'}


async def test_deps_derived_filter(store: InMemoryStore) -> None:
    rag: ToolishRag[Deps] = ToolishRag(
        store, metadata_filter=lambda ctx: F.eq('tenant', ctx.deps.tenant) if ctx.deps.tenant else None
    )
    step = [Call('docs_vector_search', {'query': 'refunds', 'top_k': 50})]
    tenants = {}
    for tenant in ('acme', 'globex', None):
        _, got, _ = await run(rag, step, deps=Deps(tenant))
        tenants[tenant] = {h.record.metadata['tenant'] for h in got[0].metadata['hits']}
    assert tenants == {'acme': {'acme'}, 'globex': {'globex'}, None: {'acme', 'globex'}}
    with pytest.raises(ValueError, match='RunContext'):
        rag.retriever()


async def test_with_star_narrows_never_replaces_and_returns_a_new_object(store: InMemoryStore) -> None:
    rag: ToolishRag[Deps] = ToolishRag(store)
    acme = rag.with_metadata_filter(F.eq('tenant', 'acme'))
    assert acme is not rag
    assert rag.retriever().filter is None
    assert acme.retriever().filter == F.eq('tenant', 'acme')

    both = acme.with_metadata_filter(F.eq('tenant', 'globex'))
    assert acme.retriever().filter == F.eq('tenant', 'acme')
    step = [Call('docs_vector_search', {'query': 'refunds', 'top_k': 50})]
    _, got, _ = await run(both, step)
    assert got[0].text == NO_DOCUMENTS  # acme AND globex: no document in scope, said as of an empty store

    # A per-run (deps) filter narrows a static one too.
    with_deps = acme.with_metadata_filter(lambda ctx: F.eq('tenant', ctx.deps.tenant))
    _, got, _ = await run(with_deps, step, deps=Deps('globex'))
    assert got[0].text == NO_DOCUMENTS
    _, got, _ = await run(with_deps, step, deps=Deps('acme'))
    assert {h.record.metadata['tenant'] for h in got[0].metadata['hits']} == {'acme'}

    # Narrowing by year keeps the tenant scope.
    _, got, _ = await run(acme.with_metadata_filter(F.gte('year', 2000)), step)
    assert {h.record.metadata['tenant'] for h in got[0].metadata['hits']} == {'acme'}


def _normalise(text: str, value: str) -> str:
    return text.replace(repr(value), '<ID>')


async def test_out_of_scope_ids_look_exactly_like_missing_ones(store: InMemoryStore, corpus: list[Document]) -> None:
    acme, globex = corpus
    scoped = ToolishRag(store, max_retries=10).with_metadata_filter(F.eq('tenant', 'acme'))
    hidden_chunk = globex.chunks[1].id
    hidden_section = globex.sections[0].id
    steps = [
        Call('docs_broaden_chunk', {'chunk_id': hidden_chunk}),
        Call('docs_broaden_chunk', {'chunk_id': globex.id + '-99'}),
        Call('docs_broaden_chunk', {'chunk_id': 'ent-bob'}),
        Call('docs_zoom_out', {'id': hidden_chunk}),
        Call('docs_zoom_out', {'id': globex.id + '-99'}),
        Call('docs_zoom_out', {'id': hidden_section}),
        Call('docs_zoom_out', {'id': globex.id + '-s99'}),
        Call('docs_broaden_chunk', {'chunk_id': acme.chunks[1].id, 'chunks_to_add': 5}),
        Call('docs_zoom_out', {'id': acme.sections[0].id}),
    ]
    _, got, _ = await run(scoped, steps)
    broaden = [_normalise(r.text, a.args['chunk_id']) for r, a in zip(got[:3], steps[:3], strict=True)]  # type: ignore[index]
    zoom = [_normalise(r.text, a.args['id']) for r, a in zip(got[3:7], steps[3:7], strict=True)]  # type: ignore[index]
    assert all(r.retried for r in got[:7])
    assert len(set(broaden)) == 1 and len(set(zoom)) == 1, (broaden, zoom)
    for r in got[:7]:
        assert 'globex' not in r.text
    # In scope: works, and shows only in-scope chunks.
    assert expanded_ids(got[7].text) == [c.id for c in acme.chunks]
    assert set(expanded_ids(got[8].text)) == {c.id for c in acme.chunks}
    # Unscoped, the hidden ones exist.
    _, got, _ = await run(ToolishRag(store), steps[:1] + steps[3:4] + steps[5:6])
    assert not any(r.retried for r in got)


async def test_expansion_skips_out_of_scope_neighbours() -> None:
    b = DocumentBuilder('file:///mixed.md', 'Mixed', metadata={'tenant': 'acme'})
    s = b.section('All')
    for i in range(8):
        b.add_chunk(
            s, f'paragraph {i} of the mixed document', metadata={'visibility': 'public' if i % 2 else 'internal'}
        )
    doc = b.build()
    for caps in (frozenset({'vector', 'expand', 'pushdown'}), frozenset({'vector', 'expand'})):
        inner = memory_store()
        await inner.upsert([doc])
        rag = ToolishRag(compose_store(caps)(inner)).with_metadata_filter(F.eq('visibility', 'public'))
        _, got, _ = await run(
            rag,
            [
                Call('docs_broaden_chunk', {'chunk_id': doc.chunks[3].id, 'chunks_to_add': 2}),
                Call('docs_zoom_out', {'id': doc.chunks[5].id}),
                Call('docs_broaden_chunk', {'chunk_id': doc.chunks[4].id}),
            ],
        )
        public = [c.id for c in doc.chunks if c.metadata['visibility'] == 'public']
        assert expanded_ids(got[0].text) == [doc.chunks[i].id for i in (1, 3, 5)], caps
        assert expanded_ids(got[1].text) == public, caps
        assert got[2].retried and 'was not found' in got[2].text


async def test_entity_filter_combined_with_property_filter(store: InMemoryStore, corpus: list[Document]) -> None:
    policy = DocumentBuilder('file:///acme/policy.md', 'acme policy', metadata={'tenant': 'acme'}, labels={'Policy'})
    policy.add_chunk(policy.section('Refunds'), 'Refund policy: the legal text.')
    policy_doc = policy.build()
    await store.upsert([policy_doc])
    records = [*all_records(corpus), *policy_doc.chunks]
    step = [Call('docs_vector_search', {'query': 'refunds', 'top_k': 50})]

    with pytest.warns(DeprecationWarning, match='call with_metadata_filter'):
        deprecated = ToolishRag(store).with_entity_filter(EntityFilter.has_any_label('Manual'))
    cases = [
        deprecated.with_metadata_filter(F.eq('tenant', 'acme')),
        ToolishRag(store)
        .with_metadata_filter(EntityFilter.has_any_label('Manual'))
        .with_metadata_filter(F.eq('tenant', 'acme')),
        ToolishRag(store, entity_filter=EntityFilter.has_any_label('Manual'), metadata_filter=F.eq('tenant', 'acme')),
        ToolishRag(store).with_metadata_filter(EntityFilter.has_any_label('Manual') & F.eq('tenant', 'acme')),
    ]
    f = EntityFilter.has_any_label('Manual') & F.eq('tenant', 'acme')
    expected = {r.id for r in records if matches(f, r)}
    assert expected == {c.id for c in corpus[0].chunks}
    for rag in cases:
        _, got, _ = await run(rag, step)
        assert set(hit_ids(got[0])) == expected

    people = ToolishRag(store).with_metadata_filter(EntityFilter.has_any_label('Person', 'Policy'))
    _, got, _ = await run(people.with_metadata_filter(F.eq('tenant', 'acme')), step)
    assert set(hit_ids(got[0])) == {'ent-alice', policy_doc.chunks[0].id}
    assert '] entity ent-alice' in got[0].text


# -- 5. eager search --------------------------------------------------------------------------------------


async def test_eager_search_preloads_scoped_results_and_fires_the_listener(
    store: InMemoryStore, corpus: list[Document]
) -> None:
    events: list[RagEvent] = []
    rag: ToolishRag[Deps] = (
        ToolishRag(store, listener=events.append)
        .with_metadata_filter(lambda ctx: F.eq('tenant', ctx.deps.tenant))
        .with_eager_search_about('refund policy', top_k=3)
    )
    for tenant, doc in (('acme', corpus[0]), ('globex', corpus[1])):
        events.clear()
        script, got, instructions = await run_capable(
            rag, [Call('docs_text_search', {'query': 'shipping'})], deps=Deps(tenant)
        )
        assert "Preloaded search results for 'refund policy':" in instructions
        assert 'Preloaded' not in (script.instructions or '')  # data before the prompt, never instructions
        shown = block_ids(instructions[instructions.index('Preloaded search results') :])
        assert len(shown) == 3
        assert set(shown) <= {c.id for c in doc.chunks} | {'ent-alice' if tenant == 'acme' else 'ent-bob'}
        assert [e.tool for e in events] == ['eager_search', 'text_search']
        eager = events[0]
        assert eager.filtered and eager.arguments == {'query': 'refund policy', 'top_k': 3}
        assert eager.result_text in instructions
        assert [h.id for h in eager.hits] == shown
        assert script.tool_names == rag.tool_names  # the tools stay available
        assert hit_ids(got[0])


async def test_eager_search_with_no_results_says_so(store: InMemoryStore) -> None:
    rag = ToolishRag(store).with_metadata_filter(F.eq('tenant', 'nobody')).with_eager_search_about('refunds')
    _, _, preloaded = await run_capable(rag, [])
    assert f"Preloaded search results for 'refunds': none. {NO_RESULTS}" in preloaded


def test_eager_search_rejects_bad_settings(store: InMemoryStore) -> None:
    rag = ToolishRag(store)
    for query, top_k in (('  ', 3), ('refunds', 0), ('refunds', 51)):
        with pytest.raises(ValueError):
            rag.with_eager_search_about(query, top_k=top_k)


@pytest.mark.parametrize(
    ('caps', 'calls'),
    [
        (frozenset({'vector', 'text', 'hybrid'}), ['hybrid_search']),
        (frozenset({'vector', 'text'}), ['text_search', 'vector_search']),
        (frozenset({'vector', 'regex'}), ['vector_search']),
        (frozenset({'text', 'expand'}), ['text_search']),
    ],
    ids=['native-hybrid', 'fused-hybrid', 'vector', 'text'],
)
async def test_eager_search_prefers_hybrid_then_vector_then_text(
    caps: frozenset[str], calls: list[str], corpus: list[Document]
) -> None:
    inner = memory_store()
    await inner.upsert(corpus)
    store = compose_store(caps)(inner)
    _, _, preloaded = await run_capable(ToolishRag(store).with_eager_search_about('refunds', top_k=2), [])
    assert sorted(store.calls) == calls
    assert len(block_ids(preloaded.split('Preloaded search results', 1)[1])) == 2


async def test_two_eager_searches_run_once_per_run(store: InMemoryStore) -> None:
    events: list[RagEvent] = []
    rag = (
        ToolishRag(store)
        .with_listener(events.append)
        .with_eager_search_about('refunds')
        .with_eager_search_about('shipping')
    )
    agent: Agent[None, str] = Agent(Script([]).model, capabilities=[rag.capability()])
    await agent.run('one')
    await agent.run('two')
    assert [e.arguments['query'] for e in events] == ['refunds', 'shipping', 'refunds', 'shipping']
    events.clear()
    await Agent(Script([]).model, toolsets=[rag]).run('three')  # the bare toolset sends no search results
    assert events == []


# -- 6. listeners and structured hits -------------------------------------------------------------------


async def test_sync_and_async_listeners_see_what_the_model_saw(store: InMemoryStore, corpus: list[Document]) -> None:
    sync_events: list[RagEvent] = []
    async_events: list[RagEvent] = []

    async def record(event: RagEvent) -> None:
        await asyncio.sleep(0)
        async_events.append(event)

    base: ToolishRag[Any] = ToolishRag(store, listener=sync_events.append)
    rag = base.with_listener(record)
    chunk = corpus[0].chunks[1].id
    steps = [
        Call('docs_text_search', {'query': 'refunds'}),
        Call('docs_vector_search', {'query': 'refunds', 'top_k': 0}),
        Call('docs_vector_search', {'query': 'refunds', 'top_k': 2, 'threshold': -1}),
        Call('docs_hybrid_search', {'query': 'receipt'}),
        Call('docs_regex_search', {'pattern': 'ERR-[0-9]+'}),
        Call('docs_broaden_chunk', {'chunk_id': chunk, 'chunks_to_add': 1}),
        Call('docs_zoom_out', {'id': chunk}),
        Call('docs_zoom_out', {'id': 'nope'}),
    ]
    for scoped, filtered in ((rag, False), (rag.with_metadata_filter(F.eq('tenant', 'acme')), True)):
        sync_events.clear()
        async_events.clear()
        _, got, _ = await run(scoped, steps)
        # top_k=0 breaks its parameter's constraint: pydantic refuses it (a retry) before any call, so no event.
        assert got[1].retried and got[1].text.startswith('top_k must be between 1 and 50; you sent 0.')
        reached = [(r, call) for i, (r, call) in enumerate(zip(got, steps, strict=True)) if i != 1]
        assert len(sync_events) == len(reached)
        assert async_events == sync_events
        for event, (r, call) in zip(sync_events, reached, strict=True):
            assert event.rag == 'docs'
            assert event.tool == r.tool.removeprefix('docs_') == call.tool.removeprefix('docs_')
            assert event.result_text == r.text
            assert event.filtered is filtered
            assert isinstance(call.args, dict)
            assert {k: v for k, v in event.arguments.items() if k in call.args} == call.args
            if r.retried:
                assert event.error == r.text and event.hits == ()
            else:
                assert event.error is None
                assert r.metadata['rag'] == 'docs' and r.metadata['tool'] == event.tool
                assert all(isinstance(h, SearchHit) for h in r.metadata['hits'])
                assert [h.id for h in r.metadata['hits']] == [h.id for h in event.hits]
        assert [e.error is not None for e in sync_events] == [False, False, False, False, False, False, True]
        assert sync_events[0].arguments == {'query': 'refunds', 'top_k': 5}  # arguments left out (None) left out
        # Search hits in the metadata are exactly the blocks the model read, in order.
        for r in got[:5]:
            if not r.retried:
                assert block_ids(r.text) == hit_ids(r)
        assert expanded_ids(got[5].text) == hit_ids(got[5])
        assert expanded_ids(got[6].text) == hit_ids(got[6])

    # The original toolset did not gain the async listener.
    sync_events.clear()
    async_events.clear()
    await run(base, steps[:1])
    assert len(sync_events) == 1 and async_events == []


# -- 7. no results, thresholds ---------------------------------------------------------------------------


async def test_no_results_is_plain_text_never_empty(store: InMemoryStore) -> None:
    assert NO_RESULTS.startswith('No results: the documents do not cover this')
    _, got, _ = await run(
        ToolishRag(store),
        [
            Call('docs_text_search', {'query': 'xylophone'}),
            Call('docs_regex_search', {'pattern': 'xylophone'}),
            Call('docs_vector_search', {'query': 'xylophone', 'threshold': 0.99}),
        ],
    )
    assert len(got) == 3
    for r in got:
        assert not r.retried and r.text == NO_RESULTS and r.metadata['hits'] == [], r.tool


async def test_empty_store_answers_no_results() -> None:
    _, got, _ = await run(
        ToolishRag(memory_store()),
        [
            Call('docs_vector_search', {'query': 'refunds'}),
            Call('docs_text_search', {'query': 'refunds'}),
            Call('docs_hybrid_search', {'query': 'refunds'}),
            Call('docs_regex_search', {'pattern': 'refund'}),
            Call('docs_zoom_out', {'id': 'x'}),
        ],
    )
    assert [r.text for r in got[:4]] == [NO_DOCUMENTS] * 4  # an empty store says so
    assert got[4].retried


async def test_threshold_semantics_per_tool(store: InMemoryStore) -> None:
    rag: ToolishRag[Any] = ToolishRag(store)
    retriever = rag.retriever()
    vector = await retriever.vector_search('refunds are paid', 10)
    text = await retriever.text_search('refund receipt', 10)
    hybrid = await retriever.hybrid_search('refund receipt', 10)
    assert vector[0].score > vector[1].score and len({h.score for h in text}) > 2 and hybrid[0].score > hybrid[1].score

    v_t = (vector[0].score + vector[1].score) / 2  # absolute cosine
    best = text[0].score
    t_t = (text[1].score + text[2].score) / 2 / best  # a fraction of the best hit's score
    h_t = (hybrid[1].score + hybrid[2].score) / 2  # absolute fused score
    _, got, _ = await run(
        rag,
        [
            Call('docs_vector_search', {'query': 'refunds are paid', 'top_k': 10, 'threshold': v_t}),
            Call('docs_vector_search', {'query': 'refunds are paid', 'top_k': 10, 'threshold': -1.0}),
            Call('docs_text_search', {'query': 'refund receipt', 'top_k': 10, 'threshold': t_t}),
            Call('docs_text_search', {'query': 'refund receipt', 'top_k': 10, 'threshold': 1.0}),
            Call('docs_hybrid_search', {'query': 'refund receipt', 'top_k': 10, 'threshold': h_t}),
        ],
    )
    assert hit_ids(got[0]) == [vector[0].id]
    assert hit_ids(got[1]) == [h.id for h in vector]
    assert hit_ids(got[2]) == [h.id for h in text if h.score / best >= t_t]
    assert len(hit_ids(got[2])) == 2
    assert hit_ids(got[3]) == [h.id for h in text if h.score == best]
    assert hit_ids(got[4]) == [h.id for h in hybrid[:2]]
    assert all(0.0 <= h.score <= 1.0 for h in hybrid)


# -- 8. expansion output cap -----------------------------------------------------------------------------


async def test_expansion_output_is_capped_with_a_way_to_read_on() -> None:
    b = DocumentBuilder('file:///long.md', 'Long')
    s = b.section('Body')
    for i in range(12):
        b.add_chunk(s, f'Paragraph {i:02d}. ' + 'x' * 46)  # 60 characters each
    doc = b.build()
    assert all(len(c.urtext) == 60 for c in doc.chunks)
    store = memory_store()
    await store.upsert([doc])
    ids = [c.id for c in doc.chunks]
    _, got, _ = await run(
        ToolishRag(store, max_expansion_chars=200),
        [
            Call('docs_broaden_chunk', {'chunk_id': ids[6], 'chunks_to_add': 5}),
            Call('docs_broaden_chunk', {'chunk_id': ids[6], 'chunks_to_add': 1}),
            Call('docs_zoom_out', {'id': ids[0]}),
            Call('docs_broaden_chunk', {'chunk_id': ids[2], 'chunks_to_add': 1}),
        ],
    )
    capped, uncapped, zoom, read_on = got
    assert expanded_ids(capped.text) == ids[5:8]  # the anchor and its nearest neighbours
    assert f'[Output capped at about 200 characters. Call broaden_chunk on {ids[5]} or {ids[7]}' in capped.text
    assert expanded_ids(uncapped.text) == ids[5:8] and 'capped' not in uncapped.text
    assert expanded_ids(zoom.text) == ids[:3]
    assert f'this section continues after chunk {ids[2]}. Call broaden_chunk on {ids[2]} to read on' in zoom.text
    assert ids[3] in expanded_ids(read_on.text)  # following the note reads further


async def test_the_asked_for_chunk_is_shown_even_if_larger_than_the_cap() -> None:
    b = DocumentBuilder('file:///big.md', 'Big')
    s = b.section('Body')
    for i in range(3):
        b.add_chunk(s, f'Chunk {i} ' + 'y' * 500)
    doc = b.build()
    store = memory_store()
    await store.upsert([doc])
    _, got, _ = await run(
        ToolishRag(store, max_expansion_chars=100), [Call('docs_broaden_chunk', {'chunk_id': doc.chunks[1].id})]
    )
    assert expanded_ids(got[0].text) == [doc.chunks[1].id]
    assert 'Output capped' in got[0].text


async def test_zoom_out_climbs_the_section_tree(store: InMemoryStore, corpus: list[Document]) -> None:
    acme = corpus[0]
    refunds, eligibility, _ = acme.sections
    _, got, _ = await run(
        ToolishRag(store),
        [
            Call('docs_zoom_out', {'id': acme.chunks[2].id}),
            Call('docs_zoom_out', {'id': eligibility.id}),
            Call('docs_zoom_out', {'id': refunds.id}),
        ],
    )
    section, parent, document = got
    assert expanded_ids(section.text) == [acme.chunks[2].id]
    assert f'call zoom_out with id {eligibility.id}' in section.text
    assert expanded_ids(parent.text) == [c.id for c in acme.chunks[:3]]
    assert f'call zoom_out with id {refunds.id}' in parent.text
    assert expanded_ids(document.text) == [c.id for c in acme.chunks]
    assert 'zoom_out with id' not in document.text


# -- 9. capability ----------------------------------------------------------------------------------------


async def test_as_capability(store: InMemoryStore, corpus: list[Document]) -> None:
    rag: ToolishRag[Deps] = (
        ToolishRag(store, description='Customer handbooks')
        .with_metadata_filter(lambda ctx: F.eq('tenant', ctx.deps.tenant))
        .with_eager_search_about('refunds', top_k=2)
    )
    for capability, eager in ((rag.as_capability(), False), (rag.capability(), True)):
        script = Script([Call('docs_text_search', {'query': 'refunds', 'top_k': 50})])
        agent: Agent[Deps, str] = Agent(script.model, deps_type=Deps, capabilities=[capability])
        result = await agent.run('question', deps=Deps('globex'))
        assert result.output == FINAL
        assert script.tool_names == rag.tool_names
        instructions = script.instructions or ''
        assert 'You have a reference collection "docs". It holds: Customer handbooks' in instructions
        assert 'Preloaded search results' not in instructions  # never in the system voice
        first = result.all_messages()[0].parts
        assert any(isinstance(p, EagerResultsPart) and 'Preloaded search results' in p.content for p in first) == eager
        got = returns(result.all_messages())
        assert {h.record.metadata['tenant'] for h in got[0].metadata['hits']} == {'globex'}


async def test_toolset_on_the_agent_itself_with_deps(store: InMemoryStore) -> None:
    def tenant_filter(ctx: RunContext[Deps]) -> Any:
        return F.eq('tenant', ctx.deps.tenant or '')

    rag: ToolishRag[Deps] = ToolishRag(store, metadata_filter=tenant_filter)
    script = Script([Call('docs_vector_search', {'query': 'refunds', 'top_k': 50})])
    agent: Agent[Deps, str] = Agent(script.model, deps_type=Deps, toolsets=[rag])
    result = await agent.run('question', deps=Deps('acme'))
    got = returns(result.all_messages())
    assert {h.record.metadata['tenant'] for h in got[0].metadata['hits']} == {'acme'}


async def test_test_model_calling_every_search_tool_with_defaults(store: InMemoryStore, corpus: list[Document]) -> None:
    searches = ['docs_vector_search', 'docs_text_search', 'docs_hybrid_search', 'docs_regex_search']
    agent: Agent[None, str] = Agent(TestModel(call_tools=searches))
    scoped = ToolishRag(store).with_metadata_filter(F.eq('tenant', 'acme'))
    result = await agent.run('question', toolsets=[scoped])
    got = returns(result.all_messages())
    assert [r.tool for r in got] == searches
    acme = {r.id for r in all_records(corpus) if r.metadata.get('tenant') == 'acme'}
    for r in got:
        assert not r.retried
        assert set(hit_ids(r)) <= acme
        assert len(hit_ids(r)) <= 5  # the default top_k
        assert r.text == NO_RESULTS or block_ids(r.text) == hit_ids(r)


async def test_direct_use_matches_what_an_agent_gets(store: InMemoryStore, corpus: list[Document]) -> None:
    rag: ToolishRag[Deps] = ToolishRag(store, metadata_filter=lambda ctx: F.eq('tenant', ctx.deps.tenant))
    eager = rag.with_eager_search_about('refunds', top_k=2)
    calls = [
        Call('docs_hybrid_search', {'query': 'refund receipt', 'top_k': 3}),
        Call('docs_regex_search', {'pattern': 'ERR-[0-9]+'}),
        Call('docs_zoom_out', {'id': corpus[1].chunks[2].id}),
        Call('docs_broaden_chunk', {'chunk_id': corpus[0].chunks[0].id}),
    ]
    script, got, _ = await run(eager, calls, deps=Deps('globex'))
    for call, r in zip(calls, got, strict=True):
        assert isinstance(call.args, dict)
        if r.retried:
            with pytest.raises(ModelRetry) as retry:
                await rag.run_tool(call.tool, call.args, deps=Deps('globex'))
            assert str(retry.value) == r.text
        else:
            direct = await rag.run_tool(call.tool.removeprefix('docs_'), call.args, deps=Deps('globex'))
            assert direct.return_value == r.text
    assert [r.retried for r in got] == [False, False, False, True]  # the acme chunk is out of scope
    assert [t.name for t in await rag.tool_definitions(Deps('globex'))] == script.tool_names
    assert await eager.instructions(Deps('globex')) == script.instructions


# -- 10. exactly top_k under a 1% filter -------------------------------------------------------------------


@pytest.fixture(scope='module')
def selective() -> list[Document]:
    return selective_corpus(1000, 100)


@pytest.mark.parametrize('pushdown', [True, False], ids=['pushdown', 'post-filter'])
async def test_every_search_tool_returns_exactly_top_k_under_a_one_percent_filter(
    selective: list[Document], pushdown: bool
) -> None:
    inner = memory_store()
    await inner.upsert(selective)
    caps = {'vector', 'text', 'regex', 'expand'} | ({'pushdown'} if pushdown else set())
    store = compose_store(frozenset(caps))(inner)
    rag = ToolishRag(store).with_metadata_filter(F.eq('rare', True))
    _, got, _ = await run(
        rag,
        [
            Call('docs_vector_search', {'query': 'record about refund policy', 'top_k': 7}),
            Call('docs_text_search', {'query': 'record refund policy', 'top_k': 7}),
            Call('docs_hybrid_search', {'query': 'record about refund policy', 'top_k': 7}),
            Call('docs_regex_search', {'pattern': 'record [0-9]+', 'top_k': 7}),
        ],
    )
    assert [r.tool for r in got] == [
        'docs_vector_search',
        'docs_text_search',
        'docs_hybrid_search',
        'docs_regex_search',
    ]
    for r in got:
        assert len(block_ids(r.text)) == 7, r.text
        assert len(re.findall(r'^\[\d+\] chunk ', r.text, re.MULTILINE)) == 7
        assert all(h.record.metadata['rare'] is True for h in r.metadata['hits'])


async def test_max_query_chars_bounds_what_a_model_may_send(store: InMemoryStore) -> None:
    rag = ToolishRag(store, max_query_chars=40)
    with pytest.raises(ModelRetry, match='over 40 characters'):
        await rag.run_tool('text_search', {'query': 'refunds ' * 6})
    result = await rag.run_tool('text_search', {'query': 'refunds'})
    assert result.return_value
