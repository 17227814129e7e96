"""Navigation benchmark (issue 13): ``list_documents``, ``outline``, ``read_section`` and model filters.

    .venv/bin/python benchmarks/navigation_bench.py                                  # 5k and 100k chunks, 3 stores
    .venv/bin/python benchmarks/navigation_bench.py --sizes 5000 --stores memory tantivy
    .venv/bin/python benchmarks/navigation_bench.py --quick                          # tiny corpus, seconds

Every tool call is ``ToolishRag.run_tool`` (argument checks, the scoped `Retriever` and its
`Navigator`, the store's `SectionReader` call, rendering): everything an agent's call runs
except the model round trip. Each is timed beside the raw library call that answers the same
question on the same data, alternating call by call (`tool_latency` in benchmarks/common.py),
so load from other processes hits both alike. A second pass times the store's own
`SectionReader` call for the same question (``document_page``, ``read_section``,
``chunk_outlines``), again alternating with raw, to tell the store's cost from the tool layer's
(name resolution in `Navigator`, argument checks, rendering). Scoped to one tenant:

* ``list_documents`` (the first page of 20 and the last page): the page of documents with an
  in-scope chunk, ordered by title then id, with their chunk and section counts and metadata;
* ``read_section`` (a 30-chunk section: two nested 15-chunk subsections, first page): the
  section's in-scope chunks in reading order and their total;
* ``outline`` (a whole document, named by id): its in-scope skeleton, from which the tool builds
  the section tree;
* filtered searches with a *model* filter (``ToolishRag(filterable={'year': int})``, the tool's
  ``filter`` argument ``{"year": {"lt": ...}}`` selecting 1%, 10% and 50% of the chunks): each
  call must return exactly ``top_k`` hits, all in scope; the count of calls that did is printed.

Before timing, the raw answers are checked against the store's (same page, counts, totals).
The raw counterparts are spelled out by each ``Raw*.describe`` and printed with the results. Corpus: documents of 10-50 chunks of `PseudoWords` (40 words each) in nested sections
("Chapter n", some with "Chapter n.1"); every eighth document has 40 chunks, with a
"Reference" section of two 15-chunk subsections (the read target). ``tenant`` (document
metadata) is the document number mod 5; ``year`` (chunk metadata) is ``2000 + (37 * chunk
number) mod 100``, so ``year < 2000 + p`` selects exactly p% of the chunks. Vectors come from
`BagOfRandomVectors` (128-d: cheap, so ingest takes seconds and query embedding microseconds).

A full run rewrites the "Navigation" results block of docs/benchmarks-core.md (``--no-write``
to skip); ``--quick`` never does.
"""

from __future__ import annotations

import argparse
import asyncio
import inspect
import json
import os
import platform
import random
import shutil
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

sys.path.insert(0, str(Path(__file__).resolve().parent))

from pin_threads import set_thread_counts

THREADS = 2
THREAD_NOTE = set_thread_counts(THREADS, torch=False)

import numpy as np  # noqa: E402
from common import (  # noqa: E402
    Alternated,
    BagOfRandomVectors,
    PseudoWords,
    alternate,
    cpu_model,
    memory_gib,
    pct,
    peak_rss_mib,
    synthetic_name,
    tool_latency,
)
from pydantic_ai.embeddings import Embedder  # noqa: E402

from toolish_rag import DocumentBuilder, PropertyFilter as F  # noqa: E402
from toolish_rag.content import Chunk, Document  # noqa: E402
from toolish_rag.protocols import SectionReader  # noqa: E402
from toolish_rag.sections import DocumentPageRequest, OutlineRequest, SectionReadRequest  # noqa: E402
from toolish_rag.stores import InMemoryStore  # noqa: E402
from toolish_rag.toolset import ToolishRag  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
DOC_PAGE = ROOT / 'docs' / 'benchmarks-core.md'
START, END = '<!-- navigation:start -->', '<!-- navigation:end -->'

TENANTS = 5
TENANT = 't3'
PAGE = 20
READ_BATCH = 200
"""What the read_section tool asks of the store per call (`toolset._tools.navigation._READ_BATCH`)."""
TOP_K = 10
DIMS = 128
WORDS = 40
LONG_EVERY = 8
SELECTIVITIES = (1, 10, 50)
BATCH_DOCS = 500

Call = Callable[[dict[str, Any]], Any]


# -- corpus -------------------------------------------------------------------------------------


@dataclass
class Corpus:
    size: int
    documents: list[Document]
    reference_sections: list[tuple[str, str]]
    """(document id, "Reference" section id) of the 40-chunk documents in `TENANT`."""
    tenant_documents: list[str]
    vector_queries: list[str]
    text_queries: list[str]

    @property
    def name(self) -> str:
        return synthetic_name(self.size)

    @property
    def chunks(self) -> list[Chunk]:
        return [c for d in self.documents for c in d.chunks]


def _chapters(b: DocumentBuilder, size: int, rng: random.Random, words: PseudoWords, year: Callable[[], int]) -> None:
    """``size`` chunks in top-level chapters of 3-12 chunks, half of the longer ones with a nested subsection."""
    left, n = size, 0
    while left:
        n += 1
        take = min(left, rng.randint(3, 12))
        top = b.section(f'Chapter {n}')
        inner = b.section(f'Chapter {n}.1', top) if take >= 6 and rng.random() < 0.5 else top
        for i in range(take):
            b.add_chunk(top if i < take // 2 else inner, words.chunk(rng, WORDS), metadata={'year': year()})
        left -= take


def _long_document(b: DocumentBuilder, rng: random.Random, words: PseudoWords, year: Callable[[], int]) -> str:
    """40 chunks: Overview (5), Reference (Part A 15 + Part B 15), Notes (5); returns Reference's id."""
    reference = b.section('Reference')
    for title, parent, n in (('Overview', None, 5), ('Part A', reference, 15), ('Part B', reference, 15)):
        section = b.section(title, parent)
        for _ in range(n):
            b.add_chunk(section, words.chunk(rng, WORDS), metadata={'year': year()})
    notes = b.section('Notes')
    for _ in range(5):
        b.add_chunk(notes, words.chunk(rng, WORDS), metadata={'year': year()})
    return reference


def synthetic(size: int, n_queries: int, seed: int = 1) -> Corpus:
    """About ``size`` chunks (the last document is cut to fit); see the module docstring."""
    rng = random.Random(seed)
    words = PseudoWords.draw(rng)
    counter = iter(range(10**9))

    def year() -> int:
        return 2000 + (37 * next(counter)) % 100

    documents: list[Document] = []
    reference: list[tuple[str, str]] = []
    total = d = 0
    while total < size:
        doc_id, tenant = f'doc-{d:06d}', f't{d % TENANTS}'
        title = f'{words.vocab[rng.randrange(50, 5000)].capitalize()} manual {d}'
        b = DocumentBuilder(f'synthetic://{doc_id}', title, id=doc_id, metadata={'tenant': tenant})
        if d % LONG_EVERY == 0 and size - total >= 40:
            section = _long_document(b, rng, words, year)
            if tenant == TENANT:
                reference.append((doc_id, section))
        else:
            _chapters(b, min(rng.randint(10, 50), size - total), rng, words, year)
        documents.append(b.build())
        total += len(documents[-1].chunks)
        d += 1
    # A frequent word in every text query, so every in-scope chunk matches it: a call that
    # returns fewer than top_k hits is then a miss of the store, not a lack of matches.
    frequent = words.vocab[0]
    return Corpus(
        size=total,
        documents=documents,
        reference_sections=reference,
        tenant_documents=[doc.id for doc in documents if doc.metadata['tenant'] == TENANT],
        vector_queries=[words.query(rng) for _ in range(n_queries)],
        text_queries=[f'{words.query(rng)} {frequent}' for _ in range(n_queries)],
    )


# -- raw counterparts ---------------------------------------------------------------------------


class Raw(Protocol):
    """The store library's own calls for the three navigation questions, scoped to `TENANT`."""

    def describe(self) -> dict[str, str]: ...

    def list_documents(self, offset: int) -> Any:
        """``[(id, title, chunk count, section count, metadata)]`` of the page, and the total."""

    def read_section(self, document_id: str, section_id: str) -> Any:
        """The section's in-scope chunks (up to `READ_BATCH`) in reading order, and their total."""

    def outline(self, document_id: str) -> Any:
        """The document's in-scope chunks' ids, positions and section ids/titles, in reading order."""


class RawMemory:
    """Plain numpy / Python over the very `Chunk` objects the store holds, with the arrays built once."""

    def __init__(self, corpus: Corpus) -> None:
        self.chunks = corpus.chunks
        self.documents = corpus.documents
        doc_index = {d.id: i for i, d in enumerate(corpus.documents)}
        self.chunk_doc = np.array([doc_index[c.document_id] for c in self.chunks], dtype=np.intp)
        self.tenant_codes = np.array([int(str(c.metadata['tenant'])[1:]) for c in self.chunks], dtype=np.int8)
        self.starts = np.searchsorted(self.chunk_doc, np.arange(len(corpus.documents) + 1))
        self.title_order = np.array(
            sorted(
                range(len(corpus.documents)),
                key=lambda i: (corpus.documents[i].title.casefold(), corpus.documents[i].id),
            ),
            dtype=np.intp,
        )
        by_section: dict[str, list[int]] = {}
        for p, c in enumerate(self.chunks):
            for s in c.section_ids:
                by_section.setdefault(s, []).append(p)
        self.section_positions = {s: np.array(p, dtype=np.intp) for s, p in by_section.items()}
        self.code = int(TENANT[1:])

    def describe(self) -> dict[str, str]:
        return {
            'list_documents': 'numpy: tenant mask on an int column, np.bincount of chunk->document, '
            'documents pre-sorted by title, page sliced; section sets of the page in Python',
            'read_section': 'numpy: a section->positions dict built once, tenant mask, page sliced, chunks picked',
            'outline': "numpy: the document's position range, tenant mask, (id, seq, section ids/titles) tuples",
        }

    def list_documents(self, offset: int) -> Any:
        mask = self.tenant_codes == self.code
        counts = np.bincount(self.chunk_doc[mask], minlength=len(self.documents))
        listed = self.title_order[counts[self.title_order] > 0]
        page = []
        for d in listed[offset : offset + PAGE].tolist():
            lo, hi = int(self.starts[d]), int(self.starts[d + 1])
            sections = {s for p in range(lo, hi) if mask[p] for s in self.chunks[p].section_ids}
            doc = self.documents[d]
            page.append((doc.id, doc.title, int(counts[d]), len(sections), dict(doc.metadata)))
        return page, len(listed)

    def read_section(self, document_id: str, section_id: str) -> Any:
        positions = self.section_positions[section_id]
        positions = positions[self.tenant_codes[positions] == self.code]
        return [self.chunks[p] for p in positions[:READ_BATCH].tolist()], len(positions)

    def outline(self, document_id: str) -> Any:
        d = int(document_id.split('-')[1])
        lo, hi = int(self.starts[d]), int(self.starts[d + 1])
        positions = np.arange(lo, hi)[self.tenant_codes[lo:hi] == self.code]
        return [
            (c.id, c.sequence_number, c.section_ids, c.section_path)
            for c in (self.chunks[p] for p in positions.tolist())
        ]


class RawLance:
    """LanceDB queries on the tables the store wrote (``records`` and ``documents``), pyarrow for the rest."""

    def __init__(self, records: Any, documents: Any, tenant_sql: str) -> None:
        self.records = records
        self.documents = documents
        self.scope = f"kind = 'chunk' AND ({tenant_sql})"

    def describe(self) -> dict[str, str]:
        return {
            'list_documents': 'records: where(tenant).select([document_id]) + pyarrow group_by count; documents: '
            'select(id, title, uri, metadata_json); pyarrow join, sort by lower(title), id; page; '
            'records: where(tenant AND document_id IN page).select([document_id, section_ids]), distinct count',
            'read_section': 'records: where(tenant AND document_id = d AND array_has(section_ids, s))'
            '.select(search result columns), sorted by sequence_number in pyarrow (one query)',
            'outline': 'records: where(tenant AND document_id = d).select(id, sequence_number, section_ids, payload)'
            ', sorted by sequence_number',
        }

    async def list_documents(self, offset: int) -> Any:
        import pyarrow as pa
        import pyarrow.compute as pc

        ids = await self.records.query().where(self.scope).select(['document_id']).to_arrow()
        counts = ids.group_by('document_id').aggregate([('document_id', 'count')])
        docs = await self.documents.query().select(['id', 'title', 'uri', 'metadata_json']).to_arrow()
        joined = docs.join(counts, keys='id', right_keys='document_id', join_type='inner')
        joined = joined.append_column('folded', pc.utf8_lower(joined['title']))
        page = joined.sort_by([('folded', 'ascending'), ('id', 'ascending')]).slice(offset, PAGE)
        page_ids = page['id'].to_pylist()
        if not page_ids:
            return [], joined.num_rows
        listed = ', '.join(f"'{i}'" for i in page_ids)
        rows = await (
            self.records.query()
            .where(f'{self.scope} AND document_id IN ({listed})')
            .select(['document_id', 'section_ids'])
            .to_arrow()
        )
        flat = pa.table(
            {
                'document_id': pc.take(rows['document_id'], pc.list_parent_indices(rows['section_ids'])),
                'section': pc.list_flatten(rows['section_ids']),
            }
        )
        distinct = flat.group_by('document_id').aggregate([('section', 'count_distinct')]).to_pydict()
        sections = dict(zip(distinct['document_id'], distinct['section_count_distinct'], strict=True))
        out = [
            (r['id'], r['title'], r['document_id_count'], sections.get(r['id'], 0), json.loads(r['metadata_json']))
            for r in page.to_pylist()
        ]
        return out, joined.num_rows

    async def read_section(self, document_id: str, section_id: str) -> Any:
        where = f"{self.scope} AND document_id = '{document_id}' AND array_has(section_ids, '{section_id}')"
        columns = ['id', 'kind', 'text', 'urtext', 'payload', 'metadata_json', 'labels', 'sequence_number']
        found = await self.records.query().where(where).select(columns).to_arrow()
        rows = found.sort_by('sequence_number').to_pylist()
        return rows[:READ_BATCH], len(rows)

    async def outline(self, document_id: str) -> Any:
        where = f"{self.scope} AND document_id = '{document_id}'"
        columns = ['id', 'sequence_number', 'section_ids', 'payload']
        found = await self.records.query().where(where).select(columns).to_arrow()
        return [
            (r['id'], r['sequence_number'], r['section_ids'], json.loads(r['payload'])['section_path'])
            for r in found.sort_by('sequence_number').to_pylist()
        ]


def _unprefix(term: str) -> tuple[str, str]:
    """``'3:abc...'`` -> ``('abc', '...')``: the length-prefixed values of the store's navigation terms."""
    size, _, body = term.partition(':')
    return body[: int(size)], body[int(size) :]


class RawTantivy:
    """tantivy-py on the store's index: term counts under a filter query, and a ``seq``-ordered search."""

    def __init__(self, index: Any) -> None:
        from tantivy import Query

        from toolish_rag_tantivy._schema import scalar_terms

        self.index = index
        self.Query = Query
        self.tenant_term = scalar_terms('tenant', TENANT)
        """(field, term) the store indexes ``tenant='t3'`` under."""

    def describe(self) -> dict[str, str]:
        return {
            'list_documents': "searcher.terms_with_prefix('doc_title', filter_query=chunk AND tenant) "
            '(title + count per document), sorted and paged in Python; per page document terms_with_prefix('
            "'doc_sections', its key) for the section count; its head record's stored doc_info for metadata",
            'read_section': 'searcher.search(chunk AND tenant AND document_id AND section_ids, 200, '
            "order_by_field='seq') + searcher.doc for each hit, and a count",
            'outline': "searcher.terms_with_prefix('outline', the document's key, filter_query=chunk AND tenant)"
            ', JSON skeletons parsed and sorted',
        }

    def _and(self, *parts: Any) -> Any:
        from tantivy import Occur

        return self.Query.boolean_query([(Occur.Must, p) for p in parts])

    def _scope(self, *extra: Any) -> Any:
        """Chunks of `TENANT`, and ``extra``."""
        schema = self.index.schema
        return self._and(
            self.Query.term_query(schema, 'kind', 'chunk'), self.Query.term_query(schema, *self.tenant_term), *extra
        )

    def list_documents(self, offset: int) -> Any:
        searcher = self.index.searcher()
        scope = self._scope()
        listed = []
        for term, count in searcher.terms_with_prefix('doc_title', '', filter_query=scope):
            doc_id, rest = _unprefix(term)
            title, _uri = _unprefix(rest)
            listed.append((title.casefold(), doc_id, title, count))
        listed.sort()
        page = listed[offset : offset + PAGE]
        ids = [doc_id for _, doc_id, _, _ in page]
        heads = self._and(
            self.Query.term_query(self.index.schema, 'doc_head', '1'),
            self.Query.term_set_query(self.index.schema, 'document_id', ids),
        )
        infos = {}
        for _, address in searcher.search(heads, max(1, len(ids))).hits:
            info = json.loads(bytes(searcher.doc(address)['doc_info'][0]))
            infos[info['id']] = info['metadata']
        out = []
        for _, doc_id, title, count in page:
            key = f'{len(doc_id)}:{doc_id}'
            sections = searcher.terms_with_prefix('doc_sections', key, filter_query=scope)
            out.append((doc_id, title, count, len(sections), infos.get(doc_id, {})))
        return out, len(listed)

    def read_section(self, document_id: str, section_id: str) -> Any:
        from tantivy import Order

        searcher = self.index.searcher()
        schema = self.index.schema
        query = self._scope(
            self.Query.term_query(schema, 'document_id', document_id),
            self.Query.term_query(schema, 'section_ids', section_id),
        )
        total = searcher.search(query, 1, count=True).count
        hits = searcher.search(query, READ_BATCH, count=False, order_by_field='seq', order=Order.Asc).hits
        return [searcher.doc(address).to_dict() for _, address in hits], total

    def outline(self, document_id: str) -> Any:
        searcher = self.index.searcher()
        key = f'{len(document_id)}:{document_id}'
        found = searcher.terms_with_prefix('outline', key, filter_query=self._scope())
        return sorted(json.loads(_unprefix(term)[1]) for term, _ in found)


# -- stores -------------------------------------------------------------------------------------


@dataclass
class Loaded:
    store: Any
    raw: Raw
    notes: list[str] = field(default_factory=list)
    vector: bool = True
    cleanup: Callable[[], Awaitable[None]] | None = None


async def _upsert(store: Any, documents: list[Document]) -> float:
    start = time.perf_counter()
    for i in range(0, len(documents), BATCH_DOCS):
        await store.upsert(documents[i : i + BATCH_DOCS])
    return time.perf_counter() - start


async def load_memory(corpus: Corpus) -> Loaded:
    store = InMemoryStore(Embedder(BagOfRandomVectors(DIMS)))
    seconds = await _upsert(store, corpus.documents)
    start = time.perf_counter()
    raw = RawMemory(corpus)
    return Loaded(
        store,
        raw,
        [f'memory: upsert {seconds:.1f} s; raw arrays built in {time.perf_counter() - start:.1f} s (not timed)'],
    )


async def load_lancedb(corpus: Corpus, path: Path) -> Loaded:
    import lancedb

    from toolish_rag_lancedb import LanceDBStore
    from toolish_rag_lancedb._schema import DOCUMENTS_TABLE

    store = LanceDBStore(path, embedder=Embedder(BagOfRandomVectors(DIMS)))
    seconds = await _upsert(store, corpus.documents)
    start = time.perf_counter()
    await store.optimize()
    optimized = time.perf_counter() - start
    records = await store.records_table()
    documents = await (await lancedb.connect_async(os.fspath(path))).open_table(DOCUMENTS_TABLE)
    raw = RawLance(records, documents, store.filter_sql(F.eq('tenant', TENANT)))
    indexes = ', '.join(sorted(await store.index_stats()))
    note = f'lancedb: upsert {seconds:.1f} s + optimize() {optimized:.1f} s; indexes: {indexes}'
    return Loaded(store, raw, [note], cleanup=store.aclose)


async def load_tantivy(corpus: Corpus) -> Loaded:
    from toolish_rag_tantivy import TantivyStore

    store = TantivyStore()
    seconds = await _upsert(store, corpus.documents)
    return Loaded(
        store, RawTantivy(store.index), [f'tantivy (one index, in RAM): upsert {seconds:.1f} s'], vector=False
    )


# -- timing -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Row:
    store: str
    what: str
    tool_ms: list[float]
    store_ms: list[float]
    raw_ms: list[float]
    """Alternating with the tool calls."""
    store_raw_ms: list[float]
    """Alternating with the store calls (a second pass): the store/raw ratio's denominator."""
    note: str = ''

    def line(self, corpus: str) -> str:
        t50, s50, r50 = pct(self.tool_ms, 50), pct(self.store_ms, 50), pct(self.raw_ms, 50)
        return (
            f'| {corpus} | {self.store} | {self.what} | {t50:.2f} / {pct(self.tool_ms, 95):.2f} | {s50:.2f} '
            f'| {r50:.2f} / {pct(self.raw_ms, 95):.2f} | {t50 / r50:.2f}x | {s50 / pct(self.store_raw_ms, 50):.2f}x '
            f'| {self.note} |'
        )


async def _settled(out: Any) -> Any:
    return await out if inspect.isawaitable(out) else out


async def _timed_tool(rag: ToolishRag[None], tool: str, args: list[dict[str, Any]], raw: Call | None) -> Alternated:
    """One untimed call of each side (first calls pay one-off costs: caches, indexes), then `tool_latency`."""
    await rag.run_tool(tool, args[0])
    if raw is not None:
        await _settled(raw(args[0]))
    return await tool_latency(rag, tool, args, raw)


async def check_answers(store: Any, raw: Raw, corpus: Corpus, later: int) -> None:
    """The raw calls answer the same questions as the store: same page ids, counts and section reads."""
    scope = F.eq('tenant', TENANT)
    for offset in (0, later):
        got = await store.document_page(DocumentPageRequest(scope, offset=offset, limit=PAGE))
        page, total = await _settled(raw.list_documents(offset))
        mine = [(d.id, d.title, d.chunk_count, d.section_count, d.metadata) for d in got.documents]
        assert (mine, got.total) == (page, total), f'{type(store).__name__} list page {offset} differs from raw'
    doc_id, section_id = corpus.reference_sections[0]
    read = await store.read_section(SectionReadRequest(section_id, doc_id, scope, 0, READ_BATCH))
    rows, total = await _settled(raw.read_section(doc_id, section_id))
    assert read.total == total == 30 and len(rows) == len(read.chunks) == 30, (read.total, total)
    outline = await store.chunk_outlines(OutlineRequest(document_id=doc_id, filter=scope))
    assert len(outline) == len(await _settled(raw.outline(doc_id))) == 40


@dataclass(frozen=True)
class Measured:
    """One navigation row: the tool's arguments, the same question as a `SectionReader` call and raw."""

    what: str
    tool: str
    args: list[dict[str, Any]]
    store_call: Call
    raw_call: Call


def measured(store: Any, raw: Raw, corpus: Corpus, calls: int, total: int, later: int) -> list[Measured]:
    """The navigation rows: two list_documents pages, reads of the Reference sections, outlines of tenant documents."""
    scope = F.eq('tenant', TENANT)
    rows = [
        Measured(
            f'list_documents, {label} of {total}',
            'list_documents',
            [{'offset': offset, 'limit': PAGE}] * calls,
            lambda a: store.document_page(DocumentPageRequest(scope, offset=a['offset'], limit=PAGE)),
            lambda a: raw.list_documents(a['offset']),
        )
        for offset, label in [(0, 'first page'), *([(later, f'last page (offset {later})')] if later else [])]
    ]
    document_of = {s: d for d, s in corpus.reference_sections}
    sections = list(document_of)
    rows.append(
        Measured(
            'read_section, 30-chunk section',
            'read_section',
            [{'section': sections[i % len(sections)]} for i in range(calls)],
            lambda a: store.read_section(
                SectionReadRequest(a['section'], document_of[a['section']], scope, 0, READ_BATCH)
            ),
            lambda a: raw.read_section(document_of[a['section']], a['section']),
        )
    )
    docs = corpus.tenant_documents
    rows.append(
        Measured(
            'outline, whole document',
            'outline',
            [{'document': docs[i % len(docs)]} for i in range(calls)],
            lambda a: store.chunk_outlines(OutlineRequest(document_id=a['document'], filter=scope)),
            lambda a: raw.outline(a['document']),
        )
    )
    return rows


async def bench_navigation(name: str, loaded: Loaded, corpus: Corpus, calls: int) -> tuple[list[Row], list[str]]:
    """list_documents (two pages), read_section and outline: the tool and the store call, each beside raw."""
    store, raw = loaded.store, loaded.raw
    assert isinstance(store, SectionReader), f'{type(store).__name__} is not a SectionReader'
    rag = ToolishRag(store, name='bench', filterable={'year': int}).with_metadata_filter(F.eq('tenant', TENANT))
    total = (await store.document_page(DocumentPageRequest(F.eq('tenant', TENANT), limit=0))).total
    later = (total - 1) // PAGE * PAGE
    await check_answers(store, raw, corpus, later)
    rows: list[Row] = []
    for m in measured(store, raw, corpus, calls, total, later):
        got = await _timed_tool(rag, m.tool, m.args, m.raw_call)
        by_store = await alternate(m.store_call, m.raw_call, m.args)
        shown = sorted({len(h) for h in got.tool_out})
        note = f'the page shows {shown[0] if len(shown) == 1 else shown} chunks' if m.tool == 'read_section' else ''
        rows.append(Row(name, m.what, got.tool_ms, by_store.tool_ms, got.raw_ms, by_store.raw_ms, note))
    return rows, [f'{name} raw {tool}: {text}' for tool, text in raw.describe().items()]


def _year_filter(percent: int) -> dict[str, Any]:
    return {'year': {'lt': 2000 + percent}}


async def bench_filtered(name: str, loaded: Loaded, corpus: Corpus) -> list[str]:
    """Searches with a model-written ``filter`` at 1%, 10%, 50% of the chunks: exact top_k hits, p50."""
    rag = ToolishRag(loaded.store, name='bench', filterable={'year': int})
    tools = {'text_search': corpus.text_queries}
    if loaded.vector:
        tools = {'vector_search': corpus.vector_queries, **tools}
    lines = []
    for tool, queries in tools.items():
        for percent in SELECTIVITIES:
            in_scope = sum(c.metadata['year'] < 2000 + percent for c in corpus.chunks)  # type: ignore[operator]
            args = [{'query': q, 'top_k': TOP_K, 'filter': _year_filter(percent)} for q in queries]

            def unfiltered(a: dict[str, Any], tool: str = tool) -> Awaitable[Any]:
                return rag.run_tool(tool, {'query': a['query'], 'top_k': TOP_K})

            got = await _timed_tool(rag, tool, args, unfiltered)
            exact = sum(
                len(hits) == min(TOP_K, in_scope) and all(h.record.metadata['year'] < 2000 + percent for h in hits)
                for hits in got.tool_out
            )
            lines.append(
                f'| {corpus.name} | {name} | {tool} | {percent}% ({in_scope:,} chunks) | {len(got.tool_out)} '
                f'| {pct(got.tool_ms, 50):.2f} / {pct(got.tool_ms, 95):.2f} | {pct(got.raw_ms, 50):.2f} '
                f'| {exact}/{len(got.tool_out)} |'
            )
    return lines


# -- run ----------------------------------------------------------------------------------------


async def load(store: str, corpus: Corpus, tmp: Path) -> Loaded:
    if store == 'memory':
        return await load_memory(corpus)
    if store == 'lancedb':
        return await load_lancedb(corpus, tmp / f'lancedb-{corpus.size}')
    return await load_tantivy(corpus)


@dataclass
class Results:
    navigation: list[str] = field(default_factory=list)
    filtered: list[str] = field(default_factory=list)
    raw_notes: dict[str, str] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)


async def run(sizes: Sequence[int], stores: Sequence[str], calls: int) -> Results:
    results = Results()
    tmp = Path(tempfile.mkdtemp(prefix='navigation-bench-'))
    try:
        for size in sizes:
            start = time.perf_counter()
            corpus = synthetic(size, calls)
            print(
                f'{corpus.name}: {corpus.size:,} chunks in {len(corpus.documents):,} documents '
                f'({len(corpus.tenant_documents)} in tenant {TENANT!r}), generated in {time.perf_counter() - start:.1f} s',
                flush=True,
            )
            results.notes.append(
                f'{corpus.name}: {corpus.size:,} chunks, {len(corpus.documents):,} documents, '
                f'{len(corpus.tenant_documents)} in tenant {TENANT!r}'
            )
            for store in stores:
                loaded = await load(store, corpus, tmp)
                results.notes += [f'{corpus.name}: {n}' for n in loaded.notes]
                rows, raw_notes = await bench_navigation(store, loaded, corpus, calls)
                for note in raw_notes:
                    results.raw_notes.setdefault(note.split(':', 1)[0], note)
                lines = [r.line(corpus.name) for r in rows]
                filtered = await bench_filtered(store, loaded, corpus)
                print('\n'.join([*lines, *filtered]), flush=True)
                results.navigation += lines
                results.filtered += filtered
                if loaded.cleanup is not None:
                    await loaded.cleanup()
                del loaded
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return results


def machine() -> list[str]:
    import lancedb
    import tantivy

    gib = memory_gib()
    mem = '' if gib is None else f', {gib:.0f} GiB RAM'
    load = os.getloadavg()
    return [
        f'- machine: {cpu_model(platform.processor() or "unknown CPU")}, {os.cpu_count()} logical CPUs{mem}; '
        f'{platform.system()} {platform.release()}; load average at the start {load[0]:.1f} (shared machine)',
        f'- Python {platform.python_version()}, numpy {np.__version__}, lancedb {lancedb.__version__}, '
        f'{getattr(tantivy, "__version__", "tantivy")}',
        f'- {THREAD_NOTE}',
    ]


def report(results: Results, head: list[str], command: str, calls: int) -> str:
    lines = [
        *head,
        f'- command: `{command}`',
        f'- embedder: BagOfRandomVectors({DIMS}) (benchmarks/common.py; cheap, so ingest takes seconds); '
        f'{calls} calls per row, tool and raw alternating',
        '',
        f'Navigation, scoped to tenant {TENANT!r} (1 of {TENANTS}); ms:',
        '',
        '| corpus | store | call | tool p50 / p95 | store call p50 | raw p50 / p95 | tool/raw p50 | store/raw p50 | note |',
        '|---|---|---|---:|---:|---:|---:|---:|---|',
        *results.navigation,
        '',
        'Raw counterparts:',
        '',
        *[f'- {note}' for note in results.raw_notes.values()],
        '',
        f'Searches with a model filter (`filterable={{"year": int}}`, `filter: {{"year": {{"lt": 2000 + p}}}}`), '
        f'unscoped, top_k={TOP_K}; the same query without the filter alternates call by call with each '
        'filtered one; exact = calls that returned exactly top_k hits, all in scope; ms:',
        '',
        '| corpus | store | tool | filter selects | calls | p50 / p95 | same queries unfiltered p50 | exact |',
        '|---|---|---|---|---:|---:|---:|---:|',
        *results.filtered,
        '',
        *[f'- {note}' for note in results.notes],
        f'- peak RSS of the whole run: {peak_rss_mib():.0f} MiB',
    ]
    return '\n'.join(lines)


def write_page(block: str) -> None:
    page = DOC_PAGE.read_text(encoding='utf-8')
    head, rest = page.split(START, 1)
    _, tail = rest.split(END, 1)
    DOC_PAGE.write_text(f'{head}{START}\n{block}\n{END}{tail}', encoding='utf-8')


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument('--sizes', type=int, nargs='+', default=[5000, 100_000], help='chunks per corpus')
    parser.add_argument(
        '--stores', nargs='+', choices=['memory', 'lancedb', 'tantivy'], default=['memory', 'lancedb', 'tantivy']
    )
    parser.add_argument('--calls', type=int, default=100, help='timed calls per row')
    parser.add_argument(
        '--quick', action='store_true', help='one tiny corpus, few calls (a smoke test); writes no page'
    )
    parser.add_argument('--no-write', action='store_true', help=f'do not update {DOC_PAGE.relative_to(ROOT)}')
    a = parser.parse_args()
    sizes, calls = ([800], 5) if a.quick else (a.sizes, a.calls)
    command = ' '.join(['.venv/bin/python', 'benchmarks/navigation_bench.py', *sys.argv[1:]])
    head = machine()
    print(f'# navigation_bench: {", ".join(synthetic_name(s) for s in sizes)}; stores: {", ".join(a.stores)}')
    print('\n'.join(head), flush=True)
    results = asyncio.run(run(sizes, a.stores, calls))
    block = report(results, head, command, calls)
    print('\n' + block)
    if not a.quick and not a.no_write:
        write_page(block)
        print(f'\nwritten to {DOC_PAGE.relative_to(ROOT)}')


if __name__ == '__main__':
    main()
