"""Citation pages over HTTP, from Python and from the CLI: the page drawn with the quote highlighted, scoped like
every read (a foreign chunk's picture is a 404 exactly like a missing one), pixels only from an unchanged file
under a page root, and bounded in size. See docs/inspect.md#citation-pages."""

from __future__ import annotations

import io
import shutil
from pathlib import Path
from typing import Any

import pytest
from PIL import Image
from starlette.testclient import TestClient

from tests.inspect.corpus import BASE, LOCAL
from tests.provenance_helpers import write_pdf
from toolish_rag import ToolishRag
from toolish_rag.content import Chunk
from toolish_rag.embedding import HashingEmbeddingModel
from toolish_rag.filters import PropertyFilter as F
from toolish_rag.ingest import ingest
from toolish_rag.inspect import create_app
from toolish_rag.pictures import MAX_SIDE, PageFiles, citation_picture, render_page
from toolish_rag.stores import InMemoryStore

QUOTE = 'brown fox jumps over the lazy dog'
LINES = [
    (72.0, 700.0, 14.0, 'The quick brown fox jumps over the lazy dog near the river.'),
    (72.0, 680.0, 14.0, 'Refunds are paid within thirty days of a request.'),
]


async def _store(root: Path) -> tuple[InMemoryStore, dict[str, Chunk]]:
    """Two tenants' folders under ``root``, one PDF each, ingested with their tenant as metadata."""
    store = InMemoryStore(HashingEmbeddingModel(64))
    for tenant in ('acme', 'globex'):
        folder = root / tenant
        folder.mkdir(parents=True)
        write_pdf([LINES], folder / f'{tenant}.pdf')
        report = await ingest(store, folder, metadata={'tenant': tenant}, progress=False)
        assert report.ok and len(report.added) == 1
    records = await store.get_records([f'{d.id}-0' for d in await store.list_documents()])
    return store, {str(c.metadata['tenant']): c for c in records if isinstance(c, Chunk)}


@pytest.fixture
def served(tmp_path: Path) -> Any:
    import asyncio

    store, chunks = asyncio.run(_store(tmp_path / 'docs'))
    rag = ToolishRag(store).with_metadata_filter(F.eq('tenant', 'acme'))
    client = TestClient(create_app(rag, page_roots=[tmp_path / 'docs']), base_url=BASE, client=LOCAL)
    return client, chunks, tmp_path


def test_the_citation_page_shows_the_page_with_the_quote(served: Any) -> None:
    client, chunks, _ = served
    chunk = chunks['acme']
    page = client.get('/citation', params={'chunk': chunk.id, 'quote': QUOTE})
    assert page.status_code == 200 and 'id="page-image"' in page.text and '<mark id="quote">' in page.text
    assert ', page 1' in page.text
    image = client.get('/page-image', params={'chunk': chunk.id, 'quote': QUOTE})
    assert image.status_code == 200 and image.headers['content-type'] == 'image/png'
    picture = Image.open(io.BytesIO(image.content)).convert('RGB')
    assert max(picture.size) <= MAX_SIDE
    assert highlight_box(picture) is not None, 'no highlighted pixel'


def highlight_box(image: Image.Image) -> tuple[int, int, int, int] | None:
    """The box around the highlight's pixels (its yellow over white paper), or ``None``."""
    import numpy as np

    rgb = np.asarray(image.convert('RGB')).astype(int)
    r, g, b = rgb[..., 0], rgb[..., 1], rgb[..., 2]
    ys, xs = np.nonzero((r > 200) & (g > 170) & (g < 245) & (b < 190))
    return (int(xs.min()), int(ys.min()), int(xs.max()) + 1, int(ys.max()) + 1) if len(xs) else None


def test_a_foreign_chunks_picture_is_a_404_like_a_missing_one(served: Any) -> None:
    client, chunks, _ = served
    foreign = client.get('/page-image', params={'chunk': chunks['globex'].id, 'quote': QUOTE})
    missing = client.get('/page-image', params={'chunk': 'd0000000000000000-0', 'quote': QUOTE})
    assert foreign.status_code == missing.status_code == 404
    assert foreign.text == missing.text and foreign.headers['content-type'] == missing.headers['content-type']
    page_foreign = client.get('/citation', params={'chunk': chunks['globex'].id, 'quote': QUOTE})
    page_missing = client.get('/citation', params={'chunk': 'd0000000000000000-0', 'quote': QUOTE})
    assert page_foreign.status_code == page_missing.status_code == 404 and page_foreign.text == page_missing.text


def test_pixels_come_only_from_the_unchanged_file_under_a_root(served: Any, tmp_path: Path) -> None:
    client, chunks, root = served
    chunk = chunks['acme']
    pdf = root / 'docs' / 'acme' / 'acme.pdf'
    write_pdf([[*LINES, (72.0, 500.0, 14.0, 'Changed since it was ingested.')]], pdf)
    changed = client.get('/page-image', params={'chunk': chunk.id, 'quote': QUOTE})
    assert changed.status_code == 404 and 'no page picture' in changed.text
    page = client.get('/citation', params={'chunk': chunk.id, 'quote': QUOTE})
    assert page.status_code == 200 and 'No picture of page 1' in page.text  # the text is still shown, marked
    # a root that does not hold the file draws nothing either, whatever path the record names
    assert PageFiles.under(tmp_path / 'elsewhere').locate(chunk.document_uri, 'sha256:x bytes=sha256:y') is None
    assert PageFiles.under(root).locate('file:///etc/passwd', 'sha256:x bytes=sha256:y') is None


def test_a_huge_page_is_drawn_small(tmp_path: Path) -> None:
    """A 20,000 x 20,000-point page is drawn at MAX_SIDE pixels, never whole."""
    import pypdfium2 as pdfium

    pdf = pdfium.PdfDocument.new()
    pdf.new_page(20_000, 20_000)
    out = io.BytesIO()
    pdf.save(out)
    picture = render_page(out.getvalue(), 'pdf', 1, [(0.1, 0.1, 0.5, 0.2)])
    assert picture is not None and (picture.width, picture.height) == (MAX_SIDE, MAX_SIDE)
    assert render_page(out.getvalue(), 'pdf', 2) is None  # no such page
    small = render_page(out.getvalue(), 'pdf', 1, max_side=100_000)
    assert small is not None and max(small.width, small.height) <= MAX_SIDE


async def test_python_and_the_cli_draw_the_same_picture(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from toolish_rag.cli import main

    folder = tmp_path / 'docs'
    folder.mkdir()
    write_pdf([LINES], folder / 'guide.pdf')
    store_path = tmp_path / 'store'
    store = InMemoryStore(HashingEmbeddingModel(64), path=store_path)
    await ingest(store, folder, progress=False)
    (info,) = await store.list_documents()
    chunk_id = f'{info.id}-0'
    found = await citation_picture(ToolishRag(store).retriever(), chunk_id, QUOTE, PageFiles.under(folder))
    assert not isinstance(found, str) and found.picture is not None and found.source.page == 1
    out = tmp_path / 'out.png'
    argv = ['show', chunk_id, '--quote', QUOTE, '--png', str(out), '--root', str(folder)]
    code = await _cli(main, [*argv, '--store', f'memory:{store_path}', '--embedder', 'hashing:64'])
    printed = capsys.readouterr().out
    assert code == 0, printed
    assert 'verified: ' in printed and ', page 1' in printed and 'box (x0, top, x1, bottom)' in printed
    assert out.read_bytes() == found.picture.png
    assert await _cli(
        main, ['show', 'nope-0', '--quote', QUOTE, '--store', f'memory:{store_path}', '--embedder', 'hashing:64']
    )
    shutil.rmtree(store_path)


async def _cli(main: Any, argv: list[str]) -> int:
    import asyncio

    return int(await asyncio.to_thread(main, argv))


def test_an_answers_citations_are_excerpts_with_thumbnails(served: Any) -> None:
    import json

    client, chunks, _ = served
    answer = {
        'status': 'answered',
        'claims': [{'text': 'The fox jumps.', 'citations': [{'chunk_id': chunks['acme'].id, 'quote': QUOTE}]}],
    }
    page = client.post('/citations', data={'answer': json.dumps(answer)})
    assert page.status_code == 200 and 'id="verdict"' in page.text and 'every citation verified' in page.text
    assert '<a class="thumb" href="/citation?' in page.text and 'src="/page-image?' in page.text
    assert ', page 1' in page.text
