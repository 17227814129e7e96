"""What several tool families share: the model's ``filter`` parameter and the ``top_k`` and not-found checks."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import Field

from ...errors import InvalidRequestError, echo
from .._retries import short_repr
from .._settings import RagSettings

__all__ = ['ModelFilter', 'TopK', 'check_top_k', 'not_found']

# `filter` (and the search tools' `group_by`) is in every signature that can take it; the toolset drops it
# from the schemas unless `filterable` (`allow_grouping`) is set, and the call path refuses it then.
ModelFilter = Annotated[dict[str, Any] | None, Field(description='Optional filter; see the tool description.')]
TopK = Annotated[int, Field(description='How many results to return (see the tool description for the maximum).')]


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
