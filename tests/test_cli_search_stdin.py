"""``toolish-rag search -``: one query per line of stdin, each answered by one process (issue 40's warm path)."""

from __future__ import annotations

import asyncio
import io
import json
from pathlib import Path

import pytest

from toolish_rag import DocumentBuilder
from toolish_rag.cli import main
from toolish_rag.embedding import HashingEmbeddingModel
from toolish_rag.stores import InMemoryStore


def test_each_line_of_stdin_is_one_search(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    async def build() -> None:
        store = InMemoryStore(HashingEmbeddingModel(), path=tmp_path / 'kb')
        docs = []
        for topic, text in (('refunds', 'Refunds are paid within 30 days.'), ('shipping', 'Parcels ship in 2 days.')):
            b = DocumentBuilder(f'file:///{topic}.md', topic.title())
            b.add_chunk(b.section(topic.title()), text)
            docs.append(b.build())
        await store.upsert(docs)

    asyncio.run(build())
    store = ['--store', f'memory:{tmp_path / "kb"}', '--embedder', 'hashing', '--tool', 'text']
    monkeypatch.setattr('sys.stdin', io.StringIO('refunds paid\n\nparcels ship\n'))
    assert main(['search', '-', '--json', *store]) == 0
    answers = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [[h['document_title'] for h in hits][:1] for hits in answers] == [['Refunds'], ['Shipping']]
    monkeypatch.setattr('sys.stdin', io.StringIO('refunds paid\nparcels ship\n'))
    assert main(['search', '-', *store]) == 0
    out = capsys.readouterr().out
    assert out.index('Refunds are paid') < out.index('Parcels ship') and out.count('\n\n') >= 2
