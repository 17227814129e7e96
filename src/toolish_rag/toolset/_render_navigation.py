"""How navigation answers look to the model: listings, outlines, section pages and choices.

Each answer carries the handle the model needs for its next call (a document id for
``outline``, a section id for ``read_section``, the ``offset`` of the next page) and says
plainly when there is more, so a model never mistakes a page for the whole.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence

from .._record_text import chunk_body, field_text, fitting, indent, render_record
from ..content import Chunk, MetadataValue, Scalar
from ..grouping import DocumentGroup
from ..navigation import Choice, Outline, SectionChoice, SectionTarget
from ..sections import DocumentPage, DocumentSummary, SectionPage
from ._render import NO_RESULTS

__all__ = [
    'render_choice',
    'render_document_page',
    'render_groups',
    'render_outline',
    'render_section_choice',
    'render_section_page',
    'render_values',
]


MAX_OUTLINE_SECTIONS = 300
"""Sections one outline shows; a larger tree says how many more there are."""
MAX_ALSO_MATCHING = 10
"""Other matching chunk ids a grouped result names per document."""


def _count(n: int, noun: str) -> str:
    return f'{n} {noun}{"" if n == 1 else "s"}'


def _value(value: MetadataValue) -> str:
    return repr(value) if isinstance(value, str) else field_text(value)


def _summary(d: DocumentSummary, shown_keys: Sequence[str]) -> str:
    sections = f'{_count(d.section_count, "section")}, ' if d.section_count else ''
    line = f'{field_text(d.title)} (document id {field_text(d.id)}) | {sections}{_count(d.chunk_count, "chunk")}'
    line += f'\n    uri: {field_text(d.uri)}'
    values = [f'{field_text(k)}={_value(d.metadata[k])}' for k in shown_keys if d.metadata.get(k) is not None]
    if values:
        line += f'\n    {", ".join(values)}'
    return line


def render_document_page(
    page: DocumentPage,
    offset: int,
    tool: str,
    shown_keys: Sequence[str],
    repeat: Mapping[str, object] | None = None,
) -> str:
    """A page of documents; ``tool`` is the full name of ``list_documents`` (for the next-page hint).

    ``repeat`` holds the other arguments of the call (``title_contains``, ``limit``, ``filter``), which
    the next-page hint repeats: a model that follows it literally must get the next page of the same list.
    """
    if page.total == 0:
        asked = repeat or {}
        if 'title_contains' in asked or 'filter' in asked:
            return 'No documents match: none in this collection has that in its title or passes that filter.'
        return 'No documents: the collection holds none you can see.'
    if not page.documents:
        return f'No documents at offset {offset}: there are {page.total}; use an offset from 0 to {page.total - 1}.'
    first, last = offset + 1, offset + len(page.documents)
    parts = [f'Documents {first}-{last} of {page.total}, by title:']
    parts += [f'[{n}] {_summary(d, shown_keys)}' for n, d in enumerate(page.documents, start=first)]
    if last < page.total:
        again = ''.join(f', {k}={json.dumps(v, ensure_ascii=False)}' for k, v in (repeat or {}).items())
        parts.append(f'[More: call {tool} with offset={last}{again} for the next page.]')
    return '\n'.join(parts)


def render_choice(choice: Choice, name: str, shown_keys: Sequence[str]) -> str:
    parts = [f'{choice.total} documents match {name!r}; call again with the document id of the one you mean:']
    parts += [f'[{n}] {_summary(d, shown_keys)}' for n, d in enumerate(choice.documents, start=1)]
    if choice.total > len(choice.documents):
        parts.append(f'[{choice.total - len(choice.documents)} more: use a longer part of the title.]')
    return '\n'.join(parts)


def render_outline(outline: Outline, read_tool: str) -> str:
    d = outline.document
    head = f'Outline of {field_text(d.title)} (document id {field_text(d.id)}, {field_text(d.uri)})'
    parts = [f'{head}: {_count(d.chunk_count, "chunk")}.']
    if outline.preamble_chunks:
        parts.append(
            f'({_count(outline.preamble_chunks, "chunk")} before the first heading; {read_tool} with section={d.id!r} '
            'reads the whole document.)'
        )
    if not outline.sections:
        parts.append('The document has no headings.')
    for s in outline.sections[:MAX_OUTLINE_SECTIONS]:
        indent = '  ' * (s.depth - 1)
        parts.append(f'{indent}- {field_text(s.title)} [section {field_text(s.id)}] ({_count(s.chunk_count, "chunk")})')
    if len(outline.sections) > MAX_OUTLINE_SECTIONS:
        parts.append(
            f'[{len(outline.sections) - MAX_OUTLINE_SECTIONS} more sections not shown: read a section to see its '
            'subsections, or search.]'
        )
    parts.append(f'[Read a section whole with {read_tool}, passing its section id.]')
    return '\n'.join(parts)


def _place(target: SectionTarget) -> str:
    path = ' > '.join(field_text(s) for s in target.section_path)
    title = field_text(target.document_title)
    return f'{title} > {path}' if path else title


def render_section_choice(choice: SectionChoice, name: str) -> str:
    parts = [f'{choice.total} sections are titled {name!r}; call again with the section id of the one you mean:']
    parts += [
        f'[{n}] section {field_text(t.section_id)}: {_place(t)} (document id {field_text(t.document_id)})'
        for n, t in enumerate(choice.sections, start=1)
    ]
    if choice.total > len(choice.sections):
        parts.append(f'[{choice.total - len(choice.sections)} more: pass document to narrow it down.]')
    return '\n'.join(parts)


def _block(chunk: Chunk, text: str | None = None) -> str:
    """One chunk as ``read_section`` shows it: its id and section path, then its text indented."""
    path = ' > '.join(field_text(s) for s in chunk.section_path)
    body = chunk_body(chunk) if text is None else text  # a table's piece with its header
    return f'\nchunk {field_text(chunk.id)} (section: {path or "(document start)"})\n{indent(body)}'


def fit(chunks: Sequence[Chunk], max_chars: int) -> tuple[list[Chunk], bool]:
    """The leading chunks whose rendered blocks fit in ``max_chars`` (always at least one), and whether
    the first had to be cut (it alone is longer than ``max_chars``).

    The blocks are measured as shown (headers and indentation included), so a section of many
    short rows under deep headings is capped as tightly as one of long paragraphs.
    """
    kept = list(chunks[: fitting(chunks, max_chars, lambda c: len(_block(c)))])
    return kept, bool(kept) and len(_block(kept[0])) > max_chars


def render_section_page(
    target: SectionTarget, page: SectionPage, offset: int, max_chars: int, read_tool: str
) -> tuple[str, list[Chunk]]:
    """The page's chunks that fit in ``max_chars``, with where to continue; and the chunks shown."""
    name = target.section_id or target.document_id
    head = (
        f'Section {field_text(target.section_id)}: '
        if target.section_id
        else f'Document {field_text(target.document_id)}: '
    )
    parts = [f'{head}{_place(target)}']
    what = 'section' if target.section_id else 'document'
    if page.total == 0:
        return f'{parts[0]}\nThis {what} has no text.', []
    if not page.chunks:
        parts.append(
            f'No chunks at offset {offset}: the {what} has {page.total}; use an offset from 0 to {page.total - 1}.'
        )
        return '\n'.join(parts), []
    shown, cut = fit(page.chunks, max_chars)
    first, last = offset + 1, offset + len(shown)
    parts.append(f'Showing chunks {first}-{last} of {page.total}, in reading order.')
    for c in shown:
        if cut and c is shown[0]:
            room = max(100, max_chars - len(_block(c, '')) - 200)
            parts.append(
                _block(c, c.urtext[:room])
                + f'\n    [Chunk cut: it has {len(c.urtext)} characters and only the first {room} are shown; '
                f'the rest of it is not shown here (search for its words to find the passage you need).]'
            )
        else:
            parts.append(_block(c))
    if last < page.total:
        parts.append(
            f'\n[Continued: call {read_tool} with section={name!r} and offset={last} '
            f'for chunks {last + 1}-{page.total}.]'
        )
    else:
        parts.append(f'\n[End of {what}.]')
    return '\n'.join(parts), shown


def render_values(key: str, counts: Mapping[Scalar, int], max_values: int) -> str:
    if not counts:
        return f'No document in scope has a value for {key}.'
    ranked = sorted(counts.items(), key=lambda kv: (-kv[1], str(kv[0])))
    shown = ', '.join(f'{_value(v)} ({n})' for v, n in ranked[:max_values])
    more = f'; and {len(ranked) - max_values} more values' if len(ranked) > max_values else ''
    return f'Values of {field_text(key)} in scope, with how many documents have each: {shown}{more}.'


def render_groups(groups: Sequence[DocumentGroup], *, heading: str) -> str:
    """Grouped results: one entry per document, its best chunk shown and its other matching chunks named."""
    if not groups:
        return NO_RESULTS
    parts = [heading, '']
    for n, group in enumerate(groups, start=1):
        block = render_record(group.best, n)
        if group.others:
            named = ', '.join(f'chunk {field_text(h.id)}' for h in group.others[:MAX_ALSO_MATCHING])
            more = len(group.others) - MAX_ALSO_MATCHING
            block += f'\n    also matching in this document: {named}' + (f' and {more} more' if more > 0 else '')
        parts.append(block + '\n')
    return '\n'.join(parts).rstrip()
