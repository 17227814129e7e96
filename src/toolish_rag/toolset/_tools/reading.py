"""The reading tools: ``broaden_chunk`` (the chunks around a hit) and ``zoom_out`` (its section, or a parent).

See docs/concepts.md.
"""

from __future__ import annotations

from functools import partial
from typing import Annotated

from ...errors import InvalidRequestError
from ...retriever import Retriever
from ...search import SearchHit
from .._arguments import IntBounds, id_argument
from .._render import render_neighbours, render_section
from .._retries import short_repr
from .._settings import RagSettings
from .._spec import Declared, Found, Param, ToolEnv, ToolSpec
from ._shared import not_found

__all__ = ['SPECS']


async def _broaden(r: Retriever, settings: RagSettings, *, chunk_id: str, chunks_to_add: int) -> Found:
    found = await r.neighbours(chunk_id, chunks_to_add)
    if found is None:
        raise InvalidRequestError(not_found(chunk_id, 'a chunk id'))
    anchor, chunks = found
    text, shown = render_neighbours(anchor, chunks, settings.max_expansion_chars)
    # Only the chunks shown are hits: grounding counts hits as chunks the model has read.
    return Found(text, [SearchHit(c, 1.0 if c.id == anchor.id else 0.0) for c in shown])


def _broaden_tool(env: ToolEnv) -> Declared:
    most = env.settings.max_chunks_to_add

    def refusal(chunks_to_add: int) -> str:
        return f'chunks_to_add must be between 0 and {most}; you sent {short_repr(chunks_to_add)}'

    parameters = (
        Param('chunk_id', Annotated[str, id_argument('chunk id')]),
        Param('chunks_to_add', Annotated[int, IntBounds(0, most, refusal)], 2),
    )
    return Declared(parameters, partial(_broaden, settings=env.settings))


async def _zoom_out(r: Retriever, settings: RagSettings, *, id: str) -> Found:
    max_chars = settings.max_expansion_chars
    view = await r.section(id, max(1, max_chars // 50))
    if view is None:
        raise InvalidRequestError(not_found(id, 'a chunk id or section id'))
    text, shown = render_section(view, max_chars)
    return Found(text, [SearchHit(c, 0.0) for c in shown])


def _zoom_out_tool(env: ToolEnv) -> Declared:
    return Declared((Param('id', Annotated[str, id_argument('id')]),), partial(_zoom_out, settings=env.settings))


SPECS: tuple[ToolSpec, ...] = (
    ToolSpec(
        name='broaden_chunk',
        offered=lambda caps, settings: caps.expand,
        describe=lambda store, settings: (
            'Read around a search result that is cut off or lacks context: the chunk with chunks_to_add chunks '
            'before and after it, in reading order.'
        ),
        build=_broaden_tool,
    ),
    ToolSpec(
        name='zoom_out',
        offered=lambda caps, settings: caps.expand,
        describe=lambda store, settings: (
            "Read a chunk's whole section (pass its chunk id), or a section's parent (pass a section id from an "
            'earlier zoom_out), to see a topic in full.'
        ),
        build=_zoom_out_tool,
    ),
)
"""The reading tools' specs."""
