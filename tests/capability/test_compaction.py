"""Compaction: earlier questions' evidence shrinks to receipts in what the model is sent, cited chunks stay whole.

A conversation of four turns, one fresh capability per turn (as a chat app builds one per run):
a citation of a chunk shown three turns earlier still verifies, `all_messages()` keeps every
return whole, and between boundaries every request begins with the previous one.
"""

from __future__ import annotations

import itertools
from typing import Any

from pydantic_ai.messages import ModelMessage

from tests.capability.cap_helpers import acme, evidence_parts, evidence_texts, grounded_agent
from tests.grounded.grounded_helpers import (
    ACME_0,
    ACME_0_ID,
    ACME_1,
    ACME_1_ID,
    ACME_2,
    ACME_2_ID,
    UNRELATED,
    Scripted,
    answer,
    build_store,
    chunk_id,
    cite,
    search,
)
from toolish_rag.stores import InMemoryStore

CANTEEN_ID = chunk_id('file:///acme/canteen.md', 0)


def cited(chunk: str, quote: str) -> dict[str, Any]:
    return answer('answered', ('A claim.', [cite(chunk, quote)]))


async def converse(
    store: InMemoryStore, turns: list[list[Any]], **options: Any
) -> tuple[list[ModelMessage], list[Scripted]]:
    history: list[ModelMessage] = []
    scripts = []
    for n, steps in enumerate(turns, start=1):
        script = Scripted(steps)
        result = await grounded_agent(script, acme(store).capability(**options)).run(
            f'Question {n}?', message_history=history
        )
        history = result.all_messages()
        scripts.append(script)
    return history, scripts


FOUR_TURNS = [
    [
        search('refunds paid within 30 days', top_k=2),
        cited(ACME_0_ID, 'Refunds are paid within 30 days of the request.'),
    ],
    [search('store credit expires branch', top_k=1), cited(ACME_2_ID, 'Store credit never expires')],
    [search('cafeteria lunch noon weekdays', top_k=1), cited(CANTEEN_ID, 'The cafeteria serves lunch between noon')],
    [cited(ACME_0_ID, 'Customers must keep the original receipt.')],  # no search: shown three turns earlier
]


async def test_a_chunk_cited_three_turns_earlier_stays_whole_and_verifies() -> None:
    store = await build_store()
    history, scripts = await converse(store, FOUR_TURNS, compaction_budget=0)
    last = scripts[-1].requests[0]
    sent = '\n'.join(evidence_texts(last))
    assert sent.count('[Compacted') == 3  # every earlier turn's search, as a receipt
    assert ACME_0 in sent  # cited in turn 1: kept whole, citable by its id
    assert ACME_1 not in sent and ACME_1_ID in sent  # not cited: named in the receipt, its text gone
    assert ACME_2 in sent and UNRELATED in sent  # cited in their own turns
    stored = '\n'.join(evidence_texts(history))
    assert '[Compacted' not in stored and ACME_1 in stored  # all_messages() keeps every return whole
    assert len(scripts[-1].requests) == 1  # the answer verified at once


async def test_without_compaction_every_return_is_sent_whole() -> None:
    store = await build_store()
    _, scripts = await converse(store, FOUR_TURNS, compaction=False)
    sent = '\n'.join(evidence_texts(scripts[-1].requests[0]))
    assert '[Compacted' not in sent and ACME_1 in sent


async def test_a_chunk_on_view_comes_back_as_a_reference_and_one_compacted_away_whole() -> None:
    store = await build_store()
    again = search('refunds paid within 30 days', top_k=2)
    turns = [FOUR_TURNS[0], [again, cited(ACME_0_ID, 'Refunds are paid within 30 days of the request.')]]
    for options, whole_again in (({'compaction': False}, set()), ({'compaction_budget': 0}, {ACME_1_ID})):
        history, _ = await converse(store, turns, **options)
        second = evidence_texts(history)[-1]
        assert f'chunk {ACME_0_ID} | score' in second and 'its text is above' in second  # cited: still on view
        assert (ACME_1 in second) == (ACME_1_ID in whole_again), options
        ret = evidence_parts(history)[-1]
        assert ret.metadata is not None and [h.id for h in ret.metadata['hits']] == [
            ACME_0_ID,
            ACME_1_ID,
        ]  # full records


async def test_between_boundaries_each_request_begins_with_the_previous_one() -> None:
    store = await build_store()
    _, scripts = await converse(store, FOUR_TURNS[:3], compaction_budget=100_000)
    requests = [evidence_texts(r) for s in scripts for r in s.requests]
    for before, after in itertools.pairwise(requests):
        assert after[: len(before)] == before
    _, scripts = await converse(store, FOUR_TURNS[:3], compaction_budget=0)
    turn2, turn3 = scripts[1].requests, scripts[2].requests
    assert turn2[1][: len(turn2[0])] == turn2[0]  # within a turn: append-only
    assert evidence_texts(turn3[0])[0] == evidence_texts(turn2[0])[0]  # turn 1's receipt did not change
