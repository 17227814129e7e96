"""The conformance kit's base: its fixtures, which checks a subclass runs, and the shared helpers.

Every kit test is tagged with `check` (the protocols it exercises and the aspect it covers);
`KitBase.protocols` and `KitBase.aspects` choose a subset. See docs/testing.md
("Conformance kit variants") and docs/custom-store.md.
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, Literal, TypeVar, get_args

import pytest
import pytest_asyncio

from ..content import Chunk, Entity
from ..embedding import HashingEmbeddingModel
from ..filters import Filter, matches
from ..protocols import (
    DocumentStore,
    GraphSearch,
    GraphStore,
    HasEmbedder,
    HasEmbeddingWindows,
    HasRegexScanLimit,
    HasTextAnalyzer,
    HybridSearch,
    Reembeddable,
    RegexSearch,
    ResultExpander,
    SectionReader,
    StoreFeatures,
    TextSearch,
    Upgradable,
    VectorSearch,
)
from ..retriever import Retriever
from ._corpus import COMMON_WORD, conformance_corpus, conformance_entities
from .graph_contract import graph_corpus

Aspect = Literal['search', 'scope', 'retriever', 'writes', 'persistence', 'consistency']
"""What a check covers, beside its protocols (docs/testing.md explains each)."""

ASPECTS: frozenset[Aspect] = frozenset(get_args(Aspect))
SEARCHES: tuple[type, ...] = (VectorSearch, TextSearch, RegexSearch, HybridSearch)
"""The search protocols: a check tagged with all of them runs through each the store offers."""
ATTRIBUTES: tuple[type, ...] = (
    HasEmbedder,
    HasTextAnalyzer,
    HasEmbeddingWindows,
    HasRegexScanLimit,
    Upgradable,
    Reembeddable,
)
"""The optional attribute protocols: a store that states one is checked to behave as it says."""
PROTOCOLS: tuple[type, ...] = (
    *SEARCHES,
    ResultExpander,
    SectionReader,
    GraphSearch,
    GraphStore,
    DocumentStore,
    *ATTRIBUTES,
)

_MAX_SHOWN = 25
_Test = TypeVar('_Test', bound=Callable[..., Any])


def _names(protocols: Collection[type]) -> str:
    return ', '.join(sorted(p.__name__ for p in protocols))


@dataclass(frozen=True)
class Check:
    """What one kit test exercises: protocols (any of them, or ``every`` one) and an aspect."""

    protocols: tuple[type, ...]
    aspect: Aspect
    every: bool = False

    def left_out_by(self, protocols: Collection[type] | None, aspects: Collection[str] | None) -> str | None:
        """Why a class choosing ``protocols`` and ``aspects`` does not run this check (None: it does)."""
        if aspects is not None and self.aspect not in aspects:
            return f'aspect {self.aspect!r} is not among the chosen aspects ({", ".join(sorted(aspects))})'
        if protocols is not None:
            chosen = [p for p in self.protocols if p in protocols]
            if not chosen or (self.every and len(chosen) < len(self.protocols)):
                return f'checks {_names(self.protocols)}, not among the chosen protocols ({_names(protocols)})'
        return None

    def missing_from(self, store: object) -> str | None:
        """Why ``store`` cannot take this check (None: it can): the protocol(s) it does not implement."""
        have = [p for p in self.protocols if isinstance(store, p)]
        if have and (not self.every or len(have) == len(self.protocols)):
            return None
        lacking = [p for p in self.protocols if p not in have]
        joined = ' and '.join(p.__name__ for p in lacking) if self.every else ' or '.join(p.__name__ for p in lacking)
        return f'{type(store).__name__} does not implement {joined}'


def check(*protocols: type, aspect: Aspect, every: bool = False) -> Callable[[_Test], _Test]:
    """Tag a kit test with the protocols it exercises and its aspect (see `Check`)."""
    assert aspect in ASPECTS, aspect

    def tag(test: _Test) -> _Test:
        test.__kit_check__ = Check(protocols, aspect, every)  # type: ignore[attr-defined]
        return test

    return tag


def check_of(test: object) -> Check | None:
    """The `Check` a kit test was tagged with (None for anything else)."""
    found = getattr(test, '__kit_check__', None)
    return found if isinstance(found, Check) else None


def kit_tests(cls: type) -> dict[str, Callable[..., Any]]:
    """Every tagged test function ``cls`` inherits, by name (a subclass's own override wins)."""
    tests: dict[str, Callable[..., Any]] = {}
    for klass in reversed(cls.__mro__):
        for name, value in vars(klass).items():
            if check_of(value) is not None:
                tests[name] = value
            elif value is not None and name in tests:
                del tests[name]  # a subclass's own test under the kit's name
    return tests


def report(problems: list[str]) -> str:
    """Problem lines for an assertion message: the first few, and how many more."""
    shown = problems[:_MAX_SHOWN]
    more = len(problems) - len(shown)
    return '\n'.join([*shown, *([f'... and {more} more'] if more else [])])


class KitBase:
    """Fixtures, the subset a subclass runs, and helpers the kit's test groups share."""

    embedding_dimensions: ClassVar[int] = 64

    protocols: ClassVar[Collection[type] | None] = None
    """Run only the checks of these protocols (``None``: every protocol the store implements).

    The search protocols narrow the checks that run through every search: with
    ``{TextSearch, DocumentStore}`` the write checks search with ``text_search`` only."""

    aspects: ClassVar[Collection[Aspect] | None] = None
    """Run only the checks of these aspects (``None``: all of `ASPECTS`)."""

    def __init_subclass__(cls, **kwargs: Any) -> None:
        """Leave out (not collected) the kit tests a subclass's ``protocols`` and ``aspects`` do not choose.

        A subclass can also leave one test out by name, ``test_x = None`` in its body.
        """
        super().__init_subclass__(**kwargs)
        unknown = set(cls.aspects or ()) - ASPECTS
        if unknown:
            raise TypeError(f'{cls.__name__}.aspects names unknown aspects {sorted(unknown)}: choose from {ASPECTS}')
        for name, test in kit_tests(cls).items():
            if name in vars(cls) and vars(cls)[name] is None:
                continue  # ``test_x = None`` in the class body: left out by name
            kit_check = check_of(test)
            assert kit_check is not None
            chosen = kit_check.left_out_by(cls.protocols, cls.aspects) is None
            setattr(cls, name, test if chosen else None)  # None: pytest collects nothing under that name

    async def make_store(self, path: Path, embedder: Any) -> Any:
        """Return a new, empty store keeping its data under ``path`` (an empty directory)."""
        raise NotImplementedError(f'{type(self).__name__} must define async make_store(self, path, embedder)')

    async def reopen_store(self, path: Path, embedder: Any) -> Any:
        """Open the store at ``path`` again, as a new process would. Skip if not persistent."""
        pytest.skip('the store does not claim persistence (reopen_store not implemented)')

    # -- fixtures ------------------------------------------------------------------------------

    @pytest.fixture
    def embedder(self) -> HashingEmbeddingModel:
        return HashingEmbeddingModel(self.embedding_dimensions)

    @pytest.fixture
    def store_path(self, tmp_path: Path) -> Path:
        path = tmp_path / 'store'
        path.mkdir()
        return path

    @pytest_asyncio.fixture  # not pytest.fixture: pytest-asyncio's default strict mode ignores those
    async def empty(self, request: pytest.FixtureRequest, store_path: Path, embedder: HashingEmbeddingModel) -> Any:
        """A new, empty store (the running test is skipped if the store lacks its protocols)."""
        return await self.new_store(store_path, embedder, check_of(request.function))

    @pytest_asyncio.fixture
    async def loaded(self, request: pytest.FixtureRequest, store_path: Path, embedder: HashingEmbeddingModel) -> Any:
        """A store holding the conformance corpus and its entities."""
        return await self.loaded_store(store_path, embedder, check_of(request.function))

    @pytest_asyncio.fixture
    async def graph_loaded(
        self, request: pytest.FixtureRequest, store_path: Path, embedder: HashingEmbeddingModel
    ) -> Any:
        """A graph store holding `graph_corpus`."""
        store = await self.new_store(store_path, embedder, check_of(request.function))
        await store.upsert(graph_corpus().items())
        return store

    # -- what the fixtures do (also called by `toolish_rag.testing.check_store`) --------------------

    async def new_store(self, path: Path, embedder: Any, kit_check: Check | None) -> Any:
        store = await self.make_store(path, embedder)
        reason = kit_check.missing_from(store) if kit_check is not None else None
        if reason is not None:
            pytest.skip(reason)
        return store

    async def loaded_store(self, path: Path, embedder: Any, kit_check: Check | None) -> Any:
        store = await self.new_store(path, embedder, kit_check)
        await store.upsert([*conformance_corpus(), *conformance_entities()])
        return store

    # -- helpers ----------------------------------------------------------------------------------

    def features(self, store: object) -> StoreFeatures:
        """The store's features, narrowed to the chosen ``protocols``."""
        caps = StoreFeatures.of(store)
        if self.protocols is None:
            return caps
        keep = set(self.protocols)
        return StoreFeatures(
            vector=caps.vector and VectorSearch in keep,
            text=caps.text and TextSearch in keep,
            regex=caps.regex and RegexSearch in keep,
            expand=caps.expand and ResultExpander in keep,
            native_hybrid=caps.native_hybrid and HybridSearch in keep,
            sections=caps.sections and SectionReader in keep,
            graph=caps.graph and GraphSearch in keep,
        )

    def searched(self, store: object) -> list[type]:
        """The search protocols the checks call on ``store``: those it implements, among the chosen."""
        return [p for p in SEARCHES if isinstance(store, p) and (self.protocols is None or p in self.protocols)]

    @staticmethod
    def all_records() -> list[Chunk | Entity]:
        return [*(c for d in conformance_corpus() for c in d.chunks), *conformance_entities()]

    @staticmethod
    def expected(f: Filter | None) -> set[str]:
        return {r.id for r in KitBase.all_records() if matches(f, r)}

    async def everything(self, retriever: Retriever, store: object, total: int) -> dict[str, set[str]]:
        """Every record a search for `COMMON_WORD` finds, through each chosen search the store offers."""
        caps = self.features(store)
        found: dict[str, set[str]] = {}
        if caps.vector:
            found['vector_search'] = {h.id for h in await retriever.vector_search(COMMON_WORD, total)}
        if caps.text:
            found['text_search'] = {h.id for h in await retriever.text_search(COMMON_WORD, total)}
        if caps.regex:
            found['regex_search'] = {h.id for h in await retriever.regex_search(COMMON_WORD, total)}
        return found


def differences(what: str, found: dict[str, set[str]], expected: set[str], should: str) -> list[str]:
    """One line per search whose ids differ from ``expected``: what it did, and what it should do."""
    return [
        f'{mode} {what} returned {len(ids)} records: extra {sorted(ids - expected)}, '
        f'missing {sorted(expected - ids)}; {should}'
        for mode, ids in found.items()
        if ids != expected
    ]
