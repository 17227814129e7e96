"""Citations: the grounded-answer model, exact-quote matching and deterministic verification.

The layer below the toolset: `GroundedAnswer` and its claims (`model`), finding a quote in a
chunk (`quotes`), and checking an answer against the chunks a conversation saw (`verify`). The
`verify_citations` tool and `toolish_rag.grounded` (the capability and ``ask``) build on it.
See docs/grounded.md.
"""

from ._model import MAX_CLAIMS, MAX_QUOTE_CHARS, AnswerStatus, Citation, CitationSource, Claim, GroundedAnswer
from ._quotes import DEFAULT_MIN_QUOTE_CHARS, QuoteMatch, closest_sentence, find_quote, normalise_quote
from ._verify import NOT_SEEN, CitationProblem, UngroundedAnswerError, Verification, check_quote, verify_answer

__all__ = [
    'DEFAULT_MIN_QUOTE_CHARS',
    'MAX_CLAIMS',
    'MAX_QUOTE_CHARS',
    'NOT_SEEN',
    'AnswerStatus',
    'Citation',
    'CitationProblem',
    'CitationSource',
    'Claim',
    'GroundedAnswer',
    'QuoteMatch',
    'UngroundedAnswerError',
    'Verification',
    'check_quote',
    'closest_sentence',
    'find_quote',
    'normalise_quote',
    'verify_answer',
]
