"""Rendering grounded answers: numbered citations, exact quotes, escaping, and stable JSON."""

from __future__ import annotations

import json

from markdown_it import MarkdownIt

from toolish_rag.citations._model import Citation, CitationSource, Claim, GroundedAnswer
from toolish_rag.grounded._ask import AskResult, Attempt
from toolish_rag.grounded._render import escape_markdown, render_markdown, to_json
from toolish_rag.grounded._semantic import SemanticReport, SemanticVerdict

SOURCE = CitationSource(
    document_id='d1',
    document_title='Acme refund policy',
    document_uri='file:///acme/refunds.md',
    section_path=('Acme refund policy', 'Refunds', 'Timing'),
    chunk_start=0,
    chunk_end=47,
    page=2,
)
QUOTE = 'Refunds are paid within 30 days of the request.'


def answer_with(*claims: Claim, status: str = 'answered', **extra: object) -> GroundedAnswer:
    return GroundedAnswer.model_validate({'status': status, 'claims': claims, **extra})


def claim(text: str, *citations: Citation) -> Claim:
    return Claim(text=text, citations=list(citations))


def html(markdown: str) -> str:
    return MarkdownIt('commonmark').render(markdown)  # raw HTML allowed: the strictest test of escaping


def test_claims_get_numbered_citations_and_a_sources_list() -> None:
    first = Citation(chunk_id='c1', quote=QUOTE, source=SOURCE)
    second = Citation(chunk_id='c2', quote='Customers must keep the original receipt.', source=SOURCE)
    text = render_markdown(answer_with(claim('Refunds take 30 days.', first), claim('Keep receipts.', second, first)))
    lines = text.splitlines()
    assert lines[0] == 'Refunds take 30 days\\. [1]'
    assert 'Keep receipts\\. [2][1]' in lines  # the same citation keeps its number
    sources = text[text.index('**Sources**') :]
    assert sources.count('\n1. ') == 1 and sources.count('\n2. ') == 1
    assert '“Refunds are paid within 30 days of the request\\.”' in sources
    assert '*Acme refund policy > Refunds > Timing*, page 2 — `file:///acme/refunds.md`' in sources
    rendered = html(text)
    assert '“Refunds are paid within 30 days of the request.”' in rendered
    assert '<code>file:///acme/refunds.md</code>' in rendered


def test_statuses_say_what_they_mean() -> None:
    missing = render_markdown(answer_with(status='insufficient_evidence', missing='warranty terms'))
    assert 'do not fully answer' in missing and 'Not covered by the documents: warranty terms' in missing
    assert '**Sources**' not in missing
    clarify = render_markdown(answer_with(status='needs_clarification', clarifying_question='Which shop?'))
    assert 'clarification' in clarify and 'Which shop\\?' in clarify
    conflict = render_markdown(
        answer_with(
            claim('A says 30.', Citation(chunk_id='a', quote=QUOTE, source=SOURCE)),
            claim('B says 14.', Citation(chunk_id='b', quote='paid within 14 days', source=SOURCE)),
            status='conflicting_evidence',
        )
    )
    assert conflict.startswith('**The documents disagree.**') and '[2]' in conflict


def test_source_text_cannot_inject_markup_links_or_html() -> None:
    hostile = CitationSource(
        document_id='d',
        document_title='**Bold** <img src=x onerror=alert(1)>',
        document_uri='javascript:alert(1)`) [x](http://evil)',
        section_path=('# Heading', '[link](http://evil.example)'),
        chunk_start=0,
        chunk_end=10,
    )
    quote = (
        '<script>alert(1)</script>\n\n# not a heading\n    [click](javascript:alert(1)) ![i](http://x/i.png) &amp; *x*'
    )
    text = render_markdown(
        answer_with(claim('<b>claim</b> [a](http://evil)', Citation(chunk_id='c', quote=quote, source=hostile)))
    )
    rendered = html(text)
    for forbidden in ('<script', '<img', '<a ', '<b>', '<h1', '<em>x', '<pre', 'href='):
        assert forbidden not in rendered, forbidden
    assert '&lt;script&gt;alert(1)&lt;/script&gt;' in rendered  # shown, as text
    assert '&amp;amp;' in rendered  # an entity in the source stays the characters it was
    assert '<strong>Sources</strong>' in rendered  # our own markup still works


def test_escape_markdown_round_trips_as_plain_text() -> None:
    text = r'a_b *c* [d](e) `f` <g> \h # | ~ ! &copy;'
    rendered = html(escape_markdown(text)).strip()
    assert rendered == '<p>' + text.replace('&', '&amp;').replace('<', '&lt;').replace('>', '&gt;') + '</p>'


def test_unverified_citations_say_so() -> None:
    text = render_markdown(answer_with(claim('Draft.', Citation(chunk_id='c9', quote=QUOTE))))
    assert '(not verified)' in text and '`c9`' in text


def result(**changes: object) -> AskResult:
    answer = answer_with(claim('Refunds take 30 days.', Citation(chunk_id='c1', quote=QUOTE, source=SOURCE)))
    base: dict[str, object] = {
        'question': 'How long?',
        'answer': answer,
        'grounded': True,
        'attempts': (Attempt(query='How long?', hits=3),),
        'used': ('c1',),
        'left_out': ('c2',),
        'model_calls': 2,
    }
    return AskResult.model_validate({**base, **changes})


def test_ask_result_markdown_shows_problems_and_the_semantic_check() -> None:
    failed = result(
        grounded=False,
        answer=answer_with(status='insufficient_evidence', missing='No passage matched.'),
        problems=('Claim 1: the quote does not stand in this chunk.',),
    )
    assert 'Why no grounded answer' in render_markdown(failed)
    judged = result(
        semantic=SemanticReport(
            model='judge', verdicts=(SemanticVerdict(claim=0, verdict='not_supported', reason='says 14'),)
        )
    )
    text = render_markdown(judged)
    assert 'Semantic check' in text and 'claim 1: not supported' in text and 'not a proof' in text


def test_json_is_stable_and_round_trips() -> None:
    original = result(semantic=SemanticReport(model='judge', error='timed out'))
    text = to_json(original)
    assert text == to_json(AskResult.model_validate_json(text))
    assert AskResult.model_validate_json(text) == original
    data = json.loads(text)
    assert list(data)[:4] == ['question', 'answer', 'grounded', 'attempts']
    assert data['answer']['claims'][0]['citations'][0]['source']['page'] == 2
    assert json.loads(to_json(original.answer)) == data['answer']
