"""Two tenants' documents, entities and relations, and one hostile document, for the inspector's tests.

Every title, text and metadata value a tenant owns carries its tenant's marker (``ACMEWORD``,
``GLOBEXWORD``), so a page leaking another tenant's record can be found by searching for the marker.
"""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

from toolish_rag import DocumentBuilder
from toolish_rag.content import Document, Entity, Relation

T = TypeVar('T')

BASE = 'http://127.0.0.1:8765'
LOCAL = ('127.0.0.1', 50000)
"""The test client's address: without tokens the inspector answers loopback clients only."""

TENANTS = {'acme': 'ACMEWORD', 'globex': 'GLOBEXWORD'}
HOSTILE_TITLE = 'Hostile <img src=x onerror="alert(1)"> page'
HOSTILE_TEXT = (
    'ACMEWORD hostile: <script>alert("pwned")</script> and [click](javascript:alert(2)) and '
    '<a href="javascript:alert(3)">link</a> <img src=x onerror=alert(4)> end.'
)
TOKENS = {'acme': 'acme-token-0123456789', 'globex': 'globex-token-0123456789', 'admin': 'admin-token-0123456789'}


def token_table_data() -> dict[str, Any]:
    return {
        'tokens': {
            'acme': {'token': TOKENS['acme'], 'scope': {'tenant': 'acme'}},
            'globex': {'token': TOKENS['globex'], 'scope': {'tenant': 'globex'}},
            'admin': {'token': TOKENS['admin'], 'scope': {}},
        }
    }


def documents() -> list[Document]:
    docs = []
    for tenant, word in TENANTS.items():
        b = DocumentBuilder(
            f'https://intranet.example/{tenant}/policies', f'{word} policies', metadata={'tenant': tenant}
        )
        refunds = b.section(f'{word} Refunds')
        b.add_chunk(refunds, f'{word} refunds are issued within 30 days of the return. Keep the receipt.')
        b.add_chunk(refunds, f'{word} a refund for a damaged item needs a photo of the damage.')
        shipping = b.section(f'{word} Shipping')
        b.add_chunk(shipping, f'{word} parcels ship with the carrier every weekday before noon.')
        b.add_chunk(shipping, f'{word} express shipping costs extra and arrives the next day.')
        docs.append(b.build())
    hostile = DocumentBuilder(
        'javascript:alert(5)', HOSTILE_TITLE, metadata={'tenant': 'acme', 'note': '<script>alert(6)</script>'}
    )
    section = hostile.section('<b onmouseover="alert(7)">Section</b>')
    hostile.add_chunk(section, HOSTILE_TEXT)
    docs.append(hostile.build())
    return docs


def entities() -> list[Entity]:
    return [
        Entity(
            id=f'{tenant}-carrier',
            name=f'{word} Carrier',
            description=f'{word} the carrier',
            metadata={'tenant': tenant},
        )
        for tenant, word in TENANTS.items()
    ]


def relations(docs: list[Document]) -> list[Relation]:
    out = []
    for doc in docs:
        tenant = str(doc.metadata['tenant'])
        for chunk in doc.chunks:
            out.append(
                Relation(
                    source=chunk.id,
                    source_kind='chunk',
                    target=f'{tenant}-carrier',
                    target_kind='entity',
                    type='MENTIONS',
                    metadata={'tenant': tenant},
                )
            )
    return out


def run(coroutine: Coroutine[Any, Any, T]) -> T:
    """Run ``coroutine`` to its end in a thread of its own (Playwright's sync API keeps a loop in this one)."""
    with ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, coroutine).result()
