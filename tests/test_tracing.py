"""OpenTelemetry spans: tool calls, eager searches, graph walks and ingested files, nested and content-free by default.

Real components throughout: an `InMemoryStore` (hashing embedder; Tantivy where a store must refuse
a value), pydantic-ai agents driven by `FunctionModel` scripts and instrumented with pydantic-ai's
own `Instrumentation` capability, and the OpenTelemetry SDK with its `InMemorySpanExporter`.

The content checks read every attribute value (and every event attribute, the name and the status
text) of every span: the scope's tenant, the model's filter value, the queries and the pattern must
appear nowhere unless the developer opted in and the run's instrumentation includes content. The
check is shown to bite: with pydantic-ai's content on, its own tool spans do carry the query.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest
from helpers import Call, Script, returns
from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import StatusCode
from opentelemetry.util._once import Once
from pydantic_ai import Agent
from pydantic_ai.capabilities import Instrumentation
from pydantic_ai.models.instrumented import InstrumentationSettings

from toolish_rag import DocumentBuilder, PropertyFilter as F, Retriever, ToolishRag
from toolish_rag.content import Document, Relation, document_id_for
from toolish_rag.embedding import HashingEmbeddingModel
from toolish_rag.graph.walk import WalkRequest
from toolish_rag.ingest import ingest
from toolish_rag.ingest._parse import file_uri
from toolish_rag.stores import InMemoryStore

SECRET_TENANT = 'tenant-zq7-umbrella'
OTHER_TENANT = 'tenant-other'
SECRET_PRODUCT = 'product-xk9-hush'
QUERY = 'quarterly refunds zebra'
EAGER_QUERY = 'shipping parcels walrus'
GRAPH_QUERY = 'refund window flamingo'
PATTERN = 'ERR-401[0-9]'
SECRETS = (SECRET_TENANT, SECRET_PRODUCT, QUERY, EAGER_QUERY, GRAPH_QUERY, PATTERN, 'zebra', 'walrus', 'flamingo')
"""What no span may say by default: the scope's and the model's filter values, the queries and the pattern."""


# -- real exporters ------------------------------------------------------------------------------------------


def _provider() -> tuple[TracerProvider, InMemorySpanExporter]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    return provider, exporter


@pytest.fixture
def global_spans(monkeypatch: pytest.MonkeyPatch) -> Iterator[InMemorySpanExporter]:
    """An SDK provider installed as the global one for this test only.

    OpenTelemetry lets the global provider be set once per process; the API's set-once guard and
    its slot are swapped for fresh ones here and restored afterwards, so no other test records.
    """
    provider, exporter = _provider()
    monkeypatch.setattr(trace, '_TRACER_PROVIDER_SET_ONCE', Once())
    monkeypatch.setattr(trace, '_TRACER_PROVIDER', None)
    trace.set_tracer_provider(provider)
    yield exporter
    provider.shutdown()


# -- the corpus: two tenants' handbooks, and the secret tenant's PART_OF edges ---------------------------------


def _corpus() -> tuple[list[Document], list[Relation]]:
    docs = []
    for tenant in (SECRET_TENANT, OTHER_TENANT):
        b = DocumentBuilder(
            f'file:///{tenant}/handbook.md', 'handbook', metadata={'tenant': tenant, 'product': SECRET_PRODUCT}
        )
        refunds = b.section('Refunds')
        b.add_chunk(refunds, 'Refunds are paid within 30 days of the return.')
        b.add_chunk(refunds, 'Items must be unused. ERR-4012 means the refund window expired.')
        shipping = b.section('Shipping')
        b.add_chunk(shipping, 'Parcels ship within two working days.')
        docs.append(b.build())
    edges = [
        Relation(
            source=c.id,
            source_kind='chunk',
            target=c.section_ids[-1],
            target_kind='section',
            type='PART_OF',
            metadata={'tenant': SECRET_TENANT},
            document_id=docs[0].id,
        )
        for c in docs[0].chunks
    ]
    return docs, edges


async def _store() -> InMemoryStore:
    store = InMemoryStore(HashingEmbeddingModel(64))
    docs, edges = _corpus()
    await store.upsert([*docs, *edges])
    await store.record_graph_built(['test'])  # relations written directly: the operator says a graph is built
    return store


async def _rag(*, trace_content: bool = False) -> ToolishRag[None]:
    rag: ToolishRag[None] = ToolishRag(
        await _store(),
        name='kb',
        metadata_filter=F.eq('tenant', SECRET_TENANT),
        filterable={'product': str},
        trace_content=trace_content,
    )
    return rag.with_eager_search_about(EAGER_QUERY)


def _script() -> Script:
    return Script(
        [
            [  # two calls in one response: pydantic-ai runs them concurrently
                Call('kb_hybrid_search', {'query': QUERY, 'filter': {'product': SECRET_PRODUCT}}),
                Call('kb_regex_search', {'pattern': PATTERN}),
            ],
            Call('kb_graph_context', {'query': GRAPH_QUERY, 'hops': 1}),
            Call('kb_vector_search', {'query': QUERY, 'top_k': 999}),  # refused: a retry
        ]
    )


async def _agent_run(rag: ToolishRag[None], *, include_content: bool) -> tuple[list[ReadableSpan], dict[str, int]]:
    """The spans of one instrumented run of `_script`, and the hit count each tool call returned."""
    provider, exporter = _provider()
    settings = InstrumentationSettings(tracer_provider=provider, include_content=include_content)
    script = _script()
    agent = Agent(
        script.model, capabilities=[rag.capability(), Instrumentation(settings=settings)]
    )  # eager search: its own
    result = await agent.run('hi')
    hits = {r.tool: len(r.metadata['hits']) for r in returns(result.all_messages()) if not r.retried}
    return list(exporter.get_finished_spans()), hits


# -- reading spans -------------------------------------------------------------------------------------------


def _ours(spans: Sequence[ReadableSpan]) -> dict[str, ReadableSpan]:
    named = {s.name: s for s in spans if s.name.startswith('toolish_rag.')}
    assert len(named) == len([s for s in spans if s.name.startswith('toolish_rag.')]), 'one span per name expected'
    return named


def _parent(span: ReadableSpan, spans: Sequence[ReadableSpan]) -> ReadableSpan | None:
    if span.parent is None:
        return None
    (parent,) = [s for s in spans if s.context is not None and s.context.span_id == span.parent.span_id]
    return parent


def _said(span: ReadableSpan) -> list[str]:
    """Everything a span says, as text: its name, status text, attribute values and event attribute values."""
    said = [span.name, span.status.description or '']
    said += [str(v) for v in (span.attributes or {}).values()]
    said += [str(v) for event in span.events for v in (event.attributes or {}).values()]
    return said


def _leaks(spans: Sequence[ReadableSpan], secrets: Sequence[str]) -> list[tuple[str, str]]:
    return [(span.name, secret) for span in spans for text in _said(span) for secret in secrets if secret in text]


def _attributes(span: ReadableSpan) -> dict[str, Any]:
    return dict(span.attributes or {})


# -- inside an agent run ---------------------------------------------------------------------------------------


@pytest.mark.parametrize('include_content', [True, False], ids=['run-content-on', 'run-content-off'])
async def test_spans_nest_under_the_runs_tool_spans_and_carry_no_content_by_default(include_content: bool) -> None:
    spans, hits = await _agent_run(await _rag(), include_content=include_content)
    ours = _ours(spans)
    assert set(ours) == {
        'toolish_rag.eager_search',
        'toolish_rag.hybrid_search',
        'toolish_rag.regex_search',
        'toolish_rag.graph_context',
        'toolish_rag.graph_walk',
    }  # top_k=999 breaks its parameter's constraint: refused when pydantic validates it, before any call
    base = {'toolish_rag.store': 'InMemoryStore', 'toolish_rag.rag': 'kb', 'toolish_rag.scoped': True}
    expected = {
        'hybrid_search': {'toolish_rag.model_filter': True, 'toolish_rag.top_k': 5},
        'regex_search': {'toolish_rag.model_filter': False, 'toolish_rag.top_k': 5},
        'graph_context': {'toolish_rag.model_filter': False},
    }
    for tool, extra in expected.items():
        span = ours[f'toolish_rag.{tool}']
        assert hits[f'kb_{tool}'] > 0
        assert _attributes(span) == {**base, **extra, 'toolish_rag.tool': tool, 'toolish_rag.hits': hits[f'kb_{tool}']}
        parent = _parent(span, spans)
        assert parent is not None and parent.name == f'execute_tool kb_{tool}'
        assert _attributes(parent)['gen_ai.tool.name'] == f'kb_{tool}'
        assert span.status.status_code == StatusCode.UNSET

    (refused,) = [s for s in spans if s.name == 'execute_tool kb_vector_search']  # pydantic-ai's span says it
    assert refused.status.status_code == StatusCode.ERROR
    assert _attributes(refused)['pydantic_ai.tool.failure_stage'] == 'validation'

    walk = ours['toolish_rag.graph_walk']
    assert _parent(walk, spans) is ours['toolish_rag.graph_context']
    walked = _attributes(walk)
    assert walked.pop('toolish_rag.nodes') > walked['toolish_rag.seeds'] > 0  # the walk went past its seeds
    assert walked.pop('toolish_rag.edges') > 0
    assert walked == {
        'toolish_rag.store': 'InMemoryStore',
        'toolish_rag.scoped': True,
        'toolish_rag.seeds': walked['toolish_rag.seeds'],
        'toolish_rag.hops': 1,
        'toolish_rag.truncated': False,
    }

    eager = ours['toolish_rag.eager_search']
    eager_attributes = _attributes(eager)
    assert eager_attributes.pop('toolish_rag.hits') > 0
    assert eager_attributes == {
        **base,
        'toolish_rag.tool': 'eager_search',
        'toolish_rag.model_filter': False,
        'toolish_rag.top_k': 5,
    }
    run = _parent(eager, spans)  # the eager search runs inside the agent run (its first request), not before it
    while run is not None and run.parent is not None:
        run = _parent(run, spans)
    assert run is not None and _attributes(run)['gen_ai.operation.name'] == 'invoke_agent'
    assert {s.context.trace_id for s in spans if s.context is not None} == {run.context.trace_id}

    assert _leaks(list(ours.values()), SECRETS) == []
    pydantic_spans = [s for s in spans if not s.name.startswith('toolish_rag.')]
    if include_content:  # the check bites: pydantic-ai's own tool spans carry the arguments when content is on
        assert ('execute_tool kb_hybrid_search', QUERY) in _leaks(pydantic_spans, SECRETS)
    else:  # and with it off, nothing anywhere says any of it
        assert _leaks(pydantic_spans, SECRETS) == []


async def test_opted_in_the_query_is_traced_but_never_a_filter_value() -> None:
    spans, _ = await _agent_run(await _rag(trace_content=True), include_content=True)
    ours = _ours(spans)
    hybrid = _attributes(ours['toolish_rag.hybrid_search'])
    assert hybrid['toolish_rag.query'] == QUERY
    assert json.loads(hybrid['toolish_rag.arguments']) == {'query': QUERY, 'top_k': 5}  # None: left out
    assert hybrid['toolish_rag.model_filter'] is True  # the model sent one; its value is not traced
    assert _attributes(ours['toolish_rag.regex_search'])['toolish_rag.query'] == PATTERN
    assert _attributes(ours['toolish_rag.graph_context'])['toolish_rag.query'] == GRAPH_QUERY
    assert _attributes(ours['toolish_rag.eager_search'])['toolish_rag.query'] == EAGER_QUERY
    assert 'toolish_rag.query' not in _attributes(ours['toolish_rag.graph_walk'])
    assert _leaks(list(ours.values()), [SECRET_TENANT, SECRET_PRODUCT]) == []


async def test_the_runs_instrumentation_without_content_wins_over_the_opt_in() -> None:
    spans, _ = await _agent_run(await _rag(trace_content=True), include_content=False)
    assert len(_ours(spans)) == 5
    assert _leaks(spans, SECRETS) == []


async def test_an_uninstrumented_agent_records_no_spans_even_with_a_global_provider(
    global_spans: InMemorySpanExporter,
) -> None:
    script = _script()
    result = await Agent(script.model, toolsets=[await _rag()]).run('hi')
    assert len(returns(result.all_messages())) == 4  # the tools ran
    assert global_spans.get_finished_spans() == ()  # as pydantic-ai's own spans: the run's tracer is a no-op


# -- outside an agent run: the global provider -----------------------------------------------------------------


async def test_a_direct_tool_call_goes_to_the_global_provider(global_spans: InMemorySpanExporter) -> None:
    rag = await _rag()
    found = await rag.run_tool('text_search', {'query': QUERY, 'filter': {'product': SECRET_PRODUCT}})
    (span,) = global_spans.get_finished_spans()
    assert span.name == 'toolish_rag.text_search' and span.parent is None
    assert span.instrumentation_scope is not None and span.instrumentation_scope.name == 'toolish-rag'
    assert _attributes(span) == {
        'toolish_rag.store': 'InMemoryStore',
        'toolish_rag.rag': 'kb',
        'toolish_rag.tool': 'text_search',
        'toolish_rag.scoped': True,
        'toolish_rag.model_filter': True,
        'toolish_rag.top_k': 5,
        'toolish_rag.hits': len(found.metadata['hits']),
    }
    assert await rag.eager_results()  # the eager search, outside a run
    eager = global_spans.get_finished_spans()[-1]
    assert eager.name == 'toolish_rag.eager_search' and eager.parent is None
    assert _leaks(global_spans.get_finished_spans(), SECRETS) == []


async def test_outside_a_run_the_opt_in_alone_decides(global_spans: InMemorySpanExporter) -> None:
    rag = await _rag(trace_content=True)
    await rag.run_tool('text_search', {'query': QUERY, 'filter': {'product': SECRET_PRODUCT}})
    (span,) = global_spans.get_finished_spans()
    assert _attributes(span)['toolish_rag.query'] == QUERY
    assert _leaks([span], [SECRET_TENANT, SECRET_PRODUCT]) == []


async def test_a_graph_walk_through_a_retriever_is_a_span(global_spans: InMemorySpanExporter) -> None:
    store = await _store()
    docs, _ = _corpus()
    chunk = docs[0].chunks[0]
    found = await Retriever(store, F.eq('tenant', SECRET_TENANT)).graph_walk(WalkRequest((chunk.id,), hops=1))
    (span,) = global_spans.get_finished_spans()
    assert span.name == 'toolish_rag.graph_walk' and span.parent is None
    assert _attributes(span) == {
        'toolish_rag.store': 'InMemoryStore',
        'toolish_rag.scoped': True,
        'toolish_rag.seeds': 1,
        'toolish_rag.hops': 1,
        'toolish_rag.nodes': len(found.nodes),
        'toolish_rag.edges': len(found.edges),
        'toolish_rag.truncated': found.truncated,
    }
    assert len(found.nodes) == 2 and len(found.edges) == 1  # the chunk and its section
    assert _leaks([span], [*SECRETS, chunk.id]) == []


# -- ingestion: one span per file --------------------------------------------------------------------------------


def _files(folder: Path) -> list[Path]:
    folder.mkdir()
    paths = []
    for name in ('alpha', 'beta', 'gamma'):
        path = folder / f'{name}.md'
        path.write_text(f'# {name}\n\nA paragraph about {name} and zebra refunds.\n', encoding='utf-8')
        paths.append(path)
    return paths


def _ingest_spans(exporter: InMemorySpanExporter) -> dict[str, dict[str, Any]]:
    spans = [s for s in exporter.get_finished_spans() if s.name == 'toolish_rag.ingest_file']
    by_id = {_attributes(s)['toolish_rag.document_id']: _attributes(s) for s in spans}
    assert len(by_id) == len(spans)
    return by_id


async def test_ingestion_traces_each_file_it_writes(global_spans: InMemorySpanExporter, tmp_path: Path) -> None:
    folder = tmp_path / 'private-folder-name'
    paths = _files(folder)
    store = InMemoryStore(HashingEmbeddingModel(64))
    ids = {document_id_for(file_uri(p)): p for p in paths}
    report = await ingest(store, folder, progress=False, executor='thread', metadata={'tenant': SECRET_TENANT})
    assert len(report.added) == 3

    traced = _ingest_spans(global_spans)
    assert set(traced) == set(ids)
    for attributes in traced.values():
        assert attributes.pop('toolish_rag.chunks') >= 1
        assert attributes.pop('toolish_rag.document_id') in ids
        assert attributes == {'toolish_rag.store': 'InMemoryStore', 'toolish_rag.outcome': 'added'}
    # the first write holds one document, then batches grow (docs/ingestion.md): every document in one upsert span
    upserts = [s for s in global_spans.get_finished_spans() if s.name == 'toolish_rag.upsert']
    assert upserts and sum(_attributes(u)['toolish_rag.documents'] for u in upserts) == 3
    spans = global_spans.get_finished_spans()
    assert _leaks(spans, [SECRET_TENANT, 'private-folder-name', 'zebra', *(p.name for p in paths)]) == []

    global_spans.clear()
    paths[1].write_text('# beta\n\nRewritten.\n', encoding='utf-8')
    report = await ingest(store, folder, progress=False, executor='thread')
    assert len(report.updated) == 1 and len(report.unchanged) == 2
    traced = _ingest_spans(global_spans)
    assert list(traced) == [document_id_for(file_uri(paths[1]))]  # the unchanged files wrote nothing
    assert traced[document_id_for(file_uri(paths[1]))]['toolish_rag.outcome'] == 'updated'


async def test_a_file_the_store_refuses_is_a_failed_span_naming_only_the_error(
    global_spans: InMemorySpanExporter, tmp_path: Path
) -> None:
    tantivy = pytest.importorskip('toolish_rag_tantivy', reason='needs the Tantivy adapter (stores/tantivy)')
    folder = tmp_path / 'docs'
    good = _files(folder)[0]
    huge = '1' + '0' * 400
    bad = folder / 'huge.md'
    bad.write_text(f'---\nserial: {huge}\n---\n# huge\n\nAn ordinary paragraph.\n', encoding='utf-8')
    report = await ingest(tantivy.TantivyStore(tmp_path / 'ix'), folder, progress=False, executor='thread')
    assert [issue.path for issue in report.failed] == [str(bad)] and 'serial' in report.failed[0].reason

    traced = _ingest_spans(global_spans)
    assert traced[document_id_for(file_uri(good))]['toolish_rag.outcome'] == 'added'
    failed = traced[document_id_for(file_uri(bad))]
    assert failed['toolish_rag.outcome'] == 'failed' and failed['toolish_rag.error'] == 'UnsupportedValueError'
    (span,) = [s for s in global_spans.get_finished_spans() if _attributes(s).get('toolish_rag.outcome') == 'failed']
    assert span.status.status_code == StatusCode.ERROR and not span.events
    assert _leaks(global_spans.get_finished_spans(), [huge[:40], 'serial', '401 digits']) == []
