"""A citation on its page: ``/citation?chunk=ID&quote=...`` shows the page drawn with the quote's boxes highlighted,
beside the chunk's text with the quote marked; ``/page-image`` is the picture (PNG). Both read the chunk through
the viewer's scope (a foreign chunk is a 404 exactly like a missing one) and draw pixels only from a file
under the app's page roots whose bytes are the ones ingested (`toolish_rag.pictures`). See
docs/inspect.md#citation-pages."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response

from ..citations._model import page_and_paragraph
from ..pictures import MAX_SIDE, CitationPicture, PageFiles, citation_picture
from ._access import Viewer
from ._browse import chunk_link
from ._html import Html, markup, url
from ._page import BadRequest, NotFound, Page

__all__ = ['THUMB_SIDE', 'citation_page', 'page_image', 'thumbnail']

THUMB_SIDE = 320
"""The longer side of a citation's thumbnail on the Citations page, in pixels."""

MISSING = 'no chunk with this id'


def _params(request: Request) -> tuple[str, str]:
    chunk_id = request.query_params.get('chunk', '').strip()
    quote = request.query_params.get('quote', '')
    if not chunk_id or not quote.strip():
        raise BadRequest('a citation page needs ?chunk=CHUNK_ID&quote=the exact quote')
    return chunk_id, quote


async def _picture(
    viewer: Viewer, files: PageFiles, chunk_id: str, quote: str, side: int, draw: bool = True
) -> CitationPicture:
    found = await citation_picture(viewer.rag.retriever(), chunk_id, quote, files, max_side=side, draw=draw)
    if isinstance(found, str):
        if found.startswith('no chunk') or 'not found' in found or 'no record' in found:
            raise NotFound(MISSING)
        raise BadRequest(found)
    return found


async def page_image(request: Request, viewer: Viewer, files: PageFiles) -> Response:
    """The PNG of the quote's page with its boxes highlighted (404 when the chunk or its picture is not there)."""
    chunk_id, quote = _params(request)
    try:
        side = max(64, min(MAX_SIDE, int(request.query_params.get('size', MAX_SIDE))))
    except ValueError:
        raise BadRequest('size must be a number of pixels') from None
    found = await _picture(viewer, files, chunk_id, quote, side)
    if found.picture is None:
        raise NotFound('no page picture for this citation')
    return Response(found.picture.png, media_type='image/png', headers={'Cache-Control': 'private, max-age=60'})


def image_url(chunk_id: str, quote: str, side: int | None = None) -> str:
    params = {'chunk': chunk_id, 'quote': quote}
    if side is not None:
        params['size'] = str(side)
    return url('/page-image', **params)


def thumbnail(chunk_id: str, quote: str, page: int | None) -> Html:
    """A citation's page thumbnail, linking to its citation page (on the Citations page, beside each excerpt)."""
    return markup(
        '<a class="thumb" href="{}"><img src="{}" alt="page {} of the citation" loading="lazy"></a>',
        url('/citation', chunk=chunk_id, quote=quote),
        image_url(chunk_id, quote, THUMB_SIDE),
        page if page is not None else '?',
    )


async def citation_page(request: Request, viewer: Viewer, files: PageFiles) -> Page:
    chunk_id, quote = _params(request)
    found = await _picture(viewer, files, chunk_id, quote, MAX_SIDE, draw=False)  # the picture is /page-image
    source, chunk = found.source, found.chunk
    text = chunk.urtext
    marked = markup(
        '<pre class="text">{}<mark id="quote">{}</mark>{}</pre>',
        text[: source.chunk_start],
        text[source.chunk_start : source.chunk_end],
        text[source.chunk_end :],
    )
    if found.drawable:
        picture = markup(
            '<figure class="page"><img id="page-image" src="{}" alt="page {}, the quote highlighted">'
            '<figcaption>page {}</figcaption></figure>',
            image_url(chunk.id, quote),
            source.page,
            source.page,
        )
    elif source.page is None:
        picture = markup('<p class="missing">This document has no pages: the quote is shown in its text.</p>')
    else:
        picture = markup(
            '<p class="missing">No picture of page {}: the inspector draws pages only from files under its '
            '--page-root folders, unchanged since they were ingested.</p>',
            source.page,
        )
    path = [s for s in source.section_path if s != source.document_title]
    where = ' > '.join([source.document_title, *path]) + page_and_paragraph(source)
    body = markup(
        '<p>verified in {}: <span class="where">{}</span></p><div class="citation">{}<div>{}</div></div>',
        chunk_link(chunk.id),
        where,
        picture,
        marked,
    )
    return Page('Citation', body)
