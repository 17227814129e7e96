"""The words the model reads: tool descriptions and the toolset's instructions.

Descriptions say what each tool is good for, what its score means (so a threshold is
never a guess that silently returns nothing) and, for text search, the store's own
query syntax. Instructions tell the model how to work with a reference collection:
search until answered, rephrase, cite chunk ids, say when the documents do not cover it.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..analysis import TextAnalyzer
from ..citations.quotes import DEFAULT_MIN_QUOTE_CHARS
from ..graph.walk import MAX_HOPS, MAX_WALK_NODES
from ..protocols import StoreLike, TextSearch
from .graph_tool import DEFAULT_HOPS, DEFAULT_MAX_NODES, MAX_IDS
from .names import ToolName, tool_name
from .verify_tool import MAX_CITATIONS

__all__ = ['build_instructions', 'tool_descriptions']


def tool_descriptions(
    store: StoreLike, default_top_k: int, max_top_k: int, *, reranking: tuple[str, int] | None = None
) -> dict[ToolName, str]:
    """Each tool's description; ``default_top_k`` and ``max_top_k`` are stated so the model can use them.

    ``reranking`` is the reranker's score meaning and how many candidates it reranks, when the
    ranked searches are reranked: their descriptions then say so, and what score and threshold mean.
    """
    syntax = store.text_query_syntax if isinstance(store, TextSearch) else ''
    analyzer = getattr(store, 'text_analyzer', None)
    if isinstance(analyzer, TextAnalyzer) and analyzer.language != 'en':
        # What the words become (bigrams, stems) decides how to phrase a query; the English default's
        # syntax says it itself, so the default description does not change.
        syntax = f'{syntax} {analyzer.describe()}'
    k = default_top_k
    m = max_top_k
    descriptions: dict[ToolName, str] = {
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
        'list_documents': (
            'List the documents in the collection by title: each with its document id, uri, and how many '
            'sections and chunks it has, 20 per page (pass offset for the next page, limit for another page size). '
            'title_contains (optional) keeps titles containing it, ignoring case. Use it to see what the '
            'collection holds or to find a document to outline.'
        ),
        'outline': (
            "Show one document's section tree in reading order: each section's title, section id and size. "
            'document: a document id, its exact title, or a part of its title (if several documents match, '
            'you get a list to choose from). Use it before read_section.'
        ),
        'read_section': (
            'Read a whole section, every chunk of it in reading order (subsections included), with chunk ids to '
            'cite. section: a section id from outline, or an exact section title (pass document too when several '
            'documents have a section with that title); a document id reads the whole document. Long sections '
            'come in pages: call again with the offset the answer gives.'
        ),
        'verify_citations': (
            'Check the citations of a draft answer before you give it: pass its claims, each with its citations '
            '(a chunk id and an exact quote from that chunk). For each citation it says whether the quote stands '
            'in that chunk (the match is exact except for whitespace, quote marks and dashes; quotes shorter than '
            f'{DEFAULT_MIN_QUOTE_CHARS} characters do not count) and where: document, section, offsets, page; '
            'if not, why, with the chunk to cite instead or the closest sentence in the chunk. '
            f'At most {MAX_CITATIONS} citations per call.'
        ),
        'list_values': (
            'List the values a filterable key takes in this collection, with how many documents have each; '
            'use it to choose a filter.'
        ),
        'graph_context': (
            'Walk the graph of connections between chunks, sections, documents and entities (people, '
            'organisations, code symbols...): what mentions, links to, is part of, calls or imports what. '
            'Use it for "how are A and B connected", "what calls X", or to find the other passages about '
            f'something a result names. Start from query (its best search matches), from ids (at most {MAX_IDS} '
            'chunk, section, document or entity ids from earlier results), or both. The walk follows edges '
            f'breadth-first up to hops (default {DEFAULT_HOPS}, at most {MAX_HOPS}) and returns up to max_nodes '
            f'nodes (default {DEFAULT_MAX_NODES}, at most {MAX_WALK_NODES}), nearest first. Each node shows its '
            'id, kind and hop (0 for a seed, else the number of edges from the nearest seed) and via: '
            '"via TYPE from X" means the edge X -TYPE-> node led to it, "via TYPE to X" the edge node -TYPE-> X, '
            'X being one hop nearer the seeds. Then come the edges walked (source -TYPE-> target, with the '
            'weight when it is not 1). Node ids work with the other tools: read a chunk with broaden_chunk or '
            'zoom_out and cite it, read a section or document with read_section. edge_types (optional) keeps '
            'only those relation types, upper-case such as MENTIONS, PART_OF, LINKS_TO, CONTAINS, CALLS or '
            'IMPORTS; direction follows edges out of a node, into it, or both. The answer ends "complete" or '
            '"truncated": truncated means a budget (max_nodes, or the edges one hop reads) stopped the walk and '
            'nodes beyond it were not '
            'visited, so never conclude that something is unconnected from a truncated walk. '
            'rerank="centrality" orders nodes by score = 1/(1+hop) x (1 + centrality), centrality being how '
            'much the returned edges point at a node, from 0 to 1 (hubs first); without it nodes come by hop, '
            'then id.'
        ),
    }
    if reranking is not None:
        for tool in ('vector_search', 'text_search', 'hybrid_search'):
            descriptions[tool] += ' ' + _reranked_sentence(*reranking)
    return descriptions


def _reranked_sentence(meaning: str, candidates: int) -> str:
    return (
        f'Results are reranked: the best {candidates} matches (or top_k, if more) are re-scored by a reranker and '
        f'the top_k best of them returned. When the results heading says "reranked", the score is {meaning}, from '
        '0 to 1, and threshold (optional, 0-1) drops hits scoring below it; otherwise reranking was unavailable '
        'and the score is as described above.'
    )


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
    preloaded: str | None,
    filters: str | None = None,
) -> str | None:
    """The instructions for the RAG ``name`` offering ``tools`` (short names); ``None`` if it offers nothing.

    ``filters`` describes the keys the model may filter on (`ModelFilters.describe`), if any.
    """
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
        _navigation_sentence(name, tools),
        _graph_sentence(name, tools),
        filters or '',
        'Base your answer on what the results say and cite the chunk ids you used, like [chunk <id>]. '
        'If the documents do not cover the question, say so plainly instead of guessing.',
    ]
    if preloaded:
        parts.append(preloaded)
    return '\n'.join(p for p in parts if p)
