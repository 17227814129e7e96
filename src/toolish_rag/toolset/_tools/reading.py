"""The reading tools: ``broaden_chunk`` (the chunks around a hit) and ``zoom_out`` (its section, or a parent).

See docs/concepts.md.
"""

from __future__ import annotations

from typing import Any

from pydantic_ai import RunContext
from pydantic_ai.messages import ToolReturn

from ...errors import InvalidRequestError
from ...retriever import Retriever
from ...search import SearchHit
from .._arguments import id_argument
from .._render import render_neighbours, render_section
from .._retries import short_repr
from .._settings import RagSettings
from .._spec import Result, ToolEnv, ToolFunction, ToolSpec
from ._shared import not_found

__all__ = ['SPECS']

ChunkId = str
ChunksToAdd = int
ZoomId = str


async def _broaden(r: Retriever, settings: RagSettings, sent: str, *, chunk_id: str, chunks_to_add: int) -> Result:
    """``sent``: the chunk id as the model sent it (a not-found message echoes it so)."""
    if not 0 <= chunks_to_add <= settings.max_chunks_to_add:
        raise InvalidRequestError(
            f'chunks_to_add must be between 0 and {settings.max_chunks_to_add}; you sent {short_repr(chunks_to_add)}'
        )
    found = await r.neighbours(chunk_id, chunks_to_add)
    if found is None:
        raise InvalidRequestError(not_found(sent, 'a chunk id'))
    anchor, chunks = found
    text, shown = render_neighbours(anchor, chunks, settings.max_expansion_chars)
    # Only the chunks shown are hits: grounding counts hits as chunks the model has read.
    return text, [SearchHit(c, 1.0 if c.id == anchor.id else 0.0) for c in shown]


def _broaden_tool(env: ToolEnv) -> ToolFunction:
    async def broaden_chunk(ctx: RunContext[Any], chunk_id: ChunkId, chunks_to_add: ChunksToAdd = 2) -> ToolReturn:
        sent = {'chunk_id': chunk_id, 'chunks_to_add': chunks_to_add}
        return await env.run(ctx, sent, lambda r, a: _broaden(r, env.settings, chunk_id, **a))

    return broaden_chunk


async def _zoom_out(r: Retriever, settings: RagSettings, sent: str, *, id: str) -> Result:
    """``sent``: the id as the model sent it (a not-found message echoes it so)."""
    max_chars = settings.max_expansion_chars
    view = await r.section(id, max(1, max_chars // 50))
    if view is None:
        raise InvalidRequestError(not_found(sent, 'a chunk id or section id'))
    text, shown = render_section(view, max_chars)
    return text, [SearchHit(c, 0.0) for c in shown]


def _zoom_out_tool(env: ToolEnv) -> ToolFunction:
    async def zoom_out(ctx: RunContext[Any], id: ZoomId) -> ToolReturn:
        return await env.run(ctx, {'id': id}, lambda r, a: _zoom_out(r, env.settings, id, **a))

    return zoom_out


SPECS: tuple[ToolSpec, ...] = (
    ToolSpec(
        name='broaden_chunk',
        offered=lambda caps, settings: caps.expand,
        describe=lambda store, settings: (
            'Read around a search result that is cut off or lacks context: the chunk with chunks_to_add chunks '
            'before and after it, in reading order.'
        ),
        build=_broaden_tool,
        strings=lambda s: {'chunk_id': id_argument('chunk id')},
        bounds=lambda s: {'chunks_to_add': (0, s.max_chunks_to_add)},
    ),
    ToolSpec(
        name='zoom_out',
        offered=lambda caps, settings: caps.expand,
        describe=lambda store, settings: (
            "Read a chunk's whole section (pass its chunk id), or a section's parent (pass a section id from an "
            'earlier zoom_out), to see a topic in full.'
        ),
        build=_zoom_out_tool,
        strings=lambda s: {'id': id_argument('id')},
    ),
)
"""The reading tools' specs."""
