"""The scope contract, checked on direct calls to a store's protocol methods.

The conformance kit's end-to-end checks go through the `Retriever`, and the Retriever
re-checks every hit against the filter and re-queries when a store leaks: so a store that
ignores a filter still *looks* right there. These checks call the store itself, with exactly
the filter the contract says it receives (`toolish_rag.protocols`):

* when ``isinstance(store, FilterPushdown)`` and ``store.supports_filter(f)``, the store
  receives ``f`` and must honour it exactly: every record it returns satisfies ``f`` under
  the reference semantics, a search returns ``top_k`` hits whenever that many matching
  records exist, ``get_records`` returns exactly the matching records asked for, and
  ``expand`` exactly the matching chunks of the range or section (``limit`` counting only
  those);
* otherwise it receives ``filter=None`` and must return what it holds (the core filters),
  so the same checks run with ``None``: ``top_k`` hits whenever that many records exist.

Each function returns a list of problems, one line per broken call naming the method and
its arguments, so a test can run many calls and report every one that failed.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass

from ..content import Chunk, Document, Entity
from ..filters import Filter, matches
from ..protocols import FilterPushdown, HybridSearch, RegexSearch, ResultExpander, TextSearch, VectorSearch
from ..search import ExpansionRequest, RegexRequest, SearchHit, SearchRequest

__all__ = [
    'SearchProbe',
    'expand_problems',
    'expansion_problems',
    'get_records_problems',
    'received_filter',
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

    def searches(self, store: object) -> dict[str, _Search]:
        """Each search the store offers, as ``(top_k, filter) -> hits``."""
        calls: dict[str, _Search] = {}
        if isinstance(store, VectorSearch):
            calls['vector_search'] = lambda k, f: store.vector_search(SearchRequest(self.query, k, f))
        if isinstance(store, TextSearch):
            calls['text_search'] = lambda k, f: store.text_search(SearchRequest(self.query, k, f))
        if isinstance(store, RegexSearch):
            calls['regex_search'] = lambda k, f: store.regex_search(RegexRequest(self.pattern, k, f))
        if isinstance(store, HybridSearch):
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
) -> list[str]:
    """Call every search the store offers directly, for each ``top_k``; what broke the contract.

    ``records`` is everything the store holds, and every one of them matches ``probe``.
    """
    sent = received_filter(store, f)
    matching = {r.id for r in records if matches(sent, r)}
    problems: list[str] = []
    for method, search in probe.searches(store).items():
        for top_k in top_ks:
            call = f'{method}(top_k={top_k}, filter={sent!r})'
            hits = list(await search(top_k, sent))
            ids = [h.id for h in hits]
            outside = _outside([h.record for h in hits], sent)
            if outside:
                problems.append(f'{call} returned {len(outside)} records outside the filter: {sorted(outside)}')
            if len(hits) > top_k:
                problems.append(f'{call} returned {len(hits)} hits, more than top_k')
            if len(set(ids)) != len(ids):
                problems.append(f'{call} returned a record twice: {ids}')
            found = set(ids) & matching
            if len(found) < min(top_k, len(matching)):
                missing = sorted(matching - found) if top_k >= len(matching) else []
                problems.append(
                    f'{call} returned {len(found)} matching records where {min(top_k, len(matching))} '
                    f'exist (of {len(matching)} matching){f"; missing {missing}" if missing else ""}'
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
    return [*await get_records_problems(store, f, records), *await expand_problems(store, f, documents)]


async def expand_problems(store: ResultExpander, f: Filter | None, documents: Sequence[Document]) -> list[str]:
    """Each document whole, a sequence range, a ``limit``, and each section alone, under the filter."""
    sent = received_filter(store, f)
    problems: list[str] = []
    for doc in documents:
        in_scope = sorted((c for c in doc.chunks if matches(sent, c)), key=lambda c: c.sequence_number)
        cases: list[tuple[ExpansionRequest, list[Chunk]]] = [
            (ExpansionRequest(document_id=doc.id, filter=sent), in_scope),
            (
                ExpansionRequest(document_id=doc.id, first=2, last=5, filter=sent),
                [c for c in in_scope if 2 <= c.sequence_number <= 5],
            ),
            (ExpansionRequest(document_id=doc.id, limit=2, filter=sent), in_scope[:2]),
            *(
                (ExpansionRequest(section_id=s.id, filter=sent), [c for c in in_scope if s.id in c.section_ids])
                for s in doc.sections
            ),
        ]
        for request, want in cases:
            got = list(await store.expand(request))
            if [c.id for c in got] != [c.id for c in want]:
                outside = _outside(got, sent)
                problems.append(
                    f'expand({request!r}) returned {[c.id for c in got]}, expected {[c.id for c in want]}'
                    f'{f" ({len(outside)} outside the filter: {outside})" if outside else ""}'
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
                f'get_records({shown}, filter={sent!r}): extra {sorted(got_ids - want)}, missing '
                f'{sorted(want - got_ids)}{f" ({len(leaked)} outside the filter)" if leaked else ""}'
            )
    return problems
