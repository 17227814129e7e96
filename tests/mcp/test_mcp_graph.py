"""``graph_context`` over MCP: served like every toolset tool, each token's walk inside its own scope.

The server serves the toolset's tools generically; this checks that holds for the graph tool
too. Over a store holding the three tenants' handbooks and a graph (PART_OF edges per tenant,
and LINKS_TO edges from acme's handbooks to globex's and initech's), each token's answer must be
exactly its scoped toolset's (text, error flag, hits), must name no document outside its scope,
and another tenant's id must be answered exactly like one that does not exist.
"""

from __future__ import annotations

from typing import Any

from mcp_harness import TOKEN_CONFIG, TOKENS, connect, corpus, serving

from toolish_rag import ToolishRag, matches
from toolish_rag.content import Document, Relation
from toolish_rag.embedding import HashingEmbeddingModel
from toolish_rag.mcp import HITS_META_KEY, TokenTable, build_server, http_app
from toolish_rag.stores import InMemoryStore

MISSING_DOCUMENT = 'd' + '0' * 15


def _relations(docs: list[Document]) -> list[Relation]:
    """Each document's sections PART_OF it and chunks PART_OF their sections; acme's documents LINK_TO the others'."""

    def edge(source: str, source_kind: Any, target: str, target_kind: Any, type: str, doc: Document) -> Relation:
        return Relation(
            source=source,
            source_kind=source_kind,
            target=target,
            target_kind=target_kind,
            type=type,
            metadata={'tenant': doc.metadata['tenant'], 'year': doc.metadata['year']},
            document_id=doc.id,
        )

    relations = []
    for doc in docs:
        relations += [edge(s.id, 'section', doc.id, 'document', 'PART_OF', doc) for s in doc.sections]
        relations += [edge(c.id, 'chunk', c.section_ids[-1], 'section', 'PART_OF', doc) for c in doc.chunks]
    acme = [d for d in docs if d.metadata['tenant'] == 'acme']
    relations += [edge(a.id, 'document', d.id, 'document', 'LINKS_TO', a) for a in acme for d in docs if d not in acme]
    return relations


async def test_graph_context_is_scoped_per_token() -> None:
    docs = corpus()
    store = InMemoryStore(HashingEmbeddingModel())
    await store.upsert([*docs, *_relations(docs)])
    await store.record_graph_built(['test'])  # relations written directly: the operator says a graph is built
    rag: ToolishRag[Any] = ToolishRag(store, name='docs')
    tokens = TokenTable.from_mapping(TOKEN_CONFIG)
    chunks = [c for d in docs for c in d.chunks]
    walked = crossed = 0
    async with serving(http_app(await build_server(rag), tokens)) as url:
        for label in TOKENS:
            found = tokens.authenticate(TOKENS[label])
            assert found is not None
            scoped = rag if found.filter is None else rag.with_metadata_filter(found.filter)
            visible = {c.document_id for c in chunks if matches(found.filter, c)}
            async with connect(url, label) as client:
                for doc in docs:
                    arguments = {'ids': [doc.id], 'hops': 2}
                    result = await client.call_tool('docs_graph_context', arguments)
                    text = str(result.content[0].text)  # type: ignore[union-attr]
                    if doc.id not in visible:  # another tenant's document answers exactly like a missing one
                        assert result.is_error
                        ghost = await client.call_tool('docs_graph_context', {'ids': [MISSING_DOCUMENT], 'hops': 2})
                        missing = str(ghost.content[0].text)  # type: ignore[union-attr]
                        assert text.replace(doc.id, 'X') == missing.replace(MISSING_DOCUMENT, 'X')
                        continue
                    expected = await scoped.run_tool('graph_context', arguments)
                    assert not result.is_error and text == expected.return_value
                    hits = [h['id'] for h in (result.meta or {})[HITS_META_KEY]]
                    assert hits == [h.id for h in expected.metadata['hits']]
                    assert all(other.id not in text for other in docs if other.id not in visible), (label, doc.id)
                    walked += 1
                    crossed += any(o.id in text for o in docs if o.metadata['tenant'] != doc.metadata['tenant'])
    assert walked >= 10  # every token walked its own documents (the admin all six)
    assert crossed  # not vacuous: where the scope allows it (admin, acme-initech), walks cross tenants
