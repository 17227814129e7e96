"""The hits of broaden_chunk and zoom_out are the chunks the model was shown, not all it was sent.

Grounding counts a tool's hits as chunks the model has read; when the expansion cap cut a chunk
out of the text, listing it as a hit let an answer cite text the model never saw.
"""

from __future__ import annotations

import re

from toolish_rag import DocumentBuilder, ToolishRag
from toolish_rag.embedding import HashingEmbeddingModel
from toolish_rag.stores import InMemoryStore


async def test_capped_expansions_report_only_the_chunks_shown() -> None:
    store = InMemoryStore(HashingEmbeddingModel(32))
    b = DocumentBuilder('file:///long.md', 'Long')
    section = b.section('Body')
    for i in range(8):
        b.add_chunk(section, f'sentence number {i} ' + 'x' * 60)
    doc = b.build()
    await store.upsert([doc])
    rag = ToolishRag(store, max_expansion_chars=200)
    anchor = doc.chunks[4].id
    for tool, args in [('broaden_chunk', {'chunk_id': anchor, 'chunks_to_add': 3}), ('zoom_out', {'id': anchor})]:
        result = await rag.run_tool(tool, args)
        shown = re.findall(r'^chunk (\S+) \(section', result.return_value, re.M)
        assert 0 < len(shown) < 7, (tool, shown)  # the cap cut some out
        assert [h.id for h in result.metadata['hits']] == shown, tool
