"""The navigation tools: ``list_documents``, ``outline``, ``read_section`` and ``list_values``.

A name that matches nothing in scope, whether it does not exist or lies outside the scope, gets
one message built from what the model sent alone, so the two cannot be told apart. See docs/concepts.md.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import partial
from typing import Annotated, Any

from ...errors import InvalidRequestError, echo
from ...navigation import Choice, SectionChoice
from ...retriever import Retriever
from ...search import SearchHit
from ...sections import MAX_PAGE_LIMIT, DocumentSummary
from .._arguments import MAX_NAME_CHARS, IntBounds, StringArgument, name_argument
from .._filterable import ModelFilters
from .._render_navigation import (
    render_choice,
    render_document_page,
    render_outline,
    render_section_choice,
    render_section_page,
    render_values,
)
from .._retries import short_repr
from .._spec import Declared, Found, Param, ToolEnv, ToolSpec
from ._shared import filter_param

__all__ = ['DEFAULT_PAGE', 'MAX_PAGE', 'MAX_VALUES', 'SPECS']

DEFAULT_PAGE = 20
MAX_PAGE = 100
"""The largest ``limit`` of one ``list_documents`` page."""
MAX_VALUES = 50
"""How many values ``list_values`` shows (the most common first)."""
_READ_BATCH = 200
"""Chunks asked of the store per ``read_section`` call; the rendering keeps those that fit the cap."""

# What each parameter takes is said in its tool's description (every request carries the schemas).
_TITLE_CONTAINS = StringArgument(
    MAX_NAME_CHARS,
    empty='title_contains is empty: omit it to list every document, or send a word of the title',
    too_long=f'title_contains is over {MAX_NAME_CHARS} characters: send a word or two of the title',
)
_DOCUMENT = name_argument('document', 'a document id or title from list_documents')


@dataclass(frozen=True, slots=True)
class _Navigation:
    """What the bodies need of the toolset: the full tool names for hints, the keys shown, the read cap."""

    list_documents: str
    outline: str
    read_section: str
    shown: tuple[str, ...]
    max_read_chars: int

    @classmethod
    def of(cls, env: ToolEnv) -> _Navigation:
        filters = env.settings.model_filters
        shown = tuple(filters.keys) if filters is not None else ()
        names = (env.full_name('list_documents'), env.full_name('outline'), env.full_name('read_section'))
        return cls(*names, shown=shown, max_read_chars=env.settings.max_read_chars)


def _check_offset(offset: int) -> None:
    if not 0 <= offset <= MAX_PAGE_LIMIT:
        raise InvalidRequestError(
            f'offset must be between 0 and {MAX_PAGE_LIMIT}; you sent {short_repr(offset)}. Start at 0.'
        )


async def _list_documents(
    r: Retriever,
    nav: _Navigation,
    *,
    offset: int,
    limit: int,
    title_contains: str | None = None,
    filter: dict[str, Any] | None = None,
) -> Found:
    _check_offset(offset)
    navigator = r.navigator()
    page = await navigator.documents(title_contains=title_contains, offset=offset, limit=limit)
    if nav.shown:
        checked = [replace(d, metadata=await navigator.shown_metadata(d, nav.shown)) for d in page.documents]
        page = replace(page, documents=tuple(checked))
    hint: dict[str, Any] = {'title_contains': title_contains, 'limit': limit, 'filter': filter}
    hint = {k: v for k, v in hint.items() if v is not None and not (k == 'limit' and v == DEFAULT_PAGE)}
    return Found(render_document_page(page, offset, nav.list_documents, nav.shown, hint), [])


async def _document(r: Retriever, name: str, nav: _Navigation) -> DocumentSummary | Choice:
    found = await r.navigator().document(name)
    if found is None:
        raise InvalidRequestError(
            f'no document {echo(name)}: pass a document id or title as {nav.list_documents} shows it '
            '(or a part of the title).'
        )
    return found


async def _checked_choice(r: Retriever, choice: Choice, shown: tuple[str, ...]) -> Choice:
    """``choice`` with each document's shown values confirmed through the scope (see `Navigator.shown_metadata`)."""
    if not shown:
        return choice
    navigator = r.navigator()
    documents = [replace(d, metadata=await navigator.shown_metadata(d, shown)) for d in choice.documents]
    return replace(choice, documents=tuple(documents))


async def _outline(r: Retriever, nav: _Navigation, *, document: str) -> Found:
    found = await _document(r, document, nav)
    if isinstance(found, Choice):
        return Found(render_choice(await _checked_choice(r, found, nav.shown), document, nav.shown), [])
    return Found(render_outline(await r.navigator().outline(found), nav.read_section), [])


async def _read_section(
    r: Retriever, nav: _Navigation, *, section: str, offset: int, document: str | None = None
) -> Found:
    _check_offset(offset)
    navigator = r.navigator()
    document_id = None
    if document is not None:
        found = await _document(r, document, nav)
        if isinstance(found, Choice):
            return Found(render_choice(await _checked_choice(r, found, nav.shown), document, nav.shown), [])
        document_id = found.id
    target = await navigator.section(section, document_id)
    if target is None:
        raise InvalidRequestError(
            f'no section {echo(section)}: pass a section id or exact section title as {nav.outline} shows it'
            + (' (in that document)' if document_id else '')
            + '. A short section may be stored with its parent section: search for its words instead.'
        )
    if isinstance(target, SectionChoice):
        return Found(render_section_choice(target, section), [])
    page = await navigator.read(target, offset=offset, limit=_READ_BATCH)
    text, chunks = render_section_page(target, page, offset, nav.max_read_chars, nav.read_section)
    return Found(text, [SearchHit(c, 0.0) for c in chunks])


async def _list_values(r: Retriever, filterable: ModelFilters | None, *, key: str) -> Found:
    if filterable is None or key not in filterable.keys:
        allowed = ', '.join(filterable.keys) if filterable is not None else ''
        raise InvalidRequestError(f'{echo(key)} is not a filterable key; the keys are: {allowed}.')
    counts = await r.navigator().value_counts(key, candidates=MAX_VALUES)
    return Found(render_values(key, counts, MAX_VALUES), [])


def _limit_refusal(limit: int) -> str:
    return f'limit must be between 1 and {MAX_PAGE}; you sent {short_repr(limit)}'


def _list_documents_tool(env: ToolEnv) -> Declared:
    parameters = (
        Param('title_contains', Annotated[str, _TITLE_CONTAINS] | None, None),
        Param('offset', int, 0),
        Param('limit', Annotated[int, IntBounds(1, MAX_PAGE, _limit_refusal)], DEFAULT_PAGE),
        *filter_param(env),
    )
    return Declared(parameters, partial(_list_documents, nav=_Navigation.of(env)))


def _outline_tool(env: ToolEnv) -> Declared:
    return Declared((Param('document', Annotated[str, _DOCUMENT]),), partial(_outline, nav=_Navigation.of(env)))


def _read_section_tool(env: ToolEnv) -> Declared:
    parameters = (
        Param('section', Annotated[str, name_argument('section', 'a section id or title from outline')]),
        Param('document', Annotated[str, _DOCUMENT] | None, None),
        Param('offset', int, 0),
    )
    return Declared(parameters, partial(_read_section, nav=_Navigation.of(env)))


def _list_values_tool(env: ToolEnv) -> Declared:
    key = name_argument('key', 'one of the filterable keys the tool description names')
    return Declared((Param('key', Annotated[str, key]),), partial(_list_values, filterable=env.settings.model_filters))


SPECS: tuple[ToolSpec, ...] = (
    ToolSpec(
        name='list_documents',
        offered=lambda caps, settings: caps.sections,
        describe=lambda store, settings: (
            'List the documents by title (id, uri, numbers of sections and chunks), limit per page, offset for the '
            'next page; title_contains keeps titles containing it (any case). To see what the collection holds or '
            'find a document to outline.'
        ),
        build=_list_documents_tool,
    ),
    ToolSpec(
        name='outline',
        offered=lambda caps, settings: caps.sections,
        describe=lambda store, settings: (
            "A document's section tree in reading order: each section's title, id and size. document: its id, "
            'exact title or part of its title (several matches: a list to choose from). Use it before read_section.'
        ),
        build=_outline_tool,
    ),
    ToolSpec(
        name='read_section',
        offered=lambda caps, settings: caps.sections,
        describe=lambda store, settings: (
            'Read a whole section (subsections included) in reading order, with chunk ids to cite. section: a '
            'section id from outline, an exact title (with document if several documents have it), or a document '
            'id (the whole document). Long sections come in pages: call again with the offset given.'
        ),
        build=_read_section_tool,
    ),
    ToolSpec(
        name='list_values',
        offered=lambda caps, settings: caps.sections and settings.filterable is not None,
        describe=lambda store, settings: (
            'List the values a filterable key takes here, with how many documents have each: to choose a filter.'
        ),
        build=_list_values_tool,
    ),
)
"""The navigation tools' specs."""
