"""What the model sees must not change by accident: tool definitions and result texts, byte for byte.

For each of the three stores this renders, into one text, the tool definitions and the
instructions (what ``toolish-rag tools`` prints), then the result text of a fixed set of tool
calls: every tool, under a tenant scope, plus the bad calls a model makes (empty query,
``top_k`` out of range, unknown or foreign ids, a broken regex, a bad threshold, a query the
text engine rejects), which come back as the retry message the model reads.

The expected text is committed in ``tests/snapshots/behaviour-<store>.txt``. A refactor must
leave it byte-identical; a deliberate change of what the model sees regenerates it with
``TOOLISH_RAG_UPDATE_SNAPSHOTS=1 pytest tests/test_behaviour_snapshot.py`` and shows up in the
diff for review.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from pydantic_ai import ModelRetry

from tests.helpers import handbook_corpus
from toolish_rag import PropertyFilter as F, ToolishRag
from toolish_rag.content import Document
from toolish_rag.embedding import HashingEmbeddingModel
from toolish_rag.protocols import GraphBuiltWriter
from toolish_rag.stores import InMemoryStore

SNAPSHOTS = Path(__file__).parent / 'snapshots'
UPDATE = os.environ.get('TOOLISH_RAG_UPDATE_SNAPSHOTS') == '1'


def _memory(path: Path) -> Any:
    return InMemoryStore(HashingEmbeddingModel(64))


def _lancedb(path: Path) -> Any:
    from toolish_rag_lancedb import LanceDBStore

    return LanceDBStore(path / 'kb', embedder=HashingEmbeddingModel(64))


def _tantivy(path: Path) -> Any:
    from toolish_rag_tantivy import TantivyStore

    return TantivyStore()


STORES: dict[str, Callable[[Path], Any]] = {'memory': _memory, 'lancedb': _lancedb, 'tantivy': _tantivy}

FOREIGN_CHUNK = 'missing'  # replaced by a globex chunk id at run time


def _navigation_calls(acme: Document, globex: Document) -> list[tuple[str, dict[str, Any]]]:
    """Navigation and citation checks: answers, and not-found retries (a foreign id like a missing one)."""
    chunk = acme.chunks[1]
    return [
        ('list_documents', {}),
        ('list_documents', {'title_contains': 'no such title'}),
        ('list_documents', {'limit': 0}),
        ('outline', {'document': acme.id}),
        ('outline', {'document': acme.title}),
        ('outline', {'document': globex.id}),
        ('outline', {'document': 'no-such-document'}),
        ('read_section', {'section': chunk.section_ids[0]}),
        ('read_section', {'section': acme.id}),
        ('read_section', {'section': chunk.section_ids[0], 'offset': 99}),
        ('read_section', {'section': globex.sections[0].id}),
        ('read_section', {'section': 'no-such-section'}),
        (
            'verify_citations',
            {
                'claims': [
                    {'text': 'genuine', 'citations': [{'chunk_id': chunk.id, 'quote': chunk.urtext[:60]}]},
                    {'text': 'edited', 'citations': [{'chunk_id': chunk.id, 'quote': 'X' + chunk.urtext[1:60]}]},
                    {'text': 'foreign', 'citations': [{'chunk_id': globex.chunks[1].id, 'quote': 'some quote here'}]},
                ]
            },
        ),
        ('verify_citations', {'claims': []}),
    ]


def _calls(chunk_id: str, foreign_id: str) -> list[tuple[str, dict[str, Any]]]:
    return [
        ('vector_search', {'query': 'refund window'}),
        ('vector_search', {'query': 'how long do refunds take', 'top_k': 2, 'threshold': -0.5}),
        ('text_search', {'query': 'refunds receipt'}),
        ('text_search', {'query': 'parcels', 'top_k': 1}),
        ('text_search', {'query': 'refunds', 'threshold': 0.5}),
        ('hybrid_search', {'query': 'refund window expired'}),
        ('regex_search', {'pattern': 'ERR-[0-9]{4}'}),
        ('regex_search', {'pattern': '(?i)SHIPS', 'top_k': 3}),
        ('broaden_chunk', {'chunk_id': chunk_id}),
        ('broaden_chunk', {'chunk_id': chunk_id, 'chunks_to_add': 0}),
        ('zoom_out', {'id': chunk_id}),
        ('multihop_search', {'query': 'refund window expired'}),
        # bad calls: each must come back as a retry message
        ('vector_search', {'query': '   '}),
        ('vector_search', {'query': 'refunds', 'top_k': 0}),
        ('vector_search', {'query': 'refunds', 'top_k': 51}),
        ('vector_search', {'query': 'refunds', 'threshold': 2}),
        ('vector_search', {'query': 'x' * 2001}),
        ('text_search', {'query': 'refunds', 'threshold': -1}),
        ('text_search', {'query': 'AND OR ('}),
        ('hybrid_search', {'query': 'refunds', 'threshold': 1.5}),
        ('regex_search', {'pattern': '('}),
        ('regex_search', {'pattern': ''}),
        ('broaden_chunk', {'chunk_id': 'no-such-chunk'}),
        ('broaden_chunk', {'chunk_id': foreign_id}),
        ('broaden_chunk', {'chunk_id': chunk_id, 'chunks_to_add': 11}),
        ('zoom_out', {'id': 'no-such-section'}),
        ('zoom_out', {'id': foreign_id}),
        ('multihop_search', {'query': 'refunds', 'top_k': 0}),
        ('multihop_search', {'query': foreign_id}),
        ('vector_search', {'query': 42}),
        ('vector_search', {}),
        ('text_search', {'query': 42}),
    ]


async def _render(make: Callable[[Path], Any], path: Path) -> str:
    store = make(path)
    docs = handbook_corpus()
    await store.upsert(docs)
    if isinstance(store, GraphBuiltWriter):  # the graph tools are offered once a graph is built
        await store.record_graph_built(['snapshot'])
    acme, globex = docs
    chunk_id = acme.chunks[1].id
    foreign_id = globex.chunks[1].id
    rag = ToolishRag(store, name='kb', description='Company handbooks').with_metadata_filter(F.eq('tenant', 'acme'))
    out: list[str] = []
    definitions = await rag.tool_definitions()
    out.append(f'# {len(definitions)} tools')
    for d in definitions:
        out.append(f'## {d.name}\n{d.description}\nparameters: {json.dumps(d.parameters_json_schema, sort_keys=True)}')
    out.append('## instructions\n' + ((await rag.instructions()) or '(none)'))
    offered = {d.name for d in definitions}
    eager = rag.with_eager_search_about('refund window', top_k=2)
    preloaded = '\n\n'.join(r.text for r in await eager.eager_results())  # sent before the prompt, not instructions
    out.append('## eager results\n' + (preloaded or '(none)'))
    for tool, arguments in [*_calls(chunk_id, foreign_id), *_navigation_calls(acme, globex)]:
        if f'kb_{tool}' not in offered:
            continue
        heading = f'## call {tool} {json.dumps(arguments, sort_keys=True)[:120]}'
        try:
            result = await rag.run_tool(tool, arguments)
        except ModelRetry as e:
            out.append(f'{heading}\nRETRY: {e}')
        else:
            out.append(f'{heading}\n{result.return_value}')
    # pydantic's error links carry its version (or 'latest', when pydantic-core could not read it: another test in
    # the same worker may have hidden pydantic from imports); the rest of the message is ours to keep stable
    return re.sub(r'errors\.pydantic\.dev/[^/\s]+/', 'errors.pydantic.dev/<version>/', '\n\n'.join(out) + '\n')


@pytest.mark.parametrize('store_name', sorted(STORES))
async def test_model_visible_behaviour_is_unchanged(store_name: str, tmp_path: Path) -> None:
    pytest.importorskip(
        {'memory': 'toolish_rag', 'lancedb': 'toolish_rag_lancedb', 'tantivy': 'toolish_rag_tantivy'}[store_name]
    )
    text = await _render(STORES[store_name], tmp_path)
    expected_path = SNAPSHOTS / f'behaviour-{store_name}.txt'
    if UPDATE:
        expected_path.parent.mkdir(exist_ok=True)
        expected_path.write_text(text, encoding='utf-8')
    expected = expected_path.read_text(encoding='utf-8')
    assert text == expected, f'what the model sees changed for {store_name}; see the module docstring'


def test_tools_command_output_is_unchanged(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """``toolish-rag tools`` (text and ``--json``) on a Tantivy index, which needs no embedder."""
    pytest.importorskip('toolish_rag_tantivy')
    import asyncio

    from toolish_rag.cli import main
    from toolish_rag_tantivy import TantivyStore

    asyncio.run(TantivyStore(tmp_path / 'index').upsert(handbook_corpus()))
    store = f'tantivy:{tmp_path / "index"}'
    assert main(['tools', '--store', store, '--name', 'kb']) == 0
    assert main(['tools', '--json', '--store', store]) == 0
    text = capsys.readouterr().out
    expected_path = SNAPSHOTS / 'tools-command.txt'
    if UPDATE:
        expected_path.write_text(text, encoding='utf-8')
    assert text == expected_path.read_text(encoding='utf-8'), (
        'toolish-rag tools output changed; see the module docstring'
    )
