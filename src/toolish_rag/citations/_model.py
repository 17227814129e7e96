"""The grounded-answer shape: what a model writes (status, claims, chunk ids, quotes) and what
verification adds (each citation's `CitationSource`, from the store, never from the model).
See docs/grounded.md#the-answer-model.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field
from pydantic.json_schema import SkipJsonSchema

from .._record_text import field_text

__all__ = [
    'MAX_CLAIMS',
    'MAX_QUOTE_CHARS',
    'AnswerStatus',
    'Citation',
    'CitationSource',
    'Claim',
    'GroundedAnswer',
    'page_and_paragraph',
]

MAX_QUOTE_CHARS = 2000
"""The longest quote a model may write: a sentence or a few, never a whole chunk copied."""
MAX_CLAIMS = 30

AnswerStatus = Literal['answered', 'insufficient_evidence', 'conflicting_evidence', 'needs_clarification']


class CitationSource(BaseModel):
    """Where a verified quote stands, from the store: filled by verification, never by the model."""

    model_config = ConfigDict(frozen=True)

    document_id: str
    document_title: str
    document_uri: str
    section_path: tuple[str, ...] = ()
    start_char: int | None = None
    """Offset of the quote in the document's source text, when the chunk's own offset is known."""
    end_char: int | None = None
    chunk_start: int
    """Offset of the quote within the chunk's source text (``urtext``)."""
    chunk_end: int
    page: int | None = None
    """1-based page the quote starts on (the chunk's first page when the chunk has no boxes)."""
    boxes: tuple[tuple[float, float, float, float], ...] = ()
    """The quote's own lines on ``page``: ``(x0, top, x1, bottom)`` as fractions of the page as displayed,
    origin top-left (PDF pages and OCR'd images; docs/grounded.md#where-a-quote-stands)."""
    paragraph: str | None = None
    """The number the quote's paragraph opens with (``12``, ``3.2``, ``(a)``, ``§ 4``), where the source has one."""
    cells: str | None = None
    """Spreadsheets: the cells of the quote's chunk (``Sheet1!A1:D20``), said in place of the page (the sheet)."""


def page_and_paragraph(source: CitationSource) -> str:
    """``, page 3, paragraph 12`` (either part only where known), ``, cells Sheet1!A1:D20`` for a spreadsheet:
    how tools and answers say where a quote stands."""
    if source.cells:
        return f', cells {field_text(source.cells)}'
    page = f', page {source.page}' if source.page is not None else ''
    return page + (f', paragraph {source.paragraph}' if source.paragraph else '')


class Citation(BaseModel):
    """One piece of evidence: a chunk id and an exact quote from that chunk."""

    chunk_id: str = Field(
        max_length=200, description='The id of a chunk that a search or read in this conversation returned.'
    )
    quote: str = Field(
        max_length=MAX_QUOTE_CHARS,
        description='An exact quote from that chunk (a full sentence or clause; copy it, do not paraphrase).',
    )
    source: SkipJsonSchema[CitationSource | None] = None
    """Filled by verification from the store; not part of the schema the model sees."""


class Claim(BaseModel):
    """One statement of the answer, with the citations that support it."""

    text: str = Field(max_length=4000, description='One statement of the answer, in your own words.')
    citations: list[Citation] = Field(
        default_factory=list, max_length=10, description='The evidence for this statement: at least one citation.'
    )


class GroundedAnswer(BaseModel):
    """An answer whose every claim is backed by exact quotes from retrieved chunks.

    ``status``: ``answered`` (every claim cited), ``insufficient_evidence`` (the documents do not
    cover it: say what is ``missing``; any claims made must still be cited),
    ``conflicting_evidence`` (the documents disagree: cite both sides, from different chunks),
    ``needs_clarification`` (ask the ``clarifying_question``).
    """

    status: AnswerStatus = Field(description='How well the retrieved documents answer the question.')
    claims: list[Claim] = Field(default_factory=list, max_length=MAX_CLAIMS)
    missing: str | None = Field(default=None, max_length=2000, description='What the documents did not cover.')
    clarifying_question: str | None = Field(
        default=None, max_length=1000, description='For needs_clarification: the question to ask the user.'
    )

    @property
    def citations(self) -> list[Citation]:
        return [c for claim in self.claims for c in claim.citations]
