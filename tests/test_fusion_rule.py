"""The fusion rule's properties (any method, any scores) and the per-query language weighting (issue 30 item 2).

`toolish_rag.fusion.fuse` must behave like a ranking function whatever the two legs hold: the
same ranking twice gives that ranking back, a leg with nothing leaves the other's order, scores
stay in [0, 1], ties are broken by id so the result does not depend on input order. The vector
leg's weight follows the language each query is written in (`FusionConfig.for_query`), so a store
holding several languages weighs each query for itself. docs/fusion.md#a-leg-that-cannot-read-the-query.
"""

from __future__ import annotations

import itertools
import random
from collections.abc import Sequence
from typing import Literal, get_args

import pytest
from hypothesis import given, settings, strategies as st

from toolish_rag import DocumentBuilder, FusionConfig
from toolish_rag.content import Chunk
from toolish_rag.embedding import HashingEmbeddingModel
from toolish_rag.fusion import UNCOVERED_VECTOR_WEIGHT, fuse
from toolish_rag.retriever import Retriever
from toolish_rag.search import SearchHit
from toolish_rag.stores import InMemoryStore

Method = Literal['zscore', 'minmax', 'dbsf', 'rrf']
METHODS: tuple[Method, ...] = get_args(Method)
ENGLISH = frozenset({'en'})


def _chunk(rid: str) -> Chunk:
    return Chunk(
        id=rid,
        text=rid,
        urtext=rid,
        chunk_index=0,
        sequence_number=0,
        metadata={},
        document_id=rid,
        document_uri=f'file:///{rid}',
        document_title=rid,
    )


def _hits(ids: Sequence[str], scores: Sequence[float]) -> list[SearchHit]:
    ranked = sorted(zip(ids, scores, strict=True), key=lambda pair: -pair[1])
    return [SearchHit(_chunk(rid), score) for rid, score in ranked]


_scores = st.integers(min_value=-4000, max_value=4000).map(
    lambda n: n / 8
)  # distinct scores stay distinct after scaling
_leg = st.lists(
    st.tuples(st.sampled_from([f'r{i:02d}' for i in range(40)]), _scores), max_size=25, unique_by=lambda p: p[0]
)
_config = st.builds(
    FusionConfig,
    method=st.sampled_from(['zscore', 'minmax', 'dbsf', 'rrf']),
    vector_weight=st.floats(min_value=0.01, max_value=1.0),
    text_weight=st.floats(min_value=0.01, max_value=1.0),
)


def _leg_hits(pairs: list[tuple[str, float]]) -> list[SearchHit]:
    return _hits([p[0] for p in pairs], [p[1] for p in pairs])


@settings(max_examples=80, deadline=None)
@given(vector=_leg, text=_leg, config=_config, top_k=st.integers(min_value=1, max_value=60))
def test_fused_scores_lie_in_0_1_and_each_record_appears_once(
    vector: list[tuple[str, float]], text: list[tuple[str, float]], config: FusionConfig, top_k: int
) -> None:
    fused = fuse(_leg_hits(vector), _leg_hits(text), top_k, config)
    ids = [h.id for h in fused]
    assert len(ids) == len(set(ids)) == min(top_k, len({p[0] for p in vector} | {p[0] for p in text}))
    assert all(0.0 <= h.score <= 1.0 for h in fused)
    assert [h.score for h in fused] == sorted((h.score for h in fused), reverse=True)


@settings(max_examples=60, deadline=None)
@given(leg=_leg, config=_config)
def test_the_same_ranking_twice_keeps_its_order(leg: list[tuple[str, float]], config: FusionConfig) -> None:
    hits = _leg_hits(leg)
    fused = fuse(hits, hits, len(hits) or 1, config)
    position = {h.id: i for i, h in enumerate(hits)}
    score = {h.id: h.score for h in hits}
    # Never a worse leg score above a better one (clipping methods may tie the best hits: then by id).
    for above, below in itertools.pairwise(fused):
        assert score[above.id] > score[below.id] or (
            score[above.id] == score[below.id] or above.score == below.score
        ), (position[above.id], position[below.id])
    if config.method in ('zscore', 'minmax', 'rrf') and len({s for s in score.values()}) == len(score):
        assert [h.id for h in fused] == [h.id for h in hits]


@pytest.mark.parametrize('method', METHODS)
@pytest.mark.parametrize('empty', ['vector', 'text'])
def test_a_leg_with_no_hits_leaves_the_other_legs_order(method: Method, empty: str) -> None:
    rng = random.Random(7)
    ids = [f'r{i}' for i in range(30)]
    hits = _hits(ids, [rng.uniform(-5, 5) for _ in ids])
    vector, text = ([], hits) if empty == 'vector' else (hits, [])
    fused = fuse(vector, text, 30, FusionConfig(method=method))
    if method == 'dbsf':  # clipped at mean +- 3 sd: the order holds where the scores are not clipped
        assert [h.score for h in fused] == sorted((h.score for h in fused), reverse=True)
        assert {h.id for h in fused} == set(ids)
    else:
        assert [h.id for h in fused] == [h.id for h in hits]


@pytest.mark.parametrize('method', METHODS)
def test_ties_are_broken_by_id_whatever_the_input_order(method: Method) -> None:
    ids = [f'r{i}' for i in range(12)]
    scores = [1.0, 1.0, 1.0, 0.5, 0.5, 0.2, 0.2, 0.2, 0.2, 0.1, 0.0, 0.0]
    expected = None
    for seed in range(5):
        order = list(range(12))
        random.Random(seed).shuffle(order)
        # Best first, as a store returns them; equal scores in a shuffled order, another one per leg.
        vector = sorted((SearchHit(_chunk(ids[i]), scores[i]) for i in order), key=lambda h: -h.score)
        text = sorted((SearchHit(_chunk(ids[i]), scores[i]) for i in reversed(order)), key=lambda h: -h.score)
        got = [(h.id, h.score) for h in fuse(vector, text, 12, FusionConfig(method=method))]
        expected = expected or got
        assert got == expected


# -- the vector leg weighted by the query's language ------------------------------------------------


def test_a_query_in_a_language_the_embedder_does_not_read_weights_the_vector_leg_down() -> None:
    config = FusionConfig()
    greek = config.for_query('Πόσους πόντους έδωσε η άμυνα των Panthers;', ENGLISH)
    assert greek.vector_weight == UNCOVERED_VECTOR_WEIGHT
    assert greek.text_weight == config.text_weight
    german = config.for_query('Wie viele Punkte hat die Verteidigung der Panthers abgegeben?', ENGLISH)
    assert german.vector_weight == UNCOVERED_VECTOR_WEIGHT
    english = config.for_query('How many points did the Panthers defense surrender?', ENGLISH)
    assert english is config
    assert config.for_query('Πόσους πόντους έδωσε η άμυνα;', frozenset({'en', 'el'})) is config
    assert config.for_query('Πόσους πόντους έδωσε η άμυνα;', None) is config  # unknown coverage: every language


def test_a_query_too_short_to_tell_falls_back_to_the_stores_language() -> None:
    config = FusionConfig()
    assert config.for_query('Berliner Mauer', ENGLISH) is config
    assert config.for_query('Berliner Mauer', ENGLISH, fallback_language='de').vector_weight == UNCOVERED_VECTOR_WEIGHT
    assert config.for_query('Berliner Mauer', ENGLISH, fallback_language='auto') is config  # 'auto' names none
    assert config.for_query('Berliner Mauer', ENGLISH, fallback_language='none') is config


def test_the_text_legs_passages_must_confirm_the_querys_language() -> None:
    config = FusionConfig()
    query = 'Wie viele Punkte hat die Verteidigung der Panthers abgegeben?'
    german = ['Die Verteidigung der Panthers gab in der Saison nur 308 Punkte ab und lag damit auf Platz sechs.']
    english = ['The Panthers defense gave up just 308 points, ranking sixth in the league that season.']
    assert config.for_query(query, ENGLISH, passages=english + german).vector_weight == UNCOVERED_VECTOR_WEIGHT
    assert config.for_query(query, ENGLISH, passages=english) is config  # no passage in the query's language
    assert config.for_query(query, ENGLISH, passages=[]).vector_weight == UNCOVERED_VECTOR_WEIGHT


def test_the_users_statement_of_languages_and_none_win() -> None:
    query = 'Wie viele Punkte hat die Verteidigung der Panthers abgegeben?'
    stated = FusionConfig(vector_languages=frozenset({'en', 'de'}))
    assert stated.for_query(query, ENGLISH) is stated
    never = FusionConfig(uncovered_vector_weight=None)
    assert never.for_query(query, ENGLISH) is never


async def test_hybrid_search_weighs_each_query_of_a_mixed_store_by_its_language() -> None:
    store = InMemoryStore(HashingEmbeddingModel(64))  # language='auto': each chunk in its own language
    texts = {
        'de': 'Die Berliner Mauer wurde im November 1989 geöffnet, nach achtundzwanzig Jahren der Teilung.',
        'en': 'The Berlin Wall was opened in November 1989, after twenty-eight years of division.',
        'el': 'Το Τείχος του Βερολίνου άνοιξε τον Νοέμβριο του 1989, μετά από είκοσι οκτώ χρόνια διαίρεσης.',  # noqa: RUF001
    }
    docs = []
    for code, passage in texts.items():
        b = DocumentBuilder(f'file:///{code}.md', code)
        b.add_chunk(None, passage)
        docs.append(b.build())
    await store.upsert(docs)
    retriever = Retriever(store, fusion=FusionConfig(vector_languages=ENGLISH))
    for query, weight in [
        ('When was the Berlin Wall opened?', 0.45),
        ('Wann wurde die Berliner Mauer geöffnet?', UNCOVERED_VECTOR_WEIGHT),
        ('Πότε άνοιξε το Τείχος του Βερολίνου;', UNCOVERED_VECTOR_WEIGHT),
    ]:
        effective = await retriever.query_fusion(query)
        assert effective.vector_weight == weight, query
        hits = await retriever.hybrid_search(query, 3)
        vector, text = await retriever.vector_search(query, 100), await retriever.text_search(query, 100)
        assert [(h.id, h.score) for h in hits] == [(h.id, h.score) for h in fuse(vector, text, 3, effective)]
