"""Grounded answers: exact-quote citations verified against the store, and a bounded `ask` loop.

* `GroundedAnswer` is an output type a model fills with claims, each citing chunk ids and exact
  quotes (`model`);
* `verify_answer` checks it deterministically: every cited chunk reached the model in this
  conversation and is in scope, every quote stands in its chunk (`quotes`: only whitespace, quote
  marks and dashes are normalised), and the status rules hold (`verify`);
* `Grounding` is the pydantic-ai capability that runs that check on an agent's output and asks
  the model to repair a failed answer, or raises `UngroundedAnswerError` (``rag.grounding()``);
* `ask` retrieves, grades, rewrites once if needed, answers and verifies, within a fixed budget
  of model calls (``rag.ask(...)``); `render_markdown` and `to_json` show the result.
"""

from ..citations.model import AnswerStatus, Citation, CitationSource, Claim, GroundedAnswer
from ..citations.quotes import DEFAULT_MIN_QUOTE_CHARS, QuoteMatch, closest_sentence, find_quote, normalise_quote
from ..citations.verify import CitationProblem, UngroundedAnswerError, Verification, check_quote, verify_answer
from .ask import MAX_MODEL_CALLS, MAX_RETRIEVALS, AskResult, Attempt, ask
from .capability import Grounding, SemanticListener, seen_chunk_ids
from .render import escape_markdown, render_markdown, to_json
from .semantic import SemanticReport, SemanticVerdict, judge_claims

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
