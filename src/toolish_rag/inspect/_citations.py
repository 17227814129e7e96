"""Citations: a draft answer (`GroundedAnswer` JSON) checked citation by citation with the verifier behind
``verify_citations`` (`toolish_rag.citations.verify_answer`) on the cited chunks read through the viewer's
scope: a verified quote highlighted in its chunk, a failed one with its reason and the chunk's closest
sentence. The tool's own answer is shown beside it. See docs/inspect.md#citations."""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError
from pydantic_ai import ModelRetry
from starlette.datastructures import FormData

from ..citations import GroundedAnswer, verify_answer
from ..citations._model import Citation, page_and_paragraph
from ..citations._verify import NOT_SEEN, CitationProblem, normalise_chunk_id
from ..content import Chunk
from ..errors import InvalidRequestError
from ._access import Viewer
from ._browse import chunk_link
from ._citation_page import thumbnail
from ._html import Html, join, markup, url
from ._page import Page

__all__ = ['NOT_FOUND', 'citations_page']

NOT_FOUND = 'no chunk with this id in this scope'

EXAMPLE = (
    '{"status": "answered", "claims": [{"text": "Refunds take 30 days.", '
    '"citations": [{"chunk_id": "CHUNK-ID", "quote": "Refunds are issued within 30 days."}]}]}'
)


async def _chunks(viewer: Viewer, answer: GroundedAnswer) -> dict[str, Chunk]:
    retriever = viewer.rag.retriever()
    found: dict[str, Chunk] = {}
    for citation in answer.citations:
        chunk_id = normalise_chunk_id(citation.chunk_id)
        if chunk_id in found:
            continue
        try:
            record = await retriever.get(chunk_id)
        except InvalidRequestError:
            continue
        if isinstance(record, Chunk):
            found[chunk_id] = record
    return found


def _highlighted(chunk: Chunk, start: int, end: int) -> Html:
    text = chunk.urtext
    return markup('<pre class="text">{}<mark>{}</mark>{}</pre>', text[:start], text[start:end], text[end:])


async def citations_page(viewer: Viewer, form: FormData | None, *, drawn: bool = False) -> Page:
    """The form, and with an answer each citation checked; ``drawn``: page thumbnails beside verified excerpts."""
    raw = str(form.get('answer', '') or '') if form is not None else ''
    entry = markup(
        '<form method="post" action="/citations"><label class="field">Draft answer (GroundedAnswer JSON)'
        '<textarea name="answer" rows="10" id="answer" placeholder="{}">{}</textarea></label>'
        '<button type="submit" id="check">Check</button></form>',
        EXAMPLE,
        raw,
    )
    if form is None or not raw.strip():
        return Page('Citations', entry)
    try:
        answer = GroundedAnswer.model_validate_json(raw)
    except ValidationError as e:
        problems = join(
            markup('<li>{}: {}</li>', '.'.join(map(str, p['loc'])) or 'answer', p['msg']) for p in e.errors()
        )
        return Page(
            'Citations', markup('{}<p class="error">Not a GroundedAnswer:</p><ul>{}</ul>', entry, problems), 400
        )
    seen = await _chunks(viewer, answer)
    verification = verify_answer(answer, seen)
    problems_at = {(p.claim, p.citation): p for p in verification.problems}
    claims: list[Html] = []
    for i, claim in enumerate(verification.answer.claims):
        items: list[Html] = []
        for j, citation in enumerate(claim.citations):
            detail = _citation_detail(citation, seen, problems_at.get((i, j)), drawn=drawn)
            items.append(markup('<li><blockquote>{}</blockquote>{}</li>', citation.quote, detail))
        unbacked = problems_at.get((i, None))
        note = markup('<p class="failed">{}</p>', unbacked.reason) if unbacked is not None else Html('')
        claims.append(markup('<li><p class="claim">{}</p>{}<ol>{}</ol></li>', claim.text, note, join(items)))
    overall = [p.message() for p in verification.problems if p.claim is None]
    summary = markup(
        '<p class="{}" id="verdict">{}</p>{}',
        'ok' if verification.ok else 'failed',
        'every citation verified' if verification.ok else f'{len(verification.problems)} problem(s)',
        join(markup('<p class="failed">{}</p>', m) for m in overall),
    )
    body = markup(
        '{}{}<ol class="claims">{}</ol><h2>What verify_citations tells the model</h2><pre class="model-text">{}</pre>',
        entry,
        summary,
        join(claims),
        await _tool_text(viewer, answer),
    )
    return Page('Citations', body)


def _citation_detail(
    citation: Citation, seen: dict[str, Chunk], problem: CitationProblem | None, *, drawn: bool
) -> Html:
    """One citation's verdict: verified (where, a thumbnail when ``drawn``, the quote highlighted) or why not."""
    chunk_id = normalise_chunk_id(citation.chunk_id)
    chunk = seen.get(chunk_id)
    if citation.source is not None and chunk is not None:
        source = citation.source
        shown = drawn and source.page is not None
        detail = markup(
            '<p class="ok">verified in {} ({} > {}{}) <a href="{}">on its page</a></p>{}{}',
            chunk_link(chunk.id),
            source.document_title,
            ' > '.join(source.section_path) or '—',
            page_and_paragraph(source),
            url('/citation', chunk=chunk.id, quote=citation.quote),
            thumbnail(chunk.id, citation.quote, source.page) if shown else Html(''),
            _highlighted(chunk, source.chunk_start, source.chunk_end),
        )
    else:
        reason = problem.reason if problem is not None else 'not verified'
        if reason == NOT_SEEN:
            reason = NOT_FOUND
        closest = (
            markup('<p>closest sentence in the chunk: <q class="closest">{}</q></p>', problem.closest)
            if problem is not None and problem.closest
            else Html('')
        )
        where = chunk_link(chunk.id) if chunk is not None else markup('<span class="id">{}</span>', chunk_id)
        detail = markup('<p class="failed">{}: {}</p>{}', where, reason, closest)
    return detail


async def _tool_text(viewer: Viewer, answer: GroundedAnswer) -> str:
    claims: list[dict[str, Any]] = [
        {'text': c.text, 'citations': [{'chunk_id': x.chunk_id, 'quote': x.quote} for x in c.citations]}
        for c in answer.claims
    ]
    try:
        return str((await viewer.rag.run_tool('verify_citations', {'claims': claims})).return_value)
    except ModelRetry as retry:
        return retry.message
    except ValueError:
        return 'this toolset does not offer verify_citations'
