"""Verification of a GroundedAnswer against the chunks a conversation saw: citations, sources, status rules."""

from __future__ import annotations

import time

import pytest

from toolish_rag import DocumentBuilder
from toolish_rag.citations._model import MAX_CLAIMS, Citation, CitationSource, Claim, GroundedAnswer
from toolish_rag.citations._verify import (
    FEEDBACK_MAX_CHARS,
    NOT_SEEN,
    SPANS_TWO_CHUNKS,
    CitationProblem,
    UngroundedAnswerError,
    Verification,
    check_quote,
    verify_answer,
)
from toolish_rag.content import Chunk, Document
from toolish_rag.errors import ToolishRagError

PARTS = [
    'Refunds are issued within 14 days of the return. The original receipt is required for every refund.',
    'Opened software cannot be returned. Hardware may be returned within 30 days if it is undamaged.',
    'Store credit never expires. Gift cards are not refundable and cannot be exchanged for cash.',
]
SOURCE = '\n\n'.join(PARTS)


def policy(uri: str = 'file:///policy.md', labels: tuple[str, ...] = ()) -> Document:
    """Three consecutive chunks whose urtexts are exact spans of SOURCE (offsets known), pages 1-3."""
    builder = DocumentBuilder(uri, 'Returns policy', labels=labels)
    section = builder.section('Refunds')
    start = 0
    for page, part in enumerate(PARTS, 1):
        builder.add_chunk(section, part, start_char=start, end_char=start + len(part), page=page)
        start += len(part) + 2
    return builder.build()


DOC = policy()
C0, C1, C2 = DOC.chunks
OTHER_TENANT = policy('file:///tenant-b/policy.md').chunks[0]


def seen(*chunks: Chunk) -> dict[str, Chunk]:
    return {c.id: c for c in chunks}


def cite(chunk_id: str, quote: str, source: CitationSource | None = None) -> Citation:
    return Citation(chunk_id=chunk_id, quote=quote, source=source)


def answer(*claims: list[Citation], status: str = 'answered', **extra: str) -> GroundedAnswer:
    return GroundedAnswer.model_validate(
        {'status': status, 'claims': [Claim(text=f'claim {i}', citations=c) for i, c in enumerate(claims)], **extra}
    )


def only_problem(verification: Verification) -> CitationProblem:
    assert len(verification.problems) == 1, verification.problems
    return verification.problems[0]


# --- valid citations and their sources ---


def test_valid_citation_gets_its_source_from_the_chunk() -> None:
    quote = 'The original receipt is required for every refund.'
    result = verify_answer(answer([cite(C0.id, quote)]), seen(C0, C1))
    assert result.ok and result.problems == ()
    source = result.answer.claims[0].citations[0].source
    assert source is not None
    assert (source.document_id, source.document_title, source.document_uri) == (DOC.id, 'Returns policy', DOC.uri)
    assert source.section_path == ('Refunds',)
    assert source.page == 1
    assert C0.urtext[source.chunk_start : source.chunk_end] == quote
    assert source.start_char is not None and source.end_char is not None
    assert SOURCE[source.start_char : source.end_char] == quote


def test_document_offsets_use_the_chunk_offset() -> None:
    quote = 'Gift cards are not refundable'
    source = check_quote(C2, quote)
    assert isinstance(source, CitationSource)
    assert source.start_char == C2.start_char + C2.urtext.index(quote)  # type: ignore[operator]
    assert SOURCE[source.start_char : source.end_char] == quote  # type: ignore[misc]


@pytest.mark.parametrize(
    ('start_char', 'end_char'),
    [(None, None), (100, None), (100, 100 + len(PARTS[0]) + 5)],  # unknown, half known, urtext not 1:1
)
def test_document_offsets_only_when_the_urtext_maps_one_to_one(start_char: int | None, end_char: int | None) -> None:
    chunk = C0.model_copy(update={'start_char': start_char, 'end_char': end_char})
    source = check_quote(chunk, 'Refunds are issued within 14 days')
    assert isinstance(source, CitationSource)
    assert (source.start_char, source.end_char) == (None, None)
    assert (source.chunk_start, source.chunk_end) == (0, len('Refunds are issued within 14 days'))


def test_variants_verify_with_offsets_of_the_original() -> None:
    quote = 'Opened  software\ncannot be returned.'
    source = check_quote(C1, quote)
    assert isinstance(source, CitationSource)
    assert C1.urtext[source.chunk_start : source.chunk_end] == 'Opened software cannot be returned.'


def test_model_sent_source_is_discarded_and_input_untouched() -> None:
    forged = CitationSource(
        document_id='evil', document_title='Forged', document_uri='https://evil.example', chunk_start=0, chunk_end=1
    )
    draft = answer(
        [cite(C0.id, 'Refunds are issued within 14 days', forged), cite(C0.id, 'Refunds are never issued', forged)]
    )
    before = draft.model_dump()
    result = verify_answer(draft, seen(C0))
    good, bad = result.answer.claims[0].citations
    assert good.source is not None and good.source.document_uri == DOC.uri
    assert bad.source is None
    assert draft.model_dump() == before
    assert draft.claims[0].citations[0].source is forged
    assert result.answer is not draft


# --- rejected citations ---


def test_unknown_chunk_id_reason_is_identical_for_every_kind_of_unknown() -> None:
    visible = seen(C0)
    problems = [
        only_problem(verify_answer(answer([cite(chunk_id, 'Refunds are issued within 14 days')]), visible))
        for chunk_id in ('no-such-chunk', OTHER_TENANT.id, C1.id)  # never existed, other tenant, not retrieved
    ]
    assert {p.reason for p in problems} == {NOT_SEEN}
    assert 'was not returned by a search or read in this conversation' in problems[0].message()
    messages = {p.message().replace(repr(p.chunk_id), 'ID') for p in problems}
    assert len(messages) == 1


def test_quote_from_another_tenants_copy_is_rejected() -> None:
    # the same text, but the chunk the model names is another tenant's and never reached it
    problem = only_problem(verify_answer(answer([cite(OTHER_TENANT.id, PARTS[0])]), seen(C0)))
    assert problem.reason == NOT_SEEN


@pytest.mark.parametrize(
    ('kind', 'quote'),
    [
        ('number changed', 'Refunds are issued within 15 days of the return.'),
        ('negation inserted', 'Refunds are not issued within 14 days of the return.'),
        ('words swapped', 'Refunds are issued within 14 days of the receipt.'),
        ('case changed', 'refunds are issued within 14 days of the return.'),
        ('one character', 'Refunds are issued within 14 days of the returm.'),
    ],
)
def test_edited_quote_is_rejected_with_the_closest_sentence(kind: str, quote: str) -> None:
    problem = only_problem(verify_answer(answer([cite(C0.id, quote)]), seen(C0)))
    assert problem.reason.startswith('the quote does not stand in this chunk'), kind
    assert problem.closest == 'Refunds are issued within 14 days of the return.'
    message = problem.message()
    assert message.startswith(f'Claim 1, citation 1 (chunk {C0.id!r}): the quote does not stand in this chunk')
    assert 'Refunds are issued within 14 days of the return.' in message
    reason = check_quote(C0, quote)
    assert isinstance(reason, str) and 'closest sentence' in reason


@pytest.mark.parametrize(
    'quote',
    [
        'refundable and cannot be exchanged for cash.',  # 'non-' dropped
        'Opened software can',  # "n't" cut off
        '5 of the boxes may be returned.',  # a number cut after its fraction bar
        '000 units are sold each year.',  # a number cut after a thin-space digit group
    ],
)
def test_quote_dropping_a_negation_or_cutting_a_number_is_rejected(quote: str) -> None:
    text = (
        "Gift cards are non-refundable and cannot be exchanged for cash. Opened software can't be returned. "
        'Only 1/5 of the boxes may be returned. About 12\u2009000 units are sold each year.'
    )
    builder = DocumentBuilder('file:///cuts.md', 'Cuts')
    builder.add_chunk(None, text)
    chunk = builder.build().chunks[0]
    problem = only_problem(verify_answer(answer([cite(chunk.id, quote)]), seen(chunk)))
    assert problem.reason.startswith('the quote does not stand in this chunk')
    whole = verify_answer(
        answer([cite(chunk.id, 'Gift cards are non-refundable and cannot be exchanged for cash.')]), seen(chunk)
    )
    assert whole.ok


def test_fabricated_quote_has_no_closest_sentence() -> None:
    problem = only_problem(
        verify_answer(answer([cite(C0.id, 'All purchases come with a lifetime warranty.')]), seen(C0))
    )
    assert problem.closest is None
    assert check_quote(C0, 'All purchases come with a lifetime warranty.') == (
        'the quote does not stand in this chunk (the match is exact except for whitespace, quote marks and dashes)'
    )


@pytest.mark.parametrize('quote', ['Refunds are', '14 days', '  the   return  '])
def test_short_quote_is_rejected(quote: str) -> None:
    problem = only_problem(verify_answer(answer([cite(C0.id, quote)]), seen(C0)))
    assert 'shorter than the minimum of 12' in problem.reason
    assert verify_answer(answer([cite(C0.id, quote)]), seen(C0), min_quote_chars=5).ok


def test_empty_quote_is_rejected_even_without_a_minimum() -> None:
    problem = only_problem(verify_answer(answer([cite(C0.id, ' \n ')]), seen(C0), min_quote_chars=0))
    assert problem.reason == 'the quote is empty'


def test_quote_across_two_chunks_is_rejected() -> None:
    stitched = 'required for every refund. Opened software cannot be returned.'
    for cited in (C0, C1):
        problem = only_problem(verify_answer(answer([cite(cited.id, stitched)]), seen(C0, C1)))
        assert problem.reason.startswith(SPANS_TWO_CHUNKS), problem
        assert 'spans two chunks' in problem.message()
        assert C0.id in problem.reason and C1.id in problem.reason
    # without the neighbour in the conversation it is simply not in the chunk
    assert only_problem(verify_answer(answer([cite(C0.id, stitched)]), seen(C0))).reason.startswith(
        'the quote does not stand'
    )


def test_quote_across_overlapping_chunks_is_rejected() -> None:
    # chunks that overlap by one sentence, as an overlapping chunker makes them
    builder = DocumentBuilder('file:///o.md', 'Overlap')
    text = 'First sentence is here. Shared middle sentence. Last sentence is there.'
    builder.add_chunk(None, text[:47], start_char=0, end_char=47)
    builder.add_chunk(None, text[24:], start_char=24, end_char=len(text))
    first, second = builder.build().chunks
    assert verify_answer(answer([cite(second.id, 'Shared middle sentence.')]), seen(first, second)).ok
    problem = only_problem(
        verify_answer(answer([cite(first.id, 'Shared middle sentence. Last sentence is there.')]), seen(first, second))
    )
    # stands whole in the second chunk: the model is told which id to cite
    assert problem.reason == f'the quote is not in this chunk but in chunk {second.id!r}: cite that id'
    problem = only_problem(
        verify_answer(answer([cite(first.id, 'is here. Shared middle sentence. Last sentence')]), seen(first, second))
    )
    assert problem.reason.startswith(SPANS_TWO_CHUNKS)


def test_quote_from_another_seen_chunk_names_it() -> None:
    problem = only_problem(verify_answer(answer([cite(C0.id, 'Store credit never expires.')]), seen(C0, C2)))
    assert problem.reason == f'the quote is not in this chunk but in chunk {C2.id!r}: cite that id'


def test_overlong_quote_is_rejected() -> None:
    long_quote = Citation.model_construct(chunk_id=C0.id, quote=PARTS[0] * 30, source=None)
    problem = only_problem(verify_answer(answer([long_quote]), seen(C0)))
    assert 'longer than 2000 characters' in problem.reason


# --- status rules ---

GOOD0 = cite(C0.id, 'Refunds are issued within 14 days of the return.')
GOOD0_AGAIN = cite(C0.id, 'The original receipt is required for every refund.')
GOOD1 = cite(C1.id, 'Hardware may be returned within 30 days if it is undamaged.')
BAD = cite(C1.id, 'Hardware may always be returned.')


@pytest.mark.parametrize(
    ('draft', 'expected'),
    [
        (answer([GOOD0]), []),
        (answer(), ["status 'answered' needs at least one claim with a citation"]),
        (answer([GOOD0], []), ['the claim has no citation: cite at least one exact quote']),
        (answer([GOOD0, BAD]), ['the quote does not stand in this chunk']),
        (answer(status='insufficient_evidence', missing='the warranty terms'), []),
        (answer([GOOD0], status='insufficient_evidence', missing='x'), []),
        (answer([], status='insufficient_evidence'), ['the claim has no citation']),
        (answer([GOOD0], [GOOD1], status='conflicting_evidence'), []),
        (answer([GOOD0, GOOD1], status='conflicting_evidence'), []),
        (answer([GOOD0], [GOOD0_AGAIN], status='conflicting_evidence'), ['at least two different chunks']),
        (
            answer([GOOD0], [BAD], status='conflicting_evidence'),
            ['the quote does not stand in this chunk', 'at least two different chunks, one for each side; it has 1'],
        ),
        (answer(status='conflicting_evidence'), ['at least two different chunks']),
        (answer(status='needs_clarification', clarifying_question='Which product?'), []),
        (answer(status='needs_clarification'), ["status 'needs_clarification' needs a clarifying_question"]),
        (answer(status='needs_clarification', clarifying_question='  '), ['needs a clarifying_question']),
        (answer([], status='needs_clarification', clarifying_question='Which?'), ['the claim has no citation']),
    ],
)
def test_status_rules(draft: GroundedAnswer, expected: list[str]) -> None:
    result = verify_answer(draft, seen(C0, C1))
    assert len(result.problems) == len(expected), result.problems
    for problem, text in zip(result.problems, expected, strict=True):
        assert text in problem.reason
    assert result.ok is (not expected)


def test_problem_messages_name_the_place() -> None:
    assert CitationProblem(None, None, None, 'x').message() == 'The answer: x.'
    assert CitationProblem(2, None, None, 'y').message() == 'Claim 3: y.'
    assert CitationProblem(0, 4, 'c-1', 'z', 'Close.').message() == (
        "Claim 1, citation 5 (chunk 'c-1'): z. The closest sentence in the chunk is: 'Close.'"
    )


# --- bounded feedback ---


def test_feedback_lists_problems_and_says_how_to_fix() -> None:
    result = verify_answer(answer([GOOD0, BAD], [cite('nope', 'Refunds are issued within 14 days')]), seen(C0, C1))
    feedback = result.feedback()
    assert feedback.startswith('The answer failed citation verification:\n1. Claim 1, citation 2')
    assert '\n2. Claim 2, citation 1' in feedback
    assert feedback.endswith("answer with status 'insufficient_evidence' and say what is missing.")
    assert 'at least 12 characters' in feedback


def test_feedback_is_bounded_for_many_claims_and_huge_inputs() -> None:
    huge_chunk = C0.model_copy(update={'urtext': 'A long line about refunds and returns ' * 30_000, 'start_char': None})
    assert len(huge_chunk.urtext) > 1_000_000
    huge = 'x' * 1_000_000
    claims = []
    for i in range(MAX_CLAIMS):
        citations = [Citation.model_construct(chunk_id=huge, quote=huge, source=None)]
        citations += [cite(huge_chunk.id, f'Refunds and returns number {i}.{j} are long lines') for j in range(9)]
        claims.append(Claim.model_construct(text=huge, citations=citations))
    draft = GroundedAnswer.model_construct(status='answered', claims=claims, missing=huge, clarifying_question=None)
    started = time.perf_counter()
    result = verify_answer(draft, seen(huge_chunk))
    assert time.perf_counter() - started < 20
    assert len(result.problems) == MAX_CLAIMS * 10
    feedback = result.feedback()
    assert len(feedback) <= FEEDBACK_MAX_CHARS
    assert 'more problem(s)' in feedback
    assert feedback.endswith('say what is missing.')
    assert all(len(p.message()) < 800 for p in result.problems)
    error = UngroundedAnswerError(result.answer, result.problems)
    assert len(str(error)) <= 1000


# --- the error ---


def test_ungrounded_answer_error_carries_draft_and_problems() -> None:
    result = verify_answer(answer([GOOD0, BAD]), seen(C0, C1))
    error = UngroundedAnswerError(result.answer, result.problems)
    assert isinstance(error, ToolishRagError)
    assert error.draft is result.answer and error.problems == result.problems
    assert str(error).startswith('the answer failed citation verification after the allowed repairs (1 problem(s)):')
    assert 'Claim 1, citation 2' in str(error)
