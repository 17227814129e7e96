"""The navigation tools (``list_documents``, ``outline``, ``read_section``) and ``group_by='document'``.

Real agents driven by pydantic-ai's `FunctionModel` (a fixed script, or a model that follows
the "call again with offset=N" hints it reads) and `TestModel`, plus direct `ToolishRag.run_tool`
calls, over a real `InMemoryStore` holding two tenants. The toolset is scoped to acme, as a
deployer would scope it; globex's documents must be invisible: a globex id or title is answered
exactly like one that never existed.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import pytest
from helpers import FINAL, Call, Returned, Script, block_ids, expanded_ids, memory_store, returns
from pydantic_ai import Agent, ModelRetry
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.models.test import TestModel

from toolish_rag import DocumentBuilder, PropertyFilter as F, RagEvent, ToolishRag
from toolish_rag.content import Chunk, Document
from toolish_rag.embedding import HashingEmbeddingModel
from toolish_rag.sections import (
    DocumentPageRequest,
    OutlineRequest,
    SectionReadRequest,
    document_order,
    reference_document_page,
    reference_outline,
    reference_section_page,
)
from toolish_rag.stores import InMemoryStore
from toolish_rag.toolset._arguments import MAX_NAME_CHARS

ACME = F.eq('tenant', 'acme')
MISSING_DOCUMENT = 'd' + '0' * 15
"""A document id of the real ones' shape (``'d'`` and 15 hex digits) that no document has."""

# -- the corpus ---------------------------------------------------------------------------------------


def _long_text(i: int) -> str:
    text = f'Long paragraph {i:02d} of the manual. '
    return text + 'l' * (100 - len(text))


@dataclass(frozen=True)
class Library:
    """Four acme documents and two globex ones; every chunk's text is unique."""

    handbook: Document
    appendix: Document
    policy: Document
    manual: Document
    globex_handbook: Document
    merger: Document

    @property
    def acme(self) -> list[Document]:
        return [self.handbook, self.appendix, self.policy, self.manual]

    @property
    def globex(self) -> list[Document]:
        return [self.globex_handbook, self.merger]

    @property
    def documents(self) -> list[Document]:
        return [*self.acme, *self.globex]

    @property
    def chunks(self) -> list[Chunk]:
        return [c for d in self.documents for c in d.chunks]


def _builder(slug: str, title: str, tenant: str) -> DocumentBuilder:
    return DocumentBuilder(f'file:///{tenant}/{slug}.md', title, metadata={'tenant': tenant, 'year': 2024})


def library() -> Library:
    b = _builder('handbook', 'Handbook', 'acme')
    b.add_chunk(None, 'Welcome to the acme handbook.')
    b.add_chunk(b.section('Intro'), 'Read this first.')
    refunds = b.section('Refunds')
    b.add_chunk(refunds, 'Refunds are paid within 30 days.')
    b.add_chunk(refunds, 'Keep the receipt for every refund.')
    schedule = b.section('Schedule B', parent=refunds)
    for row in (1, 2, 3):
        b.add_chunk(schedule, f'Schedule B row {row}: refund rates.')
    b.add_chunk(b.section('Shipping'), 'Parcels ship in two days.')
    handbook = b.build()

    b = _builder('appendix', 'Handbook appendix', 'acme')
    b.add_chunk(b.section('Refunds'), 'Appendix refund table.')
    b.add_chunk(b.section('Glossary'), 'Glossary of terms.')
    appendix = b.build()

    b = _builder('policy', 'Refund policy', 'acme')
    refunds = b.section('Refunds')
    b.add_chunk(refunds, 'Policy: refunds need approval.')
    b.add_chunk(refunds, 'Policy: refunds over 100 need a manager.')
    policy = b.build()

    b = _builder('manual', 'Long manual', 'acme')
    body = b.section('Body')
    for i in range(35):
        b.add_chunk(body, _long_text(i))
    tables = b.section('Tables')
    b.add_chunk(tables, 'Table intro. ' + 't' * 87)
    b.add_chunk(tables, 'Huge table: ' + 'h' * 4988)
    b.add_chunk(tables, 'Table outro. ' + 'o' * 87)
    manual = b.build()

    b = _builder('handbook', 'Handbook', 'globex')
    b.add_chunk(b.section('Refunds'), 'Globex pays refunds in vouchers.')
    globex_handbook = b.build()

    b = _builder('merger', 'Globex merger plan', 'globex')
    plans = b.section('Secret plans')
    b.add_chunk(plans, 'The merger closes in March.')
    b.add_chunk(plans, 'Nobody may know the price.')
    merger = b.build()
    return Library(handbook, appendix, policy, manual, globex_handbook, merger)


@pytest.fixture
def lib() -> Library:
    return library()


@pytest.fixture
async def store(lib: Library) -> InMemoryStore:
    s = memory_store()
    await s.upsert(lib.documents)
    return s


@pytest.fixture
def rag(store: InMemoryStore) -> ToolishRag[Any]:
    return ToolishRag(store, max_retries=20).with_metadata_filter(ACME)


# -- reading what the model read ------------------------------------------------------------------------

_LISTED = re.compile(
    r'^\[(\d+)\] (.*) \(document id (\S+)\) \| (?:(\d+) sections?, )?(\d+) chunks?$',
    re.MULTILINE,
)
_OUTLINE = re.compile(r'^( *)- (.*) \[section (\S+)\] \((\d+) chunks?\)$', re.MULTILINE)
_SHOWING = re.compile(r'^Showing chunks (\d+)-(\d+) of (\d+), in reading order\.$', re.MULTILINE)


@dataclass(frozen=True)
class Listed:
    n: int
    title: str
    id: str
    sections: int
    chunks: int


def listed(text: str) -> list[Listed]:
    """The documents a ``list_documents`` answer (or a document choice) shows, in order."""
    return [Listed(int(n), t, i, int(s or 0), int(c)) for n, t, i, s, c in _LISTED.findall(text)]


def outline_rows(text: str) -> list[tuple[int, str, str, int]]:
    """``(depth, title, section id, chunk count)`` for each section an outline shows."""
    return [(len(ind) // 2 + 1, t, sid, int(n)) for ind, t, sid, n in _OUTLINE.findall(text)]


def showing(text: str) -> tuple[int, int, int]:
    found = _SHOWING.findall(text)
    assert len(found) == 1, text
    first, last, total = found[0]
    return int(first), int(last), int(total)


async def retry_of(rag: ToolishRag[Any], tool: str, arguments: dict[str, Any]) -> str:
    with pytest.raises(ModelRetry) as caught:
        await rag.run_tool(tool, arguments)
    return caught.value.message


async def answer(rag: ToolishRag[Any], tool: str, arguments: dict[str, Any]) -> str:
    result = await rag.run_tool(tool, arguments)
    assert isinstance(result.return_value, str)
    return result.return_value


async def run(rag: Any, steps: list[Any]) -> list[Returned]:
    script = Script(steps)
    result = await Agent(script.model).run('question', toolsets=[rag])
    assert result.output == FINAL
    return returns(result.all_messages())


def follower(first: Call, hint: re.Pattern[str], max_calls: int = 60) -> FunctionModel:
    """A model that makes ``first``, then keeps calling the tool with the arguments each answer's hint gives.

    ``hint`` captures the next call's arguments by name (``offset``, and ``section`` if the hint
    names it); the model stops when an answer has no hint.
    """

    def respond(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        got = returns(messages)
        if not got:
            return ModelResponse(parts=[ToolCallPart(first.tool, first.args)])
        found = hint.search(got[-1].text)
        if got[-1].retried or found is None or len(got) >= max_calls:
            return ModelResponse(parts=[TextPart(FINAL)])
        assert isinstance(first.args, dict)
        follow = {k: int(v) if k == 'offset' else v for k, v in found.groupdict().items()}
        return ModelResponse(parts=[ToolCallPart(first.tool, {**first.args, **follow})])

    return FunctionModel(respond)


async def follow(rag: ToolishRag[Any], first: Call, hint: str) -> list[Returned]:
    result = await Agent(follower(first, re.compile(hint))).run('question', toolsets=[rag])
    assert result.output == FINAL
    return returns(result.all_messages())


_MORE_DOCUMENTS = r'\[More: call docs_list_documents with offset=(?P<offset>\d+)(?:, limit=\d+)? for the next page\.\]'
_MORE_CHUNKS = r"\[Continued: call docs_read_section with section='(?P<section>[^']+)' and offset=(?P<offset>\d+) "


# -- list_documents ---------------------------------------------------------------------------------------


async def memo_store() -> tuple[InMemoryStore, list[Document]]:
    """23 acme memos and 10 globex ones whose titles sort between them (mixed case: the order is case-folded)."""
    docs = []
    for i in range(23):
        title = f'Memo {i:02d}' if i % 3 else f'memo {i:02d}'
        b = _builder(f'memo-{i}', title, 'acme')
        b.add_chunk(b.section('Body'), f'acme memo {i} text')
        docs.append(b.build())
    for i in range(0, 20, 2):
        b = _builder(f'memo-{i}b', f'Memo {i:02d}b', 'globex')
        b.add_chunk(b.section('Body'), f'globex memo {i} text')
        docs.append(b.build())
    store = memory_store()
    await store.upsert(docs)
    return store, docs


async def test_a_model_following_the_next_page_hint_lists_every_document_once_in_order() -> None:
    store, docs = await memo_store()
    rag = ToolishRag(store).with_metadata_filter(ACME)
    got = await follow(rag, Call('docs_list_documents', {'limit': 5}), _MORE_DOCUMENTS)
    acme = sorted((d for d in docs if d.metadata['tenant'] == 'acme'), key=lambda d: document_order(d.title, d.id))
    assert len(got) == 5  # pages at offsets 0, 5, 10, 15, 20
    seen: list[Listed] = []
    for page, r in enumerate(got):
        assert not r.retried and r.metadata['hits'] == []
        first = page * 5 + 1
        last = min(first + 4, 23)
        assert r.text.startswith(f'Documents {first}-{last} of 23, by title:'), r.text
        assert ('[More:' in r.text) == (last < 23)
        rows = listed(r.text)
        assert [x.n for x in rows] == list(range(first, last + 1))
        seen += rows
    assert [x.id for x in seen] == [d.id for d in acme]
    assert [x.title for x in seen] == [d.title for d in acme]
    assert all((x.sections, x.chunks) == (1, 1) for x in seen)
    assert not any('globex' in r.text or 'b (document id' in r.text for r in got)


async def test_list_documents_offset_past_the_end_and_limit_bounds() -> None:
    store, _ = await memo_store()
    rag = ToolishRag(store).with_metadata_filter(ACME)
    past = await answer(rag, 'list_documents', {'offset': 23})
    assert past == 'No documents at offset 23: there are 23; use an offset from 0 to 22.'
    assert listed(await answer(rag, 'list_documents', {'offset': 22}))[0].n == 23
    assert len(listed(await answer(rag, 'list_documents', {'limit': 100}))) == 23
    assert len(listed(await answer(rag, 'list_documents', {}))) == 20  # the default page
    for bad in ({'limit': 0}, {'limit': 101}, {'limit': -1}):
        message = await retry_of(rag, 'list_documents', bad)
        assert 'limit must be between 1 and 100' in message and f'you sent {bad["limit"]}' in message
    message = await retry_of(rag, 'list_documents', {'offset': -1})
    assert 'offset must be between 0 and' in message and 'Start at 0' in message


async def test_list_documents_title_contains(rag: ToolishRag[Any], lib: Library) -> None:
    text = await answer(rag, 'list_documents', {'title_contains': 'HANDBOOK'})
    assert [x.id for x in listed(text)] == [lib.handbook.id, lib.appendix.id]  # not globex's "Handbook"
    assert text.startswith('Documents 1-2 of 2, by title:')
    none = await answer(rag, 'list_documents', {'title_contains': 'merger'})
    assert none.startswith('No documents match')
    assert none == await answer(rag, 'list_documents', {'title_contains': 'nothing like it'})
    # The handbook: 4 sections (Schedule B counted), 8 chunks; the summary names its uri.
    row = listed(await answer(rag, 'list_documents', {}))[0]
    assert (row.title, row.sections, row.chunks) == ('Handbook', 4, 8)
    assert f'uri: {lib.handbook.uri}' in await answer(rag, 'list_documents', {'limit': 1})


async def test_test_model_lists_documents_with_default_arguments(rag: ToolishRag[Any], lib: Library) -> None:
    agent: Agent[None, str] = Agent(TestModel(call_tools=['docs_list_documents']))
    result = await agent.run('question', toolsets=[rag])
    got = returns(result.all_messages())
    assert [r.tool for r in got] == ['docs_list_documents'] and not got[0].retried, got
    ordered = sorted(lib.acme, key=lambda d: document_order(d.title, d.id))
    assert [x.id for x in listed(got[0].text)] == [d.id for d in ordered]


# -- outline ---------------------------------------------------------------------------------------------


def handbook_outline(lib: Library) -> list[tuple[int, str, str, int]]:
    s = [x.id for x in lib.handbook.sections]
    return [(1, 'Intro', s[0], 1), (1, 'Refunds', s[1], 5), (2, 'Schedule B', s[2], 3), (1, 'Shipping', s[3], 1)]


async def test_outline_by_id_exact_title_and_unique_part(rag: ToolishRag[Any], lib: Library) -> None:
    by_id = await answer(rag, 'outline', {'document': lib.handbook.id})
    assert by_id.startswith(f'Outline of Handbook (document id {lib.handbook.id}, {lib.handbook.uri}): 8 chunks.')
    assert outline_rows(by_id) == handbook_outline(lib)
    assert f"(1 chunk before the first heading; docs_read_section with section='{lib.handbook.id}'" in by_id
    # "Handbook" is also part of "Handbook appendix" (and globex's title): the exact title wins, in scope.
    assert await answer(rag, 'outline', {'document': 'Handbook'}) == by_id
    assert await answer(rag, 'outline', {'document': f'  {lib.handbook.id}\n'}) == by_id  # ids are stripped
    appendix = await answer(rag, 'outline', {'document': 'APPENDIX'})
    assert [(t, n) for _, t, _, n in outline_rows(appendix)] == [('Refunds', 1), ('Glossary', 1)]
    assert 'before the first heading' not in appendix
    manual = await answer(rag, 'outline', {'document': 'long man'})
    assert [(t, n) for _, t, _, n in outline_rows(manual)] == [('Body', 35), ('Tables', 3)]


async def test_an_ambiguous_part_of_a_title_gives_a_choice_and_no_content(rag: ToolishRag[Any], lib: Library) -> None:
    text = await answer(rag, 'outline', {'document': 'book'})
    assert text.startswith("2 documents match 'book'; call again with the document id of the one you mean:")
    assert [x.id for x in listed(text)] == [lib.handbook.id, lib.appendix.id]
    assert '[section' not in text and not outline_rows(text)
    assert not any(c.urtext in text for c in lib.chunks)
    # The model picks one and gets its outline.
    _, got = await _choose(rag, text)
    assert outline_rows(got) == handbook_outline(lib)


async def _choose(rag: ToolishRag[Any], choice: str) -> tuple[str, str]:
    first = listed(choice)[0].id
    return first, await answer(rag, 'outline', {'document': first})


async def test_an_unknown_document_gets_a_retry_pointing_to_list_documents(rag: ToolishRag[Any]) -> None:
    message = await retry_of(rag, 'outline', {'document': 'Annual report'})
    assert message == (
        "no document 'Annual report': pass a document id or title as docs_list_documents shows it "
        '(or a part of the title).'
    )
    for empty in ('', '   '):
        assert 'the document is empty' in await retry_of(rag, 'outline', {'document': empty})
    assert f'over {MAX_NAME_CHARS} characters' in await retry_of(rag, 'outline', {'document': 'x' * 301})


# -- read_section ---------------------------------------------------------------------------------------


def _texts_in_order(text: str, chunks: Sequence[Chunk]) -> bool:
    positions = [text.find(c.urtext) for c in chunks]
    return all(p >= 0 for p in positions) and positions == sorted(positions)


async def test_read_section_by_id_reads_it_whole_with_its_subsections(rag: ToolishRag[Any], lib: Library) -> None:
    refunds, schedule = lib.handbook.sections[1].id, lib.handbook.sections[2].id
    result = await rag.run_tool('read_section', {'section': refunds})
    text = result.return_value
    assert isinstance(text, str)
    expected = [c for c in lib.handbook.chunks if refunds in c.section_ids]
    assert [c.id for c in expected] == [c.id for c in lib.handbook.chunks[2:7]]
    assert text.startswith(f'Section {refunds}: Handbook > Refunds\nShowing chunks 1-5 of 5, in reading order.')
    assert expanded_ids(text) == [c.id for c in expected]
    assert [h.id for h in result.metadata['hits']] == [c.id for c in expected]
    assert _texts_in_order(text, expected) and text.endswith('[End of section.]')
    assert f'chunk {expected[2].id} (section: Refunds > Schedule B)' in text
    # By exact title (unique in scope), and by title within a document: the same section.
    by_title = await answer(rag, 'read_section', {'section': 'Schedule B'})
    assert by_title == await answer(rag, 'read_section', {'section': schedule})
    assert by_title == await answer(rag, 'read_section', {'section': 'Schedule B', 'document': 'Handbook'})
    assert expanded_ids(by_title) == [c.id for c in lib.handbook.chunks[4:7]]


async def test_read_section_title_shared_by_documents(rag: ToolishRag[Any], lib: Library) -> None:
    text = await answer(rag, 'read_section', {'section': 'Refunds'})
    assert text.startswith("3 sections are titled 'Refunds'; call again with the section id of the one you mean:")
    shown = re.findall(r'^\[\d+\] section (\S+): (.*) \(document id (\S+)\)$', text, re.MULTILINE)
    assert sorted(shown) == sorted(
        [
            (lib.handbook.sections[1].id, 'Handbook > Refunds', lib.handbook.id),
            (lib.appendix.sections[0].id, 'Handbook appendix > Refunds', lib.appendix.id),
            (lib.policy.sections[0].id, 'Refund policy > Refunds', lib.policy.id),
        ]
    )  # not globex's "Handbook > Refunds"
    assert not expanded_ids(text) and not any(c.urtext in text for c in lib.chunks)
    # With the document (id, exact title or a unique part of it): that document's section.
    policy = await answer(rag, 'read_section', {'section': 'Refunds', 'document': 'Refund policy'})
    assert expanded_ids(policy) == [c.id for c in lib.policy.chunks]
    assert policy == await answer(rag, 'read_section', {'section': 'Refunds', 'document': lib.policy.id})
    appendix = await answer(rag, 'read_section', {'section': 'Refunds', 'document': 'appendix'})
    assert expanded_ids(appendix) == [lib.appendix.chunks[0].id]
    # An ambiguous document gives the document choice; a wrong pair gets a retry.
    choice = await answer(rag, 'read_section', {'section': 'Refunds', 'document': 'book'})
    assert [x.id for x in listed(choice)] == [lib.handbook.id, lib.appendix.id] and not expanded_ids(choice)
    message = await retry_of(rag, 'read_section', {'section': 'Glossary', 'document': 'Refund policy'})
    assert message.startswith(
        "no section 'Glossary': pass a section id or exact section title as docs_outline shows it (in that document)."
    )
    message = await retry_of(rag, 'read_section', {'section': 'Refunds', 'document': 'Annual report'})
    assert message.startswith("no document 'Annual report'")


async def test_a_document_id_reads_the_whole_document(rag: ToolishRag[Any], lib: Library) -> None:
    text = await answer(rag, 'read_section', {'section': lib.handbook.id})
    assert text.startswith(f'Document {lib.handbook.id}: Handbook\nShowing chunks 1-8 of 8, in reading order.')
    assert expanded_ids(text) == [c.id for c in lib.handbook.chunks]
    assert f'chunk {lib.handbook.chunks[0].id} (section: (document start))' in text
    assert _texts_in_order(text, lib.handbook.chunks)


async def test_an_unknown_section_gets_a_retry_pointing_to_outline(rag: ToolishRag[Any], lib: Library) -> None:
    message = await retry_of(rag, 'read_section', {'section': 'Warranty'})
    assert message.startswith(
        "no section 'Warranty': pass a section id or exact section title as docs_outline shows it."
    )
    assert 'in that document' not in message
    # A chunk id is not a section id; a section title is exact (not a part of one, not in another case).
    for name in (lib.handbook.chunks[2].id, 'Refund', 'refunds'):
        assert (await retry_of(rag, 'read_section', {'section': name})).startswith(f'no section {name!r}')
    assert 'offset must be between 0 and' in await retry_of(
        rag, 'read_section', {'section': lib.handbook.id, 'offset': -1}
    )


async def test_a_model_following_the_continued_hint_reads_every_chunk_once_in_order(
    store: InMemoryStore, lib: Library
) -> None:
    rag = ToolishRag(store, max_read_chars=1000).with_metadata_filter(ACME)
    body = lib.manual.sections[0].id
    expected = [c for c in lib.manual.chunks if body in c.section_ids]
    assert len(expected) == 35 and all(len(c.urtext) == 100 for c in expected)
    got = await follow(rag, Call('docs_read_section', {'section': 'Body'}), _MORE_CHUNKS)
    # The cap counts what is shown (each chunk's header line and indented text): 6 chunks of 100 characters.
    per_page = 6
    assert len(got) == 6
    ids: list[str] = []
    for page, r in enumerate(got):
        assert not r.retried, r.text
        first, last, total = showing(r.text)
        assert (first, last, total) == (page * per_page + 1, min(page * per_page + per_page, 35), 35)
        assert r.text.startswith(f'Section {body}: Long manual > Body\n')
        page_ids = expanded_ids(r.text)
        assert [h.id for h in r.metadata['hits']] == page_ids
        blocks = r.text.split('\n\n', 1)[1].rsplit('\n\n[', 1)[0]  # the chunks as shown, without head and hint
        assert len(blocks) <= 1000, len(blocks)
        if last < total:
            assert f"[Continued: call docs_read_section with section='{body}' and offset={last} " in r.text
            assert f'for chunks {last + 1}-35.]' in r.text
        else:
            assert r.text.endswith('[End of section.]')
        ids += page_ids
    assert ids == [c.id for c in expected]
    # Past the end: says how many there are, no retry.
    past = await answer(rag, 'read_section', {'section': body, 'offset': 35})
    assert past.endswith('No chunks at offset 35: the section has 35; use an offset from 0 to 34.')
    assert not expanded_ids(past)


async def test_an_oversize_chunk_is_cut_with_a_note_and_reading_goes_on(store: InMemoryStore, lib: Library) -> None:
    rag = ToolishRag(store, max_read_chars=1000).with_metadata_filter(ACME)
    tables = lib.manual.sections[1].id
    intro, huge, outro = [c for c in lib.manual.chunks if tables in c.section_ids]
    assert len(huge.urtext) == 5000
    got = await follow(rag, Call('docs_read_section', {'section': tables}), _MORE_CHUNKS)
    assert [expanded_ids(r.text) for r in got] == [[intro.id], [huge.id], [outro.id]]
    cut = got[1].text
    assert showing(cut) == (2, 2, 3)
    shown = re.search(r'\[Chunk cut: it has 5000 characters and only the first (\d+) are shown;', cut)
    assert shown is not None, cut
    room = int(shown.group(1))
    assert 100 <= room < 1000 and len(cut) <= 1300
    assert huge.urtext[:room] in cut and huge.urtext[: room + 1] not in cut
    assert f"with section='{tables}' and offset=2 for chunks 3-3.]" in cut
    assert 'Chunk cut' not in got[0].text and 'Chunk cut' not in got[2].text
    # The same chunk alone in a section at offset 0.
    b = _builder('big', 'Big', 'acme')
    b.add_chunk(b.section('Only'), 'x' * 3000)
    big = b.build()
    await store.upsert([big])
    only = await answer(rag, 'read_section', {'section': 'Only'})
    assert showing(only) == (1, 1, 1) and only.endswith('[End of section.]')
    assert re.search(r'\[Chunk cut: it has 3000 characters and only the first \d+ are shown;', only), only


async def test_a_partly_in_scope_section_shows_only_its_in_scope_chunks() -> None:
    b = _builder('mixed', 'Mixed', 'acme')
    policy = b.section('Policy')
    visibility: dict[str, str] = {}
    for i in range(6):
        v = 'public' if i % 2 == 0 else 'internal'
        visibility[b.add_chunk(policy, f'policy {v} paragraph {i}', metadata={'visibility': v})] = v
    notes = b.section('Internal notes', parent=policy)
    b.add_chunk(notes, 'internal note 1', metadata={'visibility': 'internal'})
    b.add_chunk(b.section('Secret'), 'internal secret', metadata={'visibility': 'internal'})
    b.add_chunk(b.section('Public'), 'public closing', metadata={'visibility': 'public'})
    doc = b.build()
    store = memory_store()
    await store.upsert([doc])
    scope = F.eq('visibility', 'public')
    rag = ToolishRag(store, max_retries=10).with_metadata_filter(scope)
    public = [c for c in doc.chunks if c.metadata['visibility'] == 'public']
    secret_texts = [c.urtext for c in doc.chunks if c.metadata['visibility'] == 'internal']

    listing = await answer(rag, 'list_documents', {})
    assert [(x.sections, x.chunks) for x in listed(listing)] == [(2, 4)]  # Policy and Public; 3 + 1 chunks
    reference = reference_document_page(doc.chunks, DocumentPageRequest(scope))
    assert (reference.documents[0].section_count, reference.documents[0].chunk_count) == (2, 4)

    outline = await answer(rag, 'outline', {'document': 'Mixed'})
    assert outline.startswith(f'Outline of Mixed (document id {doc.id}, {doc.uri}): 4 chunks.')
    assert [(t, n) for _, t, _, n in outline_rows(outline)] == [('Policy', 3), ('Public', 1)]
    section_reference = reference_outline(doc.chunks, OutlineRequest(document_id=doc.id, filter=scope))
    assert len([c for c in section_reference if policy in c.section_ids]) == 3

    text = await answer(rag, 'read_section', {'section': 'Policy'})
    assert showing(text) == (1, 3, 3)
    assert expanded_ids(text) == [c.id for c in public if policy in c.section_ids]
    page = reference_section_page(doc.chunks, SectionReadRequest(section_id=policy, filter=scope))
    assert page.total == 3
    whole = await answer(rag, 'read_section', {'section': doc.id})
    assert expanded_ids(whole) == [c.id for c in public]
    for shown in (listing, outline, text, whole):
        assert not any(s in shown for s in secret_texts) and 'Secret' not in shown and 'Internal notes' not in shown

    # The all-internal sections do not exist in this scope: answered like a section that never was.
    secret, notes_id = doc.sections[2].id, doc.sections[1].id
    twin = doc.id + '-s9'
    missing = (await retry_of(rag, 'read_section', {'section': twin})).replace(twin, '<id>')
    for hidden in (secret, notes_id):
        assert (await retry_of(rag, 'read_section', {'section': hidden})).replace(hidden, '<id>') == missing
    assert (await retry_of(rag, 'read_section', {'section': 'Secret'})).replace('Secret', 'Xxxxxx') == (
        await retry_of(rag, 'read_section', {'section': 'Xxxxxx'})
    )


# -- not found: foreign looks exactly like missing -------------------------------------------------------


def _swap(message: str, sent: str) -> str:
    return message.replace(sent, '<name>')


@pytest.mark.parametrize(
    ('tool', 'parameter', 'foreign', 'missing'),
    [
        ('outline', 'document', 'globex-merger-id', MISSING_DOCUMENT),
        ('outline', 'document', 'Globex merger plan', 'Qqqqqq qqqqqq qqqq'),
        ('read_section', 'section', 'globex-merger-id', MISSING_DOCUMENT),
        ('read_section', 'section', 'globex-plans-id', MISSING_DOCUMENT + '-s0'),
        ('read_section', 'section', 'Secret plans', 'Qqqqqq qqqqq'),
        ('read_section', 'document', 'globex-merger-id', MISSING_DOCUMENT),
        ('read_section', 'document', 'Globex merger plan', 'Qqqqqq qqqqqq qqqq'),
    ],
)
async def test_a_foreign_name_is_answered_exactly_like_a_missing_one(
    rag: ToolishRag[Any], lib: Library, tool: str, parameter: str, foreign: str, missing: str
) -> None:
    foreign = {'globex-merger-id': lib.merger.id, 'globex-plans-id': lib.merger.sections[0].id}.get(foreign, foreign)
    assert len(foreign) == len(missing)
    base = {'section': 'Secret plans'} if (tool, parameter) == ('read_section', 'document') else {}
    theirs = await retry_of(rag, tool, {**base, parameter: foreign})
    never = await retry_of(rag, tool, {**base, parameter: missing})
    assert _swap(theirs, foreign) == _swap(never, missing)
    assert 'merger' not in _swap(theirs, foreign).lower() and 'globex' not in _swap(theirs, foreign).lower()
    # Unscoped, the foreign name exists (so the test is not vacuous).
    unscoped = ToolishRag(rag.store)
    assert await unscoped.run_tool(tool, {**base, parameter: foreign})


# -- schemas -----------------------------------------------------------------------------------------------

_RANKED_SCHEMA = {
    'additionalProperties': False,
    'properties': {
        'query': {'maxLength': 2000, 'type': 'string'},
        'threshold': {'type': 'number'},
        'top_k': {'default': 5, 'maximum': 50, 'minimum': 1, 'type': 'integer'},
    },
    'required': ['query'],
    'type': 'object',
}
_REGEX_SCHEMA = {
    'additionalProperties': False,
    'properties': {
        'pattern': {'maxLength': 1000, 'type': 'string'},
        'top_k': _RANKED_SCHEMA['properties']['top_k'],  # type: ignore[index]
    },
    'required': ['pattern'],
    'type': 'object',
}
SCHEMAS_BEFORE = {
    'docs_vector_search': _RANKED_SCHEMA,
    'docs_text_search': _RANKED_SCHEMA,
    'docs_hybrid_search': _RANKED_SCHEMA,
    'docs_regex_search': _REGEX_SCHEMA,
}
"""The search tools' schemas without navigation or grouping (compact since issue 37: what they share is in the
instructions, ``top_k``'s bounds in the schema)."""


async def test_without_grouping_or_filters_search_schemas_are_unchanged(rag: ToolishRag[Any]) -> None:
    definitions = {d.name: d.parameters_json_schema for d in await rag.tool_definitions()}
    assert {name: definitions[name] for name in SCHEMAS_BEFORE} == SCHEMAS_BEFORE
    grouped = {
        d.name: d.parameters_json_schema for d in await ToolishRag(rag.store, allow_grouping=True).tool_definitions()
    }
    for name in ('docs_vector_search', 'docs_text_search', 'docs_hybrid_search'):
        group_by = grouped[name]['properties'].pop('group_by')
        assert grouped[name] == SCHEMAS_BEFORE[name]  # grouping adds group_by and nothing else
        assert group_by == {'const': 'document', 'maxLength': 8, 'type': 'string'}
    assert grouped['docs_regex_search'] == _REGEX_SCHEMA  # no grouping for regex search


@pytest.mark.parametrize('options', [{}, {'allow_grouping': True}], ids=['plain', 'grouping'])
async def test_every_string_parameter_states_its_max_length(store: InMemoryStore, options: dict[str, Any]) -> None:
    await store.record_graph_built(['test'])  # every tool, the graph tools included
    definitions = await ToolishRag(store, **options).tool_definitions()
    strings = 0
    for d in definitions:
        for name, spec in d.parameters_json_schema['properties'].items():
            variants = spec.get('anyOf', [spec])
            for variant in variants:
                if variant.get('type') == 'string':
                    strings += 1
                    assert isinstance(variant.get('maxLength'), int), (d.name, name, spec)
    assert strings == 14 + (
        3 if options else 0
    )  # query x4 (multihop_search too), pattern, chunk_id, id, title_contains, document x2, section


async def test_group_by_without_allow_grouping_is_refused(rag: ToolishRag[Any]) -> None:
    for tool in ('vector_search', 'text_search', 'hybrid_search'):
        message = await retry_of(rag, tool, {'query': 'refunds', 'group_by': 'document'})
        assert message == 'this tool takes no group_by argument: call it without one'
    got = await run(rag, [Call('docs_text_search', {'query': 'refunds', 'group_by': 'document'})])
    assert got[0].retried and 'group_by' in got[0].text


# -- group_by='document' ------------------------------------------------------------------------------------


async def grouping_store() -> tuple[InMemoryStore, list[Document]]:
    """One acme "bible" with 30 chunks that all match, 5 other acme documents, and 20 globex documents."""
    docs = []
    b = _builder('bible', 'Refund bible', 'acme')
    s = b.section('All')
    for i in range(30):
        b.add_chunk(s, f'refund refund refund rules, part {i}')
    docs.append(b.build())
    for i in range(5):
        b = _builder(f'acme-{i}', f'Acme note {i}', 'acme')
        b.add_chunk(b.section('Body'), f'a note on the refund process, number {i}')
        b.add_chunk(b.section('Other'), f'unrelated shipping text {i}')
        docs.append(b.build())
    for i in range(20):
        b = _builder(f'globex-{i}', f'Globex refunds {i}', 'globex')
        for j in range(3):
            b.add_chunk(b.section(f'Part {j}'), f'refund refund refund refund globex {i}.{j}')
        docs.append(b.build())
    store = memory_store()
    await store.upsert(docs)
    return store, docs


def _documents_of(r: Returned) -> list[str]:
    return [h.record.document_id for h in r.metadata['hits']]


@pytest.mark.parametrize('tool', ['vector_search', 'text_search', 'hybrid_search'])
async def test_group_by_document_gives_top_k_distinct_documents(tool: str) -> None:
    store, docs = await grouping_store()
    acme = {d.id for d in docs if d.metadata['tenant'] == 'acme'}
    rag = ToolishRag(store, allow_grouping=True)
    query = 'refund'
    steps = [
        Call(f'docs_{tool}', {'query': query, 'top_k': 4}),
        Call(f'docs_{tool}', {'query': query, 'top_k': 4, 'group_by': 'document'}),
    ]
    plain, grouped = await run(rag.with_metadata_filter(ACME), steps)
    assert not grouped.retried, grouped.text
    documents = _documents_of(grouped)
    assert len(documents) == 4 == len(set(documents)), grouped.text  # exactly top_k documents, one hit each
    assert set(documents) <= acme
    assert block_ids(grouped.text) == [h.id for h in grouped.metadata['hits']]
    if tool == 'text_search':  # the bible's 30 chunks fill a plain keyword search
        assert len(set(_documents_of(plain))) < 4
    # All six acme documents when top_k asks for more than exist (in scope: never a globex one).
    [wide] = await run(
        rag.with_metadata_filter(ACME), [Call(f'docs_{tool}', {'query': query, 'top_k': 10, 'group_by': 'document'})]
    )
    assert sorted(_documents_of(wide)) == sorted(acme)  # every acme document mentions refunds
    # Unscoped, globex's documents rank too, still one hit per document.
    [everyone] = await run(rag, [Call(f'docs_{tool}', {'query': query, 'top_k': 12, 'group_by': 'document'})])
    assert len(_documents_of(everyone)) == 12 == len(set(_documents_of(everyone)))


async def test_grouped_results_name_the_other_matching_chunks() -> None:
    store, docs = await grouping_store()
    bible = docs[0]
    rag = ToolishRag(store, allow_grouping=True).with_metadata_filter(ACME)
    text = await answer(rag, 'text_search', {'query': 'refund rules', 'top_k': 2, 'group_by': 'document'})
    best = block_ids(text)
    assert len(best) == 2 and best[0].startswith(bible.id)
    also = re.search(r'also matching in this document: (.*)$', text, re.MULTILINE)
    assert also is not None, text
    others = re.findall(r'chunk (\S+?)(?:,|$)', also.group(1))
    assert others and all(o.startswith(bible.id + '-') and o != best[0] for o in others)
    assert len(set(others)) == len(others)


async def test_listener_sees_navigation_calls_as_the_model_did(rag: ToolishRag[Any], lib: Library) -> None:
    events: list[RagEvent] = []
    listened = rag.with_listener(events.append)
    steps = [
        Call('docs_list_documents', {'title_contains': 'handbook'}),
        Call('docs_outline', {'document': 'Handbook'}),
        Call('docs_read_section', {'section': 'Schedule B'}),
        Call('docs_read_section', {'section': lib.merger.id}),
    ]
    got = await run(listened, steps)
    assert [e.tool for e in events] == ['list_documents', 'outline', 'read_section', 'read_section']
    for event, r in zip(events, got, strict=True):
        assert event.result_text == r.text and event.filtered
        assert (event.error is not None) == r.retried
    assert events[0].arguments == {'title_contains': 'handbook', 'offset': 0, 'limit': 20}
    assert events[2].arguments == {'section': 'Schedule B', 'offset': 0}
    assert [h.id for h in events[2].hits] == expanded_ids(got[2].text) == [c.id for c in lib.handbook.chunks[4:7]]
    assert events[0].hits == () and events[1].hits == ()
    assert got[3].retried and lib.merger.id in got[3].text and 'merger' not in got[3].text.replace(lib.merger.id, '')


async def test_direct_calls_match_what_an_agent_gets(rag: ToolishRag[Any], lib: Library) -> None:
    calls = [
        Call('docs_list_documents', {'limit': 2, 'offset': 1}),
        Call('docs_outline', {'document': 'book'}),
        Call('docs_read_section', {'section': 'Refunds', 'document': 'Handbook'}),
        Call('docs_read_section', {'section': 'Secret plans'}),
    ]
    got = await run(rag, calls)
    for call, r in zip(calls, got, strict=True):
        assert isinstance(call.args, dict)
        if r.retried:
            assert await retry_of(rag, call.tool, call.args) == r.text
        else:
            assert await answer(rag, call.tool.removeprefix('docs_'), call.args) == r.text
    assert [r.retried for r in got] == [False, False, False, True]


async def test_an_exact_title_two_documents_share_gives_a_choice(store: InMemoryStore, lib: Library) -> None:
    unscoped = ToolishRag(store)  # acme's and globex's "Handbook"
    text = await answer(unscoped, 'outline', {'document': 'Handbook'})
    assert text.startswith("2 documents match 'Handbook'")
    assert {x.id for x in listed(text)} == {lib.handbook.id, lib.globex_handbook.id}
    assert not outline_rows(text)
    assert listed(await answer(unscoped, 'outline', {'document': 'handbook'})) == listed(text)  # case aside: both


async def test_list_values_is_offered_with_filterable_keys_and_counts_documents_in_scope(
    store: InMemoryStore, lib: Library
) -> None:
    assert 'docs_list_values' not in ToolishRag(store).tool_names
    b = _builder('older', 'Older policy', 'acme')
    b.metadata['year'] = 2019
    b.add_chunk(b.section('Refunds'), 'Older refunds text.')
    await store.upsert([b.build()])
    rag = ToolishRag(store, filterable={'year': int}).with_metadata_filter(ACME)
    assert 'docs_list_values' in rag.tool_names
    text = await answer(rag, 'list_values', {'key': 'year'})
    assert text == 'Values of year in scope, with how many documents have each: 2024 (4), 2019 (1).'
    assert 'not a filterable key' in await retry_of(rag, 'list_values', {'key': 'tenant'})
    # The model's filter narrows list_documents (ANDed with the scope: it cannot widen it).
    older = await answer(rag, 'list_documents', {'filter': {'year': 2019}})
    assert [x.title for x in listed(older)] == ['Older policy']
    assert 'year=2019' in older
    everyone = await answer(rag, 'list_documents', {'filter': {'year': {'gte': 2000}}, 'limit': 100})
    assert {x.id for x in listed(everyone)} == {*(d.id for d in lib.acme), b.id}


async def test_a_title_shared_past_the_lookup_limit_is_not_read_at_random() -> None:
    a = DocumentBuilder('file:///a.md', 'Aaa', id='d' + '1' * 15)
    body = a.section('Body')
    for i in range(10_001):
        a.add_chunk(body, f'a{i}')
    b = DocumentBuilder('file:///b.md', 'Bbb', id='d' + '2' * 15)
    b.add_chunk(b.section('Body'), 'b body')
    store = InMemoryStore(HashingEmbeddingModel(16))
    await store.upsert([a.build(), b.build()])
    rag = ToolishRag(store, max_retries=5)
    try:
        text = await answer(rag, 'read_section', {'section': 'Body'})
    except ModelRetry:
        return  # refusing (say, "pass document") is fine too
    assert not expanded_ids(text), text[:200]  # a choice, never one of the two read
