"""The ``verify_citations`` tool: each quote of a draft answer checked against the chunk it cites, in scope.

Real components only: an `InMemoryStore` (hashing embedder) with two tenants' handbooks, the
toolset scoped to acme, and calls made as a model makes them, through `run_tool` and through a
pydantic-ai `Agent` driven by `FunctionModel` (`helpers.Script`). What the tool must do:

* a genuine quote is verified, with where it stands: document, section path, uri, offsets in
  the chunk and in the document, page;
* a fabricated quote, a one-character edit and a too-short quote are not, each with its reason
  (and the closest sentence of the chunk when there is one);
* another tenant's chunk id reads exactly like an id that does not exist (only the id differs);
* a quote from the chunk next to the cited one names that chunk; one stitched across two
  chunks says so;
* whitespace, quote-mark and dash variants of a genuine quote are accepted;
* a call it cannot check (no claims, too many citations) is a retry saying how to fix it.
"""

from __future__ import annotations

from typing import Any

import pytest
from helpers import Call, Script, returns
from pydantic_ai import Agent, ModelRetry
from pydantic_ai.messages import ToolReturn

from toolish_rag import DocumentBuilder, PropertyFilter as F, RagEvent, ToolishRag
from toolish_rag.content import Chunk, Document
from toolish_rag.embedding import HashingEmbeddingModel
from toolish_rag.stores import InMemoryStore
from toolish_rag.toolset._tools.citations import MAX_CITATIONS, NOT_FOUND

RECEIPT = 'Keep the "original" receipt for every refund claim - it is checked at the desk.'
WINDOW = 'Refunds are paid within 30 days of the return.'
SHIPPING = 'Parcels ship within two working days.'


def _handbook(tenant: str) -> Document:
    """One tenant's handbook: offsets and pages known, so a verified quote has a full location."""
    b = DocumentBuilder(f'file:///{tenant}/handbook.pdf', f'{tenant.title()} handbook', metadata={'tenant': tenant})
    refunds = b.section('Refunds')
    offset = 0
    for section, text, page in [
        (refunds, f'{WINDOW} Late returns are refused.', 1),
        (refunds, RECEIPT, 1),
        (b.section('Eligibility', parent=refunds), 'Items must be unused. ERR-4012 means the window expired.', 2),
        (b.section('Shipping'), f'{SHIPPING} Express costs extra.', 3),
    ]:
        b.add_chunk(section, text, start_char=offset, end_char=offset + len(text), page=page)
        offset += len(text) + 2
    return b.build()


@pytest.fixture
async def corpus() -> tuple[Document, Document]:
    return _handbook('acme'), _handbook('globex')


@pytest.fixture
async def rag(corpus: tuple[Document, Document]) -> ToolishRag[Any]:
    store = InMemoryStore(HashingEmbeddingModel(64))
    await store.upsert(list(corpus))
    return ToolishRag(store, name='docs').with_metadata_filter(F.eq('tenant', 'acme'))


def _claims(*citations: tuple[str, str], text: str = 'Refunds take 30 days.') -> dict[str, Any]:
    return {'claims': [{'text': text, 'citations': [{'chunk_id': i, 'quote': q} for i, q in citations]}]}


async def _verify(rag: ToolishRag[Any], *citations: tuple[str, str]) -> ToolReturn:
    return await rag.run_tool('verify_citations', _claims(*citations))


def _line(result: ToolReturn, n: int = 1) -> str:
    """The line of citation ``n`` of the first claim."""
    lines = [line for line in str(result.return_value).splitlines() if line.startswith(f'Claim 1, citation {n} ')]
    assert len(lines) == 1, result.return_value
    return lines[0]


def _scores(result: ToolReturn) -> list[tuple[str, float]]:
    return [(h.id, h.score) for h in result.metadata['hits']]


async def test_a_genuine_quote_is_verified_with_its_location(
    rag: ToolishRag[Any], corpus: tuple[Document, ...]
) -> None:
    chunk = corpus[0].chunks[1]
    start = RECEIPT.index('receipt')
    quote = RECEIPT[start : RECEIPT.index(' -')]
    result = await _verify(rag, (chunk.id, quote))
    assert _line(result) == (
        f"Claim 1, citation 1 (chunk '{chunk.id}'): verified: it stands in Acme handbook > Refunds "
        f'(file:///acme/handbook.pdf), characters {start}-{start + len(quote)} of the chunk '
        f'({chunk.start_char + start}-{chunk.start_char + start + len(quote)} of the document), page 1.'
    )
    assert str(result.return_value).startswith('Citation check: 1 of 1 citations verified.')
    assert str(result.return_value).endswith('Every quote stands in the chunk it cites.')
    assert _scores(result) == [(chunk.id, 1.0)]
    nested = corpus[0].chunks[2]
    result = await _verify(rag, (nested.id, 'ERR-4012 means the window expired.'))
    assert 'stands in Acme handbook > Refunds > Eligibility (file:///acme/handbook.pdf)' in _line(result)
    assert _line(result).endswith('page 2.')


async def test_a_padded_id_is_stripped_as_the_grounding_check_strips_it(
    rag: ToolishRag[Any], corpus: tuple[Document, ...]
) -> None:
    chunk = corpus[0].chunks[0]
    result = await _verify(rag, (f'  {chunk.id}\t', WINDOW))
    assert 'verified: it stands in' in _line(result)
    assert _line(result).startswith(f"Claim 1, citation 1 (chunk '{chunk.id}')")


async def test_a_fabricated_quote_and_a_one_character_edit_are_not_verified(
    rag: ToolishRag[Any], corpus: tuple[Document, ...]
) -> None:
    chunk = corpus[0].chunks[0]
    made_up = 'Refunds are paid in cash at any store.'
    edited = WINDOW.replace('30', '60')
    result = await _verify(rag, (chunk.id, made_up), (chunk.id, edited), (chunk.id, WINDOW))
    text = str(result.return_value)
    assert text.startswith('Citation check: 1 of 3 citations verified.')
    assert 'the quote does not stand in this chunk' in _line(result, 1)
    assert 'the quote does not stand in this chunk' in _line(result, 2)
    # The edit's closest sentence is the one the model meant, so it can copy it.
    assert _line(result, 2).endswith(f'The closest sentence in the chunk is: {WINDOW!r}')
    assert 'verified: it stands in' in _line(result, 3)
    assert text.endswith('or drop the claim; then check again.')
    assert _scores(result) == [(chunk.id, 1.0)]  # verified by its third citation
    result = await _verify(rag, (chunk.id, made_up))
    assert _scores(result) == [(chunk.id, 0.0)]  # fetched, in scope, not verified


async def test_another_tenants_chunk_reads_like_a_missing_one(
    rag: ToolishRag[Any], corpus: tuple[Document, ...]
) -> None:
    foreign = corpus[1].chunks[0]
    missing = 'd' + '0' * 15 + foreign.id[16:]
    assert len(missing) == len(foreign.id) and missing not in {c.id for d in corpus for c in d.chunks}
    quote = foreign.urtext  # a genuine quote of the foreign chunk, word for word
    theirs = await _verify(rag, (foreign.id, quote))
    nothing = await _verify(rag, (missing, quote))
    assert _line(theirs) == f"Claim 1, citation 1 (chunk '{foreign.id}'): {NOT_FOUND}."
    assert str(theirs.return_value).replace(foreign.id, '<id>') == str(nothing.return_value).replace(missing, '<id>')
    assert theirs.metadata['hits'] == nothing.metadata['hits'] == []
    assert 'globex' not in str(theirs.return_value).lower()
    # Unscoped, the same chunk verifies: the refusal above is the scope's doing.
    unscoped = ToolishRag(rag.store, name='docs')
    assert 'verified: it stands in Globex handbook' in _line(await _verify(unscoped, (foreign.id, quote)))


async def test_a_quote_from_the_next_chunk_names_it_and_a_stitched_one_is_refused(
    rag: ToolishRag[Any], corpus: tuple[Document, ...]
) -> None:
    first, second = corpus[0].chunks[0], corpus[0].chunks[1]
    stitched = 'Late returns are refused. Keep the "original" receipt'
    result = await _verify(rag, (first.id, RECEIPT), (first.id, stitched))
    assert _line(result, 1).endswith(f"the quote is not in this chunk but in chunk '{second.id}': cite that id.")
    assert f"the quote spans two chunks ('{first.id}' and '{second.id}')" in _line(result, 2)
    # The chunk named is in the hits (for listeners), unverified; the model may never have read it, so it is
    # told to read it first: the grounding check counts no chunk this tool looked up as seen.
    assert _scores(result) == [(first.id, 0.0), (second.id, 0.0)]
    assert str(result.return_value).splitlines()[-1] == (
        f"Read chunk '{second.id}' first (broaden_chunk on the chunk you cited shows it), then cite it: "
        'a chunk counts as evidence only once a search or read has shown it to you.'
    )
    result = await _verify(rag, (second.id, stitched))
    assert f"the quote spans two chunks ('{first.id}' and '{second.id}')" in _line(result)


@pytest.mark.parametrize(
    'variant',
    [
        pytest.param('Keep  the "original"\nreceipt for every refund claim', id='whitespace'),
        pytest.param('Keep the \u201coriginal\u201d receipt for every refund claim', id='curly quotes'),
        pytest.param('Keep the \u00aboriginal\u00bb receipt', id='guillemets'),
        pytest.param('refund claim \u2014 it is checked at the desk.', id='em dash'),
        pytest.param('  refund claim \u2013 it is checked  ', id='en dash, padded'),
    ],
)
async def test_whitespace_quote_mark_and_dash_variants_are_accepted(
    rag: ToolishRag[Any], corpus: tuple[Document, ...], variant: str
) -> None:
    chunk = corpus[0].chunks[1]
    assert variant not in chunk.urtext
    assert 'verified: it stands in Acme handbook > Refunds' in _line(await _verify(rag, (chunk.id, variant)))


async def test_a_bad_citation_is_a_line_and_the_others_are_still_checked(
    rag: ToolishRag[Any], corpus: tuple[Document, ...]
) -> None:
    chunk = corpus[0].chunks[3]
    result = await _verify(
        rag, (chunk.id, 'Parcels'), (' \n', SHIPPING), ('x\x00y', SHIPPING), (f' {chunk.id}\n', SHIPPING)
    )
    assert 'the quote is 7 characters long, shorter than the minimum of 12' in _line(result, 1)
    assert 'the chunk id is empty' in _line(result, 2)
    assert 'the id holds a control character (U+0000) at character 2' in _line(result, 3)
    assert f"(chunk '{chunk.id}'): verified" in _line(result, 4)  # ids are stripped, as every tool strips them
    claims = {'claims': [{'text': 'Uncited.', 'citations': []}, _claims((chunk.id, SHIPPING))['claims'][0]]}
    text = str((await rag.run_tool('verify_citations', claims)).return_value)
    assert 'Claim 1: the claim has no citation: cite at least one exact quote.' in text
    assert f"Claim 2, citation 1 (chunk '{chunk.id}'): verified" in text


async def test_a_call_that_cannot_be_checked_is_a_retry(rag: ToolishRag[Any], corpus: tuple[Document, ...]) -> None:
    with pytest.raises(ModelRetry, match='claims is empty: send the claims of your draft answer'):
        await rag.run_tool('verify_citations', {'claims': []})
    chunk = corpus[0].chunks[0]
    many = {'claims': [_claims(*[(chunk.id, WINDOW)] * 10)['claims'][0]] * 4}
    with pytest.raises(ModelRetry, match=f'40 citations are more than one call checks \\({MAX_CITATIONS}\\)'):
        await rag.run_tool('verify_citations', many)
    with pytest.raises(ModelRetry, match='claims'):
        await rag.run_tool('verify_citations', {'claims': 'not a list'})


async def test_in_an_agent_run(rag: ToolishRag[Any], corpus: tuple[Document, ...]) -> None:
    """A model calls it like any tool; the listener sees the claims as sent and the chunks checked."""
    events: list[RagEvent] = []
    chunk, foreign = corpus[0].chunks[0], corpus[1].chunks[0]
    claims = _claims((chunk.id, WINDOW), (foreign.id, WINDOW))
    script = Script([Call('docs_verify_citations', claims), Call('docs_verify_citations', {'claims': []})])
    agent = Agent(script.model, toolsets=[rag.with_listener(events.append)])
    result = await agent.run('How long do refunds take?')
    got = returns(result.all_messages())
    assert [(r.tool, r.retried) for r in got] == [('docs_verify_citations', False), ('docs_verify_citations', True)]
    assert got[0].text == str((await rag.run_tool('verify_citations', claims)).return_value)
    assert got[0].text.startswith('Citation check: 1 of 2 citations verified.')
    assert [(h.id, h.score) for h in got[0].metadata['hits']] == [(chunk.id, 1.0)]
    assert got[0].metadata['tool'] == 'verify_citations' and got[0].metadata['rag'] == 'docs'
    assert 'claims is empty' in got[1].text
    assert [(e.tool, e.error is None) for e in events] == [('verify_citations', True), ('verify_citations', False)]
    assert events[0].arguments == claims  # plain data, as the model sent it
    assert all(isinstance(h.record, Chunk) for h in events[0].hits) and events[0].filtered
    tool = next(t for t in script.infos[0].function_tools if t.name == 'docs_verify_citations')
    assert 'before you give it' in (tool.description or '')
    assert set(tool.parameters_json_schema['properties']) == {'claims'}
    assert 'source' not in str(tool.parameters_json_schema)  # filled by verification, never by the model


async def test_offered_with_result_expander_only(corpus: tuple[Document, ...]) -> None:
    store = InMemoryStore(HashingEmbeddingModel(64))
    rag: ToolishRag[Any] = ToolishRag(store, name='docs')
    assert rag.store_features.expand and 'verify_citations' in rag.offered_tools
    assert 'verify_citations' not in rag.without_tools('verify_citations').offered_tools
