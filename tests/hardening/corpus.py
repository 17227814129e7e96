"""The two-tenant corpus of the hardening tests, and the oracle that says whether a call leaked.

Two tenants share one store: ``acme`` (the scope every test runs under) and ``globex``
(the tenant that must stay invisible). Globex has three times as many documents, on the
same topics and in the same words, so an unscoped ranking is dominated by globex records:
a store or toolset that ranks first and filters after, in too small a window, shows its
leak (or its short result lists) here rather than only on a toy corpus.

On a store that holds a graph (`GraphStore`) the corpus's relations are written too: each
tenant's chunks are PART_OF their sections, sections PART_OF their documents, documents LINKS_TO
the next, chunks MENTIONS the tenant's people; and a few hostile edges cross the tenants (an acme
relation to a globex node and the reverse, a globex relation between two acme nodes whose type,
``GLOBEX_SECRET``, names globex), which a scoped walk must never show or count.

Everything globex owns can be recognised in text: its document ids (which prefix its chunk
and section ids), its document titles, its entity ids and names, and a serial code
(``GLX-0042``) in every globex chunk. `ScopeOracle` looks for them in every result text and
retry message, and for the scope's own hidden values (``acme``, ``tenant``, a store's SQL)
in every retry message: the model never sent those, so it must never read them.
"""

from __future__ import annotations

import contextlib
import random
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from functools import cache
from typing import Any

from pydantic_ai.messages import ToolReturn

from toolish_rag import DocumentBuilder, Entity, PropertyFilter as F, SearchHit
from toolish_rag.content import Document, NodeKind, Relation
from toolish_rag.filters import Filter

__all__ = [
    'FOREIGN_NAME_PARTS',
    'FOREIGN_TENANT',
    'MAX_RETRY_CHARS',
    'SCOPE',
    'SCOPE_TENANT',
    'Corpus',
    'Failures',
    'ScopeOracle',
    'TenantIds',
    'describe',
    'two_tenant_corpus',
]

SCOPE_TENANT = 'acme'
FOREIGN_TENANT = 'globex'
SCOPE: Filter = F.eq('tenant', SCOPE_TENANT)
"""The scope every hardening test runs under (as a deployer would set it per tenant)."""

MAX_RETRY_CHARS = 2000
"""The longest retry message a model may get (issue 12 item 8: an id echoed whole makes a 1 MB id a 1 MB error)."""

_SERIAL_PREFIX = {SCOPE_TENANT: 'ACM', FOREIGN_TENANT: 'GLX'}
_REGION = {SCOPE_TENANT: 'Northwind', FOREIGN_TENANT: 'Globex South'}
"""Each tenant's ``region`` (document metadata, a filterable key): globex's names its tenant, so a leak shows."""
_COPIES = {SCOPE_TENANT: 1, FOREIGN_TENANT: 3}

# Per topic: sentences both tenants write (same words, so both rank for the same queries).
# ``{t}`` is the tenant's name, ``{code}`` an error code from a range both tenants use.
_TOPICS: dict[str, tuple[str, ...]] = {
    'refunds': (
        '{t} refunds are paid within 30 days of the return.',
        'Keep the receipt for every refund claim; error {code} means the refund window expired.',
        'A refund for a damaged parcel needs a photo of the damage.',
        'Partial refunds apply to opened items, see {code}.',
    ),
    'shipping': (
        '{t} ships parcels within two working days.',
        'Express shipping costs extra; a failed delivery is logged as {code}.',
        'Parcels over 30 kg travel by freight and need a signature.',
        'International shipping adds customs forms to every parcel.',
    ),
    'warranty': (
        'The warranty covers defects for two years after purchase.',
        '{t} repairs or replaces a defective item; claim code {code}.',
        'Accidental damage is not covered by the warranty.',
        'Send the serial number with every warranty claim.',
    ),
    'passwords': (
        'Passwords must be at least 14 characters long.',
        'Reset a forgotten password from the login page; lockouts show {code}.',
        '{t} staff never ask for your password by email.',
        'Two-factor authentication is required for admin accounts.',
    ),
}

_ENTITIES = {
    SCOPE_TENANT: (('ent-ac-1', 'Alice Moreau', 'refund lead'), ('ent-ac-2', 'Dev Patel', 'shipping clerk')),
    FOREIGN_TENANT: (
        ('ent-gx-1', 'Boris Vance', 'refund lead'),
        ('ent-gx-2', 'Carla Nyx', 'shipping manager'),
        ('ent-gx-3', 'Hank Scorpio', 'warranty clerk and password admin'),
    ),
}

_MISSING_DOCUMENT = 'd' + '0' * 15
"""A document id no document has, of the real ones' shape (``'d'`` and 15 hex digits)."""
FOREIGN_NAME_PARTS = ('Globex', 'globex refunds', 'Globex shipping guide')
"""Parts of globex's titles and of no acme title: a name the navigation tools resolve, out of scope."""


@dataclass(frozen=True)
class TenantIds:
    """Every id one tenant owns, by kind."""

    documents: tuple[str, ...]
    sections: tuple[str, ...]
    chunks: tuple[str, ...]
    entities: tuple[str, ...]

    @property
    def all(self) -> tuple[str, ...]:
        return (*self.documents, *self.sections, *self.chunks, *self.entities)


@dataclass(frozen=True)
class Corpus:
    """The two-tenant corpus, its ids per tenant, and what marks a record as globex's."""

    documents: tuple[Document, ...]
    entities: tuple[Entity, ...]
    relations: tuple[Relation, ...]
    """The graph (written to stores that hold one): each tenant's edges, and hostile ones across tenants."""
    scope: TenantIds
    foreign: TenantIds
    foreign_markers: tuple[str, ...]
    """Text that only globex records carry: seeing it in a scoped result is a leak."""
    words: tuple[str, ...]
    """The corpus vocabulary (both tenants'), for queries that actually match something."""

    def __repr__(self) -> str:
        return (
            f'Corpus({len(self.documents)} documents, {len(self.entities)} entities, {len(self.relations)} relations)'
        )

    @property
    def records(self) -> list[Any]:
        return [*(c for d in self.documents for c in d.chunks), *self.entities]

    def titles(self, tenant: str) -> tuple[str, ...]:
        """The document titles of ``tenant`` (a name the navigation tools take, like an id)."""
        return tuple(d.title for d in self.documents if d.metadata['tenant'] == tenant)

    @property
    def section_titles(self) -> tuple[str, ...]:
        """Every section title (both tenants use the same ones)."""
        return tuple(sorted({s.title for d in self.documents for s in d.sections}))

    def missing_twin(self, record_id: str) -> str:
        """An id (or title) of ``record_id``'s exact shape that no record has: it differs only in existing.

        A foreign id's retry must read exactly like its twin's (after swapping the ids), or
        the message tells the model that the foreign record exists. A title's twin keeps its
        length, spaces and case pattern, its letters all ``q`` (no title holds one).
        """
        if record_id in self.titles(FOREIGN_TENANT) or record_id in FOREIGN_NAME_PARTS:
            twin = ''.join(('Q' if c.isupper() else 'q') if c.isalpha() else c for c in record_id)
            assert not any(twin.casefold() in t.casefold() for d in self.documents for t in (d.title, d.uri))
            return twin
        if record_id.startswith('ent-'):
            twin = 'ent-zz' + record_id[len('ent-zz') :]
        elif record_id[:16] in {*self.scope.documents, *self.foreign.documents}:
            twin = _MISSING_DOCUMENT + record_id[16:]
        else:
            raise ValueError(f'no twin for {record_id!r}: not a corpus id')
        assert twin not in {*self.scope.all, *self.foreign.all} and len(twin) == len(record_id)
        return twin


def _tenant_documents(tenant: str, rng: random.Random, serials: Iterable[int]) -> list[Document]:
    serial = iter(serials)
    docs = []
    for copy in range(_COPIES[tenant]):
        for topic, sentences in _TOPICS.items():
            b = DocumentBuilder(
                f'file:///{tenant}/{topic}-{copy}.md',
                f'{tenant.title()} {topic} guide {copy + 1}',
                metadata={'tenant': tenant, 'year': 2023 + copy, 'region': _REGION[tenant]},
                labels={'Guide'},
            )
            overview = b.section('Overview')
            details = b.section('Details', parent=overview)
            exceptions = b.section('Exceptions')
            for section, count in ((None, 1), (overview, 2), (details, 3), (exceptions, 2)):
                for _ in range(count):
                    text = rng.choice(sentences).format(t=tenant.title(), code=f'ERR-{rng.randrange(4000, 4100)}')
                    b.add_chunk(section, f'{text} Reference {_SERIAL_PREFIX[tenant]}-{next(serial):04d}.')
            docs.append(b.build())
    return docs


def _edge(source: tuple[str, NodeKind], type: str, target: tuple[str, NodeKind], tenant: str, **extra: Any) -> Relation:
    return Relation(
        source=source[0],
        source_kind=source[1],
        target=target[0],
        target_kind=target[1],
        type=type,
        metadata={'tenant': tenant},
        origin='hardening',
        **extra,
    )


def _tenant_relations(tenant: str, docs: list[Document], entities: list[Entity]) -> list[Relation]:
    """One tenant's graph: chunk PART_OF section PART_OF document, document LINKS_TO the next, chunk MENTIONS person."""
    relations: list[Relation] = []
    refund_lead, shipping = (entities[0].id, 'entity'), (entities[1].id, 'entity')
    for n, doc in enumerate(docs):
        document: tuple[str, NodeKind] = (doc.id, 'document')
        following = docs[(n + 1) % len(docs)]
        relations.append(_edge(document, 'LINKS_TO', (following.id, 'document'), tenant, document_id=doc.id))
        for section in doc.sections:
            relations.append(_edge((section.id, 'section'), 'PART_OF', document, tenant, document_id=doc.id))
        for chunk in doc.chunks:
            part: tuple[str, NodeKind] = (chunk.section_ids[-1], 'section') if chunk.section_ids else document
            about = dict(provenance=chunk.id, document_id=doc.id)
            relations.append(_edge((chunk.id, 'chunk'), 'PART_OF', part, tenant, **about))
            if 'refund' in chunk.urtext.lower():
                relations.append(_edge((chunk.id, 'chunk'), 'MENTIONS', refund_lead, tenant, weight=0.8, **about))
            if 'parcel' in chunk.urtext.lower():
                relations.append(_edge((chunk.id, 'chunk'), 'MENTIONS', shipping, tenant, weight=0.6, **about))
    return relations


def _hostile_relations(
    acme: tuple[list[Document], list[Entity]], globex: tuple[list[Document], list[Entity]]
) -> list[Relation]:
    """Edges across the tenants, and a globex edge between acme nodes: none may show in an acme-scoped walk."""
    (acme_docs, acme_people), (globex_docs, globex_people) = acme, globex
    acme_chunk: tuple[str, NodeKind] = (acme_docs[0].chunks[1].id, 'chunk')
    return [
        _edge(acme_chunk, 'MENTIONS', (globex_people[0].id, 'entity'), SCOPE_TENANT),
        _edge((acme_docs[0].id, 'document'), 'LINKS_TO', (globex_docs[0].id, 'document'), SCOPE_TENANT),
        _edge((globex_docs[0].chunks[1].id, 'chunk'), 'MENTIONS', (acme_people[0].id, 'entity'), FOREIGN_TENANT),
        _edge(acme_chunk, 'GLOBEX_SECRET', (acme_docs[1].id, 'document'), FOREIGN_TENANT),
        _edge((acme_people[1].id, 'entity'), 'GLOBEX_SECRET', (acme_people[0].id, 'entity'), FOREIGN_TENANT),
    ]


def _ids(docs: list[Document], entities: list[Entity]) -> TenantIds:
    return TenantIds(
        documents=tuple(d.id for d in docs),
        sections=tuple(s.id for d in docs for s in d.sections),
        chunks=tuple(c.id for d in docs for c in d.chunks),
        entities=tuple(e.id for e in entities),
    )


@cache
def two_tenant_corpus() -> Corpus:
    """The corpus: acme with 4 documents, globex with 12 on the same topics, 8 chunks each, and entities."""
    rng = random.Random(12)
    by_tenant: dict[str, tuple[list[Document], list[Entity]]] = {}
    for tenant in (SCOPE_TENANT, FOREIGN_TENANT):
        docs = _tenant_documents(tenant, rng, range(1, 10_000))
        entities = [
            Entity(id=i, name=name, description=about, labels=frozenset({'Person'}), metadata={'tenant': tenant})
            for i, name, about in _ENTITIES[tenant]
        ]
        by_tenant[tenant] = (docs, entities)
    foreign_docs, foreign_entities = by_tenant[FOREIGN_TENANT]
    markers = (
        FOREIGN_TENANT,
        f'{_SERIAL_PREFIX[FOREIGN_TENANT]}-',
        *(d.id for d in foreign_docs),
        *(d.title for d in foreign_docs),
        *(d.uri for d in foreign_docs),
        *(e.id for e in foreign_entities),
        *(e.name for e in foreign_entities),
    )
    all_docs = [*by_tenant[SCOPE_TENANT][0], *foreign_docs]
    relations = [
        *(r for tenant, (docs, people) in by_tenant.items() for r in _tenant_relations(tenant, docs, people)),
        *_hostile_relations(by_tenant[SCOPE_TENANT], by_tenant[FOREIGN_TENANT]),
    ]
    words = sorted({w.strip('.,;').lower() for d in all_docs for c in d.chunks for w in c.urtext.split()} - {''})
    return Corpus(
        documents=tuple(all_docs),
        entities=(*by_tenant[SCOPE_TENANT][1], *foreign_entities),
        relations=tuple(relations),
        scope=_ids(*by_tenant[SCOPE_TENANT]),
        foreign=_ids(foreign_docs, foreign_entities),
        foreign_markers=markers,
        words=tuple(words),
    )


# -- the oracle ------------------------------------------------------------------------------------

_HIDDEN_WORDS = (SCOPE_TENANT, 'tenant')
"""The scope's key and value: the model never sees the scope, so no message may name them."""
_HIDDEN_SQL = ('WHERE', 'SELECT', 'IS NOT NULL', 'md__', 'regexp_like')
"""Fragments of a store's own query (LanceDB's SQL where-clause): the scope, spelt as SQL."""


def _strings(arguments: Mapping[str, Any]) -> list[str]:
    """The strings the model sent, also those inside lists and objects (a claim's chunk ids and quotes)."""
    found: list[str] = []
    pending: list[tuple[Any, int]] = [(v, 0) for v in arguments.values()]
    while pending:  # iterative and depth-bounded: a hostile value may be nested thousands deep
        value, depth = pending.pop()
        if isinstance(value, str):
            found.append(value)
        elif isinstance(value, (list, tuple)) and depth < _STRING_DEPTH:
            pending += [(v, depth + 1) for v in value]
        elif isinstance(value, dict) and depth < _STRING_DEPTH:
            pending += [(v, depth + 1) for v in value.values()]
    return found


_STRING_DEPTH = 6
"""How deep `_strings` looks: deep enough for ``verify_citations``'s claims, no deeper."""


def _sent(arguments: Mapping[str, Any]) -> str:
    """Everything the model sent, as text: a word it sent may come back in its retry (quoted, or in a repr)."""
    parts = []
    for value in arguments.values():
        if isinstance(value, str):
            parts.append(value)
        elif not isinstance(value, int):  # a huge int cannot be str()-ed, and holds no words anyway
            # nested too deep to print: pydantic shows it as "<unprintable ...>", so nothing to allow
            with contextlib.suppress(RecursionError, ValueError):
                parts.append(repr(value))
    return '\n'.join(parts)


def describe(value: Any, limit: int = 80) -> str:
    """A short repr for failure reports: a 1 MB string, a 5,000-digit int or a list nested 5,000 deep stays short."""
    if isinstance(value, int) and value.bit_length() > 256:
        return f'<int of about {int(value.bit_length() * 0.30103)} digits, sign {"-" if value < 0 else "+"}>'
    try:
        text = repr(value)
    except (RecursionError, ValueError):
        return f'<{type(value).__name__} nested too deep to repr>'
    return text if len(text) <= limit else f'{text[: limit - 20]}...<{len(text)} chars>'


@dataclass(frozen=True)
class ScopeOracle:
    """Says what, if anything, a scoped call under `SCOPE` showed that it must not have."""

    corpus: Corpus

    def result_problems(self, result: ToolReturn, arguments: Mapping[str, Any]) -> list[str]:
        """Each problem as ``'<kind>: <detail>'``: out-of-scope hits in the metadata, and globex markers in the text (echoed arguments aside)."""
        problems: list[str] = []
        metadata = result.metadata if isinstance(result.metadata, dict) else {}
        hits = metadata.get('hits')
        if not isinstance(hits, list):
            return [f'no hits list in the result metadata: {describe(result.metadata)}']
        foreign = set(self.corpus.foreign.all)
        for hit in hits:
            assert isinstance(hit, SearchHit)
            tenant = hit.record.metadata.get('tenant')
            if tenant != SCOPE_TENANT or hit.id in foreign:
                problems.append(f'out-of-scope hit: {hit.id} of tenant {tenant!r}')
        text = str(result.return_value)
        # A result heading quotes the query or pattern (repr): drop those quotes, and only those,
        # so a query naming globex does not hide a globex title leaked elsewhere in the text.
        for value in sorted(_strings(arguments), key=len, reverse=True):
            for echo in {repr(value), repr(value.strip())}:
                text = text.replace(echo, '')
        lowered = text.lower()
        problems += [f'globex text in the result: {m!r}' for m in self.corpus.foreign_markers if m.lower() in lowered]
        return problems

    def retry_problems(self, message: str, arguments: Mapping[str, Any]) -> list[str]:
        """A retry that is too long, or names the scope, its SQL or anything of globex's the model did not send."""
        problems: list[str] = []
        if len(message) > MAX_RETRY_CHARS:
            problems.append(f'retry over {MAX_RETRY_CHARS} chars: {len(message)} chars')
        sent = _sent(arguments)
        sent_lower = sent.lower()
        lowered = message.lower()
        for word in (*_HIDDEN_WORDS, *self.corpus.foreign_markers):
            if word.lower() not in sent_lower and word.lower() in lowered:
                problems.append(f'retry names what the model did not send: {word!r}')
        for fragment in _HIDDEN_SQL:
            if fragment not in sent and fragment in message:
                problems.append(f'retry shows the store query: {fragment!r}')
        return problems


@dataclass
class Failures:
    """Failed checks grouped by what failed, so a run of thousands of calls reports a readable summary.

    Each group (say ``'lone_surrogates: UnicodeEncodeError'``) keeps a count and its first few
    examples; `report` is the assertion message.
    """

    examples_per_group: int = 3
    counts: dict[str, int] = field(default_factory=dict)
    examples: dict[str, list[str]] = field(default_factory=dict)

    def add(self, group: str, example: str) -> None:
        self.counts[group] = self.counts.get(group, 0) + 1
        kept = self.examples.setdefault(group, [])
        if len(kept) < self.examples_per_group:
            kept.append(example)

    def __bool__(self) -> bool:
        return bool(self.counts)

    def __repr__(self) -> str:  # pytest prints it under the report: keep it one line
        return f'Failures({sum(self.counts.values())} failed checks)'

    def report(self, heading: str) -> str:
        lines = [f'{heading}: {sum(self.counts.values())} failed checks in {len(self.counts)} groups']
        for group in sorted(self.counts):
            lines.append(f'- {group}: {self.counts[group]}, e.g.')
            lines += [f'    {e}' for e in self.examples[group]]
        return '\n'.join(lines)
