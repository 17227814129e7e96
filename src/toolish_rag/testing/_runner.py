"""`check_store`: run the whole conformance kit over a store from any async code, without pytest's runner.

The same tests `StoreConformance` collects, run one after another in the current event loop
(a notebook, a docs example, a script). See docs/custom-store.md ("Prove it with the conformance kit").
"""

from __future__ import annotations

import inspect
import tempfile
from collections.abc import Callable, Collection
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from ..embedding import HashingEmbeddingModel
from ._conformance import StoreConformance
from ._kit import Aspect, Check, check_of, kit_tests
from .graph_contract import graph_corpus

StoreFactory = Callable[[Path, Any], Any]
"""``(path, embedder) -> store`` (or an awaitable of one): a new, empty store keeping its data under ``path``."""


@dataclass
class ConformanceReport:
    """What the kit found: the tests that passed, and the failed and skipped ones with their messages."""

    passed: list[str] = field(default_factory=list)
    failed: dict[str, str] = field(default_factory=dict)
    skipped: dict[str, str] = field(default_factory=dict)

    def summary(self) -> str:
        return f'{len(self.passed)} passed, {len(self.failed)} failed, {len(self.skipped)} skipped'

    def __str__(self) -> str:
        lines = [self.summary()]
        lines += [f'FAILED {name}: {message}' for name, message in self.failed.items()]
        return '\n'.join(lines)


class ConformanceFailure(AssertionError):
    """Raised by `check_store` when a check fails; ``report`` holds every result."""

    def __init__(self, report: ConformanceReport) -> None:
        super().__init__(str(report))
        self.report = report


async def _store(factory: StoreFactory, path: Path, embedder: Any) -> Any:
    made = factory(path, embedder)
    return await made if inspect.isawaitable(made) else made


def _kit_class(
    make: StoreFactory,
    reopen: StoreFactory | None,
    chosen_protocols: Collection[type] | None,
    chosen_aspects: Collection[Aspect] | None,
) -> type[StoreConformance]:
    class Kit(StoreConformance):
        protocols = chosen_protocols
        aspects = chosen_aspects

        async def make_store(self, path: Path, embedder: Any) -> Any:
            return await _store(make, path, embedder)

        async def reopen_store(self, path: Path, embedder: Any) -> Any:
            if reopen is None:
                return await super().reopen_store(path, embedder)
            return await _store(reopen, path, embedder)

    return Kit


def _cases(test: Callable[..., Any]) -> list[tuple[str, dict[str, Any]]]:
    """``(id suffix, arguments)`` for each parametrization of a kit test (one case when it has none)."""
    for mark in getattr(test, 'pytestmark', []):
        if mark.name == 'parametrize':
            name, values = mark.args
            ids = mark.kwargs.get('ids') or [str(i) for i in range(len(values))]
            return [(f'[{i}]', {name: v}) for i, v in zip(ids, values, strict=True)]
    return [('', {})]


async def _fixture(kit: StoreConformance, name: str, given: dict[str, Any], kit_check: Check | None) -> Any:
    """The fixture ``name`` of `StoreConformance`, from ``given`` (``embedder``, ``store_path``, ``tmp_path``)."""
    if name in given:
        return given[name]
    store_path, embedder = given['store_path'], given['embedder']
    if name == 'empty':
        return await kit.new_store(store_path, embedder, kit_check)
    if name == 'loaded':
        return await kit.loaded_store(store_path, embedder, kit_check)
    if name == 'graph_loaded':
        store = await kit.new_store(store_path, embedder, kit_check)
        await store.upsert(graph_corpus().items())
        return store
    raise TypeError(f'check_store cannot provide the fixture {name!r}')


async def _run(kit: StoreConformance, test: Callable[..., Any], arguments: dict[str, Any]) -> None:
    with tempfile.TemporaryDirectory(prefix='toolish-rag-kit-') as tmp:
        store_path = Path(tmp) / 'store'
        store_path.mkdir()
        given = {
            'tmp_path': Path(tmp),
            'store_path': store_path,
            'embedder': HashingEmbeddingModel(kit.embedding_dimensions),
        }
        kit_check = check_of(test)
        names = [n for n in inspect.signature(test).parameters if n != 'self' and n not in arguments]
        fixtures = {name: await _fixture(kit, name, given, kit_check) for name in names}
        await test(kit, **fixtures, **arguments)


async def check_store(
    make_store: StoreFactory,
    *,
    reopen_store: StoreFactory | None = None,
    protocols: Collection[type] | None = None,
    aspects: Collection[Aspect] | None = None,
) -> ConformanceReport:
    """Run every conformance check that applies to the store ``make_store`` makes; the report, or raise.

    ``make_store(path, embedder)`` returns a new, empty store (or an awaitable of one); pass
    ``reopen_store`` too for a store that persists. ``protocols`` and ``aspects`` choose a subset,
    as `StoreConformance`'s class attributes do. Raises `ConformanceFailure` (an ``AssertionError``
    listing each failed check and its message) if any check fails; checks of protocols the store
    does not implement are skipped, and listed in the report with the reason.
    """
    kit_class = _kit_class(make_store, reopen_store, protocols, aspects)
    kit = kit_class()
    result = ConformanceReport()
    for name, test in sorted(kit_tests(kit_class).items()):
        if getattr(kit_class, name) is None:
            continue
        for suffix, arguments in _cases(test):
            try:
                await _run(kit, test, arguments)
            except pytest.skip.Exception as skip:
                result.skipped[name + suffix] = str(skip.msg)
            except Exception as error:  # a failed check: its message says what the store did and should do
                result.failed[name + suffix] = f'{type(error).__name__}: {error}'
            else:
                result.passed.append(name + suffix)
    if result.failed:
        raise ConformanceFailure(result)
    return result
