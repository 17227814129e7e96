"""Object storage through an S3 server on loopback (moto), and one run with the real default model."""

from __future__ import annotations

import pathlib
import uuid
from collections.abc import Iterator
from datetime import timedelta

import pytest

from toolish_rag.embedding import HashingEmbeddingModel
from toolish_rag.filters import PropertyFilter as F
from toolish_rag.search import ExpansionRequest, RegexRequest, SearchRequest
from toolish_rag.testing import conformance_corpus, conformance_entities
from toolish_rag_lancedb import LanceDBStore


@pytest.fixture(scope='module')
def s3_endpoint() -> Iterator[str]:
    moto_server = pytest.importorskip('moto.server', reason='moto[server] is not installed')
    boto3 = pytest.importorskip('boto3', reason='boto3 is not installed')
    server = moto_server.ThreadedMotoServer(ip_address='127.0.0.1', port=0, verbose=False)
    server.start()
    try:
        host, port = server.get_host_and_port()
        endpoint = f'http://{host}:{port}'
        boto3.client(
            's3', endpoint_url=endpoint, aws_access_key_id='test', aws_secret_access_key='test', region_name='us-east-1'
        ).create_bucket(Bucket='toolish-kb')
        yield endpoint
    finally:
        server.stop()


def _options(endpoint: str) -> dict[str, str]:
    return {
        'aws_access_key_id': 'test',
        'aws_secret_access_key': 'test',
        'aws_endpoint': endpoint,
        'aws_region': 'us-east-1',
        'allow_http': 'true',
    }


async def test_s3_store_on_loopback(s3_endpoint: str) -> None:
    uri = f's3://toolish-kb/{uuid.uuid4().hex}'
    embedder = HashingEmbeddingModel(64)
    writer = LanceDBStore(uri, embedder=embedder, storage_options=_options(s3_endpoint))
    reader = LanceDBStore(
        uri, embedder=embedder, storage_options=_options(s3_endpoint), read_consistency_interval=timedelta(0)
    )
    assert await reader.text_search(SearchRequest('zebrafish', 5)) == []
    await writer.upsert([*conformance_corpus(), *conformance_entities()])
    await writer.upsert(conformance_corpus()[:1])  # idempotent replace, on S3 too

    scope = F.eq('tenant', 'acme')
    for store in (writer, reader):
        assert len(await store.list_documents()) == 3
        text = await store.text_search(SearchRequest('warranty claims', 50, scope))
        assert text and all(h.record.metadata['tenant'] == 'acme' for h in text)
        vector = await store.vector_search(SearchRequest('warranty claims', 5, scope))
        assert len(vector) == 5
        assert len(await store.regex_search(RegexRequest('ERR-10[0-9]{2}', 50))) == 9
        doc = conformance_corpus()[1]
        chunks = await store.expand(ExpansionRequest(document_id=doc.id, first=2, last=5))
        assert [c.sequence_number for c in chunks] == [2, 3, 4, 5]

    fresh = LanceDBStore(uri, embedder=embedder, storage_options=_options(s3_endpoint))
    assert await fresh.delete_documents([conformance_corpus()[2].id]) == 1
    assert len(await reader.list_documents()) == 2  # the reader sees the other writer's commit


@pytest.mark.model
async def test_default_embedder_end_to_end(tmp_path: pathlib.Path) -> None:
    store = LanceDBStore(tmp_path / 'kb')  # all-MiniLM-L6-v2, loaded offline
    await store.upsert(conformance_corpus())
    hits = await store.vector_search(SearchRequest('how do I get my money back?', 3))
    assert 'refund' in hits[0].record.text
    reopened = LanceDBStore(tmp_path / 'kb')
    again = await reopened.vector_search(SearchRequest('how do I get my money back?', 3))
    assert [(h.id, round(h.score, 5)) for h in again] == [(h.id, round(h.score, 5)) for h in hits]
