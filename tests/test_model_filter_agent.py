"""The model's own filters, end to end: a scoped toolset on all three stores, under attack (issue 13 item 3).

`ToolishRag(store, filterable=...)` lets the model narrow a search with a ``filter`` argument;
the deployment's hidden scope (``tenant == 'acme'``, a key the model is not allowed to name) is
ANDed with it. These tests go through the whole path (the tool's argument validation, the
parser, `Retriever.with_filter`, each store's filter translation and its ranking) and check
what the model gets back, never the parser alone (`tests/test_model_filters.py` does that):

* a scripted adversarial model (pydantic-ai's `FunctionModel` driving a real `Agent`) filters
  on the scope's key with another value and with its own value, on an undeclared key, ORs a
  clause matching everything into ``any_of``, negates a narrow clause, sends wrong types, huge
  values and nested junk: every answer is a retry, or a result that is exactly the reference's;
* random filters sent with `ToolishRag.run_tool`: each is a retry exactly when the generator
  made a bad choice, and otherwise returns exactly the chunks (or documents) the reference
  selects, never one outside the scope.

The corpus is built so that the query matches every chunk (every chunk says ``zephyr``) and
``top_k`` exceeds the in-scope chunk count: whatever a tool returns is then exactly the set its
filter selects, so a result set can be compared for equality, not only checked for leaks. The
expected set comes from `interpret`, which reads the JSON format directly and shares no code
with the parser; each valid filter is also checked against the core's reference evaluator
(`toolish_rag.filters.matches` of the scope AND the parsed filter). A store whose filter
pushdown returns an out-of-scope record fails the test too (`exact_pushdown`), although the
retriever drops such a record before the model could see it.

Split of the default run: 1,000 random filters in all, a third per store (seeded per store),
each sent to one of the store's filter-taking tools in turn (memory and LanceDB: vector, text,
hybrid, regex search and list_documents; Tantivy, which holds no vectors: text, regex search
and list_documents). The ``slow`` variant sends 2,000 filters per store, each to every tool.
The filters come from a seeded `random.Random` (`FilterMaker`), not hypothesis strategies: it
is much faster, and its odds keep most filters valid while still reaching every refusal.
"""

from __future__ import annotations

import asyncio
import logging
import operator
import random
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import pytest
from hardening.stores import STORE_BUILDERS, STORE_NAMES
from helpers import FINAL, Returned, block_ids, returns
from pydantic_ai import Agent, ModelRetry
from pydantic_ai.messages import ModelMessage, ModelResponse, RetryPromptPart, TextPart, ToolCallPart, ToolReturn
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.usage import UsageLimits

from toolish_rag import DocumentBuilder, PropertyFilter as F, ToolishRag
from toolish_rag.content import Chunk, Document, MetadataValue
from toolish_rag.errors import InvalidRequestError
from toolish_rag.filters import and_, matches
from toolish_rag.protocols import DocumentStore, StoreLike
from toolish_rag.toolset._filterable import (
    MAX_FILTER_CONDITIONS,
    MAX_FILTER_TEXT,
    MAX_FILTER_VALUES,
    OPERATORS,
    ModelFilters,
)
from toolish_rag.toolset._retries import MAX_RETRY_CHARS, retry_message
from toolish_rag.writes import INT64_MAX, INT64_MIN

SCOPE_TENANT, FOREIGN_TENANT = 'acme', 'globex'
SCOPE = F.eq('tenant', SCOPE_TENANT)
"""The hidden scope: ``tenant`` is in every record's metadata and is not a filterable key."""
FILTERABLE: dict[str, Any] = {'year': int, 'product': Literal['a', 'b'], 'path': str}
DECLARED = ModelFilters.declare(FILTERABLE)
RAG_NAME = 'kb'
MAX_TOP_K = 200
WORD = 'zephyr'
"""In every chunk: a text or regex search for it matches the whole scope, whatever the filter leaves."""

FILTER_TOOLS = ('vector_search', 'text_search', 'hybrid_search', 'regex_search', 'list_documents')
"""The tools that take ``filter``; a store offers those its capabilities allow."""
BASE_ARGUMENTS: Mapping[str, Mapping[str, Any]] = {
    'vector_search': {'query': WORD, 'top_k': MAX_TOP_K},
    'text_search': {'query': WORD, 'top_k': MAX_TOP_K},
    'hybrid_search': {'query': WORD, 'top_k': MAX_TOP_K},
    'regex_search': {'pattern': WORD, 'top_k': MAX_TOP_K},
    'list_documents': {'limit': 100},
}

# -- the corpus -------------------------------------------------------------------------------------------

DOCUMENTS_PER_TENANT = 8
CHUNKS_PER_DOCUMENT = 4


def _document(tenant: str, i: int) -> Document:
    """Document ``i`` of ``tenant``: both tenants' document ``i`` have the same filterable values.

    So no model filter can tell the tenants apart: only the scope keeps globex out. The values
    vary by document and, for ``year``, by chunk (a document is listed when one of its chunks
    matches), and some are missing or lists, where negations and ``exists`` differ.
    """
    metadata: dict[str, MetadataValue] = {'tenant': tenant, 'colour': 'red' if i % 3 else 'blue'}
    if i != 5:
        metadata['year'] = 2022 + i % 4  # document 5 has a year on two chunks only
    if i != 3:
        metadata['product'] = ['a', 'b'] if i == 7 else 'ab'[i % 2]
    if i != 6:
        metadata['path'] = f'{"api" if i < 4 else "guide"}/page{i}.md'
    b = DocumentBuilder(f'file:///{tenant}/page{i}.md', f'{tenant.title()} page {i}', metadata=metadata)
    body = b.section('Body')
    for j in range(CHUNKS_PER_DOCUMENT):
        year: dict[str, MetadataValue] = {}
        if (i, j) in {(5, 1), (5, 2)}:
            year = {'year': 2025}
        elif (i, j) == (0, 3):
            year = {'year': 2026}
        b.add_chunk(body, f'{tenant.title()} {WORD} note {i}-{j}.', metadata=year)
    return b.build()


CORPUS: tuple[Document, ...] = tuple(
    _document(tenant, i) for tenant in (SCOPE_TENANT, FOREIGN_TENANT) for i in range(DOCUMENTS_PER_TENANT)
)
CHUNKS: tuple[Chunk, ...] = tuple(c for d in CORPUS for c in d.chunks)
SCOPE_CHUNKS: tuple[Chunk, ...] = tuple(c for c in CHUNKS if c.metadata['tenant'] == SCOPE_TENANT)
SCOPE_CHUNK_IDS = frozenset(c.id for c in SCOPE_CHUNKS)
SCOPE_DOCUMENT_IDS = frozenset(c.document_id for c in SCOPE_CHUNKS)
FOREIGN_DOCUMENT_IDS = tuple(d.id for d in CORPUS if d.metadata['tenant'] == FOREIGN_TENANT)
FOREIGN_MARKERS = (FOREIGN_TENANT, FOREIGN_TENANT.title(), *FOREIGN_DOCUMENT_IDS)
"""Text only globex records carry (its name is in every title and chunk): in a result, a leak."""
assert MAX_TOP_K > len(SCOPE_CHUNKS) > 0


# -- the independent reading of the format ------------------------------------------------------------------


def _elements(value: MetadataValue) -> list[Any]:
    if value is None:
        return []
    return [v for v in value if v is not None] if isinstance(value, list) else [value]


def _holds_for(op: str, operand: Any, element: Any) -> bool:
    """Whether one stored element passes a positive operator (``ne`` and ``not_in`` are its complements)."""
    if op in ('eq', 'ne'):
        return bool(element == operand)
    if op in ('in', 'not_in'):
        return bool(element in operand)
    if op == 'starts_with':
        return bool(element.startswith(operand))
    if op == 'ends_with':
        return bool(element.endswith(operand))
    if op == 'contains':
        return bool(operand in element)
    compare = {'gt': operator.gt, 'gte': operator.ge, 'lt': operator.lt, 'lte': operator.le}[op]
    return bool(compare(element, operand))


def _operator_holds(op: str, operand: Any, stored: MetadataValue) -> bool:
    """One operator on one stored value, as the format documents it (absent: every positive test is false)."""
    elements = _elements(stored)
    if op == 'exists':
        return bool(elements) is operand
    found = any(_holds_for(op, operand, e) for e in elements)
    return not found if op in ('ne', 'not_in') else found


def _object_holds(conditions: Mapping[str, Any], metadata: Mapping[str, MetadataValue]) -> bool:
    for key, condition in conditions.items():
        pairs = condition.items() if isinstance(condition, dict) else [('eq', condition)]
        if not all(_operator_holds(op, operand, metadata.get(key)) for op, operand in pairs):
            return False
    return True


def interpret(sent: Mapping[str, Any] | None, metadata: Mapping[str, MetadataValue]) -> bool:
    """Whether a record meets a valid model filter, read straight from the JSON (written from docs/navigation.md).

    Valid filters in this module hold only values of the key's type (the generator makes sure),
    so plain Python comparisons are the format's comparisons (``2024 == 2024.0``).
    """
    if sent is None:
        return True
    plain = {k: v for k, v in sent.items() if k not in ('any_of', 'not')}
    if not _object_holds(plain, metadata):
        return False
    if 'any_of' in sent and not any(_object_holds(c, metadata) for c in sent['any_of']):
        return False
    return not ('not' in sent and _object_holds(sent['not'], metadata))


@dataclass(frozen=True)
class Expected:
    """What a valid filter selects in scope: chunk ids, and the ids of the documents holding them."""

    chunks: frozenset[str]
    documents: frozenset[str]

    def ids(self, tool: str) -> frozenset[str]:
        return self.documents if tool == 'list_documents' else self.chunks


def expected(sent: Mapping[str, Any] | None) -> Expected:
    """The in-scope selection of ``sent`` by `interpret`, checked against the core's reference evaluator."""
    chunks = frozenset(c.id for c in SCOPE_CHUNKS if interpret(sent, c.metadata))
    parsed = DECLARED.parse(sent) if sent is not None else None
    reference = frozenset(c.id for c in CHUNKS if matches(SCOPE if parsed is None else and_(SCOPE, parsed), c))
    assert chunks == reference, f'the format read directly and the parsed filter disagree on {sent!r}'
    return Expected(chunks, frozenset(c.document_id for c in SCOPE_CHUNKS if c.id in chunks))


# -- the stores ----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Env:
    """One store loaded with the corpus, its acme-scoped toolset, and the runner its calls go through."""

    name: str
    runner: asyncio.Runner
    store: StoreLike
    rag: ToolishRag[None]
    tools: tuple[str, ...]
    """The filter-taking tools the store offers."""

    def __repr__(self) -> str:
        return f'Env({self.name!r})'


@pytest.fixture(scope='module')
def runner() -> Iterator[asyncio.Runner]:
    with asyncio.Runner() as runner:
        yield runner


@pytest.fixture(scope='module', params=STORE_NAMES)
def env(
    request: pytest.FixtureRequest, runner: asyncio.Runner, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Env]:
    name: str = request.param
    store = STORE_BUILDERS[name](Path(tmp_path_factory.mktemp(f'model-filter-{name}')))
    assert isinstance(store, DocumentStore)
    runner.run(store.upsert(list(CORPUS)))
    rag: ToolishRag[None] = ToolishRag(
        store, name=RAG_NAME, filterable=FILTERABLE, max_top_k=MAX_TOP_K, max_retries=100
    ).with_metadata_filter(SCOPE)
    tools = tuple(t for t in FILTER_TOOLS if f'{RAG_NAME}_{t}' in rag.tool_names)
    assert {'text_search', 'regex_search', 'list_documents'} <= set(tools), tools
    yield Env(name, runner, store, rag, tools)
    aclose = getattr(store, 'aclose', None)
    if aclose is not None:
        runner.run(aclose())


class _Warnings(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())


@pytest.fixture(autouse=True)
def exact_pushdown() -> Iterator[None]:
    """Fails a test in which a store returned out-of-scope records despite filter pushdown.

    The retriever drops such records (and re-queries), so the model never sees them and the
    result checks below would pass: the warning it logs is the only sign that the store's
    translation of a model filter (ANDed with the scope) is wrong.
    """
    warnings = _Warnings()
    logger = logging.getLogger('toolish_rag')
    logger.addHandler(warnings)
    try:
        yield
    finally:
        logger.removeHandler(warnings)
    leaks = [m for m in warnings.messages if 'out-of-scope' in m]
    assert not leaks, leaks[:3]


# -- what a result shows ------------------------------------------------------------------------------------

_LISTED = re.compile(r'^\[\d+\] .* \(document id (\S+)\) \|', re.MULTILINE)


def shown_ids(tool: str, text: str, metadata: Any) -> list[str]:
    """The record (or document) ids a result shows the model, checked against the hits it carries."""
    assert not any(marker in text for marker in FOREIGN_MARKERS), f'{tool} shows globex:\n{text}'
    if tool == 'list_documents':
        ids = _LISTED.findall(text)
        # one page holds every document in scope: the listing is complete, or says there is nothing
        assert text.startswith(f'Documents 1-{len(ids)} of {len(ids)}, by title:' if ids else 'No documents match'), (
            text
        )
        return ids
    shown = block_ids(text)
    assert shown == [h.record.id for h in metadata['hits']], text
    return shown


def check_result(tool: str, sent: Mapping[str, Any] | None, text: str, metadata: Any) -> None:
    ids = shown_ids(tool, text, metadata)
    assert len(ids) == len(set(ids)), f'{tool} repeats a record for {sent!r}: {ids}'
    leaked = set(ids) - SCOPE_CHUNK_IDS - SCOPE_DOCUMENT_IDS
    assert not leaked, f'{tool} returned out-of-scope {sorted(leaked)} for {sent!r}'
    want = expected(sent).ids(tool)
    assert set(ids) == want, (
        f'{tool} with filter {sent!r}: missing {sorted(want - set(ids))}, unexpected {sorted(set(ids) - want)}'
    )


def check_retry(sent: object, message: str) -> None:
    """A refusal is short and names nothing of the scope the model did not send itself."""
    assert len(message) <= MAX_RETRY_CHARS, f'{len(message)}-character retry for {sent!r}'
    for word in (SCOPE_TENANT, FOREIGN_TENANT):
        assert word not in message.lower() or word in repr(sent).lower(), message
    assert not any(marker in message for marker in FOREIGN_DOCUMENT_IDS), message


# -- the scripted adversarial model -------------------------------------------------------------------------


@dataclass(frozen=True)
class Attack:
    """One call of the adversary, and what it must get."""

    tool: str
    filter: Any
    """The filter sent; for ``list_values``, which takes none, the key asked about."""
    refused: bool
    """Whether the call must be a retry (else: exactly the reference's result)."""

    @property
    def arguments(self) -> dict[str, Any]:
        if self.tool == 'list_values':
            return {'key': self.filter}
        return {**BASE_ARGUMENTS[self.tool], 'filter': self.filter}


WIDE: dict[str, Any] = {'any_of': [{'year': {'gte': 0}}, {'path': {'starts_with': ''}}]}
"""Matches every chunk in the corpus (each has a year or a path): ORed in, it must still not widen the scope."""
_DEEP: dict[str, Any] = {'x': 2024}
for _ in range(40):
    _DEEP = {'x': _DEEP}


SCOPE_KEY_INSIDE: tuple[dict[str, Any], ...] = (
    {'not': {'tenant': SCOPE_TENANT}},
    {'any_of': [{'tenant': FOREIGN_TENANT}, {'year': {'gte': 0}}]},
    {'year': {'gte': 0}, 'tenant': {'ne': SCOPE_TENANT}},
)
"""The scope's key where a filter could invert or widen it: in ``not``, in ``any_of``, next to a declared key."""


def attacks(tools: Sequence[str]) -> list[Attack]:
    """The adversary's calls: the scope's key, wide ORs, negations, wrong types, huge values, junk."""
    refused = [
        {'tenant': FOREIGN_TENANT},
        {'tenant': SCOPE_TENANT},
        {'colour': FOREIGN_TENANT},
        *SCOPE_KEY_INSIDE,
        {'year': 'twenty'},
        {'year': {'gte': '2024'}},
        {'year': True},
        {'product': 'c'},
        {'product': {'starts_with': 'a'}},
        {'path': 5},
        {'path': {'gt': 'a'}},
        {'year': 10**30},
        {'year': {'in': list(range(MAX_FILTER_VALUES + 10))}},
        {'path': 'x' * 100_000},
        {'path': {'starts_with': 'api/' * 10_000}},
        {'any_of': [{'year': n} for n in range(MAX_FILTER_CONDITIONS + 1)]},
        {'any_of': [{'any_of': [{'year': 2024}]}]},
        {'not': {'not': {'year': 2024}}},
        {'year': {'gte': {'lt': 5}}},
        {'year': [[[[2024]]]]},
        {'year': _DEEP},
        {'any_of': 'everything'},
        {'not': []},
        {'any_of': [{}]},
        {'': 1},
    ]
    answered: list[dict[str, Any]] = [
        {'not': {'product': 'a'}},
        {'not': {'path': {'starts_with': 'api/'}}},
        {'year': {'gte': INT64_MIN, 'lte': INT64_MAX}},
        {'year': 2024, 'path': {'starts_with': 'api/'}},
        {'path': {'contains': 'page', 'ends_with': '.md'}, 'not': {'year': {'in': [2022, 2023]}}},
        {},
    ]
    scope_key = refused[: 3 + len(SCOPE_KEY_INSIDE)]
    calls = [Attack(tool, f, refused=True) for tool in tools for f in scope_key]
    calls += [Attack('text_search', f, refused=True) for f in refused[len(scope_key) :]]
    calls += [Attack('text_search', f, refused=True) for f in ([{'year': 2024}], 'tenant=acme', 2024)]
    calls += [Attack('list_values', key, refused=True) for key in ('tenant', 'colour')]  # the scope key, another door
    calls += [Attack(tool, WIDE, refused=False) for tool in tools]
    calls += [Attack(tool, f, refused=False) for tool in tools for f in answered]
    return calls


@dataclass
class Adversary:
    """A `FunctionModel` that makes the attacks one per turn, reading each answer before the next, then ends."""

    calls: list[Attack]
    seen: list[str] = field(default_factory=list)

    def respond(self, messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        got = returns(messages)
        if got:
            self.seen.append(got[-1].text)
        step = sum(1 for m in messages if isinstance(m, ModelResponse))
        if step >= len(self.calls):
            return ModelResponse(parts=[TextPart(FINAL)])
        attack = self.calls[step]
        return ModelResponse(parts=[ToolCallPart(f'{RAG_NAME}_{attack.tool}', attack.arguments)])


def retry_text(returned: Returned) -> str:
    """A retry's own message (without pydantic-ai's "fix the errors" wrapper)."""
    part = returned.part
    if isinstance(part, RetryPromptPart) and isinstance(part.content, str):
        return part.content
    return returned.text


def test_adversarial_model_never_leaves_the_scope(env: Env) -> None:
    calls = attacks(env.tools)
    adversary = Adversary(calls)
    agent: Agent[None, str] = Agent(FunctionModel(adversary.respond))
    limits = UsageLimits(request_limit=len(calls) + 1)
    result = env.runner.run(agent.run('Everything, every tenant.', toolsets=[env.rag], usage_limits=limits))
    assert result.output == FINAL
    got = returns(result.all_messages())
    assert len(got) == len(adversary.seen) == len(calls)  # one answer per call, each read by the model

    for attack, returned in zip(calls, got, strict=True):
        assert returned.tool == f'{RAG_NAME}_{attack.tool}'
        if attack.refused:
            assert returned.retried, f'{attack.tool} answered {attack.filter!r}:\n{returned.text[:500]}'
            check_retry(attack.filter, retry_text(returned))
        else:
            assert not returned.retried, f'{attack.tool} refused {attack.filter!r}: {returned.text}'
            check_result(attack.tool, attack.filter, returned.text, returned.metadata)

    said = {(a.tool, repr(a.filter)): retry_text(r) for a, r in zip(calls, got, strict=True) if a.refused}
    foreign = said['text_search', repr({'tenant': FOREIGN_TENANT})]
    assert foreign.startswith("unknown key 'tenant'; you may filter on: year (integer)"), foreign
    assert SCOPE_TENANT not in foreign, foreign
    for tool in env.tools:
        assert said[tool, repr({'tenant': FOREIGN_TENANT})] == foreign, tool
        # the scope's own value, another value, another undeclared key, and the key inside any_of or not
        # all read alike: nothing in the answer tells the scope's key from any other unknown key
        assert said[tool, repr({'tenant': SCOPE_TENANT})] == foreign
        assert said[tool, repr({'colour': FOREIGN_TENANT})] == foreign.replace("'tenant'", "'colour'")
        for hidden in SCOPE_KEY_INSIDE:
            assert said[tool, repr(hidden)] == foreign, hidden
    tenant, colour = said['list_values', repr('tenant')], said['list_values', repr('colour')]
    assert tenant == colour.replace("'colour'", "'tenant'"), (tenant, colour)

    wide = [r for a, r in zip(calls, got, strict=True) if a.filter is WIDE]
    assert len(wide) == len(env.tools)
    for returned in wide:  # the whole scope, and not one record more
        tool = returned.tool.removeprefix(f'{RAG_NAME}_')
        ids = set(shown_ids(tool, returned.text, returned.metadata))
        assert ids == (SCOPE_DOCUMENT_IDS if tool == 'list_documents' else SCOPE_CHUNK_IDS)


# -- random filters ------------------------------------------------------------------------------------------

YEARS = (*(2022, 2023, 2024, 2025) * 3, 2021, 2026, 0, -5, 2024.0, 2025.0, INT64_MAX, INT64_MIN)
"""Mostly years the corpus has (a filter selecting nothing checks little), and the extremes of the range."""
BAD_YEARS = ('2024', True, False, 2024.5, INT64_MAX + 1, INT64_MIN - 1, 1e300, None, float('nan'), float('inf'), '')
PRODUCTS = ('a', 'b')
BAD_PRODUCTS = ('c', 'A', '', 1, None, True, SCOPE_TENANT, FOREIGN_TENANT)
PATHS = (*(f'{"api" if i < 4 else "guide"}/page{i}.md' for i in range(8)), 'api/page9.md', 'API/page1.md', 'x' * 200)
FRAGMENTS = (*('api/', 'guide/', 'page', 'page3', '.md', '/', 'e/p') * 2, '', 'API/', 'é', 'x' * 200)
"""Operands of starts_with, ends_with and contains."""
BAD_TEXTS = (5, None, True, 2.5, 'x' * (MAX_FILTER_TEXT + 1), 'a\x00b', '\ud800', 'tab\there')
UNDECLARED = ('tenant', 'colour', 'region', 'Year', '', 'tenant.id', 'metadata.tenant')
JUNK_OPERATORS = ('regex', '$eq', 'EQ', 'like', 'or')
GOOD = {'year': YEARS, 'product': PRODUCTS, 'path': PATHS}
BAD = {'year': BAD_YEARS, 'product': BAD_PRODUCTS, 'path': BAD_TEXTS}


@dataclass
class FilterMaker:
    """Random filters, mostly of the format's shape, each knowing whether it broke a rule.

    Every choice is good most of the time; a bad choice is one the format certainly refuses
    (an undeclared key, a wrong type, an operator the key does not take, an empty object, nesting
    where the format has none, too many conditions) and marks the filter ``valid = False``.
    So the expected outcome (a retry, or a result) is known without asking the parser.
    """

    rnd: random.Random
    valid: bool = True
    conditions: int = 0

    def bad(self, odds: float) -> bool:
        if self.rnd.random() < odds:
            self.valid = False
            return True
        return False

    def make(self) -> Any:
        roll = self.rnd.random()
        if roll < 0.02:
            return None  # no filter: the whole scope
        if roll < 0.05:
            self.valid = False
            return self.rnd.choice([[{'year': 2024}], 'year = 2024', 2024, True, [], ''])
        top = self.conditions_object(0, 2)
        if self.rnd.random() < 0.3:
            top['any_of'] = self.any_of()
        if self.rnd.random() < 0.25:
            top['not'] = self.nested()
        if self.conditions > MAX_FILTER_CONDITIONS:
            self.valid = False
        return top

    def conditions_object(self, least: int, most: int) -> dict[str, Any]:
        keys = self.rnd.sample(list(GOOD), self.rnd.randint(least, most))
        if self.bad(0.08):
            keys.insert(self.rnd.randrange(len(keys) + 1), self.rnd.choice(UNDECLARED))
        return {key: self.condition(key) for key in keys}

    def any_of(self) -> Any:
        if self.bad(0.05):
            return self.rnd.choice(
                [[], 'everything', [{}], [{'any_of': [{'year': 2024}]}], [{'not': {'year': 2024}}], [{'year': 1}] * 21]
            )
        return [self.conditions_object(1, 1 if self.rnd.random() < 0.7 else 2) for _ in range(self.rnd.randint(1, 3))]

    def nested(self) -> Any:
        if self.bad(0.04):
            return self.rnd.choice([{}, [], {'not': {'year': 2024}}, {'any_of': [{'year': 2024}]}, 'x'])
        return self.conditions_object(1, 2)

    def condition(self, key: str) -> Any:
        if key not in GOOD:
            return self.value('year')  # an undeclared key is refused whatever it holds
        operators = DECLARED.keys[key].effective_operators
        if self.rnd.random() < 0.35:
            self.conditions += 1
            if self.bad(0.03):
                return [self.value(key)]  # a bare list is not "any of"
            return self.value(key)
        if self.bad(0.03):
            return {}
        chosen = self.rnd.sample(operators, 1 if self.rnd.random() < 0.75 else 2)
        if self.bad(0.05):
            others = [op for op in OPERATORS if op not in operators]
            chosen.append(self.rnd.choice([*others, *JUNK_OPERATORS]))
        self.conditions += len(set(chosen))
        return {op: self.operand(key, op) for op in chosen}

    def operand(self, key: str, op: str) -> Any:
        if op == 'exists':
            return self.rnd.choice(['true', 1, None, 0]) if self.bad(0.05) else self.rnd.choice([True, False])
        if op in ('in', 'not_in'):
            if self.bad(0.05):
                good, bad = self.rnd.choice(GOOD[key]), self.rnd.choice(BAD[key])
                return self.rnd.choice([good, [], [good] * (MAX_FILTER_VALUES + 1), [good, bad]])
            return [self.rnd.choice(GOOD[key]) for _ in range(self.rnd.randint(1, 3))]
        if op in ('starts_with', 'ends_with', 'contains'):
            return self.rnd.choice(BAD_TEXTS) if self.bad(0.05) else self.rnd.choice(FRAGMENTS)
        return self.value(key)

    def value(self, key: str) -> Any:
        if self.bad(0.06):
            junk = {'x': [[2024]], '$gt': {'deep': {}}}
            return self.rnd.choice([*BAD[key], junk, [1, [2]]])
        return self.rnd.choice(GOOD[key])


@dataclass
class Tally:
    """How the random calls went: enough of each outcome, or the generator checked little."""

    answered: int = 0
    refused: int = 0
    narrowed: int = 0
    """Answers that were neither empty nor the whole scope: the filter selected something."""
    empty: int = 0

    def check(self) -> None:
        total = self.answered + self.refused
        assert self.refused >= total // 5 and self.answered >= total // 3, self
        assert self.narrowed >= self.answered // 3 and self.empty >= 1, self


async def send(rag: ToolishRag[None], tool: str, sent: Any) -> ToolReturn | str:
    """One call as a model makes it: the result, or the retry's message. Anything else raised is a failure."""
    try:
        return await rag.run_tool(tool, {**BASE_ARGUMENTS[tool], 'filter': sent})
    except ModelRetry as e:
        return e.message


def refusal(sent: dict[str, Any]) -> str:
    with pytest.raises(InvalidRequestError) as caught:
        DECLARED.parse(sent)
    return str(caught.value)


async def random_filters(env: Env, seed: int, count: int, *, every_tool: bool) -> Tally:
    """``count`` random filters, each to one tool in turn (or to every tool): a retry exactly when a rule was broken."""
    rnd = random.Random(seed)
    tally = Tally()
    for i in range(count):
        maker = FilterMaker(rnd)
        sent = maker.make()
        for tool in env.tools if every_tool else [env.tools[i % len(env.tools)]]:
            got = await send(env.rag, tool, sent)
            if isinstance(got, str):
                assert not maker.valid, f'{env.name} {tool} refused the valid filter {sent!r}: {got}'
                check_retry(sent, got)
                if isinstance(sent, dict):  # a non-object fails the argument schema before the parser
                    assert got == retry_message(refusal(sent)), sent
                tally.refused += 1
                continue
            text = got.return_value
            assert isinstance(text, str)
            assert maker.valid, f'{env.name} {tool} answered the invalid filter {sent!r}:\n{text[:300]}'
            check_result(tool, sent, text, got.metadata)
            selected = len(expected(sent).ids(tool))
            tally.answered += 1
            tally.narrowed += 0 < selected < len(SCOPE_DOCUMENT_IDS if tool == 'list_documents' else SCOPE_CHUNK_IDS)
            tally.empty += selected == 0
    return tally


DEFAULT_SPLIT = {'memory': (1, 334), 'lancedb': (2, 333), 'tantivy': (3, 333)}
"""Seed and count per store: 1,000 random filters in the default run."""
assert sum(count for _, count in DEFAULT_SPLIT.values()) == 1000


def test_random_filters_narrow_the_scope_exactly(env: Env) -> None:
    seed, count = DEFAULT_SPLIT[env.name]
    env.runner.run(random_filters(env, seed, count, every_tool=False)).check()


@pytest.mark.slow
def test_many_random_filters_on_every_tool(env: Env) -> None:
    seed, _ = DEFAULT_SPLIT[env.name]
    env.runner.run(random_filters(env, seed + 100, 2000, every_tool=True)).check()
