"""`DocumentBuilder`: assemble a consistent `Document` from sections and chunk texts.

It assigns ids, section links, ``chunk_index`` and ``sequence_number``. See docs/concepts.md#content.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from .content import Chunk, Document, Metadata, MetadataValue, Section, TextBox, document_id_for

__all__ = ['DocumentBuilder', 'default_indexed_text']


def default_indexed_text(document_title: str, section_path: tuple[str, ...], urtext: str) -> str:
    """The default text to index for a chunk: its document title and section path, then the text.

    Titles carry words the chunk itself often leaves implicit ("Refunds" above a paragraph
    that only says "within 30 days"), so indexing them lifts both lexical and semantic
    recall, while ``urtext`` keeps the exact source for citation.
    """
    heading = ' > '.join(p for p in (document_title, *section_path) if p)
    return f'{heading}\n\n{urtext}' if heading else urtext


class DocumentBuilder:
    """Collects sections and chunks, then `build` returns a frozen `Document`."""

    def __init__(
        self,
        uri: str,
        title: str,
        *,
        id: str | None = None,
        metadata: Mapping[str, MetadataValue] | None = None,
        labels: Iterable[str] = (),
        fingerprint: str | None = None,
        indexed_text: Callable[[str, tuple[str, ...], str], str] | None = default_indexed_text,
    ) -> None:
        self.uri = uri
        self.title = title
        self.id = id or document_id_for(uri)
        self.metadata: Metadata = dict(metadata or {})
        self.labels = frozenset(labels)
        self.fingerprint = fingerprint
        self._indexed_text = indexed_text
        self._sections: dict[str, Section] = {}
        self._chunks: list[dict[str, Any]] = []
        self._per_section: dict[str | None, int] = {}

    def section(self, title: str, parent: str | None = None) -> str:
        """Add a section under ``parent`` (a section id, or ``None`` for top level); returns its id."""
        if parent is not None and parent not in self._sections:
            raise KeyError(f'unknown parent section {parent!r}')
        level = 1 if parent is None else self._sections[parent].level + 1
        section_id = f'{self.id}-s{len(self._sections)}'
        self._sections[section_id] = Section(id=section_id, title=title, parent_id=parent, level=level)
        return section_id

    def _chain(self, section_id: str | None) -> tuple[tuple[str, ...], tuple[str, ...]]:
        ids: list[str] = []
        titles: list[str] = []
        current = section_id
        while current is not None:
            section = self._sections[current]
            ids.append(section.id)
            titles.append(section.title)
            current = section.parent_id
        return tuple(reversed(ids)), tuple(reversed(titles))

    def add_chunk(
        self,
        section_id: str | None,
        urtext: str,
        *,
        text: str | None = None,
        metadata: Mapping[str, MetadataValue] | None = None,
        start_char: int | None = None,
        end_char: int | None = None,
        page: int | None = None,
        boxes: Sequence[TextBox] = (),
        cells: str | None = None,
    ) -> str:
        """Append a chunk of ``section_id`` (``None``: before any heading); returns the chunk id.

        Chunks are numbered in the order they are added, which must be reading order.
        ``text`` defaults to the builder's ``indexed_text`` of ``urtext``.
        """
        if section_id is not None and section_id not in self._sections:
            raise KeyError(f'unknown section {section_id!r}')
        ids, path = self._chain(section_id)
        if text is None:
            text = self._indexed_text(self.title, path, urtext) if self._indexed_text else urtext
        sequence = len(self._chunks)
        index = self._per_section.get(section_id, 0)
        self._per_section[section_id] = index + 1
        chunk_id = f'{self.id}-{sequence}'
        self._chunks.append(
            {
                'id': chunk_id,
                'document_id': self.id,
                'document_uri': self.uri,
                'document_title': self.title,
                'section_id': section_id,
                'section_ids': ids,
                'section_path': path,
                'text': text,
                'urtext': urtext,
                'chunk_index': index,
                'sequence_number': sequence,
                'metadata': {**self.metadata, **(metadata or {})},
                'labels': self.labels,
                'start_char': start_char,
                'end_char': end_char,
                'page': page,
                'boxes': tuple(boxes),
                'cells': cells,
            }
        )
        return chunk_id

    def build(self) -> Document:
        return Document(
            id=self.id,
            uri=self.uri,
            title=self.title,
            metadata=self.metadata,
            labels=self.labels,
            sections=tuple(self._sections.values()),
            chunks=tuple(Chunk(**c) for c in self._chunks),
            fingerprint=self.fingerprint,
        )
