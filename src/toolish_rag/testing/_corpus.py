"""A small corpus with awkward metadata, and filters that probe every semantic edge.

The metadata mixes ints, floats, bools, strings of digits, lists, ``None`` and absent
keys on purpose: those are the cases where a native filter translation tends to drift
from the reference semantics (``"5"`` vs ``5``, ``True`` vs ``1``, a missing key under a
negation, an element of a list). See docs/testing.md.
"""

from __future__ import annotations

import re

from ..builder import DocumentBuilder
from ..content import Document, Entity, MetadataValue, TextBox
from ..filters import EntityFilter, Filter, PropertyFilter as F

__all__ = [
    'COMMON_WORD',
    'EDGE_FILTERS',
    'VERSIONED_CHUNKS',
    'conformance_corpus',
    'conformance_entities',
    'navigation_corpus',
    'selective_corpus',
    'version_of',
    'versioned_document',
]

COMMON_WORD = 'zebrafish'
"""A word every record's text contains, so a text search for it returns every record."""

_TIERS: list[MetadataValue] = ['gold', 'silver', None, 'bronze']
_TOPICS = ['refund policy', 'shipping times', 'warranty claims', 'error codes', 'account security', 'pricing plans']


def _chunk_metadata(i: int) -> dict[str, MetadataValue]:
    md: dict[str, MetadataValue] = {'n': i, 'code': str(i % 7), 'name': f'item-{i:02d}'}
    if i % 3 != 0:
        md['price'] = round(i * 1.5, 2)
    if i % 4 != 3:
        md['tier'] = _TIERS[i % 4]
    if i % 5 == 0:
        md['flag'] = True
    elif i % 5 == 1:
        md['flag'] = False
    elif i % 5 == 2:
        md['flag'] = 1
    if i % 2 == 0:
        md['tags'] = ['red', 'blue'] if i % 4 == 0 else ['green']
    if i % 6 == 5:
        md['ratio'] = 2.0
    elif i % 6 == 4:
        md['ratio'] = 2
    return md


def _boxes(page: int, text: str) -> tuple[TextBox, ...]:
    """Where a chunk stands on its page, kept exactly by every store: two lines (as a PDF's) on page 1, a box a
    word (as an OCR'd page's, tops and heights uneven) on page 2."""
    if page == 1:
        cut = len(text) // 2
        return (
            TextBox(page, 0, cut, 0.1181, 0.0905, 0.8819, 0.1072),
            TextBox(page, cut + 1, len(text), 0.1181, 0.1072, 0.4403, 0.1239),
        )
    words = [m.span() for m in re.finditer(r'\S+', text)]
    return tuple(
        TextBox(
            page,
            start,
            end,
            *(
                round(v, 4)
                for v in (0.1 + 0.08 * i, 0.3 + 0.0007 * (i % 3), 0.17 + 0.08 * i, 0.3129 + 0.0011 * (i % 2))
            ),
        )
        for i, (start, end) in enumerate(words)
    )


def conformance_corpus() -> list[Document]:
    """Three documents with nested sections; 24 chunks with varied typed metadata."""
    docs: list[Document] = []
    i = 0
    for d, (tenant, labels) in enumerate([('acme', {'Manual'}), ('globex', {'Manual', 'Legal'}), ('initech', set())]):
        b = DocumentBuilder(
            f'file:///corpus/{tenant}.md',
            f'{tenant.title()} handbook',
            metadata={'tenant': tenant, 'year': 2022 + d},
            labels=labels,
            fingerprint=f'fp-{tenant}-1',
        )
        top = b.section('Overview')
        for k in range(2):
            text = f'{COMMON_WORD} overview {_TOPICS[i % 6]} for {tenant} number {i}'
            b.add_chunk(top, text, metadata=_chunk_metadata(i), page=k + 1, boxes=_boxes(k + 1, text))
            i += 1
        details = b.section('Details', parent=top)
        for k in range(3):
            b.add_chunk(
                details,
                f'{COMMON_WORD} details {_TOPICS[i % 6]} ERR-{1000 + i} {tenant}',
                metadata=_chunk_metadata(i),
                cells=f"'{tenant} sheet'!A{k + 2}:D{k + 3}" if k == 0 else None,  # as a spreadsheet's chunk
            )
            i += 1
        other = b.section('Appendix')
        for _ in range(3):
            b.add_chunk(
                other, f'{COMMON_WORD} appendix {_TOPICS[i % 6]} v{i}.{i % 3} {tenant}', metadata=_chunk_metadata(i)
            )
            i += 1
        docs.append(b.build())
    return docs


def conformance_entities() -> list[Entity]:
    return [
        Entity(
            id='ent-alice',
            name='Alice Example',
            description=f'{COMMON_WORD} support lead for refunds',
            labels=frozenset({'Person'}),
            metadata={'tenant': 'acme', 'n': 100},
        ),
        Entity(
            id='ent-acme',
            name='Acme Corporation',
            description=f'{COMMON_WORD} a customer company',
            labels=frozenset({'Company', 'Customer'}),
            metadata={'tenant': 'acme', 'n': 101, 'tags': ['red']},
        ),
    ]


_NAVIGATION_TITLES = [
    'apple notes',
    'Banana notes',
    'Banana notes',
    'Straße zone',
    'Strassenbahn',
    'Zeta',
    'zeta',
]


def navigation_corpus() -> list[Document]:
    """Seven documents whose titles and metadata probe the navigation requests (`toolish_rag.sections`).

    * titles whose case-folded order differs from code-point order (``'apple notes'`` before
      ``'Banana notes'``), from ``str.lower`` order (``'Straße zone'`` folds to ``'strasse zone'``,
      before ``'Strassenbahn'``; lower-cased, ``'ß'`` sorts after ``'s'``) and titles that tie
      (``'Zeta'``/``'zeta'``, two ``'Banana notes'``) so the id decides;
    * ``title_contains='STRASSE'`` finds ``'Straße zone'`` only when both sides are case-folded;
    * document metadata of every type (an int, a whole float, a bool, a mixed list) that chunks
      override (``region``), so a summary must show the document's own metadata;
    * a chunk before the first heading (no section), nested sections, a section title that
      recurs in several documents, and chunks of two regions in one document (a partial scope).
    """
    docs: list[Document] = []
    for d, title in enumerate(_NAVIGATION_TITLES):
        b = DocumentBuilder(
            f'file:///navigation/{d}.md',
            title,
            metadata={
                'region': 'north',
                'rank': d,
                'weight': 2.0 + d,
                'draft': d % 2 == 0,
                'mixed': ['x', d, 0.5, False],
            },
            labels={'Note'} if d % 3 else set(),
        )
        if d % 2:
            b.add_chunk(None, f'{COMMON_WORD} preamble of {title}')
        common = b.section('Common ground')
        b.add_chunk(
            common, f'{COMMON_WORD} first words of {title}', metadata={'region': 'south' if d % 3 == 0 else 'north'}
        )
        inner = b.section(f'Inner {d}', parent=common)
        for k in range(d % 3 + 1):
            b.add_chunk(inner, f'{COMMON_WORD} inner part {k} of {title}', metadata={'part': k})
        closing = b.section('Closing')
        b.add_chunk(closing, f'{COMMON_WORD} last words of {title}', metadata={'region': 'south'})
        docs.append(b.build())
    return docs


def selective_corpus(size: int = 400, selected_every: int = 100) -> list[Document]:
    """``size`` chunks in one document; ``rare=True`` on one chunk in ``selected_every`` (1% by default)."""
    b = DocumentBuilder('file:///corpus/selective.md', 'Selective', metadata={'tenant': 'bulk'})
    section = b.section('All')
    for i in range(size):
        rare = i % selected_every == selected_every // 2
        b.add_chunk(
            section,
            f'{COMMON_WORD} record {i} about {_TOPICS[i % 6]}',
            metadata={'rare': rare, 'bucket': i % 10},
        )
    return [b.build()]


VERSIONED_CHUNKS = 12
"""How many chunks every version of `versioned_document` has."""
_VERSION_TAG = re.compile(r'\bv(\d+)\b')


def versioned_document(version: int) -> Document:
    """Version ``version`` of one document: same id, chunk ids and chunk count in every version.

    Every text the tools show carries the version (``"v7 chunk 3"``, the title, the section
    titles), so a result pieced together from two versions shows two. The sections move from
    version to version, so a window computed from an anchor of another version shows too:
    chunks 0 to ``split - 1`` are in ``Part one`` and the rest in ``Part two``, where ``split`` is
    4 in even versions and 7 in odd ones (chunks 4 to 6 change section every version), and
    ``Part two`` is nested in ``Part one`` in even versions, top-level in odd ones.
    """
    b = DocumentBuilder('file:///corpus/versioned.md', f'Versioned v{version}', metadata={'tenant': 'acme'})
    one = b.section(f'Part one v{version}')
    two = b.section(f'Part two v{version}', parent=one if version % 2 == 0 else None)
    split = 4 if version % 2 == 0 else 7
    for i in range(VERSIONED_CHUNKS):
        b.add_chunk(one if i < split else two, f'{COMMON_WORD} v{version} chunk {i}')
    return b.build()


def version_of(text: str) -> set[int]:
    """The versions of `versioned_document` that ``text`` names (one, unless it mixes versions)."""
    return {int(v) for v in _VERSION_TAG.findall(text)}


EDGE_FILTERS: list[tuple[str, Filter]] = [
    ('eq str', F.eq('tenant', 'acme')),
    ('eq int', F.eq('n', 3)),
    ('eq int matches float', F.eq('ratio', 2)),
    ('eq float matches int', F.eq('ratio', 2.0)),
    ('eq digit string is not int', F.eq('code', 3)),
    ('eq string digits', F.eq('code', '3')),
    ('eq bool true is not 1', F.eq('flag', True)),
    ('eq 1 is not true', F.eq('flag', 1)),
    ('eq false', F.eq('flag', False)),
    ('eq 0 is not false', F.eq('flag', 0)),
    ('in true is not 1', F.in_('flag', [True])),
    ('in 1 is not true', F.in_('flag', [1])),
    ('nin 0 keeps false', F.nin('flag', [0])),
    ('eq -0.0 matches 0', F.eq('n', -0.0)),
    ('eq list element', F.eq('tags', 'red')),
    ('ne includes missing', F.ne('tier', 'gold')),
    ('ne list', F.ne('tags', 'green')),
    ('gt int', F.gt('n', 10)),
    ('gte float', F.gte('price', 9.0)),
    ('lt mixed int bound on float', F.lt('price', 6)),
    ('lte', F.lte('n', 4)),
    ('gt beyond int64 on ints', F.gt('n', 1e19)),
    ('lt below int64 on ints', F.lt('n', -1e19)),
    ('gte beyond int64 on ints', F.gte('n', 2**70)),
    ('gt string', F.gt('name', 'item-15')),
    ('gt type mismatch', F.gt('tenant', 5)),
    ('gt bool never', F.gt('flag', False)),
    ('in', F.in_('tier', ['gold', 'bronze'])),
    ('in mixed types', F.in_('code', ['1', 2])),
    ('nin includes missing', F.nin('tier', ['gold', 'silver'])),
    ('contains substring', F.contains('name', 'm-1')),
    ('contains list element', F.contains('tags', 'blue')),
    ('contains list no substring', F.contains('tags', 'gre')),
    ('starts_with', F.starts_with('name', 'item-2')),
    ('ends_with', F.ends_with('name', '5')),
    ('exists', F.exists('price')),
    ('exists not none', F.exists('tier')),
    ('not exists', ~F.exists('tier')),
    ('and', F.eq('tenant', 'globex') & F.gt('n', 10)),
    ('or', F.eq('tenant', 'initech') | F.eq('flag', True)),
    ('not and', ~(F.eq('tenant', 'acme') & F.exists('tags'))),
    ('nested', (F.gte('n', 5) & F.lt('n', 20)) | ~F.exists('price')),
    ('label', EntityFilter.has_any_label('Legal')),
    ('label or', EntityFilter.has_any_label('Person', 'Manual')),
    ('label and property', EntityFilter.has_any_label('Manual') & F.eq('year', 2023)),
    ('not label', ~EntityFilter.has_any_label('Manual')),
    ('year int', F.eq('year', 2024)),
    ('nothing', F.eq('tenant', 'nobody')),
]
"""(name, filter) pairs the conformance kit checks every store against the reference on."""
