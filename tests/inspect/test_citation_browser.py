"""A citation page in a real headless browser (Debian's chromium, Playwright): on a screenshot, the highlight's
pixels cover the quote's words where pdfplumber (an independent reader) puts them on the page. ``TOOLISH_RAG_INSPECT_SHOTS=DIR``
keeps the screenshot (docs/images/inspect-citation-page.png). See docs/inspect.md#citation-pages."""

from __future__ import annotations

import asyncio
import io
import os
from pathlib import Path

import pytest

pytest.importorskip('playwright', reason='the browser tests need playwright (the dev extra)')
pytest.importorskip('uvicorn', reason='the inspector needs the web extra')

from PIL import Image
from playwright.sync_api import sync_playwright

from tests.inspect.test_citation_pages import highlight_box
from tests.inspect.test_inspect_browser import CHROMIUM, Served
from tests.provenance_helpers import plumber_box, write_pdf
from toolish_rag import ToolishRag
from toolish_rag.content import Chunk
from toolish_rag.embedding import HashingEmbeddingModel
from toolish_rag.ingest import ingest
from toolish_rag.inspect import create_app
from toolish_rag.stores import InMemoryStore

QUOTE = 'dispatched within two working days'
LINES = [
    (72.0, 720.0, 20.0, 'Shipping and returns'),
    (72.0, 680.0, 12.0, 'Orders placed before noon are packed the same day and'),
    (72.0, 664.0, 12.0, 'dispatched within two working days of payment. Parcels'),
    (72.0, 648.0, 12.0, 'travel by tracked post; a signature is asked on delivery.'),
    (72.0, 600.0, 12.0, 'Returns are accepted for thirty days with the receipt.'),
]


async def _chunk(folder: Path) -> tuple[InMemoryStore, Chunk]:
    store = InMemoryStore(HashingEmbeddingModel(64))
    await ingest(store, folder, progress=False)
    records = await store.get_records([f'{d.id}-{i}' for d in await store.list_documents() for i in range(4)])
    return store, next(c for c in records if isinstance(c, Chunk) and QUOTE in ' '.join(c.urtext.split()))


def test_the_highlight_covers_the_quotes_words_on_a_screenshot(tmp_path: Path) -> None:
    folder = tmp_path / 'docs'
    folder.mkdir()
    pdf = write_pdf([LINES], folder / 'shipping.pdf')
    store, chunk = asyncio.run(_chunk(folder))
    served = Served(create_app(ToolishRag(store), page_roots=[folder]))
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=['--no-sandbox'])
            page = browser.new_page(viewport={'width': 1400, 'height': 1100})
            errors: list[str] = []
            page.on('console', lambda m: errors.append(m.text) if m.type == 'error' else None)
            page.goto(f'{served.url}/citation?chunk={chunk.id}&quote={QUOTE.replace(" ", "+")}')
            image = page.locator('#page-image')
            image.wait_for()
            page.wait_for_function("document.getElementById('page-image').complete")
            shot = Image.open(io.BytesIO(image.screenshot())).convert('RGB')
            keep = os.environ.get('TOOLISH_RAG_INSPECT_SHOTS')
            if keep:
                page.screenshot(path=str(Path(keep) / 'inspect-citation-page.png'), full_page=True)
            assert page.locator('mark#quote').inner_text().split() == QUOTE.split()
            browser.close()
    finally:
        served.stop()
    assert not errors, errors
    found = highlight_box(shot)
    assert found is not None, 'no highlight on the screenshot'
    x0, top, x1, bottom = plumber_box(pdf, QUOTE)
    words = (x0 * shot.width, top * shot.height, x1 * shot.width, bottom * shot.height)
    inter_w = min(found[2], words[2]) - max(found[0], words[0])
    inter_h = min(found[3], words[3]) - max(found[1], words[1])
    assert inter_w > 0 and inter_h > 0, (found, words)
    covered = inter_w * inter_h / ((words[2] - words[0]) * (words[3] - words[1]))
    assert covered > 0.85, (found, words)  # the quote's words are under the highlight
    spill = (found[2] - found[0]) / (words[2] - words[0])
    assert spill < 1.3, (found, words)  # and the highlight is the quote's, not its line's or the page's
