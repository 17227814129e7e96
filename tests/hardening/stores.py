"""The three stores under test, each loaded with the two-tenant corpus, and one way to call a tool.

A `StoreEnv` is built once per test module and store (LanceDB in a temporary directory):
the store, its acme-scoped `ToolishRag`, and the `asyncio.Runner` whose loop the store was
built on. Hypothesis runs synchronous test bodies, so every call goes through that one
runner: a store's async machinery (LanceDB's connection, worker threads) stays on the loop
it was created on.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import pytest
from pydantic_ai import ModelRetry
from pydantic_ai.messages import ToolReturn

from toolish_rag import ToolishRag
from toolish_rag.embedding import HashingEmbeddingModel
from toolish_rag.filters import Filter
from toolish_rag.protocols import DocumentStore, GraphStore, StoreLike
from toolish_rag.stores import InMemoryStore
from toolish_rag.toolset import TOOL_NAMES

from .corpus import SCOPE, Corpus, ScopeOracle, two_tenant_corpus
from .registry import FILTERABLE, REGISTRY

__all__ = ['RAG_NAME', 'STORE_NAMES', 'Outcome', 'StoreEnv', 'call', 'offered_tools', 'open_env', 'scoped_rag']

RAG_NAME = 'kb'
STORE_NAMES = ('memory', 'lancedb', 'tantivy')


def _memory(path: Path) -> StoreLike:
    return InMemoryStore(HashingEmbeddingModel(64))


def _lancedb(path: Path) -> StoreLike:
    lancedb = pytest.importorskip('toolish_rag_lancedb', reason='needs the LanceDB adapter (stores/lancedb)')
    store: StoreLike = lancedb.LanceDBStore(path / 'kb', embedder=HashingEmbeddingModel(64))
    return store


def _tantivy(path: Path) -> StoreLike:
    tantivy = pytest.importorskip('toolish_rag_tantivy', reason='needs the Tantivy adapter (stores/tantivy)')
    store: StoreLike = tantivy.TantivyStore()
    return store


STORE_BUILDERS: dict[str, Callable[[Path], StoreLike]] = {'memory': _memory, 'lancedb': _lancedb, 'tantivy': _tantivy}


@dataclass(frozen=True)
class StoreEnv:
    """One store with the corpus loaded, scoped to acme, and the runner its calls go through."""

    name: str
    runner: asyncio.Runner
    store: StoreLike
    corpus: Corpus
    rag: ToolishRag[None]
    oracle: ScopeOracle

    def __repr__(self) -> str:  # pytest shows it in every failure: the store's name says it all
        return f'StoreEnv({self.name!r})'


def scoped_rag(store: StoreLike, scope: Filter) -> ToolishRag[None]:
    """The toolset under test, scoped: every option that adds a tool or a parameter is on.

    ``filterable`` adds the model's ``filter`` (and ``list_values``), ``allow_grouping`` adds
    ``group_by``: the hostile arguments and the scope checks reach them too.
    """
    rag: ToolishRag[None] = ToolishRag(store, name=RAG_NAME, filterable=FILTERABLE, allow_grouping=True)
    return rag.with_metadata_filter(scope)


def open_env(name: str, runner: asyncio.Runner, path: Path) -> StoreEnv:
    store = STORE_BUILDERS[name](path)
    corpus = two_tenant_corpus()
    assert isinstance(store, DocumentStore)
    graph = corpus.relations if isinstance(store, GraphStore) else ()  # a store without a graph refuses relations
    runner.run(store.upsert([*corpus.documents, *corpus.entities, *graph]))
    return StoreEnv(name, runner, store, corpus, scoped_rag(store, SCOPE), ScopeOracle(corpus))


def offered_tools(env: StoreEnv) -> list[str]:
    """The short names of the tools the store offers, after checking the registry covers each one fully.

    Fails when a tool (or a parameter of one) is offered that `REGISTRY` has no generator for:
    a tool added later must join the scope and hostile-argument checks to pass.
    """
    definitions = env.runner.run(env.rag.tool_definitions())
    prefix = f'{RAG_NAME}_'
    tools: list[str] = []
    for definition in definitions:
        assert definition.name.startswith(prefix), definition.name
        tool = definition.name[len(prefix) :]
        assert tool in REGISTRY, (
            f'{env.name} offers {tool!r}, which tests/hardening/registry.py REGISTRY has no argument generator for: '
            'add one (baseline, strategy, id parameters) so the scope and hostile-argument checks cover it'
        )
        parameters = set(definition.parameters_json_schema.get('properties', {}))
        baseline = set(REGISTRY[tool].baseline(env.corpus))
        assert parameters == baseline, (
            f'{tool} takes {sorted(parameters)} but its REGISTRY baseline names {sorted(baseline)}: '
            'teach the registry the new parameters'
        )
        tools.append(tool)
    assert set(tools) <= set(TOOL_NAMES)
    return tools


@dataclass(frozen=True)
class Outcome:
    """What one tool call gave: a result, a retry message for the model, or an exception (a failure).

    ``leaks_caught`` holds the retriever's warnings that the store returned out-of-scope hits
    despite filter pushdown: the retriever drops them, so nothing leaks, but the store's own
    filter translation got the scope wrong, which the tests report.
    """

    result: ToolReturn | None = None
    retry: str | None = None
    error: BaseException | None = None
    leaks_caught: tuple[str, ...] = ()


class _Warnings(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())


async def call(
    env: StoreEnv | None, tool: str, arguments: Mapping[str, Any], rag: ToolishRag[None] | None = None
) -> Outcome:
    """Call ``tool`` on ``rag`` (the env's scoped one by default) as a model would, catching everything."""
    if rag is None:
        assert env is not None, 'a call needs an env or a rag'
        rag = env.rag
    warnings = _Warnings()
    logger = logging.getLogger('toolish_rag')
    logger.addHandler(warnings)
    try:
        outcome = Outcome(result=await rag.run_tool(tool, arguments))
    except ModelRetry as e:
        outcome = Outcome(retry=e.message)
    except Exception as e:  # every other exception is what these tests look for
        outcome = Outcome(error=e)
    finally:
        logger.removeHandler(warnings)
    leaks = tuple(m for m in warnings.messages if 'out-of-scope' in m)
    return replace(outcome, leaks_caught=leaks) if leaks else outcome
