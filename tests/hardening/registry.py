"""How the hardening tests call each tool: a registry of argument generators, and hostile values.

`REGISTRY` maps every tool's short name to a `ToolArguments`: one valid baseline call
(naming every parameter), a hypothesis strategy of the arguments a model plausibly sends
(mostly valid, some out of range, ids of both tenants and ids that do not exist; for the
navigation tools also titles and parts of titles of both tenants; for ``verify_citations``
claims citing chunks of both tenants and unknown ids, with real, edited and made-up quotes; for
``graph_context`` lists of node ids of both tenants, edge types valid and not, budgets in and out
of range), and which parameters hold record ids or names (also inside a parameter: a claim's chunk
id, the first of ``graph_context``'s ids). The toolset under test declares `FILTERABLE` keys and allows grouping, so
the model's ``filter``, ``group_by`` and ``list_values`` are exercised too. The tests take the
tools to call from what each store offers (``rag.tool_definitions()``), look each one up here,
and fail when one is missing or when its parameters differ from the baseline's: a tool or
parameter added later cannot slip past the scope and hostile-argument checks unexercised.

`HOSTILE` holds the hostile values, in named classes (issue 12's list). `hostile_cases`
puts each value into each parameter of each offered tool in turn (and into each named place
inside one, `ToolArguments.nested`), the other arguments staying at the baseline; free-text
classes are also sent embedded in an ordinary query.
`hostile_scopes` builds scope filters around hostile values (the values a deployer takes
from a request, such as a tenant name, reach the store inside the scope filter).
"""

from __future__ import annotations

import decimal
import json
import random
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Any, TypeAlias

from hypothesis import strategies as st
from pydantic_ai.messages import ToolReturn

from toolish_rag import PropertyFilter as F, parse_filter
from toolish_rag.content import RELATION_TYPE_PATTERN, Chunk, Document
from toolish_rag.errors import echo
from toolish_rag.filters import Filter, and_
from toolish_rag.search import ID_RULE
from toolish_rag.sections import MAX_PAGE_LIMIT
from toolish_rag.toolset._tools import ToolSpec
from toolish_rag.toolset._tools.citations import NOT_FOUND

from .corpus import FOREIGN_NAME_PARTS, FOREIGN_TENANT, SCOPE, SCOPE_TENANT, Corpus, describe

__all__ = [
    'FILTERABLE',
    'HOSTILE',
    'REGISTRY',
    'HostileCase',
    'HostileClass',
    'HostileScope',
    'ToolArguments',
    'hostile_cases',
    'hostile_scopes',
    'sample_per_class',
    'specs_without_cases',
    'tool_calls',
    'tool_rounds',
]

# -- the registry of argument generators -----------------------------------------------------------


FILTERABLE: dict[str, type] = {'year': int, 'region': str}
"""The metadata keys the hardening toolset lets the model filter on (so ``filter`` and ``list_values`` are offered)."""

Expectation: TypeAlias = Callable[[Corpus, dict[str, Any]], str | None]
"""``'found'``, ``'not found'`` (a retry) or ``None`` (either may be right) for one call's arguments."""
Judge: TypeAlias = Callable[[Corpus, dict[str, Any], ToolReturn], list[str]]
"""What is wrong (``'<kind>: <detail>'`` each) with a tool's answer to one call's arguments."""
Place: TypeAlias = Callable[[dict[str, Any], Any], dict[str, Any]]
"""Puts a value at one place inside a tool's arguments (a copy: the arguments given are not changed)."""


@dataclass(frozen=True)
class ToolArguments:
    """How the hardening tests call one tool."""

    baseline: Callable[[Corpus], dict[str, Any]]
    """One valid call naming every parameter; hostile values replace one argument at a time."""
    strategy: Callable[[Corpus], st.SearchStrategy[dict[str, Any]]]
    """The arguments a model plausibly sends: mostly valid, some out of range, ids of both tenants."""
    id_parameters: frozenset[str] = frozenset()
    """Parameters that hold a record id or name (a foreign one must come back exactly like a missing one)."""
    expect: Expectation | None = None
    """Whether a call must find what it names; ``None``: judged by `id_parameters` as record ids."""
    nested: Mapping[str, Place] = field(default_factory=dict)
    """Places inside a parameter that take hostile values too, by name (``claims[0].citations[0].chunk_id``).

    A name may be in `id_parameters`: the hostile tests then compare a foreign id there with its missing twin.
    """
    answers_missing_ids: bool = False
    """A foreign or missing id is answered (on a line of the result), not refused with a retry."""
    judge: Judge | None = None
    """Checks of an answer beyond the scope oracle's: what it must say about the ids and values sent."""

    def with_value(self, corpus: Corpus, parameter: str, value: Any) -> dict[str, Any]:
        """The baseline call with ``value`` in ``parameter`` (or in the `nested` place of that name)."""
        baseline = self.baseline(corpus)
        if parameter in self.nested:
            return self.nested[parameter](baseline, value)
        return {**baseline, parameter: value}


_QUERIES = (
    'refund window expired',
    'globex refunds',
    'Globex shipping guide',
    'acme warranty',
    'how long do refunds take',
    'GLX-0001',
    'ACM-0001',
    'ERR-4050',
    'Boris Vance',
    'Alice Moreau',
    'password lockout',
    'parcels freight signature',
    'tenant globex',
)
_PATTERNS = (
    'ERR-[0-9]{4}',
    'ERR-40[0-4][0-9]',
    '(?i)globex',
    'GLX-[0-9]+',
    'ACM-00[0-9]{2}',
    '(?i)refund',
    'parcels?',
    '.',
    '[A-Z]{3}-[0-9]{4}',
    'Boris|Alice',
    '(?i)warranty claim',
    'Reference',
    '30 days',
    '^Keep',
    r'\d+ kg',
    '(',
    '',
    'a{0}',
)
_PADDING = st.sampled_from(['', '', '', ' ', '\n', '\t '])


def _queries(corpus: Corpus) -> st.SearchStrategy[str]:
    ids = (*corpus.scope.all, *corpus.foreign.all)
    return st.one_of(
        st.lists(st.sampled_from(corpus.words), min_size=1, max_size=4).map(' '.join),
        st.sampled_from(_QUERIES),
        st.sampled_from(ids),
        st.text(max_size=12),
    )


def _top_k() -> st.SearchStrategy[int]:
    return st.one_of(st.integers(1, 50), st.integers(1, 50), st.integers(40, 50), st.sampled_from([0, -1, 51, 500]))


def _ids(corpus: Corpus) -> st.SearchStrategy[str]:
    foreign = corpus.foreign.all
    pool = (*corpus.scope.all, *foreign, *(corpus.missing_twin(i) for i in foreign[:: len(foreign) // 8]))
    named = st.sampled_from((*pool, 'no-such-id', ''))
    return st.tuples(_PADDING, named, _PADDING).map(''.join)


_MODEL_FILTERS: tuple[dict[str, Any] | None, ...] = (
    None,
    {'year': 2023},
    {'year': {'gte': 2024}},
    {'region': 'Northwind'},
    {'region': 'Globex South'},
    {'region': {'ne': 'Northwind'}},
    {'any_of': [{'year': 2025}, {'region': 'Globex South'}]},
    {'not': {'year': 2023}},
    {'tenant': 'globex'},  # the scope's key: not declared, refused like any other
    {'year': 'recent'},
    {},
)


def _model_filters() -> st.SearchStrategy[dict[str, Any] | None]:
    """What a model sends as ``filter``: on the declared keys (globex's region too), on the scope's key, malformed."""
    return st.sampled_from(_MODEL_FILTERS)


def _ranked(low: float) -> ToolArguments:
    """The vector, text and hybrid tools: a query, ``top_k``, an optional threshold, filter and grouping."""

    def strategy(corpus: Corpus) -> st.SearchStrategy[dict[str, Any]]:
        thresholds = st.one_of(st.none(), st.floats(low, 1.0), st.sampled_from([low - 0.5, 1.5]))
        return st.fixed_dictionaries(
            {'query': _queries(corpus)},
            optional={
                'top_k': _top_k(),
                'threshold': thresholds,
                'filter': _model_filters(),
                'group_by': st.sampled_from([None, 'document', 'document', 'chunk']),
            },
        )

    return ToolArguments(
        baseline=lambda corpus: {
            'query': 'refund window',
            'top_k': 5,
            'threshold': None,
            'filter': None,
            'group_by': None,
        },
        strategy=strategy,
    )


def _regex_strategy(corpus: Corpus) -> st.SearchStrategy[dict[str, Any]]:
    patterns = st.one_of(st.sampled_from(_PATTERNS), st.sampled_from(corpus.words).map(re.escape))
    return st.fixed_dictionaries({'pattern': patterns}, optional={'top_k': _top_k(), 'filter': _model_filters()})


# -- the navigation tools: names (ids, titles, parts of titles) of both tenants ---------------------------


def _title_parts(corpus: Corpus) -> tuple[str, ...]:
    """Parts of titles: of one acme title, of several, of globex's only, of none; in other cases."""
    return ('guide', 'refunds guide', 'ACME', 'acme shipping', 'Guide 1', *FOREIGN_NAME_PARTS, 'guide 3', 'manual')


def _document_names(corpus: Corpus) -> st.SearchStrategy[str]:
    titles = (*corpus.titles(SCOPE_TENANT), *corpus.titles(FOREIGN_TENANT))
    return st.one_of(
        _ids(corpus),
        st.sampled_from(titles),
        st.sampled_from(titles).map(str.upper),
        st.sampled_from(_title_parts(corpus)),
        st.sampled_from([corpus.missing_twin(t) for t in (*corpus.titles(FOREIGN_TENANT), *FOREIGN_NAME_PARTS)]),
    )


def _section_names(corpus: Corpus) -> st.SearchStrategy[str]:
    titles = corpus.section_titles
    return st.one_of(
        _ids(corpus), st.sampled_from(titles), st.sampled_from(titles).map(str.lower), st.just('Warranty terms')
    )


def _offsets() -> st.SearchStrategy[int]:
    return st.one_of(st.integers(0, 10), st.sampled_from([-1, MAX_PAGE_LIMIT, MAX_PAGE_LIMIT + 1]))


def _list_documents_strategy(corpus: Corpus) -> st.SearchStrategy[dict[str, Any]]:
    titles = st.one_of(st.sampled_from(_title_parts(corpus)), st.sampled_from(corpus.titles(FOREIGN_TENANT)))
    return st.fixed_dictionaries(
        {},
        optional={
            'title_contains': st.one_of(st.none(), titles, st.text(max_size=6)),
            'offset': _offsets(),
            'limit': st.one_of(st.integers(1, 100), st.sampled_from([0, 101])),
            'filter': _model_filters(),
        },
    )


def _read_section_strategy(corpus: Corpus) -> st.SearchStrategy[dict[str, Any]]:
    return st.fixed_dictionaries(
        {'section': _section_names(corpus)},
        optional={'document': st.one_of(st.none(), _document_names(corpus)), 'offset': _offsets()},
    )


def _resolve_document(corpus: Corpus, name: str) -> str | None:
    """What ``name`` names in acme: ``'found'`` (one document), ``'not found'``, or ``None`` (a choice)."""
    name = name.strip()
    if not name:
        return 'not found'
    titles = corpus.titles(SCOPE_TENANT)
    if name in corpus.scope.documents or name in titles:
        return 'found'
    same = [t for t in titles if t.casefold() == name.casefold()]
    if same:
        return 'found' if len(same) == 1 else None
    parts = [t for t in titles if name.casefold() in t.casefold()]
    return 'not found' if not parts else 'found' if len(parts) == 1 else None


def _expect_outline(corpus: Corpus, arguments: dict[str, Any]) -> str | None:
    return _resolve_document(corpus, arguments['document'])


def _acme_document(corpus: Corpus, name: str) -> Document:
    name = name.strip()
    acme = [d for d in corpus.documents if d.metadata['tenant'] == SCOPE_TENANT]
    for same in (lambda d: name in (d.id, d.title), lambda d: d.title.casefold() == name.casefold()):
        found = [d for d in acme if same(d)]
        if found:
            return found[0]
    return next(d for d in acme if name.casefold() in d.title.casefold())


def _expect_read_section(corpus: Corpus, arguments: dict[str, Any]) -> str | None:
    """A bad offset, an unknown document, or a section not in acme (or not in that document) is a retry."""
    if not 0 <= arguments.get('offset', 0) <= MAX_PAGE_LIMIT:
        return 'not found'
    section = arguments['section'].strip()
    if not section:
        return 'not found'
    document = arguments.get('document')
    if document is not None:
        resolved = _resolve_document(corpus, document)
        if resolved != 'found':
            return resolved
        found = _acme_document(corpus, document)
        names = {s.id for s in found.sections} | {s.title for s in found.sections}
        return 'found' if section in names else 'not found'
    if section in corpus.scope.sections or section in corpus.scope.documents:
        return 'found'
    shared = sum(
        1 for d in corpus.documents if d.metadata['tenant'] == SCOPE_TENANT for s in d.sections if s.title == section
    )
    return 'not found' if shared == 0 else 'found' if shared == 1 else None


def _broaden_strategy(corpus: Corpus) -> st.SearchStrategy[dict[str, Any]]:
    counts = st.one_of(st.integers(0, 10), st.sampled_from([-1, 11]))
    return st.fixed_dictionaries({'chunk_id': _ids(corpus)}, optional={'chunks_to_add': counts})


# -- verify_citations: claims citing chunks of both tenants and unknown ids ------------------------------


def _quote_of(draw: st.DrawFn, corpus: Corpus, chunk: Chunk) -> str:
    """A quote a model might write for ``chunk``: its text, a part of it (maybe too short or one letter off), or made up.

    Parts are whole words, as a model copies them: whether one stands in a chunk is then a plain
    search (`_stands_in`), independent of the quote matcher under test.
    """
    words = chunk.urtext.split(' ')
    kind = draw(st.sampled_from(['whole', 'part', 'part', 'short', 'edited', 'made up']))
    if kind == 'whole':
        return chunk.urtext
    if kind == 'made up':
        return ' '.join(draw(st.lists(st.sampled_from(corpus.words), min_size=3, max_size=8)))
    start = draw(st.integers(0, len(words) - 1))
    end = draw(st.integers(start + 1, min(len(words), start + (2 if kind == 'short' else 12))))
    quote = ' '.join(words[start:end])
    if kind == 'edited':
        at = draw(st.integers(0, len(quote) - 1))
        quote = quote[:at] + ('Z' if quote[at] != 'Z' else 'Q') + quote[at + 1 :]
    return quote


def _chunks(corpus: Corpus) -> list[Chunk]:
    return [c for d in corpus.documents for c in d.chunks]


def _claims_strategy(corpus: Corpus) -> st.SearchStrategy[dict[str, Any]]:
    chunks = _chunks(corpus)
    acme = [c for c in chunks if c.id in set(corpus.scope.chunks)]

    @st.composite
    def citation(draw: st.DrawFn) -> dict[str, Any]:
        # A chunk of either tenant (mostly acme's, whose quotes can verify), cited by its own id or any other.
        chunk = draw(st.one_of(st.sampled_from(acme), st.sampled_from(acme), st.sampled_from(chunks)))
        chunk_id = draw(st.one_of(st.just(chunk.id), st.just(chunk.id), _ids(corpus)))
        return {'chunk_id': chunk_id, 'quote': _quote_of(draw, corpus, chunk)}

    claim = st.fixed_dictionaries(
        {'text': st.sampled_from(_QUERIES), 'citations': st.lists(citation(), min_size=0, max_size=3)}
    )
    return st.fixed_dictionaries({'claims': st.lists(claim, min_size=0, max_size=3)})


def _stands_in(quote: str, chunk: Chunk) -> bool:
    """Whether a `_quote_of` quote stands in ``chunk``: at least the minimum length, not cutting a word.

    The quotes are single-spaced runs of the corpus's words (no quote marks, no dashes but in
    codes), so no normalisation applies: a plain search with word boundaries decides.
    """
    return len(quote) >= 12 and re.search(rf'(?<!\w){re.escape(quote)}(?!\w)', chunk.urtext) is not None


def _expect_verify(corpus: Corpus, arguments: dict[str, Any]) -> str | None:
    """A call with claims is answered (a citation's problem is a line of the answer); one without is a retry."""
    return 'found' if arguments['claims'] else 'not found'


def _judge_verify(corpus: Corpus, arguments: dict[str, Any], result: ToolReturn) -> list[str]:
    """The chunks marked verified are exactly acme's that hold a quote cited from them; other ids are "not found"."""
    acme = {c.id: c for c in _chunks(corpus) if c.id in set(corpus.scope.chunks)}
    text = str(result.return_value)
    problems: list[str] = []
    expected: set[str] = set()
    for n, claim in enumerate(arguments['claims'], 1):
        for m, citation in enumerate(claim['citations'], 1):
            sent = citation['chunk_id']
            chunk_id = sent.strip()
            if chunk_id in acme:
                if _stands_in(citation['quote'], acme[chunk_id]):
                    expected.add(chunk_id)
            elif chunk_id and not ID_RULE.forbidden.search(chunk_id):
                line = f'Claim {n}, citation {m} (chunk {echo(sent)}): {NOT_FOUND}'
                if line not in text:
                    problems.append(f'unknown id not answered "not found": claim {n}, citation {m} ({sent!r})')
    verified = {h.id for h in result.metadata['hits'] if h.score == 1.0}
    if verified != expected:
        problems.append(f'verified chunks differ: marked {sorted(verified)}, expected {sorted(expected)}')
    return problems


def _citation_place(key: str) -> Place:
    """Puts a value in the first citation's ``key`` (``chunk_id``, ``quote``) of the baseline's first claim."""

    def put(arguments: dict[str, Any], value: Any) -> dict[str, Any]:
        claim = arguments['claims'][0]
        citation = {**claim['citations'][0], key: value}
        return {**arguments, 'claims': [{**claim, 'citations': [citation]}]}

    return put


def _claim_text_place(arguments: dict[str, Any], value: Any) -> dict[str, Any]:
    return {**arguments, 'claims': [{**arguments['claims'][0], 'text': value}]}


def _verify_baseline(corpus: Corpus) -> dict[str, Any]:
    chunk = next(c for c in _chunks(corpus) if c.id == corpus.scope.chunks[1])
    return {'claims': [{'text': 'How refunds work.', 'citations': [{'chunk_id': chunk.id, 'quote': chunk.urtext}]}]}


_CITED_ID = 'claims[0].citations[0].chunk_id'


# -- graph_context: node ids of both tenants, edge types, budgets ------------------------------------------

_EDGE_TYPES = ('MENTIONS', 'PART_OF', 'LINKS_TO', 'GLOBEX_SECRET', 'CALLS', 'mentions', '', ' PART_OF ', 'PART OF')
_FIRST_ID = 'ids[0]'


def _graph_strategy(corpus: Corpus) -> st.SearchStrategy[dict[str, Any]]:
    """Mostly walks from a few ids (acme's, globex's, missing), sometimes from a query; some budgets out of range."""
    return st.fixed_dictionaries(
        {'ids': st.one_of(st.lists(_ids(corpus), min_size=1, max_size=4), st.none())},
        optional={
            'query': st.one_of(st.none(), _queries(corpus)),
            'hops': st.one_of(st.integers(1, 3), st.integers(1, 3), st.sampled_from([0, 4, -1])),
            'edge_types': st.one_of(st.none(), st.lists(st.sampled_from(_EDGE_TYPES), max_size=3)),
            'direction': st.sampled_from(['both', 'both', 'out', 'in', 'sideways']),
            'max_nodes': st.one_of(st.integers(1, 200), st.integers(1, 8), st.sampled_from([0, 201])),
            'order': st.sampled_from([None, None, 'centrality', 'pagerank']),
        },
    )


def _expect_graph(corpus: Corpus, arguments: dict[str, Any]) -> str | None:
    """A call that cannot start is a retry: bad budgets or edge types, no seeds, or only ids acme does not have.

    A walk from ids alone, one of them acme's, is answered. With a query it depends on the search: ``None``.
    """
    if not (1 <= arguments.get('hops', 2) <= 3 and 1 <= arguments.get('max_nodes', 50) <= 200):
        return 'not found'
    if arguments.get('direction', 'both') not in ('both', 'out', 'in') or arguments.get('order') not in (
        None,
        'centrality',
    ):
        return 'not found'
    types = arguments.get('edge_types')
    if types is not None and not (types and all(RELATION_TYPE_PATTERN.match(t.strip()) for t in types)):
        return 'not found'
    ids = list(dict.fromkeys(i.strip() for i in arguments.get('ids') or ()))
    query = arguments.get('query')
    if (not ids and query is None) or '' in ids or len(ids) > arguments.get('max_nodes', 50):
        return 'not found'
    if query is not None:
        return None
    return 'found' if any(i in corpus.scope.all for i in ids) else 'not found'


_NODE_LINE = re.compile(r'^\[(.+?)\] (?:chunk|section|document|entity), hop (\d)', re.MULTILINE)
_EDGE_LINE = re.compile(r'^(\S+) -([A-Z][A-Z0-9_]*)-> (\S+)', re.MULTILINE)


def _judge_graph(corpus: Corpus, arguments: dict[str, Any], result: ToolReturn) -> list[str]:
    """Every node shown is acme's, every edge joins two nodes shown, the answer says complete or truncated."""
    text = str(result.return_value)
    if text.startswith('No results'):
        return []
    problems: list[str] = []
    acme = set(corpus.scope.all)
    shown = {node_id for node_id, _ in _NODE_LINE.findall(text)}
    problems += [f'node outside the scope: {node_id}' for node_id in sorted(shown - acme)]
    for source, edge_type, target in _EDGE_LINE.findall(text):
        if source not in shown or target not in shown:
            problems.append(f'edge to a node not shown: {source} -{edge_type}-> {target}')
    endings = [line for line in text.splitlines() if line.startswith(('complete: ', 'truncated: '))]
    if len(endings) != 1:
        problems.append(f'no single complete/truncated line: {endings}')
    if len(shown) > arguments.get('max_nodes', 50):
        problems.append(f'{len(shown)} nodes shown, over max_nodes')
    return problems


# -- multihop_search: a query (the seeds), top_k, the model's filter ----------------------------------------


def _multihop_strategy(corpus: Corpus) -> st.SearchStrategy[dict[str, Any]]:
    return st.fixed_dictionaries({'query': _queries(corpus)}, optional={'top_k': _top_k(), 'filter': _model_filters()})


def _list_place(key: str) -> Place:
    """Puts a value as the only item of the list parameter ``key``."""
    return lambda arguments, value: {**arguments, key: [value]}


REGISTRY: dict[str, ToolArguments] = {
    'vector_search': _ranked(-1.0),
    'text_search': _ranked(0.0),
    'hybrid_search': _ranked(0.0),
    'regex_search': ToolArguments(
        baseline=lambda corpus: {'pattern': 'ERR-[0-9]{4}', 'top_k': 5, 'filter': None},
        strategy=_regex_strategy,
    ),
    'broaden_chunk': ToolArguments(
        baseline=lambda corpus: {'chunk_id': corpus.scope.chunks[1], 'chunks_to_add': 2},
        strategy=_broaden_strategy,
        id_parameters=frozenset({'chunk_id'}),
    ),
    'zoom_out': ToolArguments(
        baseline=lambda corpus: {'id': corpus.scope.chunks[1]},
        strategy=lambda corpus: st.fixed_dictionaries({'id': _ids(corpus)}),
        id_parameters=frozenset({'id'}),
    ),
    'list_documents': ToolArguments(
        baseline=lambda corpus: {'title_contains': 'guide', 'offset': 0, 'limit': 20, 'filter': None},
        strategy=_list_documents_strategy,
    ),
    'outline': ToolArguments(
        baseline=lambda corpus: {'document': corpus.scope.documents[0]},
        strategy=lambda corpus: st.fixed_dictionaries({'document': _document_names(corpus)}),
        id_parameters=frozenset({'document'}),
        expect=_expect_outline,
    ),
    'read_section': ToolArguments(
        baseline=lambda corpus: {
            'section': corpus.scope.sections[0],
            'document': corpus.scope.documents[0],
            'offset': 0,
        },
        strategy=_read_section_strategy,
        id_parameters=frozenset({'section', 'document'}),
        expect=_expect_read_section,
    ),
    'verify_citations': ToolArguments(
        baseline=_verify_baseline,
        strategy=_claims_strategy,
        id_parameters=frozenset({_CITED_ID}),
        expect=_expect_verify,
        nested={
            _CITED_ID: _citation_place('chunk_id'),
            'claims[0].citations[0].quote': _citation_place('quote'),
            'claims[0].text': _claim_text_place,
        },
        answers_missing_ids=True,
        judge=_judge_verify,
    ),
    'list_values': ToolArguments(
        baseline=lambda corpus: {'key': 'region'},
        strategy=lambda corpus: st.fixed_dictionaries(
            {'key': st.sampled_from([*FILTERABLE, 'tenant', 'Region', 'labels', ''])}
        ),
    ),
    'graph_context': ToolArguments(
        baseline=lambda corpus: {
            'query': None,
            'ids': [corpus.scope.chunks[1]],
            'hops': 2,
            'edge_types': None,
            'direction': 'both',
            'max_nodes': 50,
            'order': None,
        },
        strategy=_graph_strategy,
        id_parameters=frozenset({_FIRST_ID}),
        expect=_expect_graph,
        nested={_FIRST_ID: _list_place('ids'), 'edge_types[0]': _list_place('edge_types')},
        judge=_judge_graph,
    ),
    'multihop_search': ToolArguments(
        baseline=lambda corpus: {'query': 'refund window', 'top_k': 5, 'filter': None},
        strategy=_multihop_strategy,
    ),
}
"""Every tool's argument generator, by spec name (`toolish_rag.toolset._tools.SPECS`)."""


def specs_without_cases(specs: Iterable[ToolSpec], registry: Mapping[str, ToolArguments] = REGISTRY) -> list[str]:
    """The names of ``specs`` with no entry in ``registry``: tools the hostile-argument tests would not exercise."""
    return [spec.name for spec in specs if spec.name not in registry]


def tool_calls(corpus: Corpus, tools: Sequence[str]) -> st.SearchStrategy[tuple[str, dict[str, Any]]]:
    """One call to one of ``tools`` (short names; each must be in `REGISTRY`) with generated arguments."""
    return st.sampled_from(list(tools)).flatmap(
        lambda tool: REGISTRY[tool].strategy(corpus).map(lambda arguments: (tool, arguments))
    )


def tool_rounds(
    corpus: Corpus, tools: Sequence[str], per_tool: int
) -> st.SearchStrategy[list[tuple[str, dict[str, Any]]]]:
    """``per_tool`` calls to each of ``tools``, shuffled: a batch that exercises every tool, however few batches run."""
    calls = [
        REGISTRY[tool].strategy(corpus).map(partial(lambda tool, arguments: (tool, arguments), tool))
        for tool in tools
        for _ in range(per_tool)
    ]
    return st.tuples(*calls).flatmap(lambda drawn: st.permutations(list(drawn)))


# -- hostile values ----------------------------------------------------------------------------------

MB = 1 << 20


@dataclass(frozen=True)
class HostileClass:
    """A named class of hostile values."""

    values: Callable[[Corpus], tuple[Any, ...]]
    embed: bool = True
    """Also send each string value inside an ordinary query (``refund <value>``) to string parameters."""


def _control(corpus: Corpus) -> tuple[Any, ...]:
    acme, globex = corpus.scope.chunks[1], corpus.foreign.chunks[1]
    return (
        '\x00',
        'a\x00b',
        'refund\x00',
        '\x00globex',
        '\x00' * 64,
        ''.join(map(chr, range(32))),
        '\x7f\x80\x9f',
        '\x1b[2J\x1b[31mred',
        '\r\n\r\n',
        '\t\v\f',
        '\u2028\u2029',
        '\ufeff',
        '\u200b\u200d',
        '\u202erefund',
        '\ufffe\uffff',
        '\U0010ffff',
        acme + '\x00',
        '\x00' + acme,
        globex + '\x00',
    )


def _surrogates(corpus: Corpus) -> tuple[Any, ...]:
    return (
        '\ud800',
        '\udfff',
        '\udc00\ud800',
        'a\ud800b',
        'refund \ud83d',
        '\ud83d\ude00',  # a surrogate *pair* spelt as two code points: still two lone surrogates in a str
        '\ud800' * 100,
        corpus.scope.chunks[1] + '\ud800',
    )


def _huge_strings(corpus: Corpus) -> tuple[Any, ...]:
    return ('a' * MB, ('refund ' * (MB // 7 + 1))[:MB], '(' * MB, '\u00e9' * (MB // 2))


def _numbers(corpus: Corpus) -> tuple[Any, ...]:
    return (
        10**400,
        -(10**400),
        10**5000,  # over Python's int-to-str limit (4300 digits): formatting it raises
        -(10**5000),
        2**63,
        2**64,
        -(2**63) - 1,
        float('inf'),
        float('-inf'),
        float('nan'),
        1e308,
        -1e308,
        5e-324,
        -0.0,
        True,
        False,
        None,
        decimal.Decimal('1e400'),
        decimal.Decimal('NaN'),
        decimal.Decimal('-Infinity'),
        '1e400',
        'NaN',
        'Infinity',
        '-0',
        '9' * 400,
        '9' * 5000,
        '0x10',
    )


_REGEX_SYNTAX = (
    r'\Q.*\E',
    r'\Qglobex\E',
    r'\C',
    r'\C+',
    r'\pN',
    r'\p{Greek}',
    r'\PL',
    r'[[:alpha:]]+',
    r'[[:^digit:]]',
    r'(?P<n>a)(?P=n)',
    r'(a)\1',
    r'(?=globex)',
    r'(?!acme)',
    r'(?<=ERR-)\d+',
    r'(?<!a)b',
    r'\z',
    r'\Z',
    r'\A',
    r'\G',
    r'\K',
    r'\X',
    r'\R',
    r'\h',
    r'(?#comment)',
    r'(?i',
    r'(?x) a b c # comment',
    r'(?s).+',
    r'(?m)^Reference',
    r'(?U)a+',
    r'(?P<name>x)',
    r'(?<name>x)',
    r"(?'name'x)",
    r'\x{110000}',
    r'\x{D800}',
    r'\u0041',
    r'\N{LATIN SMALL LETTER A}',
    r'\e',
    r'\cA',
    r'\0',
    r'\777',
    r'[z-a]',
    r'a{2,1}',
    r'a{1001}',
    r'x{1000}{1000}',
    '*',
    '+a',
    '?',
    '[',
    ']',
    ')',
    '\\',
    'a|*',
    '[^]',
    '[]a]',
    r'(?i)(?-i:ACME)',
    '%',
    '_',
    '.*',
    "'",
    "\\'",
    '^$',
    '()',
    '(|)',
    r'\b\B',
    r'\E',
    r'\Q',
)

_REGEX_BOMBS = (
    '(a+)+$',
    '(a|a)*b',
    '(a*)*b',
    '(a|aa)+$',
    '(.*a){20}',
    '(x+x+)+y',
    '^(([a-z])+.)+[A-Z]([a-z])+$',
    r'(\w+\s?)*$',
    '(.*){1,32000}',
    '((a{1,100}){1,100}){1,100}',
    '(?:a?){30}a{30}',
    '.*.*.*.*.*.*.*.*=',
    '(((((((((a*)*)*)*)*)*)*)*)*)*b',
    '([a-z]+)*[0-9]',
    '(a{2,}){2,}b',
    r'[\s\S]{0,1000}[\s\S]{0,1000}X',
    '(?i)(r|re|ref|refu|refun|refund)+z',
    r'((?:ERR-\d+\s?)*)*!',
)

_INJECTION = (
    "' OR 1=1 --",
    "' OR '1'='1",
    '" OR ""="',
    "tenant = 'globex'",
    "acme' OR tenant = 'globex",
    "') OR ('a'='a",
    "'; DROP TABLE chunks; --",
    '1; SELECT * FROM chunks',
    "' UNION SELECT id FROM chunks --",
    'tenant:globex',
    'metadata.tenant:globex',
    'tenant:globex OR tenant:acme',
    'id:*',
    '*',
    '*:*',
    'globex OR acme',
    '+globex -acme',
    'NOT acme',
    'title:Globex',
    'urtext:refund AND tenant:globex',
    'kind:entity',
    'm_str:tenant',
    'text:[a TO z]',
    'year:[2000 TO 3000]',
    'field:"value"',
    'refund~2',
    'refund^100',
    '"refund window"~5',
    'refun*',
    '/glo.*/',
    "regexp_like(urtext, '.*')",
    "md__tenant__str = 'globex'",
    'md__tenant__str IS NOT NULL',
    '_rowid > 0',
    '_distance < 1',
    "arrow_cast(1, 'Int64')",
    'CAST(tenant AS VARCHAR)',
    "lower(tenant) = 'globex'",
    "tenant IN ('globex')",
    "id LIKE '%'",
    "\\'",
    "''",
    '{{7*7}}',
    '${jndi:ldap://x/a}',
    '%s%s%s%n',
    '{0.__class__}',
    '../../etc/passwd',
    'file:///globex/refunds-0.md',
    '<script>alert(1)</script>',
    ']]> <!--',
    '$where: 1',
    '{"$ne": null}',
)


def _deep_list(depth: int) -> Any:
    value: Any = 'refund'
    for _ in range(depth):
        value = [value]
    return value


def _deep_dict(depth: int) -> Any:
    value: Any = 'refund'
    for _ in range(depth):
        value = {'a': value}
    return value


def _nested(corpus: Corpus) -> tuple[Any, ...]:
    globex_filter = {'op': 'eq', 'key': 'tenant', 'value': 'globex'}
    return (
        '(' * 200 + 'refund' + ')' * 200,
        '(' * 1000,
        ')' * 500,
        '[' * 500,
        'NOT ' * 400 + 'refund',
        '"' * 999,
        '+' * 500 + 'refund',
        'refund AND (' * 150 + 'x' + ')' * 150,
        json.dumps(globex_filter),
        json.dumps({'op': 'or', 'filters': [globex_filter, {'op': 'not', 'filter': globex_filter}]}),
        json.dumps(_deep_list(300)),
        _deep_list(5000),
        _deep_dict(5000),
        globex_filter,
        ['refund'],
        {'query': 'refund'},
        {1, 2},
        b'refund',
        b'\xff\xfe',
        bytearray(b'refund'),
        object(),
    )


def _foreign_names(corpus: Corpus) -> tuple[Any, ...]:
    """Globex's document titles and parts of them (no acme title holds them), also padded."""
    names = (*corpus.titles(FOREIGN_TENANT)[::3], *FOREIGN_NAME_PARTS)
    return (*names, *(f' {n}\n' for n in names[::2]))


def _foreign_ids(corpus: Corpus) -> tuple[Any, ...]:
    """Globex ids of every kind (a sample), also padded with whitespace (the tools strip ids)."""
    foreign = corpus.foreign
    ids = (*foreign.documents[:4], *foreign.sections[::4], *foreign.chunks[::8], *foreign.entities)
    return (*ids, *(f' {i}\n' for i in ids[::3]))


def _missing_ids(corpus: Corpus) -> tuple[Any, ...]:
    """Ids that do not exist: the foreign ids' twins, junk, and near misses of acme's ids."""
    twins = tuple(value.replace(value.strip(), corpus.missing_twin(value.strip())) for value in _foreign_ids(corpus))
    doc, chunk = corpus.scope.documents[0], corpus.scope.chunks[1]
    near = (f'{doc}-999', f'{doc}-s999', f'{doc}-s', doc, f'{chunk}-0', chunk.upper(), f'{doc}-%', f'{doc}-_')
    junk = ('no-such-id', '', ' ', '-', '-1', '0', 'd', 'ent-', 'ent-%', '%', '_', '*', '.*', '\\', 'null', 'None')
    return (*twins, *near, *junk)


HOSTILE: dict[str, HostileClass] = {
    'control_chars': HostileClass(_control),
    'lone_surrogates': HostileClass(_surrogates),
    'huge_strings': HostileClass(_huge_strings, embed=False),
    'huge_numbers': HostileClass(_numbers, embed=False),
    'regex_syntax': HostileClass(lambda corpus: _REGEX_SYNTAX),
    'regex_bombs': HostileClass(lambda corpus: _REGEX_BOMBS),
    'injection': HostileClass(lambda corpus: _INJECTION),
    'nested_json': HostileClass(_nested, embed=False),
    'foreign_ids': HostileClass(_foreign_ids, embed=False),
    'foreign_names': HostileClass(_foreign_names, embed=False),
    'missing_ids': HostileClass(_missing_ids, embed=False),
}
"""The hostile value classes of issue 12, by name (the failure report groups by them)."""


@dataclass(frozen=True)
class HostileCase:
    """One hostile call: ``value`` (maybe embedded in a query) in ``parameter`` of ``tool``."""

    hostile_class: str
    tool: str
    parameter: str
    value: Any
    arguments: dict[str, Any]
    text_parameter: bool
    """Whether the parameter takes a string (the value's type may differ: that is a hostile case too)."""


def hostile_cases(corpus: Corpus, tools: Iterable[str]) -> list[HostileCase]:
    """Every hostile value in every parameter of every tool in ``tools``, the rest at the baseline."""
    cases = []
    for tool in tools:
        arguments = REGISTRY[tool]
        baseline = arguments.baseline(corpus)
        # Each place's usual value: a parameter's, or (for a nested place) a string.
        places: dict[str, Any] = {**baseline, **dict.fromkeys(arguments.nested, '')}
        for parameter, usual in places.items():
            for name, hostile in HOSTILE.items():
                for value in hostile.values(corpus):
                    variants = [value]
                    if hostile.embed and isinstance(value, str) and isinstance(usual, str):
                        variants.append(f'refund {value}')
                    for variant in variants:
                        sent = arguments.with_value(corpus, parameter, variant)
                        cases.append(HostileCase(name, tool, parameter, variant, sent, isinstance(usual, str)))
    return cases


def sample_per_class(cases: Sequence[HostileCase], per_class: int, seed: int = 12) -> list[HostileCase]:
    """A fixed sample of at most ``per_class`` cases of each class (the default run's quick version).

    Preferably cases whose value has its parameter's type (a string in a string parameter), which
    reach the store; the rest mostly stop at argument validation.
    """
    rng = random.Random(seed)
    out: list[HostileCase] = []
    for name in HOSTILE:
        of_class = [c for c in cases if c.hostile_class == name]
        fitting = [c for c in of_class if _fits(c)]
        pool = fitting if len(fitting) >= per_class else of_class
        out += rng.sample(pool, min(per_class, len(pool)))
    return out


def _fits(case: HostileCase) -> bool:
    return isinstance(case.value, str) == case.text_parameter


# -- hostile scopes ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class HostileScope:
    """A scope filter around a hostile value; building it may raise `ValueError` (refusing it is fine)."""

    hostile_class: str
    label: str
    build: Callable[[], Filter]
    hidden: tuple[str, ...] = ()
    """Hostile text the scope holds: the model never sent it, so no retry message may show it."""


_SCOPE_STRINGS = (
    'a\x00b',
    '\x00',
    '\ud800',
    'x\udfffy',
    "globex' OR '1'='1",
    "acme' OR 1=1 --",
    "'; DROP TABLE chunks; --",
    "tenant = 'globex'",
    'globex" OR "1"="1',
    '%',
    '_',
    '\\',
    "\\'",
    '*',
    '.*',
    'tenant:globex',
    '\x1b[31m',
    'a' * 100_000,
)
_SCOPE_NUMBERS = (10**400, -(10**400), 10**5000, 2**63, 2**64, -(2**63) - 1, 1e308, 5e-324, -0.0, True)
_SCOPE_KEYS = ("tenant' OR '1'='1", 'tenant`', 'md__tenant__str', 'a.b', 'x' * 10_000, 'ten\x00ant', '\ud800')


def _leaf(op: str, key: str, value: Any) -> Filter:
    if op == 'in_':
        return F.in_(key, [value, 'acme'])
    if op == 'nin':
        return F.nin(key, [value])
    builder: Callable[[str, Any], Filter] = getattr(F, op)
    return builder(key, value)


def _nested_filter_json(depth: int) -> str:
    """The scope's JSON, wrapped ``depth`` times in nodes that keep its meaning (not-not, and-exists, or-nothing).

    Built as text, level by level: ``json.dumps`` itself recurses and cannot write deep documents.
    """
    text = SCOPE.to_json()
    for i in range(depth):
        if i % 3 == 0:
            text = f'{{"op": "not", "filter": {{"op": "not", "filter": {text}}}}}'
        elif i % 3 == 1:
            text = f'{{"op": "and", "filters": [{text}, {{"op": "exists", "key": "tenant"}}]}}'
        else:
            text = f'{{"op": "or", "filters": [{text}, {{"op": "eq", "key": "tenant", "value": "none-{i}"}}]}}'
    return text


def _python_nested_filter(depth: int) -> Filter:
    """A scope nested ``depth`` times like `_nested_filter_json`, built from node objects (no JSON parser, so no parser depth limit)."""
    f: Filter = SCOPE
    for i in range(depth):
        f = ~~f if i % 2 == 0 else and_(F.exists('tenant'), f)
    return f


def _scoped(make: Callable[[], Filter]) -> Callable[[], Filter]:
    """Builds the tenant scope ANDed with ``make()`` (called late: building may raise, which is the point)."""
    return lambda: SCOPE & make()


def hostile_scopes() -> list[HostileScope]:
    """Scope filters (ANDed with the tenant scope) holding hostile values, keys and nesting."""
    scopes: list[HostileScope] = []
    for value in (*_SCOPE_STRINGS, *_SCOPE_NUMBERS):
        ops = ['eq', 'ne', 'gt', 'lt', 'in_', 'nin', 'contains']
        if isinstance(value, str):
            ops += ['starts_with', 'ends_with']
        hidden = (value,) if isinstance(value, str) and len(value) >= 4 else ()
        for op in ops:
            for key in ('tenant', 'year'):
                label = f'{op}({key!r}, {describe(value, 40)})'
                scopes.append(HostileScope('scope_values', label, _scoped(partial(_leaf, op, key, value)), hidden))
    for key in _SCOPE_KEYS:
        label = f'eq({describe(key, 40)}, 1)'
        scopes.append(HostileScope('scope_keys', label, _scoped(partial(F.eq, key, 1)), (key,)))
    for depth in (8, 16, 32, 48, 64, 96, 128, 256, 1000):
        build = partial(parse_filter, _nested_filter_json(depth))
        scopes.append(HostileScope('nested_scopes', f'json depth {depth}', build))
    for depth in (50, 150, 300, 1000, 5000):
        scopes.append(HostileScope('nested_scopes', f'objects depth {depth}', partial(_python_nested_filter, depth)))
    return scopes
