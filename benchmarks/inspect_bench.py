"""Inspector benchmark (issue 32): the p50 (and p95) load time of each page of ``toolish-rag inspect`` on a
100k-chunk memory store, on this machine's cores.

    .venv/bin/python benchmarks/inspect_bench.py                # 100,000 chunks (2,000 documents of 50)
    .venv/bin/python benchmarks/inspect_bench.py --chunks 5000  # quicker
    .venv/bin/python benchmarks/inspect_bench.py --quick        # 1,000 chunks, a few requests: a smoke run

A page load is one HTTP GET (or the form's POST) to the app served by uvicorn on 127.0.0.1, timed from the
request to the last byte of the answer: everything the server does for a page (the scoped store calls, the
tool call for the console, rendering), not the browser's layout. Each page is requested ``--repeat`` times
after two warm-up loads, unscoped and signed in with a tenant token (a fifth of the corpus). The target is a
p50 of at most 300 ms per page. Corpus: documents of 50 chunks of 40 pseudo-words in five sections (the
read target: ten chunks), ``tenant`` = document number mod 5, one entity per document that every chunk of the
document MENTIONS (the graph page walks two hops from a chunk: the entity, then the document's other chunks).
Vectors: the weight-free `HashingEmbeddingModel` (64 dimensions), so the corpus is built in seconds; the
vector leg of a hybrid search is a brute-force scan of every vector, as with any embedder.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from pin_threads import set_thread_counts

THREADS = set_thread_counts(2, torch=False)

import argparse  # noqa: E402
import asyncio  # noqa: E402
import json  # noqa: E402
import os  # noqa: E402
import random  # noqa: E402
import statistics  # noqa: E402
import threading  # noqa: E402
import time  # noqa: E402
import urllib.parse  # noqa: E402
import urllib.request  # noqa: E402
from typing import Any  # noqa: E402

import uvicorn  # noqa: E402

from toolish_rag import DocumentBuilder, ToolishRag  # noqa: E402
from toolish_rag.content import Document, Entity, Relation  # noqa: E402
from toolish_rag.embedding import HashingEmbeddingModel  # noqa: E402
from toolish_rag.inspect import create_app  # noqa: E402
from toolish_rag.mcp import TokenTable  # noqa: E402
from toolish_rag.stores import InMemoryStore  # noqa: E402

TOKEN = 'tenant-two-token-0123456789'
TARGET_MS = 300.0


def corpus(chunks: int, seed: int = 7) -> tuple[list[Document], list[Entity], list[Relation]]:
    rng = random.Random(seed)
    vocabulary = [
        ''.join(rng.choice('abcdefghijklmnopqrstuvwxyz') for _ in range(rng.randint(3, 9))) for _ in range(5000)
    ]
    documents, entities, relations = [], [], []
    for number in range(max(1, chunks // 50)):
        tenant = f't{number % 5}'
        b = DocumentBuilder(
            f'file:///corpus/doc-{number}.md',
            f'Document {number:05d} {rng.choice(vocabulary)}',
            metadata={'tenant': tenant},
        )
        for s in range(5):
            section = b.section(f'Section {s + 1}')
            for _ in range(10):
                b.add_chunk(section, ' '.join(rng.choice(vocabulary) for _ in range(40)))
        doc = b.build()
        documents.append(doc)
        entity = Entity(
            id=f'e-{number}', name=f'Entity {number}', description='a named thing', metadata={'tenant': tenant}
        )
        entities.append(entity)
        relations += [
            Relation(
                source=c.id,
                source_kind='chunk',
                target=entity.id,
                target_kind='entity',
                type='MENTIONS',
                metadata={'tenant': tenant},
            )
            for c in doc.chunks
        ]
    return documents, entities, relations


class Served:
    def __init__(self, app: Any) -> None:
        self.server = uvicorn.Server(uvicorn.Config(app, host='127.0.0.1', port=0, log_level='warning', lifespan='off'))
        self.thread = threading.Thread(target=self.server.run, daemon=True)
        self.thread.start()
        while not self.server.started:
            time.sleep(0.02)
        self.url = f'http://127.0.0.1:{self.server.servers[0].sockets[0].getsockname()[1]}'

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=10)


def load(url: str, data: dict[str, str] | None, token: str | None) -> tuple[float, int]:
    body = urllib.parse.urlencode(data).encode() if data is not None else None
    request = urllib.request.Request(url, data=body, headers={'Authorization': f'Bearer {token}'} if token else {})
    start = time.perf_counter()
    try:
        with urllib.request.urlopen(request) as response:
            response.read()
            status = response.status
    except urllib.error.HTTPError as e:
        e.read()
        status = e.code
    return (time.perf_counter() - start) * 1000, status


def pages(documents: list[Document], tenant_doc: Document) -> list[tuple[str, str, dict[str, str] | None]]:
    d, chunk = tenant_doc, tenant_doc.chunks[25]
    q = urllib.parse.quote
    return [
        ('documents (first page)', '/documents', None),
        ('documents (last page)', f'/documents?offset={len(documents) - 10}', None),
        ('documents (title filter)', '/documents?title=Document%2000', None),
        ('document outline', f'/document?id={q(d.id)}', None),
        ('section (first page)', f'/section?document={q(d.id)}&id={q(d.sections[2].id)}', None),
        ('chunk', f'/chunk?id={q(chunk.id)}', None),
        ('graph (2 hops)', f'/graph?node={q(chunk.id)}&hops=2', None),
        ('console (form)', '/console?tool=docs_hybrid_search', None),
        (
            'console: hybrid_search',
            '/console',
            {'tool': 'docs_hybrid_search', 'arg.query': ' '.join(chunk.urtext.split()[:6])},
        ),
        ('console: list_documents', '/console', {'tool': 'docs_list_documents'}),
        (
            'citations (check 1)',
            '/citations',
            {
                'answer': json.dumps(
                    {
                        'status': 'answered',
                        'claims': [
                            {
                                'text': 'x',
                                'citations': [{'chunk_id': chunk.id, 'quote': ' '.join(chunk.urtext.split()[:8])}],
                            }
                        ],
                    }
                )
            },
        ),
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument('--chunks', type=int, default=100_000)
    parser.add_argument('--repeat', type=int, default=20)
    parser.add_argument('--quick', action='store_true')
    args = parser.parse_args()
    if args.quick:
        args.chunks, args.repeat = 1000, 3
    started = time.perf_counter()
    documents, entities, relations = corpus(args.chunks)
    store = InMemoryStore(HashingEmbeddingModel(64))

    async def fill() -> None:
        for i in range(0, len(documents), 200):
            await store.upsert(documents[i : i + 200])
        await store.upsert([*entities, *relations])

    asyncio.run(fill())
    built = time.perf_counter() - started
    rag: ToolishRag[Any] = ToolishRag(store)
    started = time.perf_counter()  # the memory store builds its BM25 index at the first text search: not a page's cost
    asyncio.run(rag.run_tool('text_search', {'query': 'warm'}))
    warmed = time.perf_counter() - started
    tokens = TokenTable.from_mapping({'tokens': {'t2': {'token': TOKEN, 'scope': {'tenant': 't2'}}}})
    servers = {'unscoped': Served(create_app(rag)), 'token t2': Served(create_app(rag, tokens=tokens))}
    tenant_doc = next(d for d in documents if d.metadata['tenant'] == 't2')
    print(
        f'# inspect_bench: {sum(len(d.chunks) for d in documents):,} chunks, {len(documents):,} documents, '
        f'{len(relations):,} relations (built in {built:.1f} s, first text search {warmed:.1f} s); '
        f'{args.repeat} loads per page after 2 warm-ups; '
        f'{os.cpu_count()} cores; {THREADS}'
    )
    print('| page | unscoped p50 ms | p95 ms | token p50 ms | p95 ms |')
    print('|---|---:|---:|---:|---:|')
    worst = 0.0
    for name, path, data in pages(documents, tenant_doc):
        cells = []
        for label, served in servers.items():
            token = TOKEN if label != 'unscoped' else None
            times = []
            for i in range(args.repeat + 2):
                took, status = load(served.url + path, data, token)
                assert status == 200, (name, label, status)
                if i >= 2:
                    times.append(took)
            times.sort()
            p50 = statistics.median(times)
            p95 = times[min(len(times) - 1, round(0.95 * (len(times) - 1)))]
            worst = max(worst, p50)
            cells += [f'{p50:.1f}', f'{p95:.1f}']
        print(f'| {name} | ' + ' | '.join(cells) + ' |')
    print(f'\nworst p50: {worst:.1f} ms (target <= {TARGET_MS:.0f} ms): {"met" if worst <= TARGET_MS else "NOT met"}')
    for s in servers.values():
        s.stop()


if __name__ == '__main__':
    main()
