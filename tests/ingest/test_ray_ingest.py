"""Ingestion on Ray (`RayExecutor`) against the in-process pipeline: same store, embedding done by the actors.

One local Ray instance for the module (``ray.init(num_cpus=2)``), shut down after. The
stores are real (LanceDB, whose records table is read back with lancedb itself for the
vectors; the InMemoryStore) with the hashing embedder. The store's model is a
`DriverCountingModel`: the Ray workers get a copy of it, so the count the driver's instance
keeps is what the driver embedded itself, and a Ray run must leave it at zero.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.ingest import _counting
from tests.ingest._counting import CountingModel, UpsertOnly
from toolish_rag.ingest import IngestReport, RayExecutor, file_uri, ingest
from toolish_rag.protocols import DocumentStore
from toolish_rag.search import ExpansionRequest, SearchRequest
from toolish_rag.stores import InMemoryStore

ray = pytest.importorskip('ray', reason="Ray is not installed (pip install 'toolish-rag[ray]')")
lancedb = pytest.importorskip('lancedb', reason='lancedb is not installed')
toolish_rag_lancedb = pytest.importorskip('toolish_rag_lancedb', reason='toolish-rag-lancedb is not installed')

DIMS = 64


def DriverCountingModel() -> CountingModel:
    """A `CountingModel` of this module's size: the workers get a copy, so its count is the driver's own."""
    return CountingModel(DIMS)


@pytest.fixture(scope='module', autouse=True)
def ray_cluster() -> Iterator[None]:
    # The workers get `CountingModel` by value: they cannot import a test module.
    ray.cloudpickle.register_pickle_by_value(_counting)
    ray.init(num_cpus=2, include_dashboard=False)
    yield
    ray.shutdown()
    ray.cloudpickle.unregister_pickle_by_value(_counting)


def _executor() -> RayExecutor:
    return RayExecutor(docs_per_batch=4)


def _records(path: Path) -> dict[str, tuple[str | None, str, list[float]]]:
    """Every chunk row of a LanceDB store, read with lancedb: id -> (document id, text, vector)."""
    table = lancedb.connect(str(path)).open_table('records').to_arrow()
    rows = table.select(['id', 'document_id', 'text', 'vector']).to_pylist()
    return {r['id']: (r['document_id'], r['text'], r['vector']) for r in rows}


async def _documents(store: DocumentStore) -> dict[str, tuple[str, str | None, int, dict[str, Any]]]:
    return {i.id: (i.uri, i.fingerprint, i.chunk_count, dict(i.metadata)) for i in await store.list_documents()}


def _outcomes(
    report: IngestReport,
) -> tuple[list[str], list[str], list[str], list[tuple[str, str]], list[tuple[str, str]]]:
    failed = [(i.path, i.reason) for i in report.failed]
    skipped = sorted((i.path, i.reason) for i in report.skipped)
    return report.added, report.updated, report.unchanged, failed, skipped


@pytest.mark.shared_data
async def test_same_store_as_in_process_failures_too_and_reruns_skip(documents_dir: Path, tmp_path: Path) -> None:
    folder = tmp_path / 'documents'
    shutil.copytree(documents_dir, folder)
    (folder / 'broken.pdf').write_bytes(b'%PDF-1.7 not really a pdf')
    (folder / 'blank.md').write_text('   \n\n')
    local_model, ray_model = DriverCountingModel(), DriverCountingModel()
    local = toolish_rag_lancedb.LanceDBStore(str(tmp_path / 'local'), embedder=local_model)
    remote = toolish_rag_lancedb.LanceDBStore(str(tmp_path / 'ray'), embedder=ray_model)

    in_process = await ingest(local, folder, progress=False, executor='thread')
    on_ray = await ingest(remote, folder, progress=False, executor=_executor())

    assert len(in_process.added) > 10 and in_process.chunks > 100
    # The bad files are reported, with the in-process reasons, and the rest is written.
    assert {Path(i.path).name for i in on_ray.failed} >= {'broken.pdf'}
    assert {Path(i.path).name: i.reason for i in on_ray.skipped}['blank.md'] == 'empty file'  # blank lines only
    assert _outcomes(on_ray) == _outcomes(in_process)
    assert on_ray.chunks == in_process.chunks
    assert [(w.path, w.reason) for w in on_ray.warnings] == [(w.path, w.reason) for w in in_process.warnings]
    assert await _documents(remote) == await _documents(local)
    local_rows, ray_rows = _records(tmp_path / 'local'), _records(tmp_path / 'ray')
    assert len(ray_rows) == in_process.chunks
    assert ray_rows == local_rows  # chunk ids, their documents, texts and vectors, float for float
    # Every vector came from the actors: the driver's model embedded no document text.
    assert local_model.document_texts == in_process.chunks
    assert ray_model.document_texts == 0

    # The store searches with those vectors like the in-process one (queries embed on the driver).
    request = SearchRequest(query='deprecating and disabling formulae', top_k=5)
    assert [h.id for h in await remote.vector_search(request)] == [h.id for h in await local.vector_search(request)]

    again = await ingest(remote, folder, progress=False, executor=_executor())
    assert sorted(again.unchanged) == sorted(in_process.added)
    assert not again.added and not again.updated and again.chunks == 0
    assert _outcomes(again)[3] == _outcomes(in_process)[3]  # still reported, not stored
    assert ray_model.document_texts == 0


async def test_store_without_the_vectors_protocol_embeds_itself(tmp_path: Path) -> None:
    """A store without ``upsert_with_vectors`` gets no vectors from Ray, parses there all the same, and is right."""
    folder = tmp_path / 'docs'
    folder.mkdir()
    for n in range(3):
        (folder / f'page{n}.md').write_text(f'# Page {n}\n\nShipping to zone {n} takes a week.\n')
    model = DriverCountingModel()
    store = UpsertOnly(InMemoryStore(model))

    report = await ingest(store, folder, progress=False, executor=_executor())

    assert len(report.added) == 3 and not report.failed
    assert model.document_texts == report.chunks > 0  # the store embedded them, on the driver
    [info] = [i for i in await store.list_documents() if i.uri == file_uri(folder / 'page1.md')]
    chunks = await store.inner.expand(ExpansionRequest(document_id=info.id, limit=10))
    assert 'zone 1' in chunks[0].text


def test_no_ray_import_until_it_runs_and_a_clear_error_without_it(tmp_path: Path) -> None:
    """The core imports Ray only when a `RayExecutor` runs; without Ray it names the extra (a fresh interpreter)."""
    (tmp_path / 'a.md').write_text('# A\n\nSome text.\n')
    code = (
        'import asyncio, sys\n'
        'from toolish_rag.ingest import RayExecutor, ingest\nfrom toolish_rag.stores import InMemoryStore\n'
        "print(sorted(m for m in sys.modules if m.split('.')[0] == 'ray'), flush=True)\n"
        "sys.modules['ray'] = None  # as if it were not installed\n"
        f'asyncio.run(ingest(InMemoryStore("hashing"), {str(tmp_path)!r}, executor=RayExecutor(), progress=False))\n'
    )
    run = subprocess.run([sys.executable, '-c', code], capture_output=True, text=True)
    assert run.stdout.strip() == '[]'
    assert run.returncode != 0
    assert 'ImportError: RayExecutor needs Ray Data (ray[data]): pip install "toolish-rag-slim[ray]"' in run.stderr
