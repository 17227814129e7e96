"""Property: thousands of scoped tool calls, on every store and every tool, show nothing outside the scope.

Issue 12 acceptance (a). Each store holds two tenants (`corpus`); the toolset is scoped to
acme as a deployer would scope it. Calls are drawn from the per-tool argument registry
(`registry.REGISTRY`): queries in the corpus's words, globex's names and codes, ids of both
tenants and ids that do not exist, ``top_k`` up to the maximum (so ranking windows matter:
globex has three times acme's documents), thresholds, sometimes out of range. For every call:

* no exception other than ``ModelRetry``;
* no hit outside acme, and no globex id, title, uri, entity or serial code in the result
  text (the quoted query or pattern aside); no out-of-scope hits from the store either
  (the retriever would drop them, with a warning);
* a retry message is at most `MAX_RETRY_CHARS` and names neither the scope (``acme``,
  ``tenant``, the store's SQL) nor anything of globex's, unless the model sent it;
* a globex or missing id is "not found"; an acme chunk (or section) id is found;
* what a tool's registry entry says its answers must hold (`ToolArguments.judge`): for
  ``verify_citations``, exactly acme's chunks holding a quote cited from them are verified,
  and every other id cited is "not found" on its line.

The default run makes a few hundred calls; the ``slow`` run makes over 10,000 (3,400 per store).
The registry must cover every tool a store offers, or `offered_tools` fails the test.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest
from hypothesis import HealthCheck, Phase, given, settings

from toolish_rag.toolset import TOOL_NAMES

from .corpus import Failures, describe
from .registry import REGISTRY, tool_rounds
from .stores import StoreEnv, call, offered_tools

FAST_CALLS_PER_STORE = 80
SLOW_CALLS_PER_STORE = 3_400
"""Over 10,000 calls across the three stores."""
BATCH = 40
"""Calls per hypothesis example, at least (examples are cheap; the store calls are the cost): every tool, in turn."""
MAX_CHUNKS_TO_ADD = 10


def test_registry_has_a_generator_for_every_tool_name() -> None:
    assert set(REGISTRY) == set(TOOL_NAMES), (
        f'REGISTRY covers {sorted(REGISTRY)} but the tools are {sorted(TOOL_NAMES)}: '
        'give every tool an argument generator in tests/hardening/registry.py'
    )


def test_registry_covers_every_tool_the_store_offers(env: StoreEnv) -> None:
    assert offered_tools(env)


def test_scoped_calls_stay_in_scope(env: StoreEnv) -> None:
    failures, stats = _scoped_calls(env, FAST_CALLS_PER_STORE)
    assert not failures, failures.report(f'{env.name}: {stats["calls"]} scoped calls')
    _assert_not_vacuous(env, stats, FAST_CALLS_PER_STORE)


@pytest.mark.slow
def test_scoped_calls_stay_in_scope_at_scale(env: StoreEnv) -> None:
    failures, stats = _scoped_calls(env, SLOW_CALLS_PER_STORE)
    assert not failures, failures.report(f'{env.name}: {stats["calls"]} scoped calls')
    _assert_not_vacuous(env, stats, SLOW_CALLS_PER_STORE)


def _scoped_calls(env: StoreEnv, total: int) -> tuple[Failures, Counter[str]]:
    """Make ``total`` generated calls (in batches of `BATCH`), collecting every failed check."""
    tools = offered_tools(env)
    failures = Failures()
    stats: Counter[str] = Counter()

    @settings(
        max_examples=total // BATCH,
        derandomize=True,
        deadline=None,
        database=None,
        phases=[Phase.explicit, Phase.generate],  # no shrinking: the failures are collected and reported
        suppress_health_check=list(HealthCheck),
    )
    @given(batch=tool_rounds(env.corpus, tools, -(-BATCH // len(tools))))
    def run(batch: list[tuple[str, dict[str, Any]]]) -> None:
        for tool, arguments in batch:
            _check_call(env, tool, arguments, failures, stats)

    run()
    return failures, stats


def _assert_not_vacuous(env: StoreEnv, stats: Counter[str], total: int) -> None:
    """Every tool was called, searches found acme records, and bad calls came back as retries."""
    assert stats['calls'] >= total, stats
    assert all(stats[f'tool {t}'] for t in offered_tools(env)), stats
    # Searches (not navigation, whose listings and outlines carry no hits) found records on average.
    assert stats['search hits'] > stats['search calls'], stats
    assert stats['retries'] > 0, stats


def _check_call(env: StoreEnv, tool: str, arguments: dict[str, Any], failures: Failures, stats: Counter[str]) -> None:
    outcome = env.runner.run(call(env, tool, arguments))
    stats['calls'] += 1
    stats[f'tool {tool}'] += 1
    stats['search calls'] += tool.endswith('_search')
    where = f'{tool}({describe(arguments, 160)})'
    for warning in outcome.leaks_caught:
        failures.add('store returned out-of-scope hits (the retriever dropped them)', f'{where} -> {warning}')
    if outcome.error is not None:
        failures.add(f'exception {type(outcome.error).__name__}', f'{where} -> {describe(str(outcome.error), 200)}')
        return
    if outcome.retry is not None:
        stats['retries'] += 1
        problems = env.oracle.retry_problems(outcome.retry, arguments)
        shown = describe(outcome.retry, 200)
    else:
        assert outcome.result is not None
        stats['hits'] += len(outcome.result.metadata['hits'])
        if tool.endswith('_search'):
            stats['search hits'] += len(outcome.result.metadata['hits'])
        problems = env.oracle.result_problems(outcome.result, arguments)
        judge = REGISTRY[tool].judge
        if judge is not None and not problems:
            problems = judge(env.corpus, arguments, outcome.result)
        shown = describe(str(outcome.result.return_value), 200)
    for problem in problems:
        kind, _, detail = problem.partition(': ')
        failures.add(kind, f'{where}: {detail} -> {shown}')
    expected = _expected_id_outcome(env, tool, arguments)
    if expected == 'not found' and outcome.retry is None:
        failures.add('foreign or missing id answered', f'{where} -> {shown}')
    elif expected == 'found' and outcome.retry is not None:
        failures.add('acme id refused', f'{where} -> {shown}')


def _expected_id_outcome(env: StoreEnv, tool: str, arguments: dict[str, Any]) -> str | None:
    """``'not found'`` for a globex or missing id, ``'found'`` for an acme one the tool takes, else None.

    A tool that takes names as well as ids (the navigation tools) says so itself (`ToolArguments.expect`).
    """
    expect = REGISTRY[tool].expect
    if expect is not None:
        return expect(env.corpus, arguments)
    for parameter in REGISTRY[tool].id_parameters:
        value = arguments.get(parameter)
        if not isinstance(value, str):
            continue
        ident = value.strip()
        scope = env.corpus.scope
        if ident not in scope.all:
            return 'not found'
        findable = set(scope.chunks) if tool == 'broaden_chunk' else {*scope.chunks, *scope.sections}
        valid_count = 0 <= arguments.get('chunks_to_add', 0) <= MAX_CHUNKS_TO_ADD
        if ident in findable and valid_count:
            return 'found'
    return None
