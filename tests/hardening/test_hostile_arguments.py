"""Hostile arguments: whatever a model (or a prompt injection) sends, a tool answers or asks for a retry.

Issue 12 acceptance (b). Every value of every class in `registry.HOSTILE` (NUL and control
characters, lone surrogates, 1 MB strings, huge and non-finite numbers, engine-specific
regex syntax, regex bombs, query-language and SQL injection, deeply nested JSON, globex's
ids, ids that do not exist) goes into every parameter of every tool a store offers, the
other arguments valid. Each call must:

* raise nothing but ``ModelRetry`` (any other exception crashes the agent run, or worse,
  is shown to the model with internals in it);
* keep its results in scope (`ScopeOracle.result_problems`), and get them from a store that
  kept to the scope itself (the retriever drops out-of-scope hits a store returns despite
  filter pushdown, and warns: that warning is a failure here too);
* give a retry message of at most `MAX_RETRY_CHARS` that names neither the hidden scope
  (``acme``, ``tenant``, the store's SQL) nor globex (`ScopeOracle.retry_problems`);
* for a globex id, read exactly like the retry for a missing id of the same shape (the
  ids swapped): any difference tells the model the foreign record exists. A tool that
  answers about each id it was sent (``verify_citations``) answers both, in the same words.

Hostile values also reach the store inside the scope filter, when a deployer builds the
scope from request data (a tenant name from a header): `registry.hostile_scopes`. Refusing
such a filter when it is built (``ValueError``) is fine; a tool call under it must behave as
above, and return only records the filter matches.

The default run samples each class (a couple of hundred calls); the ``slow`` run sends all
(over 1,000 hostile arguments per store, plus every hostile scope on every tool).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

import pytest

from toolish_rag import matches
from toolish_rag.filters import Filter
from toolish_rag.toolset._tools.citations import NOT_FOUND

from .corpus import Failures, describe
from .registry import REGISTRY, HostileCase, HostileScope, hostile_cases, hostile_scopes, sample_per_class
from .stores import Outcome, StoreEnv, call, offered_tools, scoped_rag

FAST_CASES_PER_CLASS = 8
_FOREIGN_CLASSES = ('foreign_ids', 'foreign_names')
"""Hostile classes of globex's ids and names: each must be answered exactly like its missing twin."""
FAST_SCOPES_PER_CLASS = 4
SLOW_MIN_CASES_PER_STORE = 1_000


def test_hostile_arguments(env: StoreEnv) -> None:
    cases = hostile_cases(env.corpus, offered_tools(env))
    failures, stats = _check_cases(env, sample_per_class(cases, FAST_CASES_PER_CLASS))
    assert not failures, failures.report(f'{env.name}: {stats["calls"]} hostile calls ({dict(stats)})')
    assert stats['retries'] and stats['answers'], stats  # not vacuous: both outcomes occur


@pytest.mark.slow
def test_hostile_arguments_all(env: StoreEnv) -> None:
    cases = hostile_cases(env.corpus, offered_tools(env))
    assert len(cases) >= SLOW_MIN_CASES_PER_STORE
    failures, stats = _check_cases(env, cases)
    assert not failures, failures.report(f'{env.name}: {stats["calls"]} hostile calls ({dict(stats)})')
    assert stats['retries'] and stats['answers'], stats


def test_hostile_scopes(env: StoreEnv) -> None:
    scopes = _sample_scopes(hostile_scopes(), FAST_SCOPES_PER_CLASS)
    failures, stats = _check_scopes(env, scopes, every_tool=False)
    assert not failures, failures.report(f'{env.name}: {len(scopes)} hostile scopes ({dict(stats)})')
    assert stats['calls'], stats


@pytest.mark.slow
def test_hostile_scopes_all(env: StoreEnv) -> None:
    scopes = hostile_scopes()
    failures, stats = _check_scopes(env, scopes, every_tool=True)
    assert not failures, failures.report(f'{env.name}: {len(scopes)} hostile scopes ({dict(stats)})')
    assert stats['calls'], stats


# -- hostile arguments ---------------------------------------------------------------------------------


def _check_cases(env: StoreEnv, cases: Sequence[HostileCase]) -> tuple[Failures, Counter[str]]:
    failures = Failures()
    stats: Counter[str] = Counter()
    for case in cases:
        outcome = env.runner.run(call(env, case.tool, case.arguments))
        stats['calls'] += 1
        stats['retries' if outcome.retry is not None else 'answers' if outcome.result is not None else 'errors'] += 1
        where = f'{case.tool}.{case.parameter}={describe(case.value)}'
        _judge(env, outcome, case.arguments, case.hostile_class, where, failures)
        if case.hostile_class in _FOREIGN_CLASSES and case.parameter in REGISTRY[case.tool].id_parameters:
            stats['calls'] += 1
            _compare_with_missing_twin(env, case, outcome, where, failures)
    return failures, stats


def _judge(
    env: StoreEnv, outcome: Outcome, arguments: dict[str, object], group: str, where: str, failures: Failures
) -> None:
    """Record every way ``outcome`` fails the hardening rules, under ``group`` (a hostile class)."""
    for warning in outcome.leaks_caught:
        failures.add(f'{group}: store returned out-of-scope hits (the retriever dropped them)', f'{where} -> {warning}')
    if outcome.error is not None:
        error = outcome.error
        failures.add(f'{group}: exception {type(error).__name__}', f'{where} -> {describe(str(error), 240)}')
        return
    if outcome.retry is not None:
        problems = env.oracle.retry_problems(outcome.retry, arguments)
        shown = describe(outcome.retry, 240)
    else:
        assert outcome.result is not None
        problems = env.oracle.result_problems(outcome.result, arguments)
        shown = describe(str(outcome.result.return_value), 160)
    for problem in problems:
        kind, _, detail = problem.partition(': ')
        failures.add(f'{group}: {kind}', f'{where}: {detail} -> {shown}')


def _compare_with_missing_twin(
    env: StoreEnv, case: HostileCase, outcome: Outcome, where: str, failures: Failures
) -> None:
    """A foreign id or name must be "not found", in exactly the words a missing one of its shape gets."""
    assert isinstance(case.value, str)
    foreign = case.value.strip()
    twin = env.corpus.missing_twin(foreign)
    tool = REGISTRY[case.tool]
    twin_outcome = env.runner.run(
        call(env, case.tool, tool.with_value(env.corpus, case.parameter, case.value.replace(foreign, twin)))
    )
    group = case.hostile_class
    if tool.answers_missing_ids:
        _compare_answers(case, outcome, twin_outcome, (foreign, twin), where, failures)
        return
    if outcome.retry is None:
        failures.add(f'{group}: foreign id or name answered, not "not found"', f'{where} -> {_shown(outcome)}')
        return
    if twin_outcome.retry is None:
        failures.add(
            f'{group}: missing twin answered, not "not found"', f'{where} twin {twin!r} -> {_shown(twin_outcome)}'
        )
        return
    mine, theirs = outcome.retry.replace(foreign, '<id>'), twin_outcome.retry.replace(twin, '<id>')
    if mine != theirs:
        failures.add(
            f"{group}: retry differs from a missing one's",
            f'{where}: foreign {describe(mine, 200)} vs missing {describe(theirs, 200)}',
        )


def _compare_answers(
    case: HostileCase, outcome: Outcome, twin_outcome: Outcome, ids: tuple[str, str], where: str, failures: Failures
) -> None:
    """A tool answering about each id it was sent: the foreign id's answer is the missing twin's, ids swapped."""
    group = case.hostile_class
    foreign, twin = ids
    if outcome.result is None or twin_outcome.result is None:
        failures.add(
            f'{group}: foreign id or its missing twin not answered',
            f'{where} -> {_shown(outcome)} / twin -> {_shown(twin_outcome)}',
        )
        return
    mine = str(outcome.result.return_value).replace(foreign, '<id>')
    theirs = str(twin_outcome.result.return_value).replace(twin, '<id>')
    if mine != theirs or outcome.result.metadata['hits'] or NOT_FOUND not in mine:
        failures.add(
            f"{group}: answer differs from a missing one's",
            f'{where}: foreign {describe(mine, 200)} vs missing {describe(theirs, 200)}',
        )


def _shown(outcome: Outcome) -> str:
    if outcome.error is not None:
        return f'{type(outcome.error).__name__}: {describe(str(outcome.error), 160)}'
    if outcome.retry is not None:
        return describe(outcome.retry, 160)
    assert outcome.result is not None
    return describe(str(outcome.result.return_value), 160)


# -- hostile scopes ------------------------------------------------------------------------------------


def _sample_scopes(scopes: list[HostileScope], per_class: int) -> list[HostileScope]:
    """Evenly spread picks of each class (the default run's quick version)."""
    out: list[HostileScope] = []
    for name in dict.fromkeys(s.hostile_class for s in scopes):
        of_class = [s for s in scopes if s.hostile_class == name]
        step = max(1, len(of_class) // per_class)
        out += of_class[step // 2 :: step][:per_class]
    return out


def _check_scopes(env: StoreEnv, scopes: Sequence[HostileScope], *, every_tool: bool) -> tuple[Failures, Counter[str]]:
    """Each scope's baseline calls: on every tool, or (the quick version) on one tool each, in turn."""
    offered = offered_tools(env)
    failures = Failures()
    stats: Counter[str] = Counter()
    for n, scope in enumerate(scopes):
        tools = offered if every_tool else [offered[n % len(offered)]]
        try:
            f = scope.build()
        except ValueError:
            stats['refused when built'] += 1  # refusing a hostile filter up front is fine
            continue
        except Exception as e:
            failures.add(
                f'{scope.hostile_class}: building the filter raised {type(e).__name__}',
                f'{scope.label} -> {describe(str(e), 200)}',
            )
            continue
        stats['built'] += 1
        try:
            rag = scoped_rag(env.store, f)
        except Exception as e:
            failures.add(
                f'{scope.hostile_class}: scoping the toolset raised {type(e).__name__}',
                f'{scope.label} -> {describe(str(e), 200)}',
            )
            continue
        for tool in tools:
            arguments = REGISTRY[tool].baseline(env.corpus)
            outcome = env.runner.run(call(env, tool, arguments, rag))
            stats['calls'] += 1
            where = f'scope {scope.label}, {tool}'
            _judge(env, outcome, arguments, scope.hostile_class, where, failures)
            _check_scope_outcome(scope, f, outcome, where, failures)
    return failures, stats


def _check_scope_outcome(scope: HostileScope, f: Filter, outcome: Outcome, where: str, failures: Failures) -> None:
    """Hits the hostile filter does not match, and retries that show its hostile text."""
    if outcome.retry is not None:
        for secret in scope.hidden:
            if secret in outcome.retry:
                failures.add(
                    f'{scope.hostile_class}: retry shows the scope', f'{where} -> {describe(outcome.retry, 200)}'
                )
    if outcome.result is None:
        return
    try:
        wrong = [h.id for h in outcome.result.metadata['hits'] if not matches(f, h.record)]
    except RecursionError:
        return  # the reference evaluator cannot judge so deep a filter; the tenant check still ran
    if wrong:
        failures.add(f'{scope.hostile_class}: hit outside the filter', f'{where} -> {wrong[:5]}')
