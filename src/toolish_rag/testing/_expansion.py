"""The kit's `ResultExpander` checks: records by id, ranges, sections, anchored windows, one version.

See docs/custom-store.md ("Expansion: an anchor and its window, from one version").
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest

from ..content import Chunk
from ..filters import Filter, PropertyFilter as F
from ..protocols import ResultExpander
from ..retriever import Retriever
from ..search import ExpansionRequest
from ._corpus import EDGE_FILTERS, conformance_corpus, conformance_entities
from ._kit import KitBase, check
from ._search import FILTER_IDS
from ._writes import WriteChecks
from .contract import expansion_problems, mixed_version_problems


def _differs(call: str, got: Sequence[Chunk], want: Sequence[Chunk], why: str) -> list[str]:
    got_ids, want_ids = [c.id for c in got], [c.id for c in want]
    if got_ids == want_ids:
        return []
    shown = [f'{c.document_id[:8]}#{c.sequence_number}' for c in got]
    return [f'{call} returned {shown}, expected sequence numbers {[c.sequence_number for c in want]}: {why}']


class ExpansionChecks(KitBase):
    """`ResultExpander`: ``get_records`` and ``expand`` against the reference, under scope and writes."""

    @check(ResultExpander, aspect='scope')
    @pytest.mark.parametrize('f', [f for _, f in EDGE_FILTERS], ids=FILTER_IDS)
    async def test_expansion_honours_the_filter_it_receives(self, loaded: Any, f: Filter) -> None:
        problems = await expansion_problems(loaded, f, conformance_corpus(), conformance_entities())
        assert not problems, '\n'.join(problems)

    @check(ResultExpander, aspect='search')
    async def test_get_records_keeps_types_and_text(self, loaded: Any) -> None:
        originals = {r.id: r for r in self.all_records()}
        found = {r.id: r for r in await loaded.get_records([*originals, 'missing-id'])}
        assert set(found) == set(originals), (
            f'get_records(every id and "missing-id") returned extra {sorted(set(found) - set(originals))}, missing '
            f'{sorted(set(originals) - set(found))}: it returns every stored record asked for, and no other'
        )
        for rid, record in found.items():
            WriteChecks.assert_same_record(record, originals[rid], 'through get_records')

    @check(ResultExpander, aspect='search')
    async def test_expand_by_sequence_and_section(self, loaded: Any) -> None:
        doc = conformance_corpus()[1]
        chunks, sections = doc.chunks, doc.sections
        cases: list[tuple[str, ExpansionRequest, Sequence[Chunk], str]] = [
            ('range 2..5', ExpansionRequest(document_id=doc.id, first=2, last=5), chunks[2:6], 'first..last inclusive'),
            ('from 1, limit 2', ExpansionRequest(document_id=doc.id, first=1, limit=2), chunks[1:3], 'at most limit'),
            (
                'the Overview section of the document',
                ExpansionRequest(document_id=doc.id, section_id=sections[0].id),
                [c for c in chunks if sections[0].id in c.section_ids],
                'a section holds the chunks of its subsections too',
            ),
            (
                'section Details alone',
                ExpansionRequest(section_id=sections[1].id),
                chunks[2:5],
                'no document_id needed',
            ),
            (
                'around chunk 3, 2 before and 1 after',
                ExpansionRequest.around_chunk(chunks[3].id, 2, 1),
                chunks[1:5],
                'the sequence neighbours of the anchor as stored',
            ),
            (
                'the section enclosing chunk 3',
                ExpansionRequest.enclosing(chunks[3].id),
                chunks[2:5],
                "a chunk's innermost section",
            ),
            (
                'the parent of section Details',
                ExpansionRequest.enclosing(sections[1].id),
                chunks[:5],
                "a section's parent section",
            ),
            (
                'the whole document around top-level section Overview, limit 3',
                ExpansionRequest.enclosing(sections[0].id, limit=3),
                chunks[:3],
                "a top-level section's enclosure is the document",
            ),
        ]
        problems: list[str] = []
        for what, request, want, why in cases:
            problems += _differs(f'expand({what})', await loaded.expand(request), want, why)
        for nothing in ('ent-alice', 'no-such-record'):
            for request in (ExpansionRequest.enclosing(nothing), ExpansionRequest.around_chunk(nothing, 1, 1)):
                problems += _differs(f'expand({request!r})', await loaded.expand(request), [], 'no chunk, no window')
        assert not problems, '\n'.join(problems)

    @check(ResultExpander, aspect='consistency')
    async def test_expansion_reads_one_version(self, empty: Any) -> None:
        """A writer rewrites a document while readers expand around its chunks (see
        `mixed_version_problems`): each answer must come from one version. A store that reads an
        anchor and its window at two moments returns a new version's chunks around an old anchor."""
        problems = await mixed_version_problems(empty)
        assert not problems, '\n'.join(problems)

    @check(ResultExpander, aspect='retriever')
    async def test_expansion_honours_scope(self, loaded: Any) -> None:
        acme, globex = conformance_corpus()[:2]
        scoped = Retriever(loaded, F.eq('tenant', 'acme'))
        problems: list[str] = []
        foreign = globex.chunks[1].id
        shown = {
            f'get({globex.chunks[0].id!r})': await scoped.get(globex.chunks[0].id),
            f'neighbours({foreign!r}, 2)': await scoped.neighbours(foreign, 2),
            f'section({foreign!r})': await scoped.section(foreign, 50),
            f'section({globex.sections[0].id!r})': await scoped.section(globex.sections[0].id, 50),
        }
        problems += [
            f'under tenant == acme, Retriever.{call} showed {got!r}: a globex record is out of scope, not found'
            for call, got in shown.items()
            if got is not None
        ]
        around = await scoped.neighbours(acme.chunks[3].id, 2)
        got = None if around is None else [c.sequence_number for c in around[1]]
        if got != [1, 2, 3, 4, 5]:
            problems.append(f'under tenant == acme, neighbours of acme chunk 3 (2 each side) were {got}: expected 1..5')
        # A scope that cuts through a document: neighbours and sections skip what is out of scope.
        partial = Retriever(loaded, F.eq('tenant', 'acme') & F.ne('n', 2))
        around = await partial.neighbours(acme.chunks[3].id, 2)
        got = None if around is None else [c.sequence_number for c in around[1]]
        if got != [1, 3, 4, 5]:
            problems.append(f'without chunk 2 in scope, neighbours of acme chunk 3 were {got}: expected [1, 3, 4, 5]')
        view = await partial.section(acme.chunks[3].id, 50)
        got = None if view is None else [c.sequence_number for c in view.chunks]
        if got != [3, 4]:
            problems.append(f'without chunk 2 in scope, the section of acme chunk 3 showed {got}: expected [3, 4]')
        view = await partial.section(acme.sections[1].id, 50)
        got = None if view is None else [c.sequence_number for c in view.chunks]
        if view is None or view.section_id != acme.sections[0].id or got != [0, 1, 3, 4]:
            problems.append(
                f'without chunk 2 in scope, zooming out of section Details showed {got}: expected its parent '
                'Overview, chunks [0, 1, 3, 4]'
            )
        assert not problems, '\n'.join(problems)
