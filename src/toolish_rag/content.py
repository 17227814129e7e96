"""The content model: documents, their section tree, chunks and named entities.

See docs/concepts.md#content.
"""

from __future__ import annotations

import hashlib
import math
import re
import unicodedata
from collections.abc import Iterable, Mapping, Sequence
from typing import Annotated, Any, Literal, NamedTuple, TypeAlias

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidatorFunctionWrapHandler,
    field_serializer,
    field_validator,
    model_validator,
)

from ._box_codec import on_grid, pack_boxes, unpack_boxes
from ._glyph_widths import width_of

__all__ = [
    'METADATA_KEY_PATTERN',
    'Chunk',
    'Document',
    'Entity',
    'RELATION_TYPE_PATTERN',
    'Metadata',
    'MetadataValue',
    'NodeKind',
    'Record',
    'Relation',
    'Retrievable',
    'Scalar',
    'Section',
    'TextBox',
    'document_id_for',
    'relation_id_for',
    'relation_type_for',
    'validate_metadata_key',
]

Scalar: TypeAlias = str | bool | int | float
"""A metadata scalar. ``bool`` is listed before ``int`` so pydantic never turns ``True`` into ``1``."""

MetadataValue: TypeAlias = Scalar | list[Scalar] | None
"""What a metadata value may be: a scalar, ``None`` (treated as absent) or a flat list of scalars."""

Metadata: TypeAlias = dict[str, MetadataValue]

METADATA_KEY_PATTERN = re.compile(r'^[A-Za-z_][A-Za-z0-9_]{0,63}$')
"""Metadata keys are plain identifiers. Every store can then use them as column or field
names without quoting games, and a key can never smuggle syntax into a native query."""

_RESERVED_KEYS = frozenset({'id', 'text', 'urtext', 'labels', 'kind', 'vector', 'score'})


def validate_metadata_key(key: str) -> str:
    """Return ``key`` if it is a plain metadata name, else raise ``ValueError``.

    Stores may rely on this: every key that reaches them (in metadata or in a filter)
    has passed it.
    """
    if not isinstance(key, str) or not METADATA_KEY_PATTERN.match(key):
        raise ValueError(
            f'invalid metadata key {key!r}: keys must match {METADATA_KEY_PATTERN.pattern} '
            '(a letter or underscore, then letters, digits or underscores; at most 64 characters)'
        )
    return key


def _check_scalar(value: Any, where: str) -> None:
    if isinstance(value, float) and not math.isfinite(value):
        raise ValueError(f'{where}: metadata numbers must be finite, got {value!r}')


def _validate_metadata(metadata: Mapping[str, Any]) -> Metadata:
    for key, value in metadata.items():
        validate_metadata_key(key)
        _check_strings(value, f'metadata {key!r}')
        if key in _RESERVED_KEYS:
            raise ValueError(f'metadata key {key!r} is reserved for the content model')
        if isinstance(value, list):
            for item in value:
                _check_scalar(item, key)
        else:
            _check_scalar(value, key)
    return dict(metadata)


def _sorted(labels: frozenset[str]) -> list[str]:
    """Sets iterate in a per-process order; sorted labels make equal records serialise equally."""
    return sorted(labels)


def document_id_for(uri: str) -> str:
    """The default document id: a short, stable digest of the uri.

    Stable ids make re-ingesting a document replace it rather than duplicate it.
    """
    return 'd' + hashlib.sha256(uri.encode('utf-8', 'surrogatepass')).hexdigest()[:15]


_MetadataField = Annotated[Metadata, Field(default_factory=dict)]


def _check_text(value: str, where: str) -> None:
    """Refuse a lone UTF-16 surrogate: no store can encode it, and no real document holds one.

    Python strings may carry them (``'\\ud800'``, a YAML escape, a file name that was not
    UTF-8), and every store crashed on them at write time (LanceDB, Tantivy, JSON persistence).
    Refusing them here makes a bad record fail where it is built, with its field named.
    """
    try:
        value.encode('utf-8')
    except UnicodeEncodeError as e:
        raise ValueError(
            f'{where} holds a lone UTF-16 surrogate at character {e.start}; text must be valid Unicode'
        ) from None


def _check_strings(value: Any, where: str) -> None:
    if isinstance(value, str):
        _check_text(value, where)
    elif isinstance(value, tuple | list | frozenset | set):
        for item in value:
            if isinstance(item, str):
                _check_text(item, where)


class _Model(BaseModel):
    model_config = ConfigDict(frozen=True, extra='forbid')

    @model_validator(mode='after')
    def _valid_unicode(self) -> Any:
        for name in type(self).model_fields:
            _check_strings(getattr(self, name), name)
        return self


class Section(_Model):
    """A node of a document's section tree (a heading and what it governs)."""

    id: str
    title: str
    parent_id: str | None = None
    """The enclosing section, or ``None`` for a top-level section."""
    level: int = 1
    """Depth in the tree: 1 for a top-level section."""


class _Scoped(_Model):
    """Metadata and labels checked and serialised one way: what scope filters read on every record."""

    @field_serializer('labels', check_fields=False)
    def _sorted_labels(self, labels: frozenset[str]) -> list[str]:
        return _sorted(labels)

    @field_validator('metadata', check_fields=False)
    @classmethod
    def _check_metadata(cls, value: Metadata) -> Metadata:
        return _validate_metadata(value)


class Retrievable(_Scoped):
    """Fields every searchable record shares: what filters see."""

    id: str
    metadata: _MetadataField
    labels: frozenset[str] = frozenset()
    """Labels for `EntityFilter`: a chunk carries its document's labels, an entity its own."""


def _right_to_left(line: str) -> bool:
    """Whether ``line`` reads right to left: its first letter of a strong direction is Arabic, Hebrew..."""
    for ch in line:
        kind = unicodedata.bidirectional(ch)
        if kind in ('R', 'AL'):
            return True
        if kind == 'L':
            return False
    return False


class TextBox(NamedTuple):
    """Where a run of a chunk's text stands on its page: a piece of a PDF page's line, a word of an OCR'd page.

    ``start``/``end`` are offsets in the chunk's ``urtext``; the box is ``(x0, top, x1, bottom)`` as
    fractions of the page's width and height, origin top-left, the page as displayed (its CropBox,
    its rotation applied), kept to 1/10,000 of the page. A chunk's boxes are one short string in JSON
    (docs/grounded.md#how-boxes-are-stored). See docs/grounded.md#where-a-quote-stands.
    """

    page: int
    """1-based page (or image frame)."""
    start: int
    end: int
    x0: float
    top: float
    x1: float
    bottom: float

    @property
    def box(self) -> tuple[float, float, float, float]:
        """``(x0, top, x1, bottom)``."""
        return self.x0, self.top, self.x1, self.bottom

    def within(self, start: int, end: int, text: str) -> TextBox | None:
        """The part of this run between offsets ``start`` and ``end`` of ``text`` (the text the offsets are
        in), or ``None`` when they do not meet.

        A part of a line spans its share of the line's width, by the usual widths of its characters
        (`toolish_rag._glyph_widths`), from the right in a right-to-left line; a run of several lines (a
        table) keeps its whole box.
        """
        lo, hi = max(start, self.start), min(end, self.end)
        if hi <= lo:
            return None
        line = text[self.start : self.end]
        if (lo, hi) == (self.start, self.end) or '\n' in line or len(line) != self.end - self.start:
            return self._replace(start=lo, end=hi)
        total = width_of(line) or 1
        scale = (self.x1 - self.x0) / total
        before, after = width_of(line[: lo - self.start]), width_of(line[hi - self.start :])
        if _right_to_left(line):
            before, after = after, before
        x0, x1 = self.x0 + scale * before, self.x1 - scale * after
        return TextBox(self.page, lo, hi, round(x0, 4), self.top, round(x1, 4), self.bottom)

    def shifted(self, by: int) -> TextBox:
        """The same box, its offsets moved by ``by`` (into another text's offsets)."""
        return self._replace(start=self.start + by, end=self.end + by)


def _gridded(box: TextBox) -> bool:
    return all(math.isfinite(v) and on_grid(v) == v for v in box[3:])


def _to_grid(box: TextBox) -> TextBox:
    if not all(math.isfinite(v) for v in box[3:]):
        raise ValueError(f'box coordinates must be finite numbers, got {box.box}')
    x0, top, x1, bottom = (on_grid(v) for v in box[3:])
    return TextBox(box.page, box.start, box.end, x0, top, x1, bottom)


class Chunk(Retrievable):
    """A piece of a document's text: the unit that is indexed, searched and cited."""

    kind: Literal['chunk'] = 'chunk'
    document_id: str
    document_uri: str
    document_title: str
    section_id: str | None = None
    """The innermost section holding this chunk (``None`` for text before the first heading)."""
    section_ids: tuple[str, ...] = ()
    """Ids of every enclosing section, outermost first; ends with ``section_id``."""
    section_path: tuple[str, ...] = ()
    """Titles of every enclosing section, outermost first (aligned with ``section_ids``)."""
    text: str
    """What is indexed and embedded: may carry the document title and section path."""
    urtext: str
    """The exact source text, for citation and quote checking."""
    chunk_index: int = Field(ge=0)
    """Position within its section."""
    sequence_number: int = Field(ge=0)
    """Position within its document, across sections."""
    start_char: int | None = None
    """Offset of ``urtext`` in the source text, when known."""
    end_char: int | None = None
    page: int | None = None
    """1-based page of the source where the chunk starts, for paged formats."""
    boxes: tuple[TextBox, ...] = ()
    """Where its lines stand on their pages (PDF pages and OCR'd images; empty for other formats), in
    reading order: what a citation's quote is highlighted by (docs/grounded.md#where-a-quote-stands).
    Coordinates are rounded to 1/10,000 of the page; in JSON the boxes are one packed string (the list
    of 7-item arrays written before is still read), docs/grounded.md#how-boxes-are-stored."""
    cells: str | None = None
    """The spreadsheet cells its text was read from, as Excel writes a range (``Sheet1!A1:D20``; a sheet
    name with spaces or signs in quotes, ``'Q1 sales'!B2:C9``), for chunks of XLSX workbooks."""

    @field_validator('boxes', mode='wrap')
    @classmethod
    def _read_boxes(cls, value: Any, handler: ValidatorFunctionWrapHandler) -> tuple[TextBox, ...]:
        """A packed string (what stores keep) is unpacked as is; boxes otherwise given are checked and put on
        the grid, so every store gives back exactly the boxes it was given."""
        if isinstance(value, str):
            return tuple(unpack_boxes(value, TextBox))
        boxes: tuple[TextBox, ...] = handler(value)
        return tuple(box if _gridded(box) else _to_grid(box) for box in boxes)

    @field_serializer('boxes', when_used='json')
    def _packed_boxes(self, boxes: tuple[TextBox, ...]) -> str | list[Any]:
        return pack_boxes(boxes) if boxes else []

    @model_validator(mode='after')
    def _aligned(self) -> Chunk:
        if len(self.section_ids) != len(self.section_path):
            raise ValueError('section_ids and section_path must have the same length')
        if self.section_ids and self.section_id != self.section_ids[-1]:
            raise ValueError('section_id must be the last of section_ids')
        if not self.section_ids and self.section_id is not None:
            raise ValueError('a chunk with a section_id needs section_ids')
        return self


class Entity(Retrievable):
    """A named entity (a person, product, error code...) that searches can return."""

    kind: Literal['entity'] = 'entity'
    name: str
    description: str = ''
    aliases: tuple[str, ...] = ()
    """Other names of the entity: the exact-name linker matches them like ``name``."""

    @property
    def text(self) -> str:
        """The text an entity is indexed and embedded by."""
        return f'{self.name}: {self.description}' if self.description else self.name

    @property
    def properties(self) -> Metadata:
        """Alias of ``metadata``: an entity's properties are what filters see."""
        return self.metadata


NodeKind: TypeAlias = Literal['chunk', 'section', 'document', 'entity']
"""What a graph node is. Chunks, sections and documents are nodes by their existing ids."""

RELATION_TYPE_PATTERN = re.compile(r'^[A-Z][A-Z0-9_]{0,63}$')
"""Relation types are upper-case identifiers (``MENTIONS``, ``PART_OF``, ``WORKS_FOR``): every store can
compare them exactly and a tool's ``edge_types`` argument can be validated against one rule."""


def relation_type_for(text: str) -> str:
    """An upper-case relation type from free text: ``'works for'`` -> ``'WORKS_FOR'``.

    Raises ``ValueError`` when nothing usable is left (no letter to start with).
    """
    words = re.findall(r'[A-Za-z0-9]+', text)
    candidate = '_'.join(words).upper()[:64]
    if not RELATION_TYPE_PATTERN.match(candidate):
        raise ValueError(f'cannot make a relation type of {text!r}: it needs a letter first')
    return candidate


def relation_id_for(origin: str, source: str, type: str, target: str, provenance: str | None = None) -> str:
    """The default relation id: a digest of who wrote it and what it says.

    The writer (``origin``) is part of it, so two builders stating the same edge keep two records
    and each can replace its own without touching the other's.
    """
    key = '\x1f'.join((origin, source, type, target, provenance or ''))
    return 'r' + hashlib.sha256(key.encode('utf-8', 'surrogatepass')).hexdigest()[:23]


class Relation(_Scoped):
    """A typed, directed edge between two graph nodes, stored like any record.

    ``source``/``target`` name a chunk, section, document or entity by id, with its kind so a store
    resolves it without guessing. Scope filters apply to a relation's ``metadata`` and ``labels``
    exactly as to a chunk's, and a walk also requires both endpoints in scope: an edge to a foreign
    node is no edge. A relation with a ``document_id`` belongs to that document: replacing or
    deleting the document removes it (builders then rebuild it); one without lives until deleted.
    """

    kind: Literal['relation'] = 'relation'
    id: str = ''
    """Empty means the default, `relation_id_for` of origin, source, type, target and provenance."""
    source: str
    source_kind: NodeKind
    target: str
    target_kind: NodeKind
    type: str
    weight: float = 1.0
    metadata: _MetadataField
    labels: frozenset[str] = frozenset()
    provenance: str | None = None
    """The chunk the relation was read from, when there is one."""
    document_id: str | None = None
    """The document the relation belongs to: it is replaced and deleted with it."""
    origin: str = ''
    """Who wrote it: a builder's name (``'exact'``, ``'structure'``...), ``''`` by hand."""

    @field_validator('type')
    @classmethod
    def _check_type(cls, value: str) -> str:
        if not RELATION_TYPE_PATTERN.match(value):
            raise ValueError(
                f'invalid relation type {value!r}: types match {RELATION_TYPE_PATTERN.pattern} '
                "(upper-case; relation_type_for('works for') gives 'WORKS_FOR')"
            )
        return value

    @field_validator('weight')
    @classmethod
    def _check_weight(cls, value: float) -> float:
        if not math.isfinite(value) or value < 0:
            raise ValueError(f'relation weight must be a finite number >= 0, got {value!r}')
        return value

    @model_validator(mode='after')
    def _default_id(self) -> Relation:
        if not self.source or not self.target:
            raise ValueError('a relation needs a source and a target id')
        if not self.id:
            default = relation_id_for(self.origin, self.source, self.type, self.target, self.provenance)
            object.__setattr__(self, 'id', default)
        return self


Record: TypeAlias = Annotated[Chunk | Entity, Field(discriminator='kind')]
"""A stored, searchable record: a chunk or an entity.

One name for what every store holds and returns, so adapters need not spell the union out
(or keep an alias of their own). A type checker reads it as ``Chunk | Entity``; pydantic picks
the model by ``kind``, so ``TypeAdapter(Record)`` round-trips stored JSON to the right class.
"""


class Document(_Scoped):
    """A source document: its identity, metadata, section tree and chunks.

    Build one with `DocumentBuilder` (or the ingestion pipeline) rather than by hand: the
    builder keeps chunk ids, section links, sequence numbers and metadata consistent.
    """

    id: str
    uri: str
    title: str
    metadata: _MetadataField
    labels: frozenset[str] = frozenset()
    sections: tuple[Section, ...] = ()
    chunks: tuple[Chunk, ...] = ()
    fingerprint: str | None = None
    """Content digest used by ingestion to skip unchanged documents."""

    @model_validator(mode='after')
    def _consistent(self) -> Document:
        section_ids = {s.id for s in self.sections}
        for section in self.sections:
            if section.parent_id is not None and section.parent_id not in section_ids:
                raise ValueError(f'section {section.id!r} names unknown parent {section.parent_id!r}')
        seen: set[str] = set()
        for chunk in self.chunks:
            if chunk.document_id != self.id:
                raise ValueError(f'chunk {chunk.id!r} belongs to document {chunk.document_id!r}, not {self.id!r}')
            if (chunk.document_title, chunk.document_uri) != (self.title, self.uri):
                # Listings and outlines read a document's title and uri from its chunks or its row: they must agree.
                raise ValueError(f'chunk {chunk.id!r} carries another title or uri than its document {self.id!r}')
            if chunk.id in seen:
                raise ValueError(f'duplicate chunk id {chunk.id!r}')
            seen.add(chunk.id)
            for sid in chunk.section_ids:
                if sid not in section_ids:
                    raise ValueError(f'chunk {chunk.id!r} names unknown section {sid!r}')
        return self

    def section_by_id(self, section_id: str) -> Section | None:
        return next((s for s in self.sections if s.id == section_id), None)


def split_items(items: Iterable[Document | Entity | Relation]) -> tuple[list[Document], list[Entity]]:
    """Separate an upsert batch into documents and entities, rejecting anything else (relations too)."""
    documents: list[Document] = []
    entities: list[Entity] = []
    for item in items:
        if isinstance(item, Document):
            documents.append(item)
        elif isinstance(item, Entity):
            entities.append(item)
        elif isinstance(item, Relation):
            raise TypeError('this store holds no relations: write them to a store implementing GraphStore')
        else:
            raise TypeError(f'upsert takes Document or Entity objects, got {type(item).__name__}')
    return documents, entities


def split_graph_items(
    items: Iterable[Document | Entity | Relation],
) -> tuple[list[Document], list[Entity], list[Relation]]:
    """Separate an upsert batch of a graph store into documents, entities and relations."""
    documents: list[Document] = []
    entities: list[Entity] = []
    relations: list[Relation] = []
    for item in items:
        if isinstance(item, Document):
            documents.append(item)
        elif isinstance(item, Entity):
            entities.append(item)
        elif isinstance(item, Relation):
            relations.append(item)
        else:
            raise TypeError(f'upsert takes Document, Entity or Relation objects, got {type(item).__name__}')
    return documents, entities, relations


def dedupe_last(items: Sequence[Document | Entity | Relation]) -> list[Document | Entity | Relation]:
    """Keep the last occurrence of each id: an upsert batch naming one id twice means the later one."""
    by_id: dict[tuple[str, str], Document | Entity | Relation] = {}
    for item in items:
        by_id.pop((type(item).__name__, item.id), None)
        by_id[(type(item).__name__, item.id)] = item
    return list(by_id.values())
