"""The index schema, and how records map to tantivy documents and back.

See docs/stores/tantivy.md#how-the-adapter-is-built for the fields and why.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from decimal import Decimal
from typing import Any

import tantivy
from pydantic import TypeAdapter

from toolish_rag import writes
from toolish_rag.analysis import TextAnalyzer
from toolish_rag.content import Chunk, Document, Entity, Metadata, Record, Scalar
from toolish_rag.writes import INT64_MAX, INT64_MIN, int64_problem

__all__ = [
    'FIELDS',
    'FORMAT_VERSION',
    'INT64_MAX',
    'INT64_MIN',
    'RECORD_ADAPTER',
    'NAV_PAYLOAD_BYTES',
    'bounded_term',
    'build_schema',
    'canonical_number',
    'check_storable',
    'prefixed',
    'split_prefixed',
    'to_tantivy',
    'unstorable',
]

FORMAT_VERSION = 2
"""Version of the index layout: 2 added the navigation fields (``doc_title``, ``doc_sections``, ``outline``, ``section_titles``)."""
KIND_CHUNK, KIND_ENTITY, KIND_DOCUMENT = 'chunk', 'entity', 'document'
SEP = '\x00'
MAX_TERM_BYTES = 32_000
"""Longest metadata string (in UTF-8 bytes, with its key) that can be indexed as one term."""
"""The integers the index holds (``seq`` and the ``m_ord`` fast field are ``i64``)."""

FIELDS = (
    'id',
    'eid',
    'kind',
    'document_id',
    'section_ids',
    'seq',
    'text',
    'urtext',
    'rec',
    'labels',
    'm_str',
    'm_num',
    'm_bool',
    'm_keys',
    'm_list',
    'm_ord',
    'doc_head',
    'doc_info',
    'doc_title',
    'doc_sections',
    'outline',
    'section_titles',
)

RECORD_ADAPTER: TypeAdapter[Record] = TypeAdapter(Chunk | Entity)


def build_schema(text_tokenizer: str, words_tokenizer: str | None = None) -> tantivy.Schema:
    """The index schema; ``words_tokenizer`` adds the ``words`` field a language analyzer fills.

    With a language analyzer (`toolish_rag_tantivy._text_analysis`) ``text`` is stored but its
    tokenizer emits nothing, and BM25 reads ``words``: the core's tokens, split on whitespace.
    """
    b = tantivy.SchemaBuilder()
    for name in ('id', 'eid', 'kind', 'document_id', 'section_ids', 'labels', 'doc_head'):
        b.add_text_field(name, stored=False, tokenizer_name='raw', index_option='basic')
    for name in ('m_str', 'm_num', 'm_bool', 'm_keys', 'm_list'):
        b.add_text_field(name, stored=False, tokenizer_name='raw', index_option='basic')
    for name in ('doc_title', 'doc_sections', 'outline', 'section_titles'):
        b.add_text_field(name, stored=False, tokenizer_name='raw', index_option='basic')
    b.add_integer_field('seq', stored=True, indexed=True, fast=True)
    b.add_text_field('text', stored=True, tokenizer_name=text_tokenizer, index_option='position')
    if words_tokenizer is not None:
        b.add_text_field('words', stored=False, tokenizer_name=words_tokenizer, index_option='position')
    b.add_bytes_field('urtext', stored=True, indexed=False)
    b.add_bytes_field('rec', stored=True, indexed=False)
    b.add_bytes_field('doc_info', stored=True, indexed=False)
    b.add_json_field('m_ord', stored=False, fast=True, tokenizer_name='raw', index_option='basic')
    return b.build()


def canonical_number(value: int | float) -> str:
    """One exact spelling per numeric value: ``1``, ``1.0`` and ``True``-free.

    Uses the exact decimal value of a float, so equal numbers (and only those) share a term
    however they were typed (Python compares ``int`` and ``float`` exactly too).
    """
    d = Decimal(value)
    if d == d.to_integral_value():
        return str(int(d))
    return format(d.normalize(), 'f')


def _kind(value: Any) -> str:
    if isinstance(value, bool):
        return 'bool'
    if isinstance(value, (int, float)):
        return 'number'
    return 'str'


def scalar_terms(key: str, value: Scalar) -> tuple[str, str]:
    """The (field, term) that indexes ``value`` under ``key``."""
    kind = _kind(value)
    if kind == 'bool':
        return 'm_bool', f'{key}{SEP}{"t" if value else "f"}'
    if kind == 'number':
        return 'm_num', f'{key}{SEP}{canonical_number(value)}'  # type: ignore[arg-type]
    return 'm_str', f'{key}{SEP}{value}'


unstorable = int64_problem
"""Why the index cannot hold a scalar (written or filtered on): the core's 64-bit/UTF-8 rule.

Term length is not judged here: a filter may name a long string (no term matches it), only a
write cannot (`check_storable`).
"""


def _unindexable(key: str, value: Scalar) -> str | None:
    """Why ``value`` cannot be written under ``key``: `unstorable`, or too long for one term."""
    problem = unstorable(value)
    if problem is None and isinstance(value, str):
        size = len(scalar_terms(key, value)[1].encode('utf-8'))
        if size > MAX_TERM_BYTES:
            problem = (
                f'a string too long to index ({size} bytes with its key; at most {MAX_TERM_BYTES}): '
                'keep long text in the chunk, not in metadata'
            )
    return problem


def check_storable(documents: Sequence[Document], entities: Sequence[Entity]) -> None:
    """Refuse a batch holding a value the index cannot hold, before anything of it is written.

    The core's walk (`toolish_rag.writes.check_storable`) with this index's rule, `_unindexable`:
    64-bit integers, valid UTF-8, and metadata strings short enough for one term.
    """
    writes.check_storable(documents, entities, _unindexable)


def _ord_number(value: int | float) -> int | float:
    # Integers are i64 here (`check_storable`), as the fast field holds them.
    if isinstance(value, float):
        return value + 0.0  # -0.0 -> 0.0: the fast field orders -0.0 below 0.0, Python does not
    return value


def _add_metadata(doc: tantivy.Document, metadata: Metadata, labels: frozenset[str]) -> None:
    ordered: dict[str, list[int | float]] = {}
    for key, value in metadata.items():
        if value is None:
            continue
        if isinstance(value, list):
            doc.add_text('m_list', key)
            elements: list[Scalar] = list(value)
        else:
            elements = [value]
        if elements:
            doc.add_text('m_keys', key)
        for element in elements:
            field, term = scalar_terms(key, element)  # every term fits: `check_storable` ran
            doc.add_text(field, term)
            if field == 'm_num':
                ordered.setdefault(key, []).append(_ord_number(element))  # type: ignore[arg-type]
    if ordered:
        doc.add_json('m_ord', ordered)
    for label in labels:
        doc.add_text('labels', label)


def _doc_info(document: Document) -> bytes:
    return json.dumps(
        {
            'id': document.id,
            'uri': document.uri,
            'title': document.title,
            'fingerprint': document.fingerprint,
            'chunk_count': len(document.chunks),
            'metadata': document.metadata,
        },
        ensure_ascii=False,
    ).encode('utf-8')


NAV_PAYLOAD_BYTES = 16_000
"""Longest navigation payload (UTF-8 bytes) kept in a term; a longer one is read from the stored record."""
_BOUNDED_BYTES = 1_000


def prefixed(value: str) -> str:
    """``value`` length-prefixed (``'3:abc'``), so that anything may follow it and `split_prefixed` finds the end.

    A document's id so spelled is the prefix of all its navigation terms (its key).
    """
    return f'{len(value)}:{value}'


def split_prefixed(term: str) -> tuple[str, str]:
    """``(value, rest)`` of a term that starts with `prefixed` ``value``."""
    size, _, body = term.partition(':')
    n = int(size)
    return body[:n], body[n:]


def bounded_term(value: str) -> str:
    """``value`` as a term that always fits: itself (``=`` prefixed), or a digest when it is long.

    Distinct values give distinct terms (up to a 128-bit digest collision), which is all that
    counting distinct sections and finding a section title need.
    """
    raw = value.encode('utf-8')
    if len(raw) <= _BOUNDED_BYTES:
        return '=' + value
    return '#' + hashlib.blake2b(raw, digest_size=16).hexdigest()


def _fits(payload: str) -> bool:
    return len(payload.encode('utf-8')) <= NAV_PAYLOAD_BYTES


def _add_navigation(doc: tantivy.Document, chunk: Chunk) -> None:
    key = prefixed(chunk.document_id)
    title = prefixed(chunk.document_title) + chunk.document_uri
    doc.add_text('doc_title', key + (title if _fits(title) else ''))
    for sid in dict.fromkeys(chunk.section_ids):
        doc.add_text('doc_sections', key + bounded_term(sid))
    for section_title in dict.fromkeys(chunk.section_path):
        doc.add_text('section_titles', bounded_term(section_title))
    outline = json.dumps(
        [chunk.sequence_number, chunk.id, chunk.document_title, chunk.section_ids, chunk.section_path],
        ensure_ascii=False,
    )
    short = json.dumps([chunk.sequence_number, chunk.id], ensure_ascii=False)
    doc.add_text('outline', key + (outline if _fits(outline) else short))


def chunk_to_tantivy(chunk: Chunk, head_info: bytes | None, words: str | None = None) -> tantivy.Document:
    """``words``: the chunk text's tokens joined by spaces, for an index with a language analyzer."""
    doc = tantivy.Document()
    doc.add_text('id', chunk.id)
    doc.add_text('kind', KIND_CHUNK)
    doc.add_text('document_id', chunk.document_id)
    for sid in chunk.section_ids:
        doc.add_text('section_ids', sid)
    doc.add_integer('seq', chunk.sequence_number)
    doc.add_text('text', chunk.text)
    if words is not None:
        doc.add_text('words', words)
    doc.add_bytes('urtext', chunk.urtext.encode('utf-8'))
    rec = chunk.model_dump(mode='json', exclude={'text', 'urtext'})
    doc.add_bytes('rec', json.dumps(rec, ensure_ascii=False).encode('utf-8'))
    _add_metadata(doc, chunk.metadata, chunk.labels)
    _add_navigation(doc, chunk)
    if head_info is not None:
        doc.add_text('doc_head', '1')
        doc.add_bytes('doc_info', head_info)
    return doc


def _words(analyzer: TextAnalyzer | None, texts: Sequence[str], languages: set[str] | None = None) -> list[str | None]:
    """What the ``words`` field of each text holds: its tokens joined by spaces (``None`` without an analyzer).

    The texts are one document's (``'auto'`` gives a short one its document's language); the
    languages they were analysed in are added to ``languages``.
    """
    if analyzer is None:
        return [None] * len(texts)
    analysis = analyzer.analyse(texts)
    if languages is not None:
        languages.update(analysis.languages)
    return [' '.join(tokens) for tokens in analysis.tokens]


def document_to_tantivy(
    document: Document, analyzer: TextAnalyzer | None = None, languages: set[str] | None = None
) -> list[tantivy.Document]:
    """The tantivy documents for ``document``: its chunks, or a placeholder if it has none.

    ``analyzer``: the index's language analyzer, whose tokens of each chunk fill ``words``.
    """
    info = _doc_info(document)
    if not document.chunks:
        doc = tantivy.Document()
        doc.add_text('kind', KIND_DOCUMENT)
        doc.add_text('document_id', document.id)
        doc.add_text('doc_head', '1')
        doc.add_bytes('doc_info', info)
        return [doc]
    words = _words(analyzer, [c.text for c in document.chunks], languages)
    return [chunk_to_tantivy(c, info if i == 0 else None, words[i]) for i, c in enumerate(document.chunks)]


def entity_to_tantivy(
    entity: Entity, analyzer: TextAnalyzer | None = None, languages: set[str] | None = None
) -> tantivy.Document:
    doc = tantivy.Document()
    doc.add_text('id', entity.id)
    doc.add_text('eid', entity.id)
    doc.add_text('kind', KIND_ENTITY)
    doc.add_text('text', entity.text)
    words = _words(analyzer, [entity.text], languages)[0]
    if words is not None:
        doc.add_text('words', words)
    rec = entity.model_dump(mode='json')
    doc.add_bytes('rec', json.dumps(rec, ensure_ascii=False).encode('utf-8'))
    _add_metadata(doc, entity.metadata, entity.labels)
    return doc


def to_tantivy(
    item: Document | Entity, analyzer: TextAnalyzer | None = None, languages: set[str] | None = None
) -> list[tantivy.Document]:
    """``item``'s tantivy documents; ``languages`` gets the languages its texts were analysed in."""
    if isinstance(item, Document):
        return document_to_tantivy(item, analyzer, languages)
    return [entity_to_tantivy(item, analyzer, languages)]


def from_stored(stored: dict[str, list[Any]]) -> Record:
    """Rebuild the record from a stored tantivy document (``Document.to_dict()``)."""
    data: dict[str, Any] = json.loads(bytes(stored['rec'][0]))
    if data.get('kind') == KIND_CHUNK:
        data['text'] = stored['text'][0]
        data['urtext'] = bytes(stored['urtext'][0]).decode('utf-8')
    return RECORD_ADAPTER.validate_python(data)


def scan_text(stored: dict[str, list[Any]]) -> str:
    """The text a regex is matched against: a chunk's ``urtext``, an entity's ``text``."""
    urtext = stored.get('urtext')
    if urtext:
        return bytes(urtext[0]).decode('utf-8')
    text: str = stored['text'][0]
    return text
