"""Property tests: scope is never leaked, and full-recall searches agree with the reference.

Random corpora (documents with random, possibly nested sections, chunks out of section
order, typed metadata from a small key set, labels, entities) and random filters over
every node type. For each example, through the `Retriever` (with and without filter
pushdown) and through a `ToolishRag` agent run:

* no search, expansion or eager search returns a record outside the scope;
* a search with ``top_k`` >= the corpus size for a word every text contains returns
  exactly the records `toolish_rag.filters.matches` accepts;
* expansion returns exactly the in-scope chunks of the window or section, and an
  out-of-scope id is "not found".

Plus: filters survive a JSON round trip unchanged.
"""

from __future__ import annotations

import asyncio
import json
import math
from collections.abc import Callable
from typing import Any

import pytest
from helpers import FINAL, Call, Script, block_ids, compose_store, expanded_ids, memory_store, returns
from hypothesis import HealthCheck, event, given, settings, strategies as st
from pydantic_ai import Agent

from toolish_rag import DocumentBuilder, Entity, Retriever, ToolishRag, matches, parse_filter
from toolish_rag.capability import EagerResultsPart
from toolish_rag.content import METADATA_KEY_PATTERN, Chunk, Document
from toolish_rag.filters import FILTER_NODE_TYPES, EntityFilter, Filter, FilterNode, PropertyFilter
from toolish_rag.testing import COMMON_WORD

KEYS = ['a', 'b', 'tenant']
FILTER_KEYS = [*KEYS, *KEYS, 'absent']
LABELS = ['L1', 'L2', 'L3']
WORDS = ['refund', 'policy', 'shipping', 'error', 'code', 'acme']
SETTINGS = settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large]
)

# -- strategies ----------------------------------------------------------------------------------------

# A small pool, so random filters and random metadata often meet (and 1 == 1.0 == True-vs-1 cases occur).
small_scalars = st.one_of(
    st.booleans(),
    st.integers(0, 2),
    st.sampled_from([1.0, 2.5]),
    st.sampled_from(['x', 'xy', 'acme', '1']),
)
metadata_values = st.one_of(st.none(), small_scalars, small_scalars, st.lists(small_scalars, max_size=3))
metadata = st.dictionaries(st.sampled_from(KEYS), metadata_values, min_size=1, max_size=3)
label_sets = st.frozensets(st.sampled_from(LABELS), max_size=2)


@st.composite
def corpora(draw: st.DrawFn) -> tuple[list[Document], list[Entity]]:
    docs = []
    for d in range(draw(st.integers(2, 3))):
        b = DocumentBuilder(f'file:///doc{d}.md', f'Doc {d}', metadata=draw(metadata), labels=draw(label_sets))
        sections: list[str | None] = [None]
        for i in range(draw(st.integers(0, 3))):
            sections.append(b.section(f'S{i}', parent=draw(st.sampled_from(sections))))
        for _ in range(draw(st.integers(2, 6))):
            words = draw(st.lists(st.sampled_from(WORDS), max_size=3))
            b.add_chunk(draw(st.sampled_from(sections)), ' '.join([COMMON_WORD, *words]), metadata=draw(metadata))
        docs.append(b.build())
    entities = [
        Entity(
            id=f'ent-{i}',
            name=f'Entity {i}',
            description=f'{COMMON_WORD} {draw(st.sampled_from(WORDS))}',
            labels=draw(label_sets),
            metadata=draw(metadata),
        )
        for i in range(draw(st.integers(0, 2)))
    ]
    return docs, entities


# Filters are drawn from `FILTER_NODE_TYPES`, field by field, so every node type (a new one too) is exercised.


def _is_composite(node: type[FilterNode]) -> bool:
    return not {'filters', 'filter'}.isdisjoint(node.model_fields)


def _string_valued(node: type[FilterNode]) -> bool:
    value = node.model_fields.get('value')
    return value is not None and value.annotation is str


LEAF_NODES = [node for node in FILTER_NODE_TYPES if not _is_composite(node)]
COMPOSITE_NODES = [node for node in FILTER_NODE_TYPES if _is_composite(node)]


def _builds(node: type[FilterNode], fields: dict[str, st.SearchStrategy[Any]]) -> st.SearchStrategy[Filter]:
    """``node`` with each field drawn from the strategy for its name (a new node type joins in by itself)."""
    names = [name for name in node.model_fields if name != 'op']
    missing = set(names) - fields.keys()
    assert not missing, f'no strategy for {node.__name__} fields {missing}: teach these tests the new node'
    return st.builds(node, **{name: fields[name] for name in names})  # type: ignore[return-value]


def leaves(
    keys: st.SearchStrategy[str], scalars: st.SearchStrategy[Any], strings: st.SearchStrategy[str]
) -> st.SearchStrategy[Filter]:
    fields: dict[str, st.SearchStrategy[Any]] = {
        'key': keys,
        'values': st.lists(scalars, max_size=3).map(tuple),
        'labels': st.frozensets(st.sampled_from(LABELS), min_size=1, max_size=2),
    }
    return st.one_of(
        *(_builds(node, {**fields, 'value': strings if _string_valued(node) else scalars}) for node in LEAF_NODES)
    )


def trees(base: st.SearchStrategy[Filter]) -> st.SearchStrategy[Filter]:
    def extend(children: st.SearchStrategy[Filter]) -> st.SearchStrategy[Filter]:
        fields = {'filters': st.lists(children, min_size=1, max_size=3).map(tuple), 'filter': children}
        return st.one_of(*(_builds(node, fields) for node in COMPOSITE_NODES))

    return st.recursive(base, extend, max_leaves=6)


@st.composite
def scoped_corpora(draw: st.DrawFn) -> tuple[list[Document], list[Entity], Filter]:
    """A corpus and a filter whose values mostly come from that corpus (so scopes are rarely empty)."""
    docs, entities = draw(corpora())
    present: set[Any] = set()
    for record in [*(c for d in docs for c in d.chunks), *entities]:
        for value in record.metadata.values():
            present.update(value if isinstance(value, list) else [value])
    present.discard(None)
    values = st.sampled_from(sorted(present, key=repr)) if present else small_scalars
    strings = sorted({v[:n] for v in present if isinstance(v, str) for n in (0, 1, len(v))} | {'y'})
    f = draw(
        trees(leaves(st.sampled_from(FILTER_KEYS), st.one_of(values, values, small_scalars), st.sampled_from(strings)))
    )
    return docs, entities, f


any_scalars = st.one_of(
    st.booleans(), st.integers(), st.floats(allow_nan=False, allow_infinity=False), st.text(max_size=8)
)
any_keys = st.from_regex(METADATA_KEY_PATTERN, fullmatch=True)
any_filters = trees(leaves(any_keys, any_scalars, st.text(max_size=8)))


# -- expected results from the reference evaluator -----------------------------------------------------


class Reference:
    def __init__(self, docs: list[Document], entities: list[Entity], f: Filter) -> None:
        self.docs = docs
        self.filter = f
        self.chunks = [c for d in docs for c in d.chunks]
        self.records: list[Chunk | Entity] = [*self.chunks, *entities]
        self.in_scope = {r.id for r in self.records if matches(f, r)}

    def doc_chunks(self, document_id: str, section_id: str | None) -> list[str]:
        return [
            c.id
            for c in self.chunks
            if c.document_id == document_id
            and (section_id is None or section_id in c.section_ids)
            and c.id in self.in_scope
        ]

    def neighbours(self, chunk: Chunk, count: int) -> list[str]:
        return [
            c.id
            for c in self.chunks
            if c.document_id == chunk.document_id
            and abs(c.sequence_number - chunk.sequence_number) <= count
            and c.id in self.in_scope
        ]

    def section_parent(self, doc: Document, section_id: str) -> tuple[bool, str | None]:
        """Whether the section is visible (has an in-scope chunk) and its parent."""
        section = doc.section_by_id(section_id)
        assert section is not None
        return bool(self.doc_chunks(doc.id, section_id)), section.parent_id


async def check_retriever(ref: Reference, retriever: Retriever) -> None:
    total = len(ref.records)
    expected = ref.in_scope
    for name, hits in (
        ('vector', await retriever.vector_search(COMMON_WORD, total)),
        ('text', await retriever.text_search(COMMON_WORD, total)),
        ('hybrid', await retriever.hybrid_search(COMMON_WORD, total)),
        ('regex', await retriever.regex_search(COMMON_WORD, total)),
    ):
        ids = [h.id for h in hits]
        assert len(ids) == len(set(ids)), name
        assert set(ids) == expected, (
            f'{name} under {ref.filter!r}: extra {set(ids) - expected}, missing {expected - set(ids)}'
        )
    for name, hits in (
        ('vector', await retriever.vector_search(f'{COMMON_WORD} refund', 2)),
        ('text', await retriever.text_search('refund policy acme', 2)),
        ('hybrid', await retriever.hybrid_search('refund policy', 2)),
        ('regex', await retriever.regex_search('refund|code', 2)),
    ):
        assert {h.id for h in hits} <= expected, name
    assert len(await retriever.vector_search('refund', 2)) == min(2, len(expected))

    for chunk in ref.chunks:
        visible = chunk.id in expected
        found = await retriever.neighbours(chunk.id, 2)
        view = await retriever.section(chunk.id, 1000)
        assert (found is not None) is visible and (view is not None) is visible, chunk.id
        if found is not None and view is not None:
            anchor, chunks = found
            assert anchor.id == chunk.id
            assert [c.id for c in chunks] == ref.neighbours(chunk, 2)
            assert [c.id for c in view.chunks] == ref.doc_chunks(chunk.document_id, chunk.section_id)
            assert view.section_id == chunk.section_id and view.zoom_id == chunk.section_id and not view.truncated
    for doc in ref.docs:
        for section in doc.sections:
            visible, parent = ref.section_parent(doc, section.id)
            view = await retriever.section(section.id, 1000)
            assert (view is not None) is visible, section.id
            if view is not None:
                assert view.section_id == parent
                assert [c.id for c in view.chunks] == ref.doc_chunks(doc.id, parent)
    for record in ref.records:
        if isinstance(record, Entity):
            got = await retriever.get(record.id)
            assert (got is not None) is (record.id in expected)
            assert await retriever.neighbours(record.id, 1) is None
            assert await retriever.section(record.id, 10) is None


async def check_agent(ref: Reference, store: Any, data: st.DataObject) -> None:
    total = len(ref.records)
    expected = ref.in_scope
    chunk = data.draw(st.sampled_from(ref.chunks), label='chunk')
    sections = [s.id for d in ref.docs for s in d.sections]
    section = data.draw(st.sampled_from(sections), label='section') if sections else 'no-section'
    eager_k = data.draw(st.integers(1, 5), label='eager top_k')
    # The scope comes from the run's deps here, exercising the per-run filter path.
    rag: ToolishRag[Filter] = ToolishRag(
        store, max_top_k=max(50, total), max_retries=10, metadata_filter=lambda ctx: ctx.deps
    ).with_eager_search_about(f'{COMMON_WORD} refund', top_k=eager_k)
    searches = [
        Call('docs_vector_search', {'query': COMMON_WORD, 'top_k': total}),
        Call('docs_text_search', {'query': COMMON_WORD, 'top_k': total}),
        Call('docs_hybrid_search', {'query': COMMON_WORD, 'top_k': total}),
        Call('docs_regex_search', {'pattern': COMMON_WORD, 'top_k': total}),
    ]
    expansions = [
        Call('docs_broaden_chunk', {'chunk_id': chunk.id, 'chunks_to_add': 2}),
        Call('docs_zoom_out', {'id': chunk.id}),
        Call('docs_zoom_out', {'id': section}),
    ]
    script = Script([*searches, *expansions])
    agent = Agent(script.model, deps_type=Filter, capabilities=[rag.capability()])  # it runs the eager search
    result = await agent.run('question', deps=ref.filter)
    assert result.output == FINAL
    got = returns(result.all_messages())
    assert len(got) == 7

    parts = [p for m in result.all_messages() for p in m.parts if isinstance(p, EagerResultsPart)]
    assert 'Preloaded' not in (script.instructions or '')
    preloaded = parts[0].content.split('Preloaded search results', 1)[1]
    assert set(block_ids(preloaded)) <= expected
    assert len(block_ids(preloaded)) == min(eager_k, len(expected))

    for r in got[:4]:
        assert not r.retried, r.text
        assert set(block_ids(r.text)) == expected, r.tool
        assert {h.id for h in r.metadata['hits']} == expected, r.tool
    for r in got[4:]:
        if not r.retried:
            assert set(expanded_ids(r.text)) <= expected
            assert {h.id for h in r.metadata['hits']} <= expected
    broaden, zoom_chunk, zoom_section = got[4:]
    assert broaden.retried is (chunk.id not in expected)
    assert zoom_chunk.retried is (chunk.id not in expected)
    if not broaden.retried:
        assert expanded_ids(broaden.text) == ref.neighbours(chunk, 2)
    if section != 'no-section':
        doc = next(d for d in ref.docs if d.section_by_id(section))
        visible, _ = ref.section_parent(doc, section)
        assert zoom_section.retried is not visible
    else:
        assert zoom_section.retried


@SETTINGS
@given(case=scoped_corpora(), data=st.data())
def test_no_tool_ever_leaks_and_full_recall_matches_the_reference(
    case: tuple[list[Document], list[Entity], Filter], data: st.DataObject
) -> None:
    docs, entities, f = case
    ref = Reference(docs, entities, f)
    scope = len(ref.in_scope)
    event('scope: ' + ('empty' if scope == 0 else 'everything' if scope == len(ref.records) else 'part'))

    async def body() -> None:
        inner = memory_store()
        await inner.upsert([*docs, *entities])
        post_filtered = compose_store(frozenset({'vector', 'text', 'regex', 'expand'}))(inner)
        await check_retriever(ref, Retriever(inner, f))
        await check_retriever(ref, Retriever(post_filtered, f))
        await check_agent(ref, data.draw(st.sampled_from([inner, post_filtered]), label='store'), data)

    asyncio.run(body())


@SETTINGS
@given(f=any_filters)
def test_filters_round_trip_through_json(f: Filter) -> None:
    back = parse_filter(f.to_json())
    assert back == f
    assert back.model_dump() == f.model_dump()
    assert parse_filter(f.model_dump()) == f
    # Types survive too (1, 1.0 and True stay apart): compare the JSON texts with numbers tagged by type.
    assert _typed_json(back.to_json()) == _typed_json(f.to_json())


def _typed_json(text: str) -> Any:
    return json.loads(
        text,
        object_hook=_sort_labels,
        parse_int=lambda s: ('int', int(s)),
        parse_float=lambda s: ('float', float(s)),
    )


def _sort_labels(obj: dict[str, Any]) -> dict[str, Any]:
    # Labels are a set: its JSON order is not fixed, so compare them sorted.
    if obj.get('op') == 'has_any_label':
        return {**obj, 'labels': sorted(obj['labels'])}
    return obj


NUMBER_TAKING_NODES = [
    node
    for node in LEAF_NODES
    if 'values' in node.model_fields or ('value' in node.model_fields and not _string_valued(node))
]


@pytest.mark.parametrize('node', NUMBER_TAKING_NODES, ids=lambda node: node.__name__)
@pytest.mark.parametrize('value', [math.inf, -math.inf, math.nan])
def test_non_finite_filter_values_are_rejected(node: type[FilterNode], value: float) -> None:
    """No filter node ever holds inf or nan, however it is built: translators need no branch for them."""
    op = node.model_fields['op'].default
    field: dict[str, Any] = {'values': (1, value)} if 'values' in node.model_fields else {'value': value}
    builder = getattr(PropertyFilter, 'in_' if op == 'in' else op)
    builds: list[Callable[[], object]] = [
        lambda: node(key='price', **field),
        lambda: builder('price', *field.values()),
        lambda: parse_filter({'op': op, 'key': 'price', **field}),
        lambda: parse_filter(json.dumps({'op': op, 'key': 'price', **field})),  # Infinity, NaN in JSON text
    ]
    for build in builds:
        with pytest.raises(ValueError, match='must be finite'):
            build()


def test_equal_filters_serialise_to_the_same_json() -> None:
    labels = [f'label{i}' for i in range(60)]
    forward, backward = EntityFilter.has_any_label(labels), EntityFilter.has_any_label(reversed(labels))
    assert forward == backward
    assert forward.to_json() == backward.to_json()
