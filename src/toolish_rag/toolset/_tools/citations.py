"""The citation tool: ``verify_citations`` checks each quote of a draft answer in the chunk it cites.

The verdict is `toolish_rag.citations._verify.verify_answer`'s (the grounding capability's), run on
chunks fetched through the run's scoped `Retriever`; advisory only. See docs/grounded.md.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from functools import partial
from typing import Annotated, Any, TypeAlias

from pydantic import Field, TypeAdapter, WithJsonSchema

from ..._record_text import field_text
from ...citations._model import MAX_CLAIMS, Citation, CitationSource, Claim, GroundedAnswer, page_and_paragraph
from ...citations._quotes import DEFAULT_MIN_QUOTE_CHARS, find_quote
from ...citations._verify import NOT_SEEN, CitationProblem, Verification, normalise_chunk_id, verify_answer
from ...content import Chunk
from ...errors import InvalidRequestError, echo
from ...retriever import Retriever
from ...search import SearchHit
from .._arguments import StringArgument, id_argument
from .._spec import Declared, Found, Param, ToolEnv, ToolSpec

__all__ = ['MAX_CITATIONS', 'NOT_FOUND', 'SPECS']

MAX_CITATIONS = 30
"""The most citations one call checks: each may cost a store lookup, and each gets a line of the answer."""
NOT_FOUND = 'no chunk with this id was found: cite a chunk id exactly as a search or read result shows it'
"""The one reason for a cited id that is missing, outside the run's scope, or not a chunk's."""
_MAX_SHOWN_CHARS = 200
"""A title, section path or uri longer than this is cut in a location (they come from the documents)."""

_Looked: TypeAlias = Chunk | str | InvalidRequestError
"""What a cited id (as sent) came to: its in-scope chunk, the id looked up in vain, or why it is no id."""


async def _verify(r: Retriever, *, claims: Sequence[Claim], check_id: StringArgument) -> Found:
    """Check every citation of ``claims`` in the run's scope: one line per citation, and the chunks checked.

    ``check_id`` is the toolset's check of a chunk id argument (stripped, non-empty, bounded),
    applied to each cited id as the other tools apply it to theirs. Hits: each cited chunk found
    (score 1.0 when a quote verified in it, else 0.0) and each neighbour the answer names.
    """
    total = _check_call(claims)
    ids = await _fetch(r, _ids(claims, check_id))
    found = {c.id: c for c in ids.values() if isinstance(c, Chunk)}
    around = await _around_misses(r, claims, ids, found)
    answer = GroundedAnswer(status='insufficient_evidence', claims=[_looked_up(c, ids) for c in claims])
    # The status only sets answer-level rules, which are the final answer's business, not this tool's.
    verification = verify_answer(answer, {**around, **found}, min_quote_chars=DEFAULT_MIN_QUOTE_CHARS)
    problems = {(p.claim, p.citation): _reported(p, claims, ids) for p in verification.problems if p.claim is not None}
    verified = {c.chunk_id for c in verification.answer.citations if c.source is not None}
    named = [c for c in around.values() if c.id not in found and any(echo(c.id) in p.reason for p in problems.values())]
    hits = [SearchHit(c, 1.0 if c.id in verified else 0.0) for c in [*found.values(), *named]]
    return Found(_render(verification, problems, total, [c.id for c in named]), hits)


def _check_call(claims: Sequence[Claim]) -> int:
    """The number of citations, or `InvalidRequestError` for a call that cannot be checked as sent."""
    if not claims:
        raise InvalidRequestError(
            'claims is empty: send the claims of your draft answer, each with its citations '
            '(a chunk id and an exact quote from that chunk)'
        )
    total = sum(len(c.citations) for c in claims)
    if total > MAX_CITATIONS:
        raise InvalidRequestError(
            f'{total} citations are more than one call checks ({MAX_CITATIONS}): '
            f'send the claims over several calls of at most {MAX_CITATIONS} citations each'
        )
    return total


def _ids(claims: Sequence[Claim], check_id: StringArgument) -> dict[str, str | InvalidRequestError]:
    ids: dict[str, str | InvalidRequestError] = {}
    for citation in (c for claim in claims for c in claim.citations):
        try:
            ids[citation.chunk_id] = check_id.check(normalise_chunk_id(citation.chunk_id))
        except InvalidRequestError as e:
            ids[citation.chunk_id] = e
    return ids


async def _fetch(r: Retriever, ids: Mapping[str, str | InvalidRequestError]) -> dict[str, _Looked]:
    """Each cited id (as sent) looked up in the run's scope, once per distinct id."""
    fetched: dict[str, _Looked] = {}
    for chunk_id in dict.fromkeys(i for i in ids.values() if isinstance(i, str)):
        try:
            record = await r.get(chunk_id)
        except InvalidRequestError as e:  # a control character or surrogate in the id: said of the id alone
            fetched[chunk_id] = e
            continue
        fetched[chunk_id] = record if isinstance(record, Chunk) else chunk_id
    return {raw: fetched[i] if isinstance(i, str) else i for raw, i in ids.items()}


async def _around_misses(
    r: Retriever, claims: Sequence[Claim], ids: Mapping[str, _Looked], found: Mapping[str, Chunk]
) -> dict[str, Chunk]:
    """The neighbours of each cited chunk that does not hold a quote cited from it (its id at the top)."""
    missed = dict.fromkeys(
        looked.id
        for c in (c for claim in claims for c in claim.citations)
        if isinstance(looked := ids[c.chunk_id], Chunk) and find_quote(c.quote, looked.urtext) is None
    )
    around: dict[str, Chunk] = {}
    for chunk_id in missed:
        window = await r.neighbours(chunk_id, 1)
        if window is not None:
            around.update((c.id, c) for c in window[1] if c.id not in found)
    return around


def _looked_up(claim: Claim, ids: Mapping[str, _Looked]) -> Claim:
    """``claim`` with each found citation's id as the store has it (stripped), the rest as sent."""

    def citation(c: Citation) -> Citation:
        looked = ids[c.chunk_id]
        return c.model_copy(update={'chunk_id': looked.id if isinstance(looked, Chunk) else c.chunk_id})

    return claim.model_copy(update={'citations': [citation(c) for c in claim.citations]})


def _reported(problem: CitationProblem, claims: Sequence[Claim], ids: Mapping[str, _Looked]) -> CitationProblem:
    """``problem`` as this tool says it: an id not fetched is "not found" (or refused for its characters)."""
    if problem.reason != NOT_SEEN or problem.claim is None or problem.citation is None:
        return problem
    looked = ids[claims[problem.claim].citations[problem.citation].chunk_id]
    return replace(problem, reason=str(looked) if isinstance(looked, InvalidRequestError) else NOT_FOUND)


def _cut(text: str) -> str:
    text = field_text(text)
    return text if len(text) <= _MAX_SHOWN_CHARS else text[:_MAX_SHOWN_CHARS] + '…'


def _located(source: CitationSource) -> str:
    path = [s for s in source.section_path if s != source.document_title]
    place = ' > '.join(_cut(p) for p in [source.document_title, *path])
    where = f'characters {source.chunk_start}-{source.chunk_end} of the chunk'
    if source.start_char is not None and source.end_char is not None:
        where += f' ({source.start_char}-{source.end_char} of the document)'
    return f'verified: it stands in {place} ({_cut(source.document_uri)}), {where}{page_and_paragraph(source)}.'


def _render(
    verification: Verification,
    problems: Mapping[tuple[int, int | None], CitationProblem],
    total: int,
    named: Sequence[str],
) -> str:
    """A heading with the count, a line per citation (and per claim without any) in order, what to do next.

    ``named``: the neighbours a problem names as the chunk to cite instead, which the model may not have read.
    """
    lines: list[str] = []
    verified = 0
    for n, claim in enumerate(verification.answer.claims):
        if (n, None) in problems:  # a claim without citations
            lines.append(problems[n, None].message())
        for m, citation in enumerate(claim.citations):
            if citation.source is None:
                lines.append(problems[n, m].message())
                continue
            verified += 1
            lines.append(
                f'Claim {n + 1}, citation {m + 1} (chunk {echo(citation.chunk_id)}): {_located(citation.source)}'
            )
    head = f'Citation check: {verified} of {total} citations verified.'
    if problems:
        tail = (
            'Fix each citation marked above before answering: copy the quote exactly from the chunk whose id it '
            'cites (or cite the chunk named), or drop the claim; then check again.'
        )
    else:
        tail = 'Every quote stands in the chunk it cites.'
    if not named:
        return '\n'.join([head, *lines, tail])
    chunks, it = ', '.join(f'chunk {echo(i)}' for i in named), 'it' if len(named) == 1 else 'them'
    read_first = (
        f'Read {chunks} first (broaden_chunk on the chunk you cited shows {it}), then cite {it}: a chunk counts '
        'as evidence only once a search or read has shown it to you.'
    )
    return '\n'.join([head, *lines, tail, read_first])


_CHUNK_ID = id_argument('chunk id')


_DESCRIBED = frozenset({'quote'})
"""The one nested field whose description says more than the tool's does (copy the quote, do not paraphrase)."""


def _inlined(node: Any, defs: Mapping[str, Any]) -> Any:
    """``node`` with each ``$ref`` replaced by its definition, less the model's title and description (and the
    descriptions of fields the tool's description covers)."""
    if isinstance(node, list):
        return [_inlined(n, defs) for n in node]
    if not isinstance(node, dict):
        return node
    if '$ref' in node:
        target = defs[node['$ref'].rsplit('/', 1)[-1]]
        return _inlined({k: v for k, v in target.items() if k not in ('title', 'description')}, defs)
    inlined = {k: _inlined(v, defs) for k, v in node.items() if k != 'properties'}
    if isinstance(node.get('properties'), dict):
        inlined['properties'] = {
            name: _inlined({k: v for k, v in spec.items() if name in _DESCRIBED or k != 'description'}, defs)
            for name, spec in node['properties'].items()
        }
    return inlined


def _claims_schema() -> dict[str, Any]:
    """The ``claims`` parameter's schema: the `Claim` model's own (its fields, caps and descriptions), inlined.

    The models' descriptions repeat their fields' and the tool's, and ``$defs`` costs its references:
    every request carries this schema, so it says each thing once. Validation is still the models'.
    """
    schema = TypeAdapter(list[Claim]).json_schema()
    defs = schema.pop('$defs', {})
    return {**_inlined(schema, defs), 'maxItems': MAX_CLAIMS, 'description': "Your draft answer's claims."}


# The claims' nested strings (chunk ids, quotes) are bounded by the `Claim` model's own ``max_length``s.
Claims = Annotated[list[Claim], Field(max_length=MAX_CLAIMS), WithJsonSchema(_claims_schema())]


def _verify_tool(env: ToolEnv) -> Declared:
    return Declared((Param('claims', Claims),), partial(_verify, check_id=_CHUNK_ID))


def _describe(store: object, settings: object) -> str:
    return (
        'Check the citations of a draft answer before you give it: for each (chunk id, exact quote) it says '
        'whether the quote stands in that chunk and where (document, section, offsets, page), or why not, with '
        'the chunk to cite instead or the closest sentence. Whitespace, quote marks and dashes may differ; '
        f'quotes under {DEFAULT_MIN_QUOTE_CHARS} characters do not count. At most {MAX_CITATIONS} citations per call.'
    )


SPECS: tuple[ToolSpec, ...] = (
    ToolSpec(
        name='verify_citations',
        offered=lambda caps, settings: caps.expand,
        describe=_describe,
        build=_verify_tool,
    ),
)
"""The citation tool's spec."""
