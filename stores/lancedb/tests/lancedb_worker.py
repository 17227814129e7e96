"""Subprocess helper for the persistence and crash tests (not a test module).

``python lancedb_worker.py dump PATH`` prints a JSON snapshot of what a fresh process sees;
``python lancedb_worker.py upsert-loop PATH`` rewrites three documents forever, printing
each committed version, until it is killed.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import sys
from typing import Any

from toolish_rag.builder import DocumentBuilder
from toolish_rag.content import Document
from toolish_rag.embedding import HashingEmbeddingModel
from toolish_rag.filters import PropertyFilter as F
from toolish_rag.search import RegexRequest, SearchRequest
from toolish_rag_lancedb import LanceDBStore

DOCS = 3


def _plain(model: Any) -> dict[str, Any]:
    """JSON-ready dump with label sets sorted (set order varies between processes)."""
    data: dict[str, Any] = model.model_dump(mode='json')
    if 'labels' in data:
        data['labels'] = sorted(data['labels'])
    if 'chunks' in data:
        data['chunks'] = [{**c, 'labels': sorted(c['labels'])} for c in data['chunks']]
    return data


def versioned_docs(version: int) -> list[Document]:
    """Three documents whose chunk count and text depend on ``version``."""
    out = []
    for k in range(DOCS):
        b = DocumentBuilder(f'file:///doc{k}.md', f'Doc {k}', metadata={'version': version}, fingerprint=f'v{version}')
        top = b.section('Top')
        sub = b.section('Sub', parent=top)
        for i in range(3 + version % 4):
            b.add_chunk(sub if i % 2 else top, f'common doc {k} version {version} part {i}')
        out.append(b.build())
    return out


def open_store(path: str) -> LanceDBStore:
    return LanceDBStore(path, embedder=HashingEmbeddingModel(64), ann_threshold=None, optimize_every=3)


async def dump(path: str) -> dict[str, Any]:
    store = LanceDBStore(path, embedder=HashingEmbeddingModel(64))
    scope = F.ne('tenant', 'initech')
    out: dict[str, Any] = {
        'vector': [(h.id, h.score) for h in await store.vector_search(SearchRequest('warranty details', 6, scope))],
        'text': [(h.id, h.score) for h in await store.text_search(SearchRequest('warranty details', 6, scope))],
        'regex': [(h.id, h.score, list(h.matches)) for h in await store.regex_search(RegexRequest('ERR-[0-9]+', 6))],
        'documents': [
            {**dataclasses.asdict(info), 'metadata_types': {k: type(v).__name__ for k, v in info.metadata.items()}}
            for info in await store.list_documents()
        ],
    }
    records = []
    docs = []
    for info in await store.list_documents():
        doc = await store.get_document(info.id)
        assert doc is not None
        docs.append(_plain(doc))
        records.extend(_plain(c) for c in doc.chunks)
    out['full_documents'] = docs
    out['entities'] = [_plain(e) for e in await store.get_records(['ent-alice', 'ent-acme'])]
    out['types'] = {
        r['id']: {k: type(v).__name__ for k, v in r['metadata'].items()} for r in [*records, *out['entities']]
    }
    return out


async def upsert_loop(path: str) -> None:
    store = open_store(path)
    version = 0
    while True:
        version += 1
        await store.upsert(versioned_docs(version))
        print(version, flush=True)


if __name__ == '__main__':
    command, location = sys.argv[1], sys.argv[2]
    if command == 'dump':
        print(json.dumps(asyncio.run(dump(location))))
    elif command == 'upsert-loop':
        asyncio.run(upsert_loop(location))
    else:
        raise SystemExit(f'unknown command {command}')
