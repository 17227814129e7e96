"""Showing a grounded answer: Markdown with numbered citations and exact quotes (all source text
escaped), and stable JSON. See docs/grounded.md#rendering-safely.
"""

from __future__ import annotations

import json
import re
import string
from typing import Any

from pydantic import BaseModel

from ..citations._model import Citation, CitationSource, GroundedAnswer, page_and_paragraph
from ._ask import AskResult

__all__ = ['escape_markdown', 'render_markdown', 'to_json']

_PUNCTUATION = frozenset(string.punctuation)
_SPACE = re.compile(r'\s+')
_STATUS_LINES = {
    'insufficient_evidence': '**The documents do not fully answer this.**',
    'conflicting_evidence': '**The documents disagree.**',
    'needs_clarification': '**A clarification is needed.**',
}


def escape_markdown(text: str) -> str:
    """``text`` as inline Markdown that renders as exactly these characters, on one line."""
    flat = _SPACE.sub(' ', text).strip()
    return ''.join('\\' + ch if ch in _PUNCTUATION else ch for ch in flat)


def _code(text: str) -> str:
    """``text`` in a code span: shown verbatim, never a link (the fence outgrows any backtick run inside)."""
    flat = _SPACE.sub(' ', text).strip()
    longest = max((len(run) for run in re.findall('`+', flat)), default=0)
    fence = '`' * (longest + 1)
    pad = ' ' if flat.startswith('`') or flat.endswith('`') else ''
    return f'{fence}{pad}{flat}{pad}{fence}'


def _where(source: CitationSource) -> str:
    path = [s for s in source.section_path if s != source.document_title]
    place = ' > '.join(escape_markdown(p) for p in [source.document_title, *path])
    return f'*{place}*{page_and_paragraph(source)} — {_code(source.document_uri)}'


def _source_line(number: int, citation: Citation) -> str:
    quote = f'“{escape_markdown(citation.quote)}”'
    if citation.source is None:
        return f'{number}. {quote} — chunk {_code(citation.chunk_id)} (not verified)'
    return f'{number}. {quote} — {_where(citation.source)}'


def _answer_markdown(answer: GroundedAnswer) -> str:
    numbers: dict[tuple[str, str], int] = {}
    listed: list[Citation] = []
    blocks: list[str] = []
    if answer.status in _STATUS_LINES:
        blocks.append(_STATUS_LINES[answer.status])
    if answer.status == 'needs_clarification' and answer.clarifying_question:
        blocks.append(escape_markdown(answer.clarifying_question))
    for claim in answer.claims:
        marks = []
        for citation in claim.citations:
            key = (citation.chunk_id, citation.quote)
            if key not in numbers:
                numbers[key] = len(numbers) + 1
                listed.append(citation)
            marks.append(f'[{numbers[key]}]')
        blocks.append(f'{escape_markdown(claim.text)} {"".join(marks)}'.rstrip())
    if answer.missing:
        blocks.append(f'Not covered by the documents: {escape_markdown(answer.missing)}')
    if listed:
        lines = [_source_line(n, c) for n, c in enumerate(listed, 1)]
        blocks.append('**Sources**\n\n' + '\n'.join(lines))
    return '\n\n'.join(blocks)


def _result_markdown(result: AskResult) -> str:
    blocks = [_answer_markdown(result.answer)]
    if result.problems:
        blocks.append('**Why no grounded answer**\n\n' + '\n'.join(f'- {escape_markdown(p)}' for p in result.problems))
    if result.semantic is not None:
        report = result.semantic
        head = f'**Semantic check** ({escape_markdown(report.model)}, a model judgement, not a proof)'
        if report.error is not None:
            lines = [f'- the check failed: {escape_markdown(report.error)}']
        else:
            lines = [
                f'- claim {v.claim + 1}: {v.verdict.replace("_", " ")}'
                + (f' — {escape_markdown(v.reason)}' if v.reason else '')
                for v in report.verdicts
            ]
        blocks.append(head + '\n\n' + '\n'.join(lines))
    return '\n\n'.join(blocks)


def render_markdown(answer_or_result: GroundedAnswer | AskResult) -> str:
    """Markdown: the claims with numbered citations ``[1]``, then the sources with their exact quotes.

    For an `AskResult`, also why it is not grounded (if so) and the semantic check (if run).
    """
    if isinstance(answer_or_result, AskResult):
        return _result_markdown(answer_or_result)
    return _answer_markdown(answer_or_result)


def to_json(answer_or_result: GroundedAnswer | AskResult, *, indent: int | None = 2) -> str:
    """The answer or result as JSON, sources included; keys in field order (stable across runs)."""
    data: dict[str, Any] = _dump(answer_or_result)
    return json.dumps(data, indent=indent, ensure_ascii=False)


def _dump(model: BaseModel) -> dict[str, Any]:
    return model.model_dump(mode='json')
