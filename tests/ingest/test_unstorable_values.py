"""Values a store cannot hold: the file holding one fails alone, and filters holding one still work.

The attack: one Markdown file with ``serial: 1`` and 400 zeros in its front matter aborted a
whole LanceDB or Tantivy ingest, storing nothing, and the same integer in a filter crashed
every LanceDB tool call. Now such a file is reported failed with the reason and the rest is
stored; a filter the store cannot translate is evaluated by the core. The in-memory store
(the reference) holds any integer, so there the file is stored and the filter matches it.

Non-finite floats: YAML 1.1 reads ``1e400`` as a *string* (its floats need a dot and a signed
exponent), which is stored as that string. ``1.0e+400`` and ``.inf`` are ``inf``, which no
metadata holds (`Document` refuses non-finite numbers; so do filters): the front-matter
reader leaves the key out and says so in a warning.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import pytest
from pydantic_ai import Agent
from pydantic_ai.messages import ModelMessage, ModelResponse, RetryPromptPart, TextPart, ToolCallPart, ToolReturnPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from tests.helpers import InnerWrites
from toolish_rag import Retriever, ToolishRag
from toolish_rag.content import Chunk, Document, Entity
from toolish_rag.embedding import HashingEmbeddingModel
from toolish_rag.errors import UnsupportedValueError
from toolish_rag.filters import Filter, PropertyFilter as F, matches
from toolish_rag.ingest import IngestReport, ingest
from toolish_rag.stores import InMemoryStore
from toolish_rag_lancedb import LanceDBStore
from toolish_rag_tantivy import TantivyStore

HUGE = 10**400
WORD = 'ordinary'
"""In every file's text: a search for it finds every stored chunk."""

STORES = ['memory', 'lancedb', 'tantivy']


def _store(kind: str, path: Path) -> Any:
    if kind == 'memory':
        return InMemoryStore(HashingEmbeddingModel(64))
    if kind == 'lancedb':
        return LanceDBStore(path / 'kb', embedder=HashingEmbeddingModel(64))
    return TantivyStore(path / 'ix')


def _markdown(folder: Path, name: str, front_matter: str) -> Path:
    path = folder / f'{name}.md'
    path.write_text(f'---\n{front_matter}\n---\n# {name}\n\nAn {WORD} paragraph about {name}.\n', encoding='utf-8')
    return path


def _corpus(folder: Path) -> tuple[list[Path], dict[str, str]]:
    """Files every store holds, and files only the reference does (name -> what their reason says)."""
    folder.mkdir()
    good = [
        _markdown(folder, 'lowest', 'serial: -9223372036854775808'),
        _markdown(folder, 'negative', 'serial: -5'),
        _markdown(folder, 'zero', 'serial: 0'),
        _markdown(folder, 'three', 'serial: 3'),
        _markdown(folder, 'half', 'serial: 2.5'),
        _markdown(folder, 'highest', 'serial: 9223372036854775807'),
        _markdown(folder, 'word', 'serial: three'),
        _markdown(folder, 'listed', 'serial: [3, 7]'),
        _markdown(folder, 'keyless', 'owner: nobody'),
    ]
    bad = {
        'huge': ('serial: 1' + '0' * 400, 'an integer of 401 digits is outside the signed 64-bit range'),
        'hugeneg': ('serial: -1' + '0' * 400, 'a negative integer of 401 digits is outside the signed 64-bit'),
        'hugelist': ('serial: [1, 1' + '0' * 400 + ']', 'an integer of 401 digits'),
        'u64': ('serial: 18446744073709551615', 'an integer of 20 digits is outside the signed 64-bit range'),
    }
    for name, (front_matter, _) in bad.items():
        _markdown(folder, name, front_matter)
    return good, {name: reason for name, (_, reason) in bad.items()}


def _names(uris_or_paths: Iterable[str]) -> set[str]:
    return {Path(u).stem for u in uris_or_paths}


async def _everything(store: Any) -> list[Chunk | Entity]:
    return [h.record for h in await Retriever(store).text_search(WORD, 1000)]


@pytest.mark.parametrize('kind', STORES)
async def test_a_file_with_a_value_the_store_cannot_hold_fails_alone(kind: str, tmp_path: Path) -> None:
    good, bad = _corpus(tmp_path / 'docs')
    store = _store(kind, tmp_path)
    report = await ingest(store, tmp_path / 'docs', progress=False, executor='thread')

    stored = {info.uri: info for info in await store.list_documents()}
    if kind == 'memory':  # the reference holds every integer and every string
        assert not report.failed and _names(report.added) == _names(good) | set(bad)
        assert next(i for u, i in stored.items() if u.endswith('/huge.md')).metadata['serial'] == HUGE
        return
    failed = {Path(issue.path).stem: issue.reason for issue in report.failed}
    assert set(failed) == set(bad), report.failed
    for name, reason in bad.items():
        assert "metadata 'serial' of document" in failed[name] and reason in failed[name]
        assert all(Path(issue.path).parent == tmp_path / 'docs' for issue in report.failed)
    assert _names(report.added) == _names(good) == _names(stored)
    assert _names(r.document_uri for r in await _everything(store) if isinstance(r, Chunk)) == _names(good)
    assert {Path(u).stem: i.metadata.get('serial') for u, i in stored.items()}['lowest'] == -(2**63)

    again = await ingest(store, tmp_path / 'docs', progress=False, executor='thread')
    assert _names(again.unchanged) == _names(good) and {Path(i.path).stem for i in again.failed} == set(bad)


class _CountingTantivy(TantivyStore):
    """The real Tantivy store, counting upserts."""

    upserts = 0

    async def upsert(self, items: Iterable[Document | Entity]) -> None:
        self.upserts += 1
        await super().upsert(items)


@pytest.mark.parametrize(('batch_chunks', 'upserts'), [(1000, range(4, 4 + 2 + 1)), (1, range(7 + 2, 7 + 2 + 1))])
async def test_only_the_failing_batch_is_retried(tmp_path: Path, batch_chunks: int, upserts: range) -> None:
    folder = tmp_path / 'docs'
    folder.mkdir()
    for i in range(7):
        _markdown(folder, f'good{i}', f'serial: {i}')
    _markdown(folder, 'bad1', f'serial: {HUGE}')
    _markdown(folder, 'bad2', f'serial: {-HUGE}')
    store = _CountingTantivy()
    report = await ingest(store, folder, progress=False, executor='thread', batch_chunks=batch_chunks)
    assert len(report.added) == 7 and {Path(i.path).stem for i in report.failed} == {'bad1', 'bad2'}
    # Batches of up to 1000 chunks start small (1, 2, 4 documents, then the last 2): one upsert per
    # batch holding a good document, plus one refused upsert per bad one (4 to 6, by where they land).
    # One document per batch: one upsert each, and a refused one is not retried (nothing is left of it).
    assert store.upserts in upserts


class _QuietRefusals(InnerWrites):
    """A third-party store that refuses integers beyond 64 bits without naming the document."""

    def __init__(self) -> None:
        self.inner = InMemoryStore(HashingEmbeddingModel(64))
        self.upserts = 0

    async def upsert(self, items: Iterable[Document | Entity]) -> None:
        self.upserts += 1
        batch = list(items)
        if any(isinstance(d, Document) and abs(int(d.metadata.get('serial', 0) or 0)) >= 2**63 for d in batch):
            raise UnsupportedValueError('an integer beyond 64 bits')
        await self.inner.upsert(batch)


async def test_a_refusal_that_names_no_document_is_narrowed_down(tmp_path: Path) -> None:
    folder = tmp_path / 'docs'
    folder.mkdir()
    for i in range(8):
        _markdown(folder, f'good{i}', f'serial: {i}')
    _markdown(folder, 'bad', f'serial: {HUGE}')
    store = _QuietRefusals()
    report: IngestReport = await ingest(store, folder, progress=False, executor='thread')
    assert [(Path(i.path).stem, i.reason) for i in report.failed] == [
        ('bad', 'cannot be stored: an integer beyond 64 bits')
    ]
    assert _names(i.uri for i in await store.list_documents()) == {f'good{i}' for i in range(8)}
    assert store.upserts <= 1 + 2 * 4  # halving: two upserts per level, four levels for nine documents


async def test_1e400_in_yaml_is_the_string_it_reads_as(tmp_path: Path) -> None:
    folder = tmp_path / 'docs'
    folder.mkdir()
    _markdown(folder, 'exponent', 'serial: 1e400')
    store = TantivyStore()
    report = await ingest(store, folder, progress=False, executor='thread')
    assert len(report.added) == 1 and not report.failed
    assert (await store.list_documents())[0].metadata['serial'] == '1e400'
    assert [h.record.id for h in await Retriever(store, F.eq('serial', '1e400')).text_search(WORD, 5)]


async def test_an_infinite_float_or_a_lone_surrogate_in_front_matter_is_left_out_with_a_warning(tmp_path: Path) -> None:
    folder = tmp_path / 'docs'
    folder.mkdir()
    _markdown(folder, 'overflow', 'serial: 1.0e+400\nother: -.inf\nkept: 1.5\nbroken: "a\\ud800b"')
    store = InMemoryStore(HashingEmbeddingModel(64))
    report = await ingest(store, folder, progress=False, executor='thread')
    assert len(report.added) == 1 and not report.failed
    metadata = (await store.list_documents())[0].metadata
    assert metadata['kept'] == 1.5 and not {'serial', 'other', 'broken'} & set(metadata)
    for key in ('serial', 'other', 'broken'):
        assert any(key in w.reason for w in report.warnings), (key, report.warnings)


# -- filters holding such values, through every tool -------------------------------------------

SCOPES: list[Filter] = [
    F.eq('serial', HUGE),
    F.ne('serial', HUGE),
    F.gt('serial', HUGE),
    F.gte('serial', -HUGE),
    F.lt('serial', HUGE),
    F.lte('serial', 2**63),
    F.gt('serial', -(2**63) - 1),
    F.in_('serial', [HUGE, 3]),
    F.nin('serial', [-HUGE, 0]),
    F.contains('serial', HUGE),
    ~F.gt('serial', 2**64),
    F.eq('serial', HUGE) | F.eq('serial', 0),
    F.lt('serial', HUGE) & F.gt('serial', 0),
]


def _calls(tool_names: Sequence[str], chunk_id: str, document_id: str) -> list[ToolCallPart]:
    args: dict[str, dict[str, Any]] = {
        'docs_vector_search': {'query': WORD, 'top_k': 50},
        'docs_text_search': {'query': WORD, 'top_k': 50},
        'docs_hybrid_search': {'query': WORD, 'top_k': 50},
        'docs_regex_search': {'pattern': WORD, 'top_k': 50},
        'docs_broaden_chunk': {'chunk_id': chunk_id, 'chunks_to_add': 1},
        'docs_zoom_out': {'id': chunk_id},
        'docs_list_documents': {'limit': 100},
        'docs_outline': {'document': document_id},
        'docs_read_section': {'section': document_id},
        'docs_graph_context': {'ids': [chunk_id], 'hops': 1},
        'docs_multihop_search': {'query': WORD, 'top_k': 50},
        'docs_verify_citations': {
            'claims': [{'text': 'a claim', 'citations': [{'chunk_id': chunk_id, 'quote': f'{WORD} {WORD} {WORD}'}]}]
        },
    }
    return [ToolCallPart(name, args[name], tool_call_id=name) for name in tool_names]


def _results(messages: Iterable[ModelMessage]) -> dict[str, ToolReturnPart | RetryPromptPart]:
    return {
        part.tool_name or '': part
        for message in messages
        for part in message.parts
        if isinstance(part, ToolReturnPart | RetryPromptPart)
    }


async def _check_tools(store: Any, scope: Filter, expected: set[str], chunk: Chunk) -> None:
    """One agent turn calling every tool in ``scope``: searches return exactly ``expected``."""
    rag = ToolishRag(store, metadata_filter=scope, max_top_k=50)
    chunk_id = chunk.id
    calls = _calls(rag.tool_names, chunk_id, chunk.document_id)

    def respond(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        done = any(isinstance(m, ModelResponse) for m in messages)
        return ModelResponse(parts=[TextPart('done')] if done else list(calls))

    result = await Agent(FunctionModel(respond), toolsets=[rag]).run('question')
    results = _results(result.all_messages())
    assert set(results) == set(rag.tool_names)
    for name, part in results.items():
        if name.endswith('_search'):
            assert isinstance(part, ToolReturnPart) and part.outcome != 'retried', (name, part)
            assert {h.id for h in part.metadata['hits']} == expected, name
        elif name.endswith(('_list_documents', '_outline', '_read_section')):
            # Navigation: the document is listed, outlined and read exactly when a chunk of it is in scope.
            in_scope = any(i.startswith(f'{chunk.document_id}-') for i in expected)
            answered = isinstance(part, ToolReturnPart) and part.outcome != 'retried'
            assert answered is (in_scope or name.endswith('_list_documents')), (name, part)
            if answered:
                assert (chunk.document_id in str(part.content)) is in_scope, (name, part)
                assert {h.id for h in part.metadata['hits']} <= expected, name
        elif chunk_id in expected:  # an expansion: out of scope, it is "not found" (a retry)
            assert isinstance(part, ToolReturnPart) and part.outcome != 'retried', (name, part)
            assert {h.id for h in part.metadata['hits']} <= expected, name


@pytest.mark.parametrize('kind', STORES)
async def test_filters_holding_unstorable_values_are_evaluated_not_crashed(kind: str, tmp_path: Path) -> None:
    good, _ = _corpus(tmp_path / 'docs')
    store = _store(kind, tmp_path)
    # The reference holds the huge integers too, so there some scopes select them.
    await ingest(store, tmp_path / 'docs' if kind == 'memory' else good, progress=False, executor='thread')
    records = await _everything(store)
    chunks = [r for r in records if isinstance(r, Chunk)]
    assert len(chunks) == len(records) >= 9
    for scope in SCOPES:
        expected = {r.id for r in records if matches(scope, r)}
        retriever = Retriever(store, scope)
        assert {h.id for h in await retriever.text_search(WORD, 100)} == expected, scope
        assert {h.id for h in await retriever.regex_search(WORD, 100)} == expected, scope
        if kind != 'tantivy':
            assert {h.id for h in await retriever.vector_search(WORD, 100)} == expected, scope
            assert {h.id for h in await retriever.hybrid_search(WORD, 100)} == expected, scope
        for chunk in chunks:
            assert (await retriever.get(chunk.id) is not None) is (chunk.id in expected), scope
            around = await retriever.neighbours(chunk.id, 1)
            assert around is None if chunk.id not in expected else {c.id for c in around[1]} <= expected
            section = await retriever.section(chunk.id, 10)
            assert section is None if chunk.id not in expected else {c.id for c in section.chunks} <= expected
        await _check_tools(store, scope, expected, chunks[0])
    # The scopes are not vacuous: some select nothing, some a part, some every numeric serial.
    sizes = {len({r.id for r in records if matches(scope, r)}) for scope in SCOPES}
    assert 0 in sizes and len(sizes) >= 4
