"""The words the model reads: tool descriptions and the toolset's instructions.

Descriptions say what each tool is good for, what its score means (so a threshold is
never a guess that silently returns nothing) and, for text search, the store's own
query syntax. Instructions tell the model how to work with a reference collection:
search until answered, rephrase, cite chunk ids, say when the documents do not cover it.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..protocols import StoreLike, TextSearch
from .names import ToolName, tool_name

__all__ = ['build_instructions', 'tool_descriptions']


def tool_descriptions(store: StoreLike, default_top_k: int, max_top_k: int) -> dict[ToolName, str]:
    """Each tool's description; ``default_top_k`` and ``max_top_k`` are stated so the model can use them."""
    syntax = store.text_query_syntax if isinstance(store, TextSearch) else ''
    k = default_top_k
    m = max_top_k
    return {
        'vector_search': (
            'Semantic search: finds passages that mean the same as the query even in other words. '
            'Best for questions and concepts. Write the query as a short statement or question. '
            f'Returns up to top_k (default {k}, at most {m}) passages, best first, each with a chunk id. '
            'Score: cosine similarity from -1 to 1 (above about 0.5 is usually relevant for short queries). '
            'threshold (optional) drops hits scoring below it; omit it unless results are noisy.'
        ),
        'text_search': (
            'Keyword search (BM25): finds passages containing the query words. Best for exact names, '
            f'identifiers, error codes and rare terms. Query syntax: {syntax} '
            f'Returns up to top_k (default {k}, at most {m}) passages, best first. '
            'Score: BM25 relevance, unbounded and corpus-dependent. threshold (optional, 0-1) keeps hits '
            'scoring at least that fraction of the best hit; omit it unless results are noisy.'
        ),
        'hybrid_search': (
            'Combined semantic and keyword search: usually the best first search for any question. '
            f'Returns up to top_k (default {k}, at most {m}) passages, best first. '
            'Score: fused relevance from 0 to 1. threshold (optional, 0-1) drops hits scoring below it.'
        ),
        'regex_search': (
            'Regular-expression search over the exact source text: finds every passage containing a '
            'pattern such as an error code (ERR-[0-9]{4}), a version (v[0-9]+\\.[0-9]+) or an identifier. '
            'RE2 syntax (like Python re without backreferences or lookaround); (?i) makes it case-insensitive. '
            f'Returns up to top_k (default {k}, at most {m}) passages; passages with more matches rank first '
            '(score = number of matches).'
        ),
        'broaden_chunk': (
            'Read the text around a search result: returns the chunk with chunks_to_add chunks before '
            'and after it, in reading order. Use it when a result is cut off or lacks context.'
        ),
        'zoom_out': (
            'Read the whole section a chunk belongs to (pass a chunk id), or the parent of a section '
            '(pass a section id from an earlier zoom_out). Use it to see a topic in full.'
        ),
    }


def _reading_sentence(name: str, tools: Sequence[ToolName]) -> str:
    readers = [tool_name(name, t) for t in ('broaden_chunk', 'zoom_out') if t in tools]
    if not readers:
        return ''
    return f'Use {" and ".join(readers)} to read around a result before relying on a fragment.'


def build_instructions(
    name: str, description: str | None, tools: Sequence[ToolName], preloaded: str | None
) -> str | None:
    """The instructions for the RAG ``name`` offering ``tools`` (short names); ``None`` if it offers nothing."""
    if not tools and not preloaded:
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
        'Base your answer on what the results say and cite the chunk ids you used, like [chunk <id>]. '
        'If the documents do not cover the question, say so plainly instead of guessing.',
    ]
    if preloaded:
        parts.append(preloaded)
    return '\n'.join(p for p in parts if p)
