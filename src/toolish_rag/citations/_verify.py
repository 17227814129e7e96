"""Deterministic verification of a `GroundedAnswer` against the chunks a conversation saw.

Pure (no store, model or I/O): each quote is looked for in the chunk it names, then the status
rules apply; the result carries sources built from the chunks and actionable problems.
See docs/grounded.md#verification.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from ..content import Chunk
from ..errors import ToolishRagError, echo
from ._model import MAX_QUOTE_CHARS, Citation, CitationSource, Claim, GroundedAnswer
from ._quotes import DEFAULT_MIN_QUOTE_CHARS, QuoteMatch, closest_sentence, find_quote, normalise_quote
from ._where import paragraph_number, quote_place

__all__ = [
    'FEEDBACK_MAX_CHARS',
    'NOT_SEEN',
    'SPANS_TWO_CHUNKS',
    'CitationProblem',
    'UngroundedAnswerError',
    'Verification',
    'check_quote',
    'normalise_chunk_id',
    'verify_answer',
]

FEEDBACK_MAX_CHARS = 3000
"""The longest `Verification.feedback`: problems beyond it are counted, not listed."""

NOT_SEEN = 'this chunk id was not returned by a search or read in this conversation'
"""The one reason for every unknown id: the same whether the chunk exists elsewhere, belongs to
another tenant or never existed, so the answer reveals nothing about what lies outside the scope."""
SPANS_TWO_CHUNKS = 'the quote spans two chunks'
_FIX = (
    'To fix: copy each quote exactly, character for character, from the chunk whose id it cites '
    '(only ids returned by a search or read in this conversation), one sentence or clause of at least '
    '{min} characters per citation; drop a claim you cannot cite, or answer with status '
    "'insufficient_evidence' and say what is missing."
)


def normalise_chunk_id(chunk_id: str) -> str:
    """A cited chunk id as every check compares it: without surrounding whitespace.

    Models often pad an id they copy; ``verify_citations`` (whose id argument is stripped like
    every tool's) and the grounding capability both go through this one rule, so they agree.
    """
    return chunk_id.strip()


@dataclass(frozen=True, slots=True)
class CitationProblem:
    """Why one citation (or the answer as a whole) failed verification.

    ``claim`` and ``citation`` are 0-based indexes into the answer; both ``None`` for an
    answer-level problem (a status rule), ``citation`` ``None`` for a claim-level one.
    """

    claim: int | None
    citation: int | None
    chunk_id: str | None
    reason: str
    closest: str | None = None
    """The chunk's sentence most like the quote, when one is reasonably close."""

    def message(self) -> str:
        """One sentence for the model: where (1-based), what is wrong, and the closest sentence."""
        where = 'The answer'
        if self.claim is not None:
            where = f'Claim {self.claim + 1}'
            if self.citation is not None:
                where += f', citation {self.citation + 1}'
        if self.chunk_id is not None:
            where += f' (chunk {echo(self.chunk_id)})'
        text = f'{where}: {self.reason}.'
        if self.closest is not None:
            text += f' The closest sentence in the chunk is: {self.closest!r}'
        return text


@dataclass(frozen=True)
class Verification:
    """The outcome of `verify_answer`: the answer with sources filled, and every problem found."""

    answer: GroundedAnswer
    """A copy of the input: valid citations carry a `CitationSource`, invalid ones ``None``."""
    problems: tuple[CitationProblem, ...]
    min_quote_chars: int = field(default=DEFAULT_MIN_QUOTE_CHARS, repr=False)

    @property
    def ok(self) -> bool:
        return not self.problems

    def feedback(self) -> str:
        """The retry text for the model: the problems numbered, at most `FEEDBACK_MAX_CHARS`, then how to fix."""
        return _bounded_list(
            'The answer failed citation verification:',
            [p.message() for p in self.problems],
            _FIX.format(min=self.min_quote_chars),
            FEEDBACK_MAX_CHARS,
        )


class UngroundedAnswerError(ToolishRagError):
    """The model's answer still failed verification after the allowed repairs.

    Carries the last ``draft`` (sources filled where a citation did verify) and its
    ``problems``, so a caller can show or log why; never treat the draft as an answer.
    """

    def __init__(self, draft: GroundedAnswer, problems: tuple[CitationProblem, ...]) -> None:
        self.draft = draft
        self.problems = problems
        super().__init__(
            _bounded_list(
                f'the answer failed citation verification after the allowed repairs ({len(problems)} problem(s)):',
                [p.message() for p in problems],
                '',
                1000,
            )
        )


def _bounded_list(head: str, items: list[str], tail: str, limit: int) -> str:
    """``head``, the items numbered, ``tail``: as many items as fit in ``limit`` characters, the rest counted."""
    lines = [head]
    used = len(head) + len(tail) + 60  # room for the 'and N more' line
    for number, item in enumerate(items, 1):
        line = f'{number}. {item}'
        if used + len(line) + 1 > limit:
            lines.append(f'... and {len(items) - number + 1} more problem(s) like these.')
            break
        lines.append(line)
        used += len(line) + 1
    if tail:
        lines.append(tail)
    return '\n'.join(lines)


def _source(chunk: Chunk, match: QuoteMatch) -> CitationSource:
    start_char = end_char = None
    # Document offsets only when the chunk's urtext is exactly its span of the source.
    if (
        chunk.start_char is not None
        and chunk.end_char is not None
        and chunk.end_char - chunk.start_char == len(chunk.urtext)
    ):
        start_char = chunk.start_char + match.start
        end_char = chunk.start_char + match.end
    page, boxes = quote_place(chunk, match.start, match.end)
    return CitationSource(
        document_id=chunk.document_id,
        document_title=chunk.document_title,
        document_uri=chunk.document_uri,
        section_path=chunk.section_path,
        start_char=start_char,
        end_char=end_char,
        chunk_start=match.start,
        chunk_end=match.end,
        page=page,
        boxes=boxes,
        paragraph=paragraph_number(chunk.urtext, match.start),
        cells=chunk.cells,
    )


def _precheck(quote: str, min_quote_chars: int) -> str | None:
    """The reason a quote fails before any chunk is searched (empty, too short, too long), else ``None``."""
    if len(quote) > MAX_QUOTE_CHARS:
        return f'the quote is longer than {MAX_QUOTE_CHARS} characters: quote a sentence or clause, not a passage'
    length = len(normalise_quote(quote))
    if length == 0:
        return 'the quote is empty'
    if length < min_quote_chars:
        return (
            f'the quote is {length} characters long, shorter than the minimum of {min_quote_chars}: '
            'quote a whole clause or sentence'
        )
    return None


def check_quote(chunk: Chunk, quote: str, *, min_quote_chars: int = DEFAULT_MIN_QUOTE_CHARS) -> CitationSource | str:
    """Check one quote against one chunk: its `CitationSource`, or the reason it fails.

    The reason for a quote that is not in the chunk names the closest sentence when there is
    one. (Whether the chunk reached the model, and whether the quote spans two chunks, needs
    the conversation's chunks: that is `verify_answer`.)
    """
    reason = _precheck(quote, min_quote_chars)
    if reason is not None:
        return reason
    match = find_quote(quote, chunk.urtext)
    if match is not None:
        return _source(chunk, match)
    closest = closest_sentence(quote, chunk.urtext)
    reason = _NOT_IN_CHUNK
    return reason if closest is None else f'{reason}; the closest sentence in the chunk is: {closest!r}'


_NOT_IN_CHUNK = (
    'the quote does not stand in this chunk (the match is exact except for whitespace, quote marks and dashes)'
)


_CLOSEST_PER_ANSWER = 10
"""How many failed quotes of one answer get a closest sentence: `FEEDBACK_MAX_CHARS` holds about that many."""


class _Seen:
    """The conversation's chunks with lazily built lookups, shared by every citation of one answer."""

    def __init__(self, seen: Mapping[str, Chunk]) -> None:
        self.chunks = seen
        self._by_position: dict[tuple[str, int], Chunk] | None = None
        self.closest_left = _CLOSEST_PER_ANSWER

    def closest(self, quote: str, chunk: Chunk) -> str | None:
        """The closest sentence, for the first few failed quotes only: feedback has room for no more."""
        if self.closest_left <= 0:
            return None
        self.closest_left -= 1
        return closest_sentence(quote, chunk.urtext)

    def neighbours(self, chunk: Chunk) -> list[Chunk]:
        if self._by_position is None:
            self._by_position = {(c.document_id, c.sequence_number): c for c in self.chunks.values()}
        found = []
        for step in (-1, 1):
            neighbour = self._by_position.get((chunk.document_id, chunk.sequence_number + step))
            if neighbour is not None and neighbour.id != chunk.id:
                found.append(neighbour)
        return found

    def elsewhere(self, chunk: Chunk, quote: str) -> str | None:
        """The id of another seen chunk the quote stands in, if any."""
        for chunk_id, other in self.chunks.items():
            if chunk_id != chunk.id and find_quote(quote, other.urtext) is not None:
                return chunk_id
        return None


def _joined(first: Chunk, second: Chunk) -> str:
    """Two consecutive chunks' source text as one, dropping their overlap when offsets show it."""
    if (
        first.start_char is not None
        and first.end_char is not None
        and second.start_char is not None
        and first.end_char - first.start_char == len(first.urtext)
        and first.start_char <= second.start_char <= first.end_char
    ):
        return first.urtext + second.urtext[first.end_char - second.start_char :]
    return first.urtext + '\n' + second.urtext


def _in_other_chunk(chunk_id: str) -> str:
    return f'the quote is not in this chunk but in chunk {echo(chunk_id)}: cite that id'


def _check_citation(
    citation: Citation, seen: _Seen, claim: int, index: int, min_quote_chars: int
) -> CitationSource | CitationProblem:
    chunk = seen.chunks.get(citation.chunk_id)

    def problem(reason: str, closest: str | None = None) -> CitationProblem:
        return CitationProblem(claim, index, citation.chunk_id, reason, closest)

    if chunk is None:
        return problem(NOT_SEEN)
    reason = _precheck(citation.quote, min_quote_chars)
    if reason is not None:
        return problem(reason)
    match = find_quote(citation.quote, chunk.urtext)
    if match is not None:
        return _source(chunk, match)
    neighbours = seen.neighbours(chunk)
    for neighbour in neighbours:
        if find_quote(citation.quote, neighbour.urtext) is not None:  # whole in the next chunk: not a stitch
            return problem(_in_other_chunk(neighbour.id))
    for neighbour in neighbours:
        first, second = (chunk, neighbour) if neighbour.sequence_number > chunk.sequence_number else (neighbour, chunk)
        if find_quote(citation.quote, _joined(first, second)) is not None:
            return problem(
                f'{SPANS_TWO_CHUNKS} ({echo(first.id)} and {echo(second.id)}): '
                'cite each part from its own chunk in a separate citation'
            )
    other = seen.elsewhere(chunk, citation.quote)
    if other is not None:
        return problem(_in_other_chunk(other))
    return problem(_NOT_IN_CHUNK, seen.closest(citation.quote, chunk))


def _status_problems(answer: GroundedAnswer, valid_chunks: list[str]) -> list[CitationProblem]:
    problems = []
    if answer.status == 'answered' and not answer.claims:
        problems.append(CitationProblem(None, None, None, "status 'answered' needs at least one claim with a citation"))
    if answer.status == 'conflicting_evidence' and len(set(valid_chunks)) < 2:
        problems.append(
            CitationProblem(
                None,
                None,
                None,
                "status 'conflicting_evidence' needs valid citations from at least two different chunks, "
                f'one for each side; it has {len(set(valid_chunks))}',
            )
        )
    if answer.status == 'needs_clarification' and not (answer.clarifying_question or '').strip():
        problems.append(CitationProblem(None, None, None, "status 'needs_clarification' needs a clarifying_question"))
    return problems


def verify_answer(
    answer: GroundedAnswer, seen: Mapping[str, Chunk], *, min_quote_chars: int = DEFAULT_MIN_QUOTE_CHARS
) -> Verification:
    """Check every citation of ``answer`` against ``seen`` and apply the status rules.

    ``seen`` maps chunk id to chunk for the in-scope chunks that reached the model in this
    conversation. Every claim, whatever the status, needs at least one citation, and every
    citation must verify; see the module docs of `toolish_rag.citations._quotes` for what a match
    is. Any ``source`` the model sent is discarded. ``answer`` is not changed.
    """
    index = _Seen(seen)
    problems: list[CitationProblem] = []
    valid_chunks: list[str] = []
    claims: list[Claim] = []
    for claim_number, claim in enumerate(answer.claims):
        if not claim.citations:
            problems.append(
                CitationProblem(claim_number, None, None, 'the claim has no citation: cite at least one exact quote')
            )
        citations: list[Citation] = []
        for citation_number, citation in enumerate(claim.citations):
            checked = _check_citation(citation, index, claim_number, citation_number, min_quote_chars)
            if isinstance(checked, CitationProblem):
                problems.append(checked)
                citations.append(citation.model_copy(update={'source': None}))
            else:
                valid_chunks.append(citation.chunk_id)
                citations.append(citation.model_copy(update={'source': checked}))
        claims.append(claim.model_copy(update={'citations': citations}))
    problems.extend(_status_problems(answer, valid_chunks))
    return Verification(answer.model_copy(update={'claims': claims}), tuple(problems), min_quote_chars)
