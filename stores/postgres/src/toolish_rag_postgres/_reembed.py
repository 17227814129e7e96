"""Re-embedding a `PostgresStore`: every record's vector made again by another embedder, switched in one transaction.

The new vectors are computed first (outside any transaction), then one transaction, holding the
store's advisory lock and an ``EXCLUSIVE`` lock on ``records`` (writers wait, readers read the old
vectors until it commits), drops the HNSW index, changes the ``vector(dims)`` column's size, writes
every vector, builds the index again and records the new embedder in the manifest. A crash before
the commit leaves the old store whole. See docs/stores/postgres.md (Re-embedding).
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping
from dataclasses import dataclass

from psycopg import sql

from toolish_rag.manifest import EmbedderIdentity, EmbedderMismatch, StoreManifest

from ._database import Tx
from ._reads import parse
from ._schema import create_vector_index

__all__ = ['Switch', 'identity_json', 'recorded_or_refused', 'same_embedder', 'stored_texts']


@dataclass(frozen=True)
class Switch:
    """What the re-embedding transaction needs: the new vectors by text, the manifest to record, the index's build."""

    schema: str
    vectors: Mapping[str, str]
    """pgvector literals by record text (a text embedded once serves every record holding it)."""
    dims: int
    manifest: StoreManifest
    hnsw_m: int
    hnsw_ef_construction: int

    def apply(self, tx: Tx) -> int | set[str]:
        """Write every record's new vector, resize the column, rebuild the index and record ``self.manifest``:
        the number of records; or, writing nothing, the texts written since ``self.vectors`` was made."""
        tx.execute('SELECT pg_advisory_xact_lock(hashtext(%s))', (f'toolish_rag:{self.schema}',))
        tx.execute('LOCK TABLE records IN EXCLUSIVE MODE')  # a writer waits for the commit (readers do not)
        rows = [(record_id, parse(body).text) for record_id, body in tx.execute('SELECT id, body FROM records')]
        missing = {text for _, text in rows if text not in self.vectors}
        if missing:
            return missing
        dims = sql.Literal(self.dims)
        tx.execute('DROP INDEX IF EXISTS records_embedding')
        tx.execute(sql.SQL('ALTER TABLE records ALTER COLUMN embedding TYPE vector({}) USING NULL').format(dims))
        if rows:
            tx.execute(
                'UPDATE records AS r SET embedding = v.e::vector FROM unnest(%s::text[], %s::text[]) AS v(id, e) '
                'WHERE r.id = v.id',
                ([i for i, _ in rows], [self.vectors[t] for _, t in rows]),
            )
        create_vector_index(tx, self.hnsw_m, self.hnsw_ef_construction)
        tx.execute(
            "INSERT INTO meta (key, value) VALUES ('manifest', %s::jsonb) "
            'ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value',
            (json.dumps(self.manifest.to_json()),),
        )
        return len(rows)


def stored_texts(tx: Tx) -> set[str]:
    """The text of every record (chunk and entity): what a re-embed embeds."""
    return {parse(body).text for (body,) in tx.execute('SELECT body FROM records')}


def same_embedder(tx: Tx, schema: str, expected: EmbedderIdentity | None, location: str) -> None:
    """Before a write of vectors made by ``expected``: wait for a running re-embed (a shared hold on the advisory
    lock it takes whole), then refuse the write if the store has since been re-embedded by another process."""
    tx.execute('SELECT pg_advisory_xact_lock_shared(hashtext(%s))', (f'toolish_rag:{schema}',))
    row = tx.execute("SELECT value -> 'embedder' FROM meta WHERE key = 'manifest'").fetchone()
    if expected is None or row is None or not row[0]:
        return
    _refuse_another(EmbedderIdentity(**row[0]), expected, location)


def identity_json(identity: EmbedderIdentity) -> str:
    """``identity`` as the manifest's ``embedder`` entry records it (what the vector statement compares)."""
    return json.dumps(dataclasses.asdict(identity))


def recorded_or_refused(recorded: str, expected: EmbedderIdentity, location: str) -> str:
    """The manifest's ``embedder`` JSON, found other than the one a query sent: `EmbedderMismatch` when it names
    another embedder than ``expected`` (the store was re-embedded since this process opened it), else that JSON,
    the same embedder written otherwise (an older manifest), to send from then on."""
    data = json.loads(recorded)
    if data:
        _refuse_another(EmbedderIdentity(**data), expected, location)
    return recorded


def _refuse_another(recorded: EmbedderIdentity, expected: EmbedderIdentity, location: str) -> None:
    if recorded.differs_from(expected):
        raise EmbedderMismatch(
            f'{location} was re-embedded with {recorded.describe()} since this process opened it with '
            f'{expected.describe()}: open the store again'
        )
