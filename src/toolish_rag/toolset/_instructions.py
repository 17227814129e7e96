"""The toolset's instructions: how the model works with a reference collection.

Search until answered, rephrase, cite chunk ids, say when the documents do not cover it. Each
tool's own description lives with its spec (`toolish_rag.toolset._tools`). See docs/toolset.md.
"""

from __future__ import annotations

from collections.abc import Sequence

from ._names import ToolName, tool_name

__all__ = ['build_instructions']


def _reading_sentence(name: str, tools: Sequence[ToolName]) -> str:
    readers = [tool_name(name, t) for t in ('broaden_chunk', 'zoom_out') if t in tools]
    if not readers:
        return ''
    return f'Use {" and ".join(readers)} to read around a result before relying on a fragment.'


def _navigation_sentence(name: str, tools: Sequence[ToolName]) -> str:
    if 'read_section' not in tools:
        return ''
    finders = [tool_name(name, t) for t in ('list_documents', 'outline') if t in tools]
    find = f'find it with {" and ".join(finders)}, then ' if finders else ''
    return f'To read a whole section or table, {find}read it with {tool_name(name, "read_section")}.'


def _graph_sentence(name: str, tools: Sequence[ToolName]) -> str:
    if 'graph_context' not in tools:
        return ''
    return (
        f'To follow connections (what mentions, links to, is part of or calls what), walk the graph with '
        f'{tool_name(name, "graph_context")} from a query or from ids of earlier results.'
    )


def build_instructions(
    name: str,
    description: str | None,
    tools: Sequence[ToolName],
    filters: str | None = None,
) -> str | None:
    """The instructions for the RAG ``name`` offering ``tools`` (short names); ``None`` if it offers nothing.

    ``filters`` describes the keys the model may filter on (`ModelFilters.describe`), if any.
    """
    if not tools:
        return None
    about = f' It holds: {description.strip()}' if description else ''
    searchers = [tool_name(name, t) for t in tools if t.endswith('_search')]
    parts = [
        f'You have a reference collection "{name}".{about}',
        (
            f'Search it with {", ".join(searchers)} before answering questions it may cover. '
            'Keep searching until you can answer: rephrase, use synonyms or the exact terms the documents '
            'would use, and try another search tool when one finds nothing.'
            if searchers
            else ''
        ),
        _reading_sentence(name, tools),
        _navigation_sentence(name, tools),
        _graph_sentence(name, tools),
        filters or '',
        'Base your answer on what the results say and cite the chunk ids you used, like [chunk <id>]. '
        'If the documents do not cover the question, say so plainly instead of guessing.',
    ]
    return '\n'.join(p for p in parts if p)
