"""The bodies of the navigation tools: ``list_documents``, ``outline``, ``read_section``, ``list_values``.

Each takes the run's scoped `Retriever` and the checked arguments and returns the text the
model reads with the chunks it shows; `ToolishRag` runs them through its one tool-call path
(scope, argument checks, retries, events). A name that matches nothing in scope, whether it
does not exist or lies outside the scope, gets one message, built from what the model sent
alone, so the two cannot be told apart.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from ..errors import InvalidRequestError, echo
from ..navigation import Choice, SectionChoice
from ..retriever import Retriever
from ..search import SearchHit
from ..sections import MAX_PAGE_LIMIT, DocumentSummary
from .filterable import ModelFilters
from .render_navigation import (
    render_choice,
    render_document_page,
    render_outline,
    render_section_choice,
    render_section_page,
    render_values,
)
from .retries import short_repr

__all__ = [
    'DEFAULT_PAGE',
    'MAX_PAGE',
    'MAX_VALUES',
    'ToolNames',
    'list_documents',
    'list_values',
    'outline',
    'read_section',
]

DEFAULT_PAGE = 20
MAX_PAGE = 100
"""The largest ``limit`` of one ``list_documents`` page."""
MAX_VALUES = 50
"""How many values ``list_values`` shows (the most common first)."""
_READ_BATCH = 200
"""Chunks asked of the store per ``read_section`` call; the rendering keeps those that fit the cap."""

_Result = tuple[str, list[SearchHit]]


@dataclass(frozen=True, slots=True)
class ToolNames:
    """The full names of the navigation tools, for the hints an answer gives ("call outline with...")."""

    list_documents: str
    outline: str
    read_section: str


def _check_offset(offset: int) -> None:
    if not 0 <= offset <= MAX_PAGE_LIMIT:
        raise InvalidRequestError(
            f'offset must be between 0 and {MAX_PAGE_LIMIT}; you sent {short_repr(offset)}. Start at 0.'
        )


def _no_document(name: str, names: ToolNames) -> InvalidRequestError:
    return InvalidRequestError(
        f'no document {echo(name)}: pass a document id or title as {names.list_documents} shows it '
        '(or a part of the title).'
    )


async def list_documents(r: Retriever, args: Mapping[str, Any], names: ToolNames, shown: tuple[str, ...]) -> _Result:
    offset, limit = args['offset'], args['limit']
    _check_offset(offset)
    if not 1 <= limit <= MAX_PAGE:
        raise InvalidRequestError(f'limit must be between 1 and {MAX_PAGE}; you sent {short_repr(limit)}')
    navigator = r.navigator()
    page = await navigator.documents(title_contains=args.get('title_contains'), offset=offset, limit=limit)
    if shown:
        checked = [replace(d, metadata=await navigator.shown_metadata(d, shown)) for d in page.documents]
        page = replace(page, documents=tuple(checked))
    hint = {k: v for k, v in args.items() if k in ('title_contains', 'limit', 'filter') and v is not None}
    if hint.get('limit') == DEFAULT_PAGE:
        del hint['limit']
    return render_document_page(page, offset, names.list_documents, shown, hint), []


async def _document(r: Retriever, name: str, names: ToolNames) -> DocumentSummary | Choice:
    found = await r.navigator().document(name)
    if found is None:
        raise _no_document(name, names)
    return found


async def _checked_choice(r: Retriever, choice: Choice, shown: tuple[str, ...]) -> Choice:
    """``choice`` with each document's shown values confirmed through the scope (see `Navigator.shown_metadata`)."""
    if not shown:
        return choice
    navigator = r.navigator()
    documents = [replace(d, metadata=await navigator.shown_metadata(d, shown)) for d in choice.documents]
    return replace(choice, documents=tuple(documents))


async def outline(r: Retriever, args: Mapping[str, Any], names: ToolNames, shown: tuple[str, ...]) -> _Result:
    found = await _document(r, args['document'], names)
    if isinstance(found, Choice):
        return render_choice(await _checked_choice(r, found, shown), args['document'], shown), []
    return render_outline(await r.navigator().outline(found), names.read_section), []


async def read_section(
    r: Retriever, args: Mapping[str, Any], names: ToolNames, shown: tuple[str, ...], max_chars: int
) -> _Result:
    offset, name = args['offset'], args['section']
    _check_offset(offset)
    navigator = r.navigator()
    document_id = None
    if args.get('document') is not None:
        document = await _document(r, args['document'], names)
        if isinstance(document, Choice):
            return render_choice(await _checked_choice(r, document, shown), args['document'], shown), []
        document_id = document.id
    target = await navigator.section(name, document_id)
    if target is None:
        raise InvalidRequestError(
            f'no section {echo(name)}: pass a section id or exact section title as {names.outline} shows it'
            + (' (in that document)' if document_id else '')
            + '. A short section may be stored with its parent section: search for its words instead.'
        )
    if isinstance(target, SectionChoice):
        return render_section_choice(target, name), []
    page = await navigator.read(target, offset=offset, limit=_READ_BATCH)
    text, chunks = render_section_page(target, page, offset, max_chars, names.read_section)
    return text, [SearchHit(c, 0.0) for c in chunks]


async def list_values(r: Retriever, args: Mapping[str, Any], filterable: ModelFilters | None) -> _Result:
    key = args['key']
    if filterable is None or key not in filterable.keys:
        allowed = ', '.join(filterable.keys) if filterable is not None else ''
        raise InvalidRequestError(f'{echo(key)} is not a filterable key; the keys are: {allowed}.')
    counts = await r.navigator().value_counts(key, candidates=MAX_VALUES)
    return render_values(key, counts, MAX_VALUES), []
