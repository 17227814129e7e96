"""The search tools: ``vector_search``, ``text_search``, ``hybrid_search`` and ``regex_search``.

The three ranked searches differ only in their `RankedSearch` (which search, what its score means);
they share reranking (`ranked`, `grouped`) with the eager search. See docs/concepts.md.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from functools import partial
from typing import Annotated, Any, Literal, TypeAlias

from pydantic import Field

from ..._store_attributes import regex_scan_limit_of, text_analyzer_of
from ..._tool_names import ToolName
from ...errors import InvalidRequestError
from ...grouping import DocumentGroup, group_hits
from ...protocols import StoreFeatures, StoreLike, TextSearch
from ...rerank._base import Reranked, rerank_or_keep
from ...retriever import Retriever
from ...search import SearchHit
from ...stores.federated import Federated
from ...tracing import RERANKED
from .._arguments import MAX_PATTERN_CHARS, StringArgument
from .._render import quoted, render_hits
from .._render_navigation import render_groups
from .._settings import RagSettings
from .._spec import Declared, Found, Param, ToolEnv, ToolSpec
from ._shared import filter_param, no_results, query_param, top_k_param

__all__ = ['SPECS', 'RankedSearch', 'Search', 'best_search', 'mark', 'ranked']

# Parameters whose name and the tool's description say it all carry no description of their own
# (every request carries the schemas); what every search shares is said once, in the instructions.
Search: TypeAlias = Callable[[Retriever], Callable[[str, int], Awaitable[list[SearchHit]]]]
"""A ranked search, picked from a retriever (``lambda r: r.hybrid_search``)."""

_GROUP_BY = StringArgument(
    len('document'),
    empty='group_by is empty: send "document", or leave it out',
    too_long='group_by takes only "document": send that, or leave it out',
)
_SOURCE = StringArgument(
    32,
    empty='a source name is empty: send names from the tool description, or leave sources out',
    too_long='a source name is at most 32 characters: send names from the tool description, or leave sources out',
)
_SOURCES = 'Search only these sources (see the description).'
_PATTERN = StringArgument(
    MAX_PATTERN_CHARS,
    empty='the pattern is empty: send a regular expression such as ERR-[0-9]{4}',
    too_long=(
        f'the pattern is over {MAX_PATTERN_CHARS} characters: send a short regular expression, '
        'such as the one distinctive term or code you are looking for'
    ),
    strip=False,
)


@dataclass(frozen=True, slots=True)
class RankedSearch:
    """What distinguishes the vector, text and hybrid tools: their search and their score's meaning."""

    name: ToolName
    label: str
    search: Search
    low: float
    """The lowest meaningful threshold (the highest is 1)."""
    meaning: str
    relative: bool
    """Whether the threshold is a fraction of the best hit's score rather than an absolute score."""
    offered: Callable[[StoreFeatures], bool]


_VECTOR = RankedSearch(
    'vector_search', 'Vector', lambda r: r.vector_search, -1.0, 'a cosine similarity', False, lambda c: c.vector
)
_TEXT = RankedSearch(
    'text_search', 'Text', lambda r: r.text_search, 0.0, "a fraction of the best hit's score", True, lambda c: c.text
)
_HYBRID = RankedSearch(
    'hybrid_search', 'Hybrid', lambda r: r.hybrid_search, 0.0, 'a fused relevance score', False, lambda c: c.hybrid
)


def best_search(caps: StoreFeatures) -> Search | None:
    """The best search a store has (hybrid, else vector, else text): eager searches and graph seeds use it."""
    return next((s.search for s in (_HYBRID, _VECTOR, _TEXT) if s.offered(caps)), None)


def mark(found: Reranked) -> str:
    """What a results heading adds when the hits carry the reranker's scores."""
    return ', reranked' if found.reranked else ''


async def ranked(r: Retriever, search: Search, query: str, top_k: int, settings: RagSettings) -> Reranked:
    """The ``top_k`` best hits of ``search``: with a reranker, the best of ``rerank_candidates`` hits reranked.

    The candidates come through ``r``, the run's scoped retriever: the reranker sees only in-scope hits.
    """
    reranker = settings.reranker
    if reranker is None:
        return Reranked(await search(r)(query, top_k), reranked=False)
    candidates = await search(r)(query, max(top_k, settings.rerank_candidates))
    outcome = await rerank_or_keep(reranker, query, candidates)
    return Reranked(outcome.hits[:top_k], outcome.reranked)


async def grouped(
    r: Retriever, search: Search, query: str, top_k: int, settings: RagSettings
) -> tuple[list[DocumentGroup], bool]:
    """The ``top_k`` best documents' groups, and whether they were reranked.

    With a reranker, the candidates are reranked before grouping, so a document ranks by its best
    reranked chunk. When the candidates span fewer than ``top_k`` documents and the store holds
    more, the best hit of each further document (from the grouped search) joins the candidates,
    so ``top_k`` documents come back whenever that many match, as without a reranker.
    """
    reranker = settings.reranker
    if reranker is None:
        return await r.grouped(search, query, top_k), False
    n = max(top_k, settings.rerank_candidates)
    candidates = await search(r)(query, n)
    seen = {g.key for g in group_hits(candidates)}
    if len(seen) < top_k and len(candidates) == n:
        candidates += [g.best for g in await r.grouped(search, query, top_k) if g.key not in seen]
    outcome = await rerank_or_keep(reranker, query, candidates)
    if not outcome.reranked:
        return await r.grouped(search, query, top_k), False
    return group_hits(outcome.hits)[:top_k], True


def _check_threshold(threshold: float | None, low: float, high: float, meaning: str) -> None:
    if threshold is not None and not low <= threshold <= high:
        raise InvalidRequestError(
            f'threshold must be between {low} and {high} ({meaning}); you sent {threshold}. '
            'Omit it to get the best matches whatever their score.'
        )


def _apply_threshold(hits: list[SearchHit], threshold: float | None, *, relative: bool) -> list[SearchHit]:
    if threshold is None or not hits:
        return hits
    if relative:
        best = hits[0].score
        return [h for h in hits if best > 0 and h.score / best >= threshold]
    return [h for h in hits if h.score >= threshold]


async def _ranked_body(
    r: Retriever,
    kind: RankedSearch,
    settings: RagSettings,
    *,
    query: str,
    top_k: int,
    threshold: float | None,
    filter: Mapping[str, Any] | None = None,
    group_by: str | None = None,
    sources: list[str] | None = None,
) -> Found:
    """One vector, text or hybrid search call (the scope, the model's ``filter`` and ``sources`` are in ``r``)."""
    reranker = settings.reranker
    if reranker is None:
        _check_threshold(threshold, kind.low, 1.0, kind.meaning)
    else:
        _check_threshold(threshold, 0.0, 1.0, reranker.score_meaning)
    if group_by == 'document':
        groups, reranked = await grouped(r, kind.search, query, top_k, settings)
        found = Reranked([g.best for g in groups], reranked)
    else:
        groups, found = [], await ranked(r, kind.search, query, top_k, settings)
    attributes = {RERANKED: found.reranked} if reranker is not None else {}
    if not found.hits:
        return Found(await no_results(r, filter is not None or sources is not None), [], attributes)
    # A reranked score is absolute (the reranker's, in [0, 1]); failed open, the search's own meaning holds.
    hits = _apply_threshold(found.hits, threshold, relative=kind.relative and not found.reranked)
    heading = f'{kind.label} search results for {quoted(query)}{mark(found)}:'
    if group_by == 'document':
        kept = {id(h) for h in hits}
        groups = [g for g in groups if id(g.best) in kept]
        return Found(render_groups(groups, heading=heading), [g.best for g in groups], attributes)
    return Found(render_hits(hits, heading=heading), hits, attributes)


def _sources_param(env: ToolEnv) -> tuple[Param, ...]:
    """``sources``: over a federation only (the members it searches are named in the description)."""
    if not isinstance(env.store, Federated):
        return ()
    sources = Annotated[list[Annotated[str, _SOURCE]] | None, Field(description=_SOURCES)]
    return (Param('sources', sources, None),)


def _ranked_tool(kind: RankedSearch) -> Callable[[ToolEnv], Declared]:
    def build(env: ToolEnv) -> Declared:
        settings = env.settings
        grouping = (Param('group_by', Annotated[Literal['document'], _GROUP_BY] | None, None),)
        parameters = (
            query_param(settings),
            top_k_param(settings),
            Param('threshold', float | None, None),
            *filter_param(env),
            *(grouping if settings.allow_grouping else ()),
            *_sources_param(env),
        )
        return Declared(parameters, partial(_ranked_body, kind=kind, settings=settings))

    return build


async def _regex_body(r: Retriever, *, pattern: str, top_k: int, **narrowing: Any) -> Found:
    """One regex search call; ``narrowing``: the model's ``filter`` and ``sources`` (already in ``r``), if sent."""
    hits = await r.regex_search(pattern, top_k)
    if not hits:
        return Found(await no_results(r, any(v is not None for v in narrowing.values())), [])
    return Found(render_hits(hits, heading=f'Regex matches for {quoted(pattern)}:'), hits)


def _regex_tool(env: ToolEnv) -> Declared:
    parameters = (
        Param('pattern', Annotated[str, _PATTERN]),
        top_k_param(env.settings),
        *filter_param(env),
        *_sources_param(env),
    )
    return Declared(parameters, _regex_body)


def _reranked(s: RagSettings) -> str:
    """The sentence a ranked search's description ends with when a reranker is set."""
    if s.reranker is None:
        return ''
    return (
        f' Results are reranked: the best {s.rerank_candidates} matches (or top_k, if more) are re-scored and the top_k best '
        f'returned. When the results heading says "reranked", the score is {s.reranker.score_meaning}, from 0 to 1 '
        '(threshold 0-1); otherwise reranking was unavailable and the score is as above.'
    )


def _query_syntax(store: StoreLike) -> str:
    syntax = store.text_query_syntax if isinstance(store, TextSearch) else ''
    analyzer = text_analyzer_of(store)
    if analyzer is not None and analyzer.language != 'en':
        # What the words become (bigrams, stems) decides how to phrase a query; the English default's
        # syntax says it itself, so the default description does not change.
        syntax = f'{syntax} {analyzer.describe()}'
    return syntax


# What every search returns, and what ``threshold`` does, is said once, in the instructions
# (`toolish_rag.toolset._instructions`); each description says what its own score means.
def _describe_vector(store: StoreLike, s: RagSettings) -> str:
    return (
        'Semantic search: passages that mean the same as the query, even in other words. Best for questions '
        'and concepts; write a short statement or question. '
        'Score: cosine similarity, -1 to 1 (above about 0.5 is usually relevant).' + _reranked(s)
    )


def _describe_text(store: StoreLike, s: RagSettings) -> str:
    return (
        'Keyword search (BM25): passages containing the query words. Best for exact names, identifiers, error '
        f'codes and rare terms. Query syntax: {_query_syntax(store)} '
        "Score: BM25, unbounded; threshold (0-1) is a fraction of the best hit's score." + _reranked(s)
    )


def _describe_hybrid(store: StoreLike, s: RagSettings) -> str:
    return (
        'Semantic and keyword search combined: usually the best first search. '
        'Score: fused relevance, 0 to 1.' + _reranked(s)
    )


def _describe_regex(store: StoreLike, s: RagSettings) -> str:
    return (
        'Regular-expression search (RE2: no backreferences or lookaround) over the exact source text, for '
        'error codes (ERR-[0-9]{4}), versions (v[0-9]+\\.[0-9]+) or identifiers; (?i) ignores case. '
        'Score: number of matches (most first).' + _scan_limit(store, s)
    )


def _scan_limit(store: StoreLike, s: RagSettings) -> str:
    """The store's regex scan limit (`toolish_rag.protocols.HasRegexScanLimit`, if it states one) and the ways under it."""
    limit = regex_scan_limit_of(store)
    if limit is None:
        return ''
    narrow = 'a filter, ' if s.filterable is not None else ''
    return (
        f' A pattern that selects more than {limit:,} records here is refused (matches are counted in every one): '
        f'narrow it with {narrow}a more distinctive pattern (a case-sensitive literal selects fewer than (?i)), '
        'or find the passages with text_search.'
    )


def _with_sources(describe: Callable[[StoreLike, RagSettings], str]) -> Callable[[StoreLike, RagSettings], str]:
    """``describe``, and for a federation the sources it searches together (only those this store can see)."""

    def described(store: StoreLike, s: RagSettings) -> str:
        text = describe(store, s)
        if not isinstance(store, Federated):
            return text
        listed = '; '.join(f'{name} ({about})' if about else name for name, about in store.descriptions.items())
        return (
            f'{text} Searches these sources together, each hit naming its source: {listed}. '
            'sources (optional) narrows the search to some of them.'
        )

    return described


def _ranked_spec(kind: RankedSearch, describe: Callable[[StoreLike, RagSettings], str]) -> ToolSpec:
    return ToolSpec(
        name=kind.name,
        offered=lambda caps, settings: kind.offered(caps),
        describe=_with_sources(describe),
        build=_ranked_tool(kind),
    )


SPECS: tuple[ToolSpec, ...] = (
    _ranked_spec(_VECTOR, _describe_vector),
    _ranked_spec(_TEXT, _describe_text),
    _ranked_spec(_HYBRID, _describe_hybrid),
    ToolSpec(
        name='regex_search',
        offered=lambda caps, settings: caps.regex,
        describe=_with_sources(_describe_regex),
        build=_regex_tool,
    ),
)
"""The search tools' specs."""
