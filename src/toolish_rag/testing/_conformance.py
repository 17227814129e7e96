"""`StoreConformance`: the pytest suite every store adapter runs.

Subclass it in your store's tests and say how to make (and, if it persists, reopen) a store;
the kit checks the protocols the store implements, against the reference semantics. A class
attribute ``protocols`` or ``aspects`` runs a subset (the others are not collected). See
docs/custom-store.md ("Prove it with the conformance kit") and docs/testing.md ("Conformance
kit variants").
"""

from __future__ import annotations

from typing import ClassVar

import pytest

from ._attributes import AttributeChecks
from ._auto_language import AutoLanguageChecks
from ._expansion import ExpansionChecks
from ._graph import GraphChecks
from ._kit import ASPECTS, PROTOCOLS, Aspect
from ._navigation import NavigationChecks
from ._search import SearchChecks
from ._term_statistics import TermStatisticsChecks
from ._writes import WriteChecks

__all__ = ['ASPECTS', 'PROTOCOLS', 'Aspect', 'StoreConformance']


class StoreConformance(
    WriteChecks,
    SearchChecks,
    ExpansionChecks,
    NavigationChecks,
    GraphChecks,
    TermStatisticsChecks,
    AutoLanguageChecks,
    AttributeChecks,
):
    """Base class of a store's conformance tests::

        class TestMyStore(StoreConformance):
            async def make_store(self, path, embedder):
                return MyStore(path, embedder=embedder)

            async def reopen_store(self, path, embedder):  # only for persistent stores
                return MyStore(path, embedder=embedder)

    Each test exercises some protocols and covers one aspect (`ASPECTS`); a test of a protocol the
    store does not implement is skipped with a reason naming it. ``protocols = {TextSearch,
    DocumentStore}`` or ``aspects = {'writes', 'persistence'}`` on the subclass runs only those.
    """

    pytestmark: ClassVar[list[pytest.MarkDecorator]] = [pytest.mark.asyncio]
