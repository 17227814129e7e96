"""Grounded answers: the capability that verifies a `GroundedAnswer` in a run, and the `ask` loop.

`Grounding` (``rag.grounding()``) lets no unverified answer out of an agent run; `ask`
(``rag.ask(...)``) retrieves, grades, rewrites once, answers and verifies within a fixed budget;
`render_markdown` and `to_json` show the result. The answer model, quote matching and
verification live below the toolset in `toolish_rag.citations` and are re-exported here.
See docs/grounded.md.
"""

from ..citations._model import AnswerStatus, Citation, CitationSource, Claim, GroundedAnswer
from ..citations._quotes import DEFAULT_MIN_QUOTE_CHARS, QuoteMatch, closest_sentence, find_quote, normalise_quote
from ..citations._verify import CitationProblem, UngroundedAnswerError, Verification, check_quote, verify_answer
from ._ask import MAX_MODEL_CALLS, MAX_RETRIEVALS, AskResult, Attempt, ask
from ._capability import Grounding, SemanticListener, seen_chunk_ids
from ._render import escape_markdown, render_markdown, to_json
from ._semantic import SemanticReport, SemanticVerdict, judge_claims

__all__ = [
    'DEFAULT_MIN_QUOTE_CHARS',
    'MAX_MODEL_CALLS',
    'MAX_RETRIEVALS',
    'AnswerStatus',
    'AskResult',
    'Attempt',
    'Citation',
    'CitationProblem',
    'CitationSource',
    'Claim',
    'GroundedAnswer',
    'Grounding',
    'QuoteMatch',
    'SemanticListener',
    'SemanticReport',
    'SemanticVerdict',
    'UngroundedAnswerError',
    'Verification',
    'ask',
    'check_quote',
    'closest_sentence',
    'escape_markdown',
    'find_quote',
    'judge_claims',
    'normalise_quote',
    'render_markdown',
    'seen_chunk_ids',
    'to_json',
    'verify_answer',
]
