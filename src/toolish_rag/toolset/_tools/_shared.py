"""What several tool families share: the model's ``filter`` parameter and the ``top_k`` and not-found checks."""

from __future__ import annotations

from typing import Any

from ...errors import InvalidRequestError, echo
from ...protocols import SectionReader
from ...retriever import Retriever
from .._render import NO_DOCUMENTS, NO_MATCHING_DOCUMENTS, NO_RESULTS
from .._retries import short_repr
from .._settings import RagSettings

__all__ = ['ModelFilter', 'TopK', 'check_top_k', 'no_results', 'not_found', 'top_k_bounds']

# `filter` (and the search tools' `group_by`) is in every signature that can take it; the toolset drops it
# from the schemas unless `filterable` (`allow_grouping`) is set, and the call path refuses it then.
ModelFilter = dict[str, Any] | None
TopK = int
"""How many results: its bounds are in the schema (`top_k_bounds`), its meaning in the instructions."""


def top_k_bounds(settings: RagSettings) -> dict[str, tuple[int, int]]:
    """The schema's bounds of ``top_k`` (`check_top_k` checks them, with its own message)."""
    return {'top_k': (1, settings.max_top_k)}


def check_top_k(top_k: int, settings: RagSettings) -> None:
    if not 1 <= top_k <= settings.max_top_k:
        raise InvalidRequestError(
            f'top_k must be between 1 and {settings.max_top_k}; you sent {short_repr(top_k)}. '
            f'Use {settings.default_top_k} unless you need more.'
        )


def not_found(value: str, what: str) -> str:
    return (
        f'{echo(value)} was not found. Pass {what} exactly as it appears in a search result '
        '(for example the id after "chunk" in a result heading), or search again.'
    )


async def no_results(r: Retriever, narrowed: bool) -> str:
    """What a search that found nothing says: that the scope holds no document, if so, else `NO_RESULTS`.

    Counted through ``r``, the run's scoped retriever (with the model's filter and sources, ``narrowed``
    when it sent any): a store that is empty and one holding only other tenants' records answer in the
    same words. A store that cannot count documents (no `SectionReader`) says `NO_RESULTS`.
    """
    if not isinstance(r.store, SectionReader) or (await r.navigator().documents(limit=0)).total:
        return NO_RESULTS
    return NO_MATCHING_DOCUMENTS if narrowed else NO_DOCUMENTS
