"""What several tool families share: the ``query``, ``top_k`` and model ``filter`` parameters, and not-found words."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import Field, WithJsonSchema

from ...errors import echo
from ...protocols import SectionReader
from ...retriever import Retriever
from .._arguments import IntBounds, query_argument
from .._render import NO_DOCUMENTS, NO_MATCHING_DOCUMENTS, NO_RESULTS
from .._retries import short_repr
from .._settings import RagSettings
from .._spec import Param, ToolEnv

__all__ = ['FILTER_DESCRIPTION', 'filter_param', 'no_results', 'not_found', 'query_param', 'top_k_param']

FILTER_DESCRIPTION = (
    'Optional: narrow the results by metadata. Keys and operators are as this schema shows: '
    'a value means equals, an object of operators must all hold, any_of matches one of '
    'several condition objects, not excludes one.'
)


def query_param(settings: RagSettings) -> Param:
    """A search query, capped at ``max_query_chars`` (its meaning is in each tool's description)."""
    return Param('query', Annotated[str, query_argument(settings.max_query_chars)])


def top_k_param(settings: RagSettings) -> Param:
    """How many results: its bounds are in the schema, its meaning in the instructions."""

    def refusal(top_k: int) -> str:
        return (
            f'top_k must be between 1 and {settings.max_top_k}; you sent {short_repr(top_k)}. '
            f'Use {settings.default_top_k} unless you need more.'
        )

    return Param('top_k', Annotated[int, IntBounds(1, settings.max_top_k, refusal)], settings.default_top_k)


def filter_param(env: ToolEnv) -> tuple[Param, ...]:
    """The model's ``filter`` (its schema: the declared filterable keys), only when `RagSettings.filterable` is set.

    `toolish_rag.toolset._calls.ToolCalls` narrows the call's scope by it before the body runs.
    """
    if env.filter_schema is None:
        return ()
    declared = Annotated[dict[str, Any], WithJsonSchema(dict(env.filter_schema))]
    return (Param('filter', Annotated[declared | None, Field(description=FILTER_DESCRIPTION)], None),)


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
