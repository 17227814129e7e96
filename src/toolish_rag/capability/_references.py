"""One-line references: a chunk a search finds again, whose text the model already has, is named, not repeated.

A search result already on view whole (`visible_whole`) comes back as ``[n] chunk <id> | score ...
| shown in turn k: <title > section>; its text is above``; ``metadata['hits']`` keeps the full
record and ``metadata['referenced']`` names the referenced ids, so compaction and grounding work
from records, never from this text. Reading tools (``broaden_chunk``, ``read_section``...) always
show text whole. See docs/compaction.md#references.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import replace
from typing import Any

from pydantic_ai.messages import ToolReturn

from .._evidence import Sighting
from .._record_text import field_text, render_record, where
from ..content import Chunk
from ..search import SearchHit
from ._compaction import REFERENCED

__all__ = ['with_references']


def _reference(hit: SearchHit, n: int, sighting: Sighting | None) -> str:
    assert isinstance(hit.record, Chunk)
    when = f'shown in turn {sighting.turn}' if sighting is not None and sighting.turn else 'shown earlier'
    return (
        f'[{n}] chunk {field_text(hit.record.id)} | score {hit.score:.3f} | {when}: {where(hit.record)}; '
        'its text is above in this conversation'
    )


def with_references(result: Any, visible: Collection[str], shown: Mapping[str, Sighting]) -> Any:
    """``result`` (a search's `ToolReturn`) with each hit in ``visible`` rendered as a one-line reference."""
    if not isinstance(result, ToolReturn) or not isinstance(result.return_value, str) or not visible:
        return result
    metadata = result.metadata if isinstance(result.metadata, dict) else None
    hits = metadata.get('hits') if metadata is not None else None
    if not isinstance(hits, list):
        return result
    text, referenced = result.return_value, []
    for n, hit in enumerate(hits, start=1):
        if not isinstance(hit, SearchHit) or not isinstance(hit.record, Chunk) or hit.record.id not in visible:
            continue
        block = render_record(hit, n)
        if text.count(block) == 1:
            text = text.replace(block, _reference(hit, n, shown.get(hit.record.id)))
            referenced.append(hit.record.id)
    if not referenced:
        return result
    assert metadata is not None
    return replace(result, return_value=text, metadata={**metadata, REFERENCED: referenced})
