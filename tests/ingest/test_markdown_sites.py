"""Markdown as documentation sites write it (issue 40 item 6).

FastAPI's pages came out titled ``Query Parameters { #query-parameters }``, their
``{* ../../docs_src/... *}`` code left as text (the page showing the code was never found),
admonitions read as indented code, and a lead-in sentence ending one chunk with its list
starting the next. The trees here are small and generated; a real one is in
benchmarks/doctree_bench.py.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from toolish_rag.content import Chunk
from toolish_rag.embedding import HashingEmbeddingModel
from toolish_rag.ingest import Chunker, ingest, read_file
from toolish_rag.ingest._readers._mkdocs import including
from toolish_rag.ingest._readers._versions import reader_key
from toolish_rag.ingest._readers.markdown import heading_anchor, parse_markdown
from toolish_rag.search import SearchRequest
from toolish_rag.stores import InMemoryStore


def _write(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text, encoding='utf-8')


@pytest.mark.parametrize(
    ('heading', 'title', 'anchor'),
    [
        ('Query Parameters { #query-parameters }', 'Query Parameters', 'query-parameters'),
        ('Defaults {#defaults .wide data-x="a b"}', 'Defaults', 'defaults'),
        ('Styled {: .note }', 'Styled', None),
        ('Sets like {a, b} stay', 'Sets like {a, b} stay', None),
        ('{ #only-an-anchor }', '{ #only-an-anchor }', None),
    ],
)
def test_attr_lists_leave_headings(heading: str, title: str, anchor: str | None) -> None:
    assert heading_anchor(heading) == (title, anchor)


def test_headings_lose_their_anchor_and_chunks_keep_it() -> None:
    text = (
        '# Query Parameters { #query-parameters }\n\nIntro.\n\n## Defaults { #defaults }\n\n'
        + 'The defaults are these. ' * 30
        + '\n'
    )
    parsed = parse_markdown(text, default_title='page')
    assert parsed.title == 'Query Parameters' and parsed.headings() == ['Query Parameters', 'Defaults']
    assert '{ #' not in parsed.source
    document = Chunker(chunk_size=200).build(parsed, 'file:///page.md')
    assert [c.metadata.get('anchor') for c in document.chunks] == ['query-parameters'] + ['defaults'] * (
        len(document.chunks) - 1
    )
    assert all(c.section_path[-1] in ('Query Parameters', 'Defaults') for c in document.chunks)


SITE = {
    'mkdocs.yml': 'site_name: Demo\n',
    'docs/tutorial/params.md': (
        '# Params\n\nThe handler:\n\n{* docs_src/params/tutorial001.py ln[3:4] hl[4] *}\n\n'
        'Shared text:\n\n--8<-- "docs/snippets/shared.md"\n\n'
        '```python\n--8<-- "docs_src/params/tutorial001.py:2:2"\n```\n\n'
        '--8<--\ndocs/snippets/part.md:usage\n;docs/snippets/ignored.md\n--8<--\n\n'
        ';--8<-- "shown/as/text.md"\n'
    ),
    'docs/snippets/shared.md': 'Shared words, with a nested one:\n\n--8<-- "docs/snippets/nested.md"\n',
    'docs/snippets/nested.md': 'nested snippet text\n',
    'docs/snippets/part.md': ('before\n--8<-- [start:usage]\nthe usage section only\n--8<-- [end:usage]\nafter\n'),
    'docs_src/params/tutorial001.py': 'import app\n\ndef read_items(skip: int = 0):\n    return skip\n',
    'docs/tutorial/local.md': '# Local\n\n--8<-- "sibling.txt"\n',
    'docs/tutorial/sibling.txt': 'found from the page folder when the project folder has no such file\n',
}


def test_includes_are_read_from_the_mkdocs_project_folder_then_the_page_folders(tmp_path: Path) -> None:
    _write(tmp_path, SITE)
    with including([tmp_path]):
        page = read_file(tmp_path / 'docs/tutorial/params.md')
        local = read_file(tmp_path / 'docs/tutorial/local.md')
    assert page.warnings == []
    source = page.source
    assert '```python\ndef read_items(skip: int = 0):\n    return skip\n```' in source  # ln[3:4], as code
    assert 'import app' not in source.split('Shared text')[0]
    assert 'Shared words, with a nested one:\n\nnested snippet text' in source
    assert '```python\n\n```' in source or '```python\n```' in source  # line 2 of the file is blank
    assert 'the usage section only' in source and 'before' not in source and 'ignored' not in source
    assert '--8<-- "shown/as/text.md"' in source and '--8<-- [' not in source
    assert 'found from the page folder' in local.source


def test_an_include_outside_the_ingested_folders_is_refused_and_a_missing_one_reported(tmp_path: Path) -> None:
    site = tmp_path / 'site'
    _write(site, SITE)
    _write(tmp_path, {'secret.txt': 'the secret outside\n'})
    _write(
        site,
        {
            'docs/escape.md': '# Escape\n\n--8<-- "../secret.txt"\n\n--8<-- "/etc/hostname"\n\n--8<-- "nowhere.md"\n'
            '\n--8<-- "docs/linked.txt"\n\nText.\n'
        },
    )
    os.symlink(tmp_path / 'secret.txt', site / 'docs' / 'linked.txt')

    with including([site / 'docs']):  # docs_src and the top folder are not being ingested
        parsed = read_file(site / 'docs/escape.md')
        params = read_file(site / 'docs/tutorial/params.md')
    assert 'secret' not in parsed.source and 'Text.' in parsed.source
    reasons = ' | '.join(parsed.warnings)
    assert "include '../secret.txt' refused" in reasons and 'outside the ingested folders' in reasons
    assert "include 'docs/linked.txt' refused" in reasons  # a symlink out is outside too
    assert "include 'nowhere.md' not found" in reasons
    assert any('docs_src/params/tutorial001.py' in w and 'refused' in w for w in params.warnings)


async def test_a_fastapi_layout_reads_code_from_a_second_root(tmp_path: Path) -> None:
    """FastAPI: docs/en/mkdocs.yml, pages under docs/en/docs, code in docs_src two levels up."""
    _write(
        tmp_path,
        {
            'docs/en/mkdocs.yml': 'site_name: FastAPI\n',
            'docs/en/docs/advanced/events.md': '# Lifespan Events\n\nUse a lifespan:\n\n'
            '{* ../../docs_src/events/tutorial003.py hl[16,19] *}\n',
            'docs_src/events/tutorial003.py': 'from contextlib import asynccontextmanager\n\n'
            '@asynccontextmanager\nasync def lifespan(app):\n    yield\n',
        },
    )
    store = InMemoryStore(HashingEmbeddingModel(64))
    report = await ingest(store, [tmp_path / 'docs/en/docs', tmp_path / 'docs_src'], progress=False)
    assert report.ok and report.warnings == []
    hits = [h.record for h in await store.text_search(SearchRequest('asynccontextmanager lifespan', 5))]
    assert hits and isinstance(hits[0], Chunk) and Path(hits[0].document_uri).name == 'events.md'
    assert 'Use a lifespan:\n\n```python\nfrom contextlib' in hits[0].urtext  # lead-in kept with its code
    alone = await ingest(InMemoryStore(HashingEmbeddingModel(64)), tmp_path / 'docs/en/docs', progress=False)
    assert [w.reason.split(':')[0] for w in alone.warnings] == [
        "include '../../docs_src/events/tutorial003.py' refused"
    ]


def test_admonitions_blocks_and_tabs_are_text_not_code() -> None:
    text = (
        '# Page\n\n!!! note "Technical Details"\n    As query parameters are optional.\n\n'
        '    ```python\n    x = 1\n    ```\n\n??? tip\n    Collapsed tip.\n\n'
        '=== "Python 3.10+"\n\n    Tab text.\n\n/// warning | Careful\nBlock body.\n///\n\n'
        '```markdown\n!!! note "shown as an example"\n    stays\n```\n'
    )
    parsed = parse_markdown(text, default_title='page')
    source = parsed.source
    for line in ('Technical Details', 'As query parameters are optional.', 'Tip', 'Collapsed tip.', 'Python 3.10+'):
        assert f'\n{line}\n' in source
    assert 'Careful\n\nBlock body.' in source and '///' not in source
    assert '!!! note "shown as an example"\n    stays' in source  # inside a fence: left as it is
    kinds = [b.kind for s in parsed.root.walk() for b in s.blocks]
    assert kinds.count('code') == 2  # the admonition's fence and the example fence; no indented-code blocks


@pytest.mark.parametrize('kind', ['list', 'code'])
def test_a_lead_in_sentence_stays_with_what_it_introduces(kind: str) -> None:
    body = '* `skip=20`: set in the URL\n* `limit=10`: the default' if kind == 'list' else '```\nskip=20\n```'
    text = '# Query\n\n' + 'Words before it. ' * 14 + '\n\nThe parameter values in your function will be:\n\n' + body
    parsed = parse_markdown(text, default_title='page')
    chunks = [parsed.source[p.start : p.end] for p in Chunker(chunk_size=280).split(parsed)]
    holding = [c for c in chunks if 'will be:' in c]
    assert len(chunks) > 1 and len(holding) == 1 and 'skip=20' in holding[0]


def test_the_markdown_reader_version_rereads_stores_written_before() -> None:
    assert reader_key(Path('a.md')) == ' reader=markdown/1'
