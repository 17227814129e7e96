"""The inspector in a real headless browser (Debian's chromium driven by Playwright), against a uvicorn server
on 127.0.0.1: every page loads with no console error and is screenshotted, the console's form answers as
``run_tool``, a tenant signed in with its token sees nothing of another tenant, and a hostile document stays
inert. One browser for the module. ``TOOLISH_RAG_INSPECT_SHOTS=DIR`` keeps the screenshots there
(``scripts/inspect_screenshots`` uses it for docs/images). See docs/inspect.md."""

from __future__ import annotations

import json
import os
import shutil
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip('playwright', reason='the browser tests need playwright (the dev extra)')
pytest.importorskip('uvicorn', reason='the inspector needs the web extra')

import uvicorn
from playwright.sync_api import Browser, ConsoleMessage, Page, sync_playwright

from tests.inspect.corpus import TOKENS, documents, run
from toolish_rag import ToolishRag
from toolish_rag.embedding import HashingEmbeddingModel
from toolish_rag.ingest import IngestIssue, IngestReport
from toolish_rag.inspect import create_app

CHROMIUM = os.environ.get('TOOLISH_RAG_CHROMIUM', '/usr/bin/chromium')
"""Debian's chromium (``TOOLISH_RAG_CHROMIUM`` names another build)."""
if not Path(CHROMIUM).exists():
    pytest.skip(f'the browser tests need Debian chromium at {CHROMIUM} (scripts/setup --dev)', allow_module_level=True)


class Served:
    """An app served by uvicorn on 127.0.0.1 (a free port) in a thread, until `stop`."""

    def __init__(self, app: Any) -> None:
        self.server = uvicorn.Server(uvicorn.Config(app, host='127.0.0.1', port=0, log_level='warning', lifespan='off'))
        self.thread = threading.Thread(target=self.server.run, daemon=True)
        self.thread.start()
        deadline = time.monotonic() + 20
        while not self.server.started:
            assert time.monotonic() < deadline, 'uvicorn did not start'
            time.sleep(0.02)
        port = self.server.servers[0].sockets[0].getsockname()[1]
        self.url = f'http://127.0.0.1:{port}'

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=10)


def _beir(folder: Path) -> Path:
    (folder / 'qrels').mkdir(parents=True)
    corpus = [
        {'_id': 'd1', 'title': 'Refunds', 'text': 'refunds are issued within 30 days'},
        {'_id': 'd2', 'title': 'Shipping', 'text': 'parcels ship every weekday'},
        {'_id': 'd3', 'title': 'Returns', 'text': 'returns need the receipt and the box'},
    ]
    (folder / 'corpus.jsonl').write_text('\n'.join(json.dumps(c) for c in corpus))
    queries = [
        {'_id': 'q1', 'text': 'refunds days'},
        {'_id': 'q2', 'text': 'parcels weekday'},
        {'_id': 'q3', 'text': 'receipt box'},
    ]
    (folder / 'queries.jsonl').write_text('\n'.join(json.dumps(q) for q in queries))
    (folder / 'qrels' / 'test.tsv').write_text('query-id\tcorpus-id\tscore\nq1\td1\t1\nq2\td2\t1\nq3\td3\t1\n')
    return folder


@pytest.fixture(scope='module')
def shots(tmp_path_factory: pytest.TempPathFactory) -> Path:
    wanted = os.environ.get('TOOLISH_RAG_INSPECT_SHOTS')
    folder = Path(wanted) if wanted else tmp_path_factory.mktemp('inspect-shots')
    folder.mkdir(parents=True, exist_ok=True)
    return folder


@pytest.fixture(scope='module')
def served(rag: ToolishRag[Any], tokens: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, str]]:
    has_eval = shutil.which('true') is not None and _has('pytrec_eval')
    report = IngestReport(
        added=['handbook.md', 'policies.pdf'],
        failed=[IngestIssue('scans/contract.pdf', 'encrypted PDF: needs a password')],
    )
    data = _beir(tmp_path_factory.mktemp('beir') / 'mini') if has_eval else None
    open_app = create_app(rag, eval_data=data, eval_embedder=HashingEmbeddingModel(64), ingest_report=report)
    servers = {'open': Served(open_app), 'tokens': Served(create_app(rag, tokens=tokens))}
    yield {name: s.url for name, s in servers.items()}
    for s in servers.values():
        s.stop()


def _has(module: str) -> bool:
    import importlib.util

    return importlib.util.find_spec(module) is not None


@pytest.fixture(scope='module')
def browser() -> Iterator[Browser]:
    with sync_playwright() as p:
        launched = p.chromium.launch(executable_path=CHROMIUM, args=['--no-sandbox', '--disable-gpu'])
        yield launched
        launched.close()


class Watched:
    """A page recording console errors, uncaught exceptions and dialogs (any of them fails a test)."""

    def __init__(self, browser: Browser) -> None:
        self.context = browser.new_context(viewport={'width': 1280, 'height': 900})
        self.page: Page = self.context.new_page()
        self.problems: list[str] = []
        self.messages: list[str] = []
        """Every console message, of any type (our own script logs nothing)."""
        self.page.on('console', self._console)
        self.page.on('pageerror', lambda e: self.problems.append(f'pageerror: {e}'))
        self.page.on('dialog', self._dialog)

    def _console(self, message: ConsoleMessage) -> None:
        self.messages.append(f'{message.type}: {message.text}')
        if message.type in ('error', 'warning'):
            self.problems.append(f'console {message.type}: {message.text}')

    def _dialog(self, dialog: Any) -> None:
        self.problems.append(f'dialog: {dialog.message}')
        dialog.dismiss()

    def close(self) -> None:
        self.context.close()


def _ids() -> dict[str, str]:
    docs = documents()
    acme = next(d for d in docs if d.metadata['tenant'] == 'acme' and 'policies' in d.title)
    globex = next(d for d in docs if d.metadata['tenant'] == 'globex')
    hostile = next(d for d in docs if d.uri.startswith('javascript:'))
    return {
        'document': acme.id,
        'section': acme.sections[0].id,
        'chunk': acme.chunks[0].id,
        'chunk_text': acme.chunks[0].urtext,
        'foreign_document': globex.id,
        'foreign_section': globex.sections[0].id,
        'foreign_chunk': globex.chunks[0].id,
        'hostile_document': hostile.id,
        'hostile_section': hostile.sections[0].id,
        'hostile_chunk': hostile.chunks[0].id,
    }


def test_every_page_loads_without_errors_and_is_screenshotted(
    browser: Browser, served: dict[str, str], shots: Path
) -> None:
    ids, base, w = _ids(), served['open'], Watched(browser)
    try:
        page = w.page
        visits = {
            'browse': '/documents',
            'document': f'/document?id={ids["document"]}',
            'section': f'/section?document={ids["document"]}&id={ids["section"]}',
            'chunk': f'/chunk?id={ids["chunk"]}',
            'graph': f'/graph?node={ids["chunk"]}&hops=2',
        }
        for name, path in visits.items():
            response = page.goto(base + path)
            assert response is not None and response.status == 200, path
            page.screenshot(path=str(shots / f'inspect-{name}.png'), full_page=True)
        assert page.locator('svg.graph a.node').count() >= 2
        page.locator('svg.graph a.node.hop-1').first.click()  # walk on from a neighbour
        page.wait_for_load_state()
        assert '/graph?node=' in page.url and page.locator('svg.graph a.node.hop-0').count() == 1

        page.goto(base + '/console?tool=docs_hybrid_search')
        page.fill('textarea[name="arg.query"]', 'refunds for a damaged item')
        page.click('#run')
        page.wait_for_selector('#model-text')
        page.screenshot(path=str(shots / 'inspect-console.png'), full_page=True)

        answer = {
            'status': 'answered',
            'claims': [
                {
                    'text': 'Refunds take 30 days.',
                    'citations': [
                        {'chunk_id': ids['chunk'], 'quote': 'refunds are issued within 30 days of the return'}
                    ],
                },
                {
                    'text': 'Refunds take 40 days.',
                    'citations': [
                        {'chunk_id': ids['chunk'], 'quote': 'refunds are issued within 40 days of the return'}
                    ],
                },
            ],
        }
        page.goto(base + '/citations')
        page.fill('#answer', json.dumps(answer, indent=1))
        page.click('#check')
        page.wait_for_selector('#verdict')
        assert page.locator('mark').count() == 1 and page.locator('q.closest').count() == 1
        page.screenshot(path=str(shots / 'inspect-citations.png'), full_page=True)

        page.goto(base + '/quality')
        assert 'scans/contract.pdf' in page.content()
        if page.locator('#run-eval').count():
            page.click('#run-eval')
            page.wait_for_selector('svg.chart', timeout=60_000)  # the page's script follows the run, then reloads
        page.screenshot(path=str(shots / 'inspect-quality.png'), full_page=True)
        assert w.problems == []
    finally:
        w.close()


def test_the_form_answers_as_run_tool(browser: Browser, served: dict[str, str], rag: ToolishRag[Any]) -> None:
    w = Watched(browser)
    try:
        page = w.page
        page.goto(served['open'] + '/console')
        page.select_option('#tool-pick', 'docs_text_search')
        page.click('form.inline button')
        page.wait_for_selector('textarea[name="arg.query"]')
        page.fill('textarea[name="arg.query"]', 'express shipping')
        page.fill('input[name="arg.top_k"]', '3')
        page.click('#run')
        shown = page.locator('#model-text').text_content()
        expected = run(rag.run_tool('text_search', {'query': 'express shipping', 'top_k': 3}))
        assert shown == str(expected.return_value)
        first = page.locator('table.hits a.id').first
        first.click()
        page.wait_for_selector('#chunk-id')
        assert page.locator('#chunk-id').text_content() == expected.metadata['hits'][0].record.id
        assert w.problems == []
    finally:
        w.close()


def test_a_tenant_sees_nothing_of_another(browser: Browser, served: dict[str, str], shots: Path) -> None:
    ids, base, w = _ids(), served['tokens'], Watched(browser)
    try:
        page = w.page
        page.goto(base + '/documents')
        assert page.url.endswith('/login')
        page.fill('#token', TOKENS['acme'])
        page.click('#sign-in')
        page.wait_for_url('**/documents')
        paths = [
            '/documents',
            f'/document?id={ids["document"]}',
            f'/chunk?id={ids["chunk"]}',
            f'/graph?node={ids["chunk"]}&hops=3',
            '/graph?node=acme-carrier&hops=3',
            f'/document?id={ids["foreign_document"]}',
            f'/section?document={ids["foreign_document"]}&id={ids["foreign_section"]}',
            f'/chunk?id={ids["foreign_chunk"]}',
            '/chunk?id=globex-carrier',
            f'/graph?node={ids["foreign_chunk"]}',
            '/console',
            '/citations',
        ]
        for path in paths:
            page.goto(base + path)
            content = page.content()
            assert 'GLOBEXWORD' not in content and 'globex' not in content.lower().replace('globex-carrier', ''), path
        page.goto(base + '/console?tool=docs_vector_search')
        page.fill('textarea[name="arg.query"]', 'carrier refunds shipping express')
        page.fill('input[name="arg.top_k"]', '20')
        page.click('#run')
        page.wait_for_selector('#model-text')
        assert 'GLOBEXWORD' not in page.content()
        page.goto(base + '/documents')
        page.screenshot(path=str(shots / 'inspect-token.png'))
        # a foreign id is answered 404, like a missing one: the browser logs that load, nothing else may be logged
        assert [p for p in w.problems if 'status of 404' not in p] == []
    finally:
        w.close()


def test_a_hostile_document_is_inert(browser: Browser, served: dict[str, str]) -> None:
    ids, base, w = _ids(), served['open'], Watched(browser)
    try:
        page = w.page
        for path in [
            '/documents',
            f'/document?id={ids["hostile_document"]}',
            f'/section?document={ids["hostile_document"]}&id={ids["hostile_section"]}',
            f'/chunk?id={ids["hostile_chunk"]}',
        ]:
            page.goto(base + path)
            page.wait_for_load_state('load')
            links = page.eval_on_selector_all(
                '[href], [src], [action]',
                'els => els.map(e => e.getAttribute("href") || e.getAttribute("src") || e.getAttribute("action"))',
            )
            assert not [link for link in links if link.strip().lower().startswith('javascript:')], path
            scripts = page.eval_on_selector_all('script', 'els => els.map(e => e.getAttribute("src"))')
            assert scripts == ['/static/inspect.js'], path
            handlers = page.eval_on_selector_all(
                '*',
                'els => els.flatMap(e => Array.from(e.attributes).map(a => a.name)).filter(n => n.startsWith("on"))',
            )
            assert handlers == [], path
        page.goto(base + f'/chunk?id={ids["hostile_chunk"]}')
        assert '<script>alert("pwned")</script>' in (page.locator('pre.text').text_content() or '')
        page.hover('pre.text')
        page.wait_for_timeout(200)  # a handler that fired would have logged or opened a dialog by now
        assert w.problems == [] and w.messages == []
    finally:
        w.close()
