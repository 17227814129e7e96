"""The scope contract, checked on direct calls to a store's protocol methods.

The `Retriever` re-checks every hit, so a leaky store looks right through it: these checks call the
store itself with exactly the filter the contract says it receives (`received_filter`), and return
one problem line per broken call. See docs/testing.md ("The conformance kit").
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Collection, Iterable, Sequence
from dataclasses import dataclass

from ..content import Chunk, Document, Entity
from ..errors import ToolishRagError
from ..filters import Filter, matches
from ..protocols import (
    DocumentStore,
    FilterPushdown,
    HybridSearch,
    RegexSearch,
    ResultExpander,
    TextSearch,
    VectorSearch,
)
from ..retriever import Retriever
from ..search import ExpansionRequest, RegexRequest, SearchHit, SearchRequest
from ._corpus import version_of, versioned_document

__all__ = [
    'SearchProbe',
    'expand_problems',
    'expansion_problems',
    'get_records_problems',
    'mixed_version_problems',
    'received_filter',
    'reference_expand',
    'search_problems',
]

_Search = Callable[[int, Filter | None], Awaitable[Sequence[SearchHit]]]


def received_filter(store: object, f: Filter | None) -> Filter | None:
    """The filter a store receives for scope ``f``: ``f`` if it pushes it down, else ``None``."""
    if f is not None and isinstance(store, FilterPushdown) and store.supports_filter(f):
        return f
    return None


@dataclass(frozen=True, slots=True)
class SearchProbe:
    """A query and a regex pattern that every record of the store matches.

    With them, the records a search may return are exactly the records the filter accepts,
    so "``top_k`` hits whenever that many match" has one answer for every search mode.
    """

    query: str
    pattern: str

    def searches(self, store: object, only: Collection[type] | None = None) -> dict[str, _Search]:
        """Each search the store offers (among ``only``, if given), as ``(top_k, filter) -> hits``."""
        calls: dict[str, _Search] = {}

        def chosen(protocol: type) -> bool:
            return only is None or protocol in only

        if isinstance(store, VectorSearch) and chosen(VectorSearch):
            calls['vector_search'] = lambda k, f: store.vector_search(SearchRequest(self.query, k, f))
        if isinstance(store, TextSearch) and chosen(TextSearch):
            calls['text_search'] = lambda k, f: store.text_search(SearchRequest(self.query, k, f))
        if isinstance(store, RegexSearch) and chosen(RegexSearch):
            calls['regex_search'] = lambda k, f: store.regex_search(RegexRequest(self.pattern, k, f))
        if isinstance(store, HybridSearch) and chosen(HybridSearch):
            calls['hybrid_search'] = lambda k, f: store.hybrid_search(SearchRequest(self.query, k, f))
        return calls


def _outside(records: Sequence[Chunk | Entity], f: Filter | None) -> list[str]:
    return [r.id for r in records if not matches(f, r)]


async def search_problems(
    store: object,
    f: Filter | None,
    records: Sequence[Chunk | Entity],
    probe: SearchProbe,
    top_ks: Sequence[int],
    *,
    only: Collection[type] | None = None,
) -> list[str]:
    """Call every search the store offers (among ``only``) directly, for each ``top_k``; what broke the contract.

    ``records`` is everything the store holds, and every one of them matches ``probe``.
    """
    sent = received_filter(store, f)
    matching = {r.id for r in records if matches(sent, r)}
    problems: list[str] = []
    for method, search in probe.searches(store, only).items():
        for top_k in top_ks:
            call = f'{method}(top_k={top_k}, filter={sent!r})'
            hits = list(await search(top_k, sent))
            ids = [h.id for h in hits]
            outside = _outside([h.record for h in hits], sent)
            if outside:
                problems.append(
                    f'{call} returned {len(outside)} records outside the filter: {sorted(outside)}; every hit '
                    'must satisfy the filter the store receives'
                )
            if len(hits) > top_k:
                problems.append(f'{call} returned {len(hits)} hits: at most top_k')
            if len(set(ids)) != len(ids):
                problems.append(f'{call} returned a record twice: {ids}; each record at most once')
            found = set(ids) & matching
            if len(found) < min(top_k, len(matching)):
                missing = sorted(matching - found) if top_k >= len(matching) else []
                problems.append(
                    f'{call} returned {len(found)} matching records; {len(matching)} records match the query and '
                    f'the filter, so it must return {min(top_k, len(matching))} (top_k whenever that many match)'
                    f'{f"; missing {missing}" if missing else ""}'
                )
    return problems


async def expansion_problems(
    store: object, f: Filter | None, documents: Sequence[Document], entities: Sequence[Entity]
) -> list[str]:
    """Call ``get_records`` and ``expand`` directly; what broke the contract.

    ``documents`` and ``entities`` are everything the store holds.
    """
    if not isinstance(store, ResultExpander):
        return []
    records: list[Chunk | Entity] = [*(c for d in documents for c in d.chunks), *entities]
    return [*await get_records_problems(store, f, records), *await expand_problems(store, f, documents, entities)]


def reference_expand(documents: Iterable[Document], request: ExpansionRequest) -> list[Chunk]:
    """What a store holding ``documents`` answers to ``request``, by the reference semantics."""
    chunks = sorted((c for d in documents for c in d.chunks), key=lambda c: c.sequence_number)
    if request.around is not None:
        anchor = next((c for c in chunks if c.id == request.around), None)
        if anchor is None and request.enclosing_section:
            anchor = next((c for c in chunks if request.around in c.section_ids), None)
        if anchor is None:
            return []
        request = request.window(anchor)
    return [c for c in chunks if request.holds(c) and matches(request.filter, c)][: request.limit]


def _expansion_cases(
    documents: Sequence[Document], entities: Sequence[Entity], sent: Filter | None
) -> list[ExpansionRequest]:
    """Plain requests (whole document, range, ``limit``, each section alone) and anchored ones.

    The anchored ones: neighbours and the enclosing section of a chunk inside a nested section,
    the enclosing section of a document's first chunk with ``limit``, the parent of a nested
    section and of a top-level one (the whole document), and ids that name no chunk or section.
    """
    cases: list[ExpansionRequest] = []
    for doc in documents:
        cases += [
            ExpansionRequest(document_id=doc.id, filter=sent),
            ExpansionRequest(document_id=doc.id, first=2, last=5, filter=sent),
            ExpansionRequest(document_id=doc.id, limit=2, filter=sent),
            *(ExpansionRequest(section_id=s.id, filter=sent) for s in doc.sections),
        ]
        nested = next((c for c in doc.chunks if len(c.section_ids) > 1), doc.chunks[-1])
        cases += [
            ExpansionRequest.around_chunk(nested.id, 2, 1, filter=sent),
            ExpansionRequest.enclosing(nested.id, filter=sent),
            ExpansionRequest.enclosing(doc.chunks[0].id, filter=sent, limit=1),
            *(ExpansionRequest.enclosing(sid, filter=sent) for sid in nested.section_ids),
        ]
    unknown = [*(e.id for e in entities[:1]), 'no-such-record']
    cases += [ExpansionRequest.around_chunk(rid, 1, 1, filter=sent) for rid in unknown]
    cases += [ExpansionRequest.enclosing(rid, filter=sent) for rid in unknown]
    return cases


async def expand_problems(
    store: ResultExpander, f: Filter | None, documents: Sequence[Document], entities: Sequence[Entity] = ()
) -> list[str]:
    """Each `_expansion_cases` request under the filter the store receives, against `reference_expand`."""
    sent = received_filter(store, f)
    problems: list[str] = []
    for request in _expansion_cases(documents, entities, sent):
        want = reference_expand(documents, request)
        got = list(await store.expand(request))
        if [c.id for c in got] != [c.id for c in want]:
            outside = _outside(got, sent)
            problems.append(
                f'expand({request!r}) returned {[c.id for c in got]}, expected {[c.id for c in want]} '
                '(reference_expand: the in-scope chunks of the range, section or anchor window, at most limit)'
                f'{f"; {len(outside)} outside the filter: {outside}" if outside else ""}'
            )
    return problems


async def get_records_problems(store: ResultExpander, f: Filter | None, records: Sequence[Chunk | Entity]) -> list[str]:
    """All ids at once (plus one that does not exist), then one inside and one outside the filter alone."""
    sent = received_filter(store, f)
    problems: list[str] = []
    inside = next((r for r in records if matches(sent, r)), None)
    outside = next((r for r in records if not matches(sent, r)), None)
    asks = [[*(r.id for r in records), 'no-such-record'], *([r.id] for r in (inside, outside) if r is not None)]
    by_id = {r.id: r for r in records}
    for ids in asks:
        want = {i for i in ids if i in by_id and matches(sent, by_id[i])}
        got = list(await store.get_records(ids, filter=sent))
        got_ids = {r.id for r in got}
        if got_ids != want or len(got) != len(got_ids):
            shown = 'all ids' if len(ids) > 1 else repr(ids)
            leaked = _outside(got, sent)
            problems.append(
                f'get_records({shown}, filter={sent!r}) returned extra {sorted(got_ids - want)}, missing '
                f'{sorted(want - got_ids)}{f" ({len(leaked)} outside the filter)" if leaked else ""}'
                f'{" and a record twice" if len(got) != len(got_ids) else ""}: it returns each stored record '
                'asked for that satisfies the filter, once'
            )
    return problems


_MAX_PROBLEMS = 20


async def _through_retriever(retriever: Retriever, request: ExpansionRequest) -> tuple[str, list[str], list[Chunk]]:
    """``Retriever.section`` or ``neighbours`` for an anchored request: the call, every text shown, the chunks."""
    around = request.around
    assert around is not None
    if request.enclosing_section:
        view = await retriever.section(around, request.limit)
        if view is None:
            return f'Retriever.section({around!r})', [], []
        texts = [view.document_title, *view.section_path, *(c.urtext for c in view.chunks)]
        return f'Retriever.section({around!r})', texts, list(view.chunks)
    found = await retriever.neighbours(around, request.before)
    if found is None:
        return f'Retriever.neighbours({around!r})', [], []
    anchor, chunks = found
    return (
        f'Retriever.neighbours({around!r})',
        [anchor.document_title, *anchor.section_path, *(c.urtext for c in chunks)],
        chunks,
    )


def _version_problems(call: str, versions: set[int], got: Sequence[Chunk], request: ExpansionRequest) -> list[str]:
    """What is wrong with an answer whose texts carry ``versions``: several versions, none, or another window."""
    if len(versions) != 1:
        return [f'{call} mixed versions {sorted(versions)}' if versions else f'{call} found nothing']
    want = [c.id for c in reference_expand([versioned_document(min(versions))], request)]
    if [c.id for c in got] != want:
        return [
            f'{call} returned {[c.id for c in got]} in version {min(versions)}, which gives {want} '
            '(a window computed from an anchor of another version)'
        ]
    return []


async def mixed_version_problems(store: object, *, writes: int = 12, seconds: float = 5.0) -> list[str]:
    """Rewrite `versioned_document` while two readers expand around it; every answer that mixed versions.

    A writer upserts versions 1, 2, ... of the document (same chunk ids and count) and yields to
    the readers after each write; it stops after ``writes`` upserts or ``seconds``, whichever
    comes first. Until it stops, the readers call anchored `expand` requests directly and
    ``neighbours``/``section`` through a `Retriever`, in turn. Every answer must come from one
    version: one version tag in all its text (chunks, title, section titles) and exactly the
    window that version gives, which a window computed from another version's anchor misses
    (the sections move between versions). A store reading the anchor and its window at two
    moments fails this, as soon as a write lands in between.
    """
    assert isinstance(store, ResultExpander) and isinstance(store, DocumentStore), (
        f'{type(store).__name__} must be a ResultExpander and a DocumentStore for this check'
    )
    first = versioned_document(0)
    await store.upsert([first])
    ids = [c.id for c in first.chunks]
    moving = [ExpansionRequest.enclosing(ids[5]), ExpansionRequest.enclosing(first.sections[1].id)]
    requests = [
        ExpansionRequest.around_chunk(ids[6], 2, 2),
        *moving,
        ExpansionRequest.enclosing(ids[2]),
        *moving,
        ExpansionRequest.enclosing(first.sections[0].id),
    ]  # odd in number, so each is read both directly and through the Retriever
    retriever = Retriever(store)
    problems: list[str] = []
    seen: set[int] = set()

    def check(call: str, texts: Sequence[str], got: Sequence[Chunk], request: ExpansionRequest) -> None:
        versions = {v for t in texts for v in version_of(t)}
        seen.update(versions)
        problems.extend(_version_problems(call, versions, got, request))

    async def read(turn: int) -> None:
        while not writer.done():
            request = requests[turn % len(requests)]
            if turn % 2:
                got = list(await store.expand(request))
                check(f'expand({request!r})', [c.urtext for c in got], got, request)
            else:
                try:
                    check(*await _through_retriever(retriever, request), request)
                except ToolishRagError as e:  # the Retriever refuses an answer outside its anchor's window
                    problems.append(f'through the Retriever, around {request.around!r}: {e}')
            turn += 1
            await asyncio.sleep(0)  # a yield, no delay: the writer gets in between two reads

    async def write() -> None:
        deadline = asyncio.get_running_loop().time() + seconds
        for version in range(1, writes + 1):
            if asyncio.get_running_loop().time() > deadline:
                break
            await store.upsert([versioned_document(version)])
            await asyncio.sleep(0)  # a yield, no delay: the readers get in between two writes

    writer = asyncio.create_task(write())
    await asyncio.gather(writer, read(0), read(3))
    if len(seen) < 2:
        problems.append(
            f'the readers saw only versions {sorted(seen)}: no read overlapped a write, so nothing was checked '
            '(each read must see the version the last completed upsert wrote)'
        )
    if len(problems) > _MAX_PROBLEMS:
        problems[_MAX_PROBLEMS:] = [f'... and {len(problems) - _MAX_PROBLEMS} more']
    return problems
