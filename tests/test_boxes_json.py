"""`Chunk.boxes` in JSON: one packed string every store keeps, read back exactly; the list form written before
still read; coordinates on a 1/10,000 grid; a corrupt string refused. See docs/grounded.md#how-boxes-are-stored."""

from __future__ import annotations

import base64
import json
import random
import zlib
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from toolish_rag.content import Chunk, TextBox
from toolish_rag.embedding import HashingEmbeddingModel
from toolish_rag.stores import InMemoryStore
from toolish_rag.testing import conformance_corpus


def chunk(boxes: Any) -> Chunk:
    return Chunk(
        id='c1',
        metadata={},
        document_id='d1',
        document_uri='file:///scan.png',
        document_title='Scan',
        text='x',
        urtext='x',
        chunk_index=0,
        sequence_number=0,
        boxes=boxes,
    )


def word_boxes(rng: random.Random, count: int, *, far: int = 0) -> list[TextBox]:
    """Boxes a word as an OCR'd page gives them: lines down the page, words across, now and then a page turned,
    a table's cell read out of order (offsets going back); ``far`` adds to every offset."""
    out, start, page = [], far, 1
    for i in range(count):
        if rng.random() < 0.05:
            page += 1
        line, word = divmod(i, 9)
        length = rng.randint(1, 14)
        start = start + rng.randint(1, 3) if rng.random() > 0.05 else max(0, start - rng.randint(20, 40))
        x0 = round(0.08 + 0.09 * word + rng.random() * 0.01, 4)
        top = round(min(0.97, 0.05 + 0.018 * line + rng.random() * 0.002), 4)
        out.append(TextBox(page, start, start + length, x0, top, round(x0 + 0.07, 4), round(top + 0.012, 4)))
        start += length
    return out


@pytest.mark.parametrize(('count', 'far', 'width'), [(60, 0, 'h'), (3, 0, 'h'), (40, 100_000, 'i'), (5, 2**40, 'q')])
def test_boxes_come_back_exactly_from_their_packed_json(count: int, far: int, width: str) -> None:
    """Word boxes (deflated), a PDF line or three (maybe not), offsets past 16 and 32 bits: the same boxes back,
    from the JSON text as from its parsed form (LanceDB and Tantivy parse it first, Postgres and memory do not)."""
    original = chunk(word_boxes(random.Random(count), count, far=far))
    packed = original.model_dump(mode='json')['boxes']
    assert isinstance(packed, str) and packed[0].lower() == width, packed[:8]
    assert Chunk.model_validate_json(original.model_dump_json()) == original
    assert Chunk.model_validate(json.loads(original.model_dump_json())) == original


def test_packed_boxes_are_a_fraction_of_the_list_form() -> None:
    boxes = word_boxes(random.Random(7), 60)
    listed = json.dumps([list(b) for b in boxes], separators=(',', ':'))
    packed = json.dumps(chunk(boxes).model_dump(mode='json')['boxes'])
    assert len(packed) * 3 < len(listed), (len(packed), len(listed))


def test_the_list_form_stores_wrote_before_is_still_read() -> None:
    boxes = word_boxes(random.Random(3), 12)
    old = json.loads(chunk(boxes).model_dump_json())
    old['boxes'] = [list(b) for b in boxes]
    assert Chunk.model_validate(old).boxes == tuple(boxes)
    assert Chunk.model_validate_json(json.dumps(old)).boxes == tuple(boxes)


def test_no_boxes_stay_an_empty_list() -> None:
    assert json.loads(chunk(()).model_dump_json())['boxes'] == []
    assert chunk('h').boxes == ()  # what packing no boxes gives


def test_coordinates_are_put_on_the_grid_and_must_be_finite() -> None:
    placed = chunk([(1, 0, 1, 0.123456, 1 / 3, 0.5, 0.75)])
    assert placed.boxes == (TextBox(1, 0, 1, 0.1235, 0.3333, 0.5, 0.75),)
    assert Chunk.model_validate_json(placed.model_dump_json()) == placed
    for bad in (float('nan'), float('inf')):
        with pytest.raises(ValidationError, match='finite'):
            chunk([(1, 0, 1, 0.1, bad, 0.5, 0.75)])


def _deflated(raw: bytes) -> str:
    return 'H' + base64.b64encode(zlib.compress(raw, 9, wbits=-15)).decode()


@pytest.mark.parametrize(
    ('packed', 'why'),
    [
        ('x' + base64.b64encode(bytes(14)).decode(), 'not a packed boxes string'),
        ('h!!!!', 'corrupt'),
        ('h\u00e9t\u00e9', 'ASCII'),
        ('h' + base64.b64encode(bytes(13)).decode(), 'whole number of boxes'),
        ('H' + base64.b64encode(b'\x00\x01').decode(), 'corrupt|truncated'),
        ('bomb', 'truncated or too long'),
    ],
)
def test_a_corrupt_or_hostile_string_is_refused(packed: str, why: str) -> None:
    if packed == 'bomb':
        packed = _deflated(bytes(1 << 25))  # 32 MiB of zeros in 32 kB: refused, not unpacked
    with pytest.raises(ValidationError, match=why):
        chunk(packed)


async def test_a_persisted_memory_store_writes_boxes_packed_and_reads_them_back(tmp_path: Path) -> None:
    """What a store writes is the packed string (a file here; LanceDB, Tantivy and Postgres keep the same JSON),
    and a reopened store gives the boxes back: the kit checks the round trip in every store."""
    store = InMemoryStore(HashingEmbeddingModel(64), path=tmp_path / 'store')
    await store.upsert(conformance_corpus())
    written = b''.join(p.read_bytes() for p in (tmp_path / 'store').rglob('*') if p.is_file())
    boxed = [c for d in conformance_corpus() for c in d.chunks if c.boxes]
    assert boxed and b'"boxes":[[' not in written
    for c in boxed:
        assert json.dumps(c.model_dump(mode='json')['boxes']).encode() in written
    reopened = InMemoryStore(HashingEmbeddingModel(64), path=tmp_path / 'store')
    got = await reopened.get_records([c.id for c in boxed])
    assert {r.id: getattr(r, 'boxes', None) for r in got} == {c.id: c.boxes for c in boxed}
