"""What a chunk's boxes cost a store: bytes of JSON and time to write and read them, packed and as the list form.

Used by ``provenance_bench.py`` on every file it reads, in the same run: the list of 7-item arrays stores
wrote before (pydantic's JSON of ``tuple[TextBox, ...]``, both ways in Rust) against the packed string
`Chunk.boxes` is in JSON now (docs/grounded.md#how-boxes-are-stored), boxes alone, best of 5 passes; and
for scale, the file's parse time per chunk. ``summary`` weighs the rows by their chunks.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Sequence
from typing import Any

from pydantic import TypeAdapter

from toolish_rag._box_codec import pack_boxes, unpack_boxes
from toolish_rag.content import Chunk, TextBox

_LIST_FORM: TypeAdapter[tuple[TextBox, ...]] = TypeAdapter(tuple[TextBox, ...])


def _best_us(run: Callable[[], Any], per: int) -> float:
    best = float('inf')
    for _ in range(5):
        started = time.perf_counter()
        run()
        best = min(best, time.perf_counter() - started)
    return best / max(1, per) * 1e6


def storage_row(chunks: Sequence[Chunk], parse_seconds: float) -> dict[str, Any]:
    """Bytes a boxed chunk's boxes take in JSON, and microseconds to write and read them, per chunk."""
    boxed = [c for c in chunks if c.boxes]
    if not boxed:
        return {}
    listed = [_LIST_FORM.dump_json(c.boxes) for c in boxed]
    packed = [json.dumps(c.model_dump(mode='json')['boxes']) for c in boxed]
    assert all(tuple(unpack_boxes(json.loads(p), TextBox)) == c.boxes for p, c in zip(packed, boxed, strict=True))
    n = len(boxed)
    return {
        'boxed_chunks': n,
        'boxes_per_chunk': round(sum(len(c.boxes) for c in boxed) / n, 1),
        'bytes_list': round(sum(map(len, listed)) / n),
        'bytes_packed': round(sum(map(len, packed)) / n),
        'write_us_list': round(_best_us(lambda: [_LIST_FORM.dump_json(c.boxes) for c in boxed], n), 1),
        'write_us_packed': round(_best_us(lambda: [json.dumps(pack_boxes(c.boxes)) for c in boxed], n), 1),
        'read_us_list': round(_best_us(lambda: [_LIST_FORM.validate_json(b) for b in listed], n), 1),
        'read_us_packed': round(_best_us(lambda: [tuple(unpack_boxes(json.loads(p), TextBox)) for p in packed], n), 1),
        'parse_us_per_chunk': round(parse_seconds / len(chunks) * 1e6),
    }


def summary(rows: Sequence[dict[str, Any]]) -> str:
    """One line: the mean per boxed chunk over ``rows``, weighed by their boxed chunks."""
    rows = [r for r in rows if r.get('boxed_chunks')]
    if not rows:
        return ''
    n: int = sum(r['boxed_chunks'] for r in rows)

    def mean(key: str) -> float:
        return float(sum(r[key] * r['boxed_chunks'] for r in rows)) / n

    return (
        f'boxes in JSON, {n} boxed chunks: {mean("boxes_per_chunk"):.1f} boxes a chunk, '
        f'{mean("bytes_list"):.0f} -> {mean("bytes_packed"):.0f} bytes ({mean("bytes_list") / mean("bytes_packed"):.1f}x); '
        f'write {mean("write_us_list"):.1f} -> {mean("write_us_packed"):.1f} us, '
        f'read {mean("read_us_list"):.1f} -> {mean("read_us_packed"):.1f} us a chunk '
        f'(parsing: {mean("parse_us_per_chunk"):.0f} us a chunk)'
    )
