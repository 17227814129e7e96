"""How results look to the model: compact, citeable text.

Each hit shows the handle the model needs next (the chunk id, for expansion and
citation), why it ranked (the score), where it comes from (document title, uri and
section path) and the exact source text (``urtext``, so quotes can be checked).
Empty results say so plainly: an empty string invites a model to invent an answer.
"""

from __future__ import annotations

from collections.abc import Sequence

from .._record_text import field_text, fitting, indent, render_record, where
from ..content import Chunk
from ..retriever import SectionView
from ..search import SearchHit

__all__ = [
    'NO_DOCUMENTS',
    'NO_MATCHING_DOCUMENTS',
    'NO_RESULTS',
    'quoted',
    'render_hits',
    'render_neighbours',
    'render_section',
    'render_unavailable',
    'render_unavailable_retry',
]

NO_RESULTS = (
    'No results: the documents do not cover this as asked. Try other words or a synonym, '
    'a broader query, or another search tool; if nothing turns up, say the documents do not cover it.'
)

NO_DOCUMENTS = (
    'No results: there are no documents to search here. Tell the user the collection holds nothing you can '
    'search; do not answer from the documents.'
)
"""A search of a scope with no documents: the same words whether the store is empty or holds only records
outside the scope (so nothing tells that others exist)."""
NO_MATCHING_DOCUMENTS = (
    'No results: no document matches this filter or these sources. Try without them, or other values.'
)
"""A search whose filter or sources (the model's own narrowing) leave no document of the scope."""


def quoted(sent: str) -> str:
    """What the model sent (a query, a pattern), quoted exactly as sent: ``Depends\\(`` stays ``'Depends\\('``.

    Between single quotes, or double ones when it holds a single quote; its ``repr`` only when it holds
    both, or a character that is not printable (a newline could forge the lines that follow).
    """
    if sent.isprintable():
        if "'" not in sent:
            return f"'{sent}'"
        if '"' not in sent:
            return f'"{sent}"'
    return repr(sent)


def render_hits(hits: Sequence[SearchHit], *, heading: str) -> str:
    if not hits:
        return NO_RESULTS
    body = '\n\n'.join(render_record(h, i) for i, h in enumerate(hits, start=1))
    return f'{heading}\n\n{body}'


def render_unavailable(sources: Sequence[str]) -> str:
    """The line a tool's text ends with when federation members did not answer (no error text: it may leak).

    Member names are checked identifiers (`toolish_rag.stores.federated`), so they cannot forge structure.
    """
    if len(sources) == 1:
        return f'(source {sources[0]!r} unavailable; results from the other sources)'
    named = ', '.join(repr(s) for s in sources)
    return f'(sources {named} unavailable; results from the other sources)'


def render_unavailable_retry(sources: Sequence[str]) -> str:
    """What a refusal (an id "not found") adds when federation members did not answer: the id may be theirs.

    The same whether the id is missing, out of scope or held by the member: it names only the
    members that failed, which the model can see anyway.
    """
    named = ', '.join(repr(s) for s in sources)
    they = 'it' if len(sources) == 1 else 'they'
    return (
        f'(source{"s" if len(sources) > 1 else ""} {named} unavailable: what was not found may be held there; '
        f'try again later or say that {they} did not answer)'
    )


def _cap(chunks: Sequence[Chunk], max_chars: int) -> tuple[list[Chunk], bool]:
    n = fitting(chunks, max_chars, lambda c: len(c.urtext))
    return list(chunks[:n]), n < len(chunks)


def render_neighbours(anchor: Chunk, chunks: Sequence[Chunk], max_chars: int) -> tuple[str, list[Chunk]]:
    """The text ``broaden_chunk`` shows, and the chunks it shows (the cap may leave some out)."""
    # Keep the anchor and grow outwards, so the cap drops the farthest neighbours first.
    ordered = sorted(chunks, key=lambda c: abs(c.sequence_number - anchor.sequence_number))
    kept, capped = _cap(ordered, max_chars)
    kept.sort(key=lambda c: c.sequence_number)
    parts = [f'Chunks around {field_text(anchor.id)} in reading order, from {where(anchor)}:']
    for c in kept:
        mark = '  <- the chunk you asked about' if c.id == anchor.id else ''
        path = ' > '.join(field_text(s) for s in c.section_path)
        parts.append(f'chunk {field_text(c.id)} (section: {path or "(document start)"}){mark}\n{indent(c.urtext)}')
    if capped:
        first, last = field_text(kept[0].id), field_text(kept[-1].id)
        parts.append(
            f'[Output capped at about {max_chars} characters. Call broaden_chunk on {first} or {last} '
            'with a small chunks_to_add to read further.]'
        )
    return '\n\n'.join(parts), kept


def render_section(view: SectionView, max_chars: int) -> tuple[str, list[Chunk]]:
    """The text ``zoom_out`` shows, and the chunks it shows (the cap may leave some out)."""
    where = ' > '.join(field_text(s) for s in view.section_path) if view.section_path else '(whole document)'
    head = f'Section {field_text(view.section_id)}: ' if view.section_id else 'Document: '
    parts = [f'{head}{field_text(view.document_title)} > {where} ({field_text(view.document_uri)})']
    if not view.chunks:
        return parts[0] + '\n\n' + NO_RESULTS, []
    kept, capped = _cap(view.chunks, max_chars)
    for c in kept:
        path = ' > '.join(field_text(s) for s in c.section_path)
        parts.append(f'chunk {field_text(c.id)} (section: {path or "(document start)"})\n{indent(c.urtext)}')
    if capped or view.truncated:
        last = field_text(kept[-1].id)
        parts.append(
            f'[Output capped: this section continues after chunk {last}. Call broaden_chunk on '
            f'{last} to read on, or search within the section.]'
        )
    if view.zoom_id:
        parts.append(f'[To widen further, call zoom_out with id {field_text(view.zoom_id)}.]')
    return '\n\n'.join(parts), kept
