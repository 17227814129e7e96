"""Browse: the documents in scope (paged, filtered by title, counted), a document's outline, a section read in
full, and a chunk with its id, metadata, labels, offsets, windows and neighbours. Everything goes through the
viewer's scoped `Retriever` (`Navigator` for listings), so a foreign id reads like a missing one.
See docs/inspect.md#browse."""

from __future__ import annotations

from typing import Any

from starlette.requests import Request

from .._store_attributes import windows_of
from ..content import Chunk, Entity
from ..errors import InvalidRequestError
from ..navigation import Navigator, SectionTarget
from ..search import ID_RULE
from ..sections import DocumentPageRequest, DocumentSummary
from ._access import Viewer
from ._html import Html, counted, definitions, join, markup, pretty, table, url
from ._page import BadRequest, NotFound, Page

__all__ = ['chunk_link', 'chunk_page', 'document_link', 'document_page', 'documents_page', 'lacks', 'section_page']

PAGE_SIZE = 50
SECTION_PAGE = 20
NEIGHBOURS = 2


def _int(request: Request, name: str, default: int, *, low: int = 0, high: int = 1_000_000) -> int:
    raw = request.query_params.get(name)
    if raw is None or raw == '':
        return default
    try:
        value = int(raw)
    except ValueError:
        raise BadRequest(f'{name} must be a whole number') from None
    if not low <= value <= high:
        raise BadRequest(f'{name} must lie in [{low}, {high}]')
    return value


def _param(request: Request, name: str) -> str:
    value = request.query_params.get(name, '').strip()
    if not value:
        raise BadRequest(f'missing parameter {name}')
    try:
        return ID_RULE.check(value)
    except InvalidRequestError as e:
        raise BadRequest(str(e)) from None


def _navigator(viewer: Viewer) -> Navigator | None:
    try:
        return viewer.rag.retriever().navigator()
    except InvalidRequestError:
        return None


def lacks(capability: str) -> Page:
    """The page of a capability the store does not have: it says so instead of failing."""
    return Page('Not available', markup('<p class="lacks">This store {}.</p>', capability))


def _pager(path: str, offset: int, limit: int, total: int, **params: object) -> Html:
    if total <= limit:
        return Html('')
    parts: list[Html] = []
    if offset > 0:
        parts.append(markup('<a href="{}">previous</a>', url(path, offset=max(0, offset - limit), **params)))
    parts.append(markup('<span>{} to {} of {}</span>', offset + 1, min(offset + limit, total), total))
    if offset + limit < total:
        parts.append(markup('<a href="{}">next</a>', url(path, offset=offset + limit, **params)))
    return markup('<nav class="pager">{}</nav>', join(parts, ' '))


def document_link(document_id: str, title: str) -> Html:
    return markup('<a href="{}">{}</a>', url('/document', id=document_id), title or document_id)


def chunk_link(chunk_id: str, text: str | None = None) -> Html:
    return markup('<a href="{}" class="id">{}</a>', url('/chunk', id=chunk_id), text or chunk_id)


async def documents_page(request: Request, viewer: Viewer) -> Page:
    nav = _navigator(viewer)
    if nav is None:
        return lacks('cannot list documents (it is no SectionReader): search from the tool console instead')
    title = request.query_params.get('title', '').strip() or None
    offset = _int(request, 'offset', 0)
    try:
        page = await nav.documents(title_contains=title, offset=offset, limit=PAGE_SIZE)
    except InvalidRequestError as e:
        raise BadRequest(str(e)) from None
    rows = [
        (document_link(d.id, d.title), markup('<span class="id">{}</span>', d.id), d.chunk_count, d.section_count)
        for d in page.documents
    ]
    form = markup(
        '<form method="get" action="/documents" class="inline"><label>Title contains '
        '<input name="title" value="{}"></label> <button type="submit">Filter</button></form>',
        title or '',
    )
    found = 'document' if page.total == 1 else 'documents'
    body = markup(
        '{}<p class="count"><span id="total">{}</span> {} in scope{}</p>{}{}',
        form,
        page.total,
        found,
        markup(' whose title contains “{}”', title) if title else '',
        table(['title', 'id', 'chunks', 'sections'], rows, css='documents'),
        _pager('/documents', offset, PAGE_SIZE, page.total, title=title),
    )
    return Page('Documents', body)


async def _summary(nav: Navigator, document_id: str) -> DocumentSummary:
    page = await nav.store.document_page(DocumentPageRequest(nav.filter, document_id=document_id, limit=1))
    if not page.documents:
        raise NotFound('no document with this id')
    return page.documents[0]


async def document_page(request: Request, viewer: Viewer) -> Page:
    nav = _navigator(viewer)
    if nav is None:
        return lacks('cannot outline documents (it is no SectionReader)')
    document = await _summary(nav, _param(request, 'id'))
    outline = await nav.outline(document)
    shown = await nav.shown_metadata(document, sorted(document.metadata))
    facts = definitions(
        {
            'id': markup('<span class="id">{}</span>', document.id),
            'uri': document.uri,
            'chunks in scope': document.chunk_count,
            'sections in scope': document.section_count,
            'metadata': markup('<pre>{}</pre>', pretty(shown)) if shown else '—',
        }
    )
    items = [
        markup(
            '<li class="depth-{}"><a href="{}">{}</a> <span class="muted">({})</span></li>',
            min(s.depth, 6),
            url('/section', document=document.id, id=s.id),
            s.title or s.id,
            counted(s.chunk_count, 'chunk'),
        )
        for s in outline.sections
    ]
    preamble = (
        markup('<p class="muted">{} before the first heading.</p>', counted(outline.preamble_chunks, 'chunk'))
        if outline.preamble_chunks
        else Html('')
    )
    body = markup(
        '{}<h2>Outline</h2>{}<ul class="outline">{}</ul><p><a href="{}">Read the whole document</a></p>',
        facts,
        preamble,
        join(items) if items else markup('<li class="muted">no sections</li>'),
        url('/section', document=document.id),
    )
    return Page(document.title or document.id, body)


async def section_page(request: Request, viewer: Viewer) -> Page:
    nav = _navigator(viewer)
    if nav is None:
        return lacks('cannot read sections (it is no SectionReader)')
    document = await _summary(nav, _param(request, 'document'))
    section_id = request.query_params.get('id', '').strip() or None
    offset = _int(request, 'offset', 0)
    if section_id is None:
        target = SectionTarget(document.id, document.title, None, ())
    else:
        found = await nav.section(_param(request, 'id'), document.id)
        if not isinstance(found, SectionTarget) or found.section_id != section_id:
            raise NotFound('no section with this id')
        target = found
    page = await nav.read(target, offset=offset, limit=SECTION_PAGE)
    chunks = [
        markup(
            '<article class="chunk"><header>{} <span class="muted">#{}{}</span></header><pre>{}</pre></article>',
            chunk_link(c.id),
            c.sequence_number,
            markup(' · {}', ' > '.join(c.section_path)) if c.section_path else '',
            c.urtext,
        )
        for c in page.chunks
    ]
    path = ' > '.join(target.section_path) if target.section_path else '(whole document)'
    body = markup(
        '<p>{} · {} · <span class="count">{} in scope</span></p>{}{}',
        document_link(document.id, document.title),
        path,
        counted(page.total, 'chunk'),
        join(chunks),
        _pager('/section', offset, SECTION_PAGE, page.total, document=document.id, id=section_id),
    )
    return Page(target.section_path[-1] if target.section_path else document.title or document.id, body)


def _offsets(chunk: Chunk) -> dict[str, object]:
    return {
        'sequence number': chunk.sequence_number,
        'chunk index': chunk.chunk_index,
        'start char': '—' if chunk.start_char is None else chunk.start_char,
        'end char': '—' if chunk.end_char is None else chunk.end_char,
        'page': '—' if chunk.page is None else chunk.page,
        **({'cells': chunk.cells} if chunk.cells else {}),
    }


async def _windows(store: Any, chunk: Chunk) -> Html:
    """The texts the chunk's vectors embed, when the store says how it cuts windows (`HasEmbeddingWindows`)."""
    stated = windows_of(store)
    if stated is None:
        return markup('<p class="muted">This store does not say how it cuts embedding windows.</p>')
    from ..windows import window_texts

    embedder, config = stated
    try:
        texts = (await window_texts(embedder, [chunk.text], config))[0]
    except Exception:  # an embedder without a tokenizer: say so rather than fail the page
        return markup('<p class="muted">The windows could not be computed with this embedder.</p>')
    if len(texts) == 1:
        return markup('<p class="muted">One vector: the whole text fits what the embedder reads.</p>')
    return join(
        markup('<details><summary>window {}</summary><pre>{}</pre></details>', i, t) for i, t in enumerate(texts)
    )


async def chunk_page(request: Request, viewer: Viewer) -> Page:
    retriever = viewer.rag.retriever()
    record_id = _param(request, 'id')
    try:
        record = await retriever.get(record_id)
    except InvalidRequestError:
        return lacks('cannot look records up by id (it is no ResultExpander)')
    if record is None:
        raise NotFound('no record with this id')
    if isinstance(record, Entity):
        return _entity(record, viewer)
    around = await retriever.neighbours(record.id, NEIGHBOURS)
    neighbours = around[1] if around is not None else [record]
    rows = [
        (
            c.sequence_number,
            markup('<strong>this chunk</strong>') if c.id == record.id else chunk_link(c.id),
            _preview(c.urtext),
        )
        for c in neighbours
    ]
    facts = _chunk_facts(record)
    graph = (
        markup('<a href="{}">Walk the graph from here</a> · ', url('/graph', node=record.id))
        if viewer.rag.store_features.graph
        else Html('')
    )
    console = markup(
        '<a href="{}">broaden_chunk in the console</a>', url('/console', tool='broaden_chunk', chunk_id=record.id)
    )
    body = markup(
        '{}<p>{}{}</p>{}<h2>Metadata</h2><pre>{}</pre><h2>Embedding windows</h2>{}<h2>Neighbours</h2>{}',
        facts,
        graph,
        console,
        _chunk_text(record),
        pretty(dict(record.metadata)),
        await _windows(viewer.rag.store, record),
        table(['#', 'chunk', 'text'], rows, css='neighbours'),
    )
    return Page(f'Chunk {record.sequence_number} of {record.document_title}', body)


def _chunk_facts(record: Chunk) -> Html:
    """A chunk's id, document, section path (each section a link), labels and offsets."""
    sections = join(
        (
            markup('<a href="{}">{}</a>', url('/section', document=record.document_id, id=sid), title)
            for sid, title in zip(record.section_ids, record.section_path, strict=False)
        ),
        ' > ',
    )
    facts = definitions(
        {
            'id': markup('<span class="id" id="chunk-id">{}</span>', record.id),
            'document': document_link(record.document_id, record.document_title),
            'uri': record.document_uri,
            'section': sections or '—',
            'labels': ', '.join(sorted(record.labels)) or '—',
            **_offsets(record),
        }
    )
    return facts


def _chunk_text(record: Chunk) -> Html:
    """The text the model reads, and the indexed text when it differs."""
    return (
        markup('<h2>Text the model reads</h2><pre class="text">{}</pre>', record.urtext)
        if record.text == record.urtext
        else markup(
            '<h2>Text the model reads</h2><pre class="text">{}</pre><h2>Indexed text</h2><pre>{}</pre>',
            record.urtext,
            record.text,
        )
    )


def _entity(entity: Entity, viewer: Viewer) -> Page:
    facts = definitions(
        {
            'id': markup('<span class="id">{}</span>', entity.id),
            'name': entity.name,
            'aliases': ', '.join(entity.aliases) or '—',
            'labels': ', '.join(sorted(entity.labels)) or '—',
        }
    )
    graph = (
        markup('<p><a href="{}">Walk the graph from here</a></p>', url('/graph', node=entity.id))
        if viewer.rag.store_features.graph
        else Html('')
    )
    body = markup(
        '{}{}<h2>Description</h2><pre>{}</pre><h2>Metadata</h2><pre>{}</pre>',
        facts,
        graph,
        entity.description,
        pretty(dict(entity.metadata)),
    )
    return Page(f'Entity {entity.name}', body)


def _preview(text: str, limit: int = 160) -> str:
    flat = ' '.join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + '…'
