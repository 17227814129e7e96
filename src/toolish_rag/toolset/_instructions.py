"""The toolset's instructions: how the model works with a reference collection.

Search until answered, rephrase, cite chunk ids, say when the documents do not cover it. Each
tool's own description lives with its spec (`toolish_rag.toolset._tools`). See docs/toolset.md.
"""

from __future__ import annotations

from collections.abc import Mapping

from .._tool_names import ToolName

__all__ = ['build_instructions']


def _results_sentence(tools: Mapping[ToolName, str], grouping: bool) -> str:
    """What every search tool shares, said here once rather than in each tool's description."""
    ranked = any(t in tools for t in ('vector_search', 'text_search', 'hybrid_search'))
    threshold = 'threshold drops hits scoring below it: leave it out unless results are noisy. '
    group = 'group_by="document" gives one result per document (its best chunk, naming its other matches). '
    return (
        f'Searches return up to top_k passages, best first, each with a chunk id. {threshold if ranked else ""}'
        f'{group if grouping and ranked else ""}'
    )


def _reading_sentence(tools: Mapping[ToolName, str]) -> str:
    readers = [tools[t] for t in ('broaden_chunk', 'zoom_out') if t in tools]
    if not readers:
        return ''
    return f'Use {" and ".join(readers)} to read around a result before relying on a fragment.'


def _navigation_sentence(tools: Mapping[ToolName, str]) -> str:
    if 'read_section' not in tools:
        return ''
    finders = [tools[t] for t in ('list_documents', 'outline') if t in tools]
    find = f'find it with {" and ".join(finders)}, then ' if finders else ''
    return f'To read a whole section or table, {find}read it with {tools["read_section"]}.'


def _graph_sentence(tools: Mapping[ToolName, str]) -> str:
    if 'graph_context' not in tools:
        return ''
    return (
        f'To follow connections (what mentions, links to, is part of or calls what), walk the graph with '
        f'{tools["graph_context"]} from a query or from ids of earlier results.'
    )


def build_instructions(
    name: str,
    description: str | None,
    tools: Mapping[ToolName, str],
    filters: str | None = None,
    grouping: bool = False,
) -> str | None:
    """The instructions for the RAG ``name`` offering ``tools`` (short name -> the name the model calls it by,
    `toolish_rag.toolset._exposed.exposed_names`); ``None`` if it offers nothing.

    ``filters`` describes the keys the model may filter on (`ModelFilters.describe`), if any; ``grouping``:
    whether the searches take ``group_by``. What every search shares is said here once, not in each tool.
    """
    if not tools:
        return None
    about = f' It holds: {description.strip()}' if description else ''
    searchers = [full for t, full in tools.items() if t.endswith('_search')]
    parts = [
        f'You have a reference collection "{name}".{about}',
        (
            f'Search it with {", ".join(searchers)} before answering questions it may cover. '
            f'{_results_sentence(tools, grouping)}'
            'Keep searching until you can answer: rephrase, use synonyms or the exact terms the documents '
            'would use, and try another search tool when one finds nothing.'
            if searchers
            else ''
        ),
        _reading_sentence(tools),
        _navigation_sentence(tools),
        _graph_sentence(tools),
        filters or '',
        'Base your answer on what the results say and cite the chunk ids you used, like [chunk <id>]. '
        'If the documents do not cover the question, say so plainly instead of guessing.',
    ]
    return '\n'.join(p for p in parts if p)
