"""`CrossEncoderReranker` over a tiny real `CrossEncoder` built in the test: no download, no weights shipped.

The model is a one-layer BERT (hidden size 16) with a word-level tokenizer over a small vocabulary,
saved to a temporary folder and loaded by sentence-transformers as any cross-encoder is. Its
weights are random (seeded) with the classifier scaled up so the scores spread, so the relevance
it computes is arbitrary but fixed: the assertions compare the reranker with what
``CrossEncoder.predict`` says directly, which is what the reranker must be a faithful wrapper of.
"""

from __future__ import annotations

import logging
import math
from pathlib import Path
from typing import Any

import pytest
import torch
import transformers
from sentence_transformers import CrossEncoder
from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, processors

from toolish_rag import CrossEncoderReranker, DocumentBuilder, Reranker, SearchHit, ToolishRag
from toolish_rag.embedding import HashingEmbeddingModel
from toolish_rag.rerank import rerank_or_keep
from toolish_rag.stores import InMemoryStore

WORDS = (
    'refund refunds paid days return receipt ship ships parcel parcels shipping working two thirty within the are of'
)
SPECIAL = ['[PAD]', '[UNK]', '[CLS]', '[SEP]', '[MASK]']


def build_cross_encoder(path: Path, *, num_labels: int = 1) -> Path:
    vocab = {w: i for i, w in enumerate([*SPECIAL, *WORDS.split()])}
    tok = Tokenizer(models.WordLevel(vocab, unk_token='[UNK]'))
    tok.normalizer = normalizers.Lowercase()
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    tok.post_processor = processors.TemplateProcessing(
        single='[CLS] $A [SEP]',
        pair='[CLS] $A [SEP] $B:1 [SEP]:1',
        special_tokens=[('[CLS]', vocab['[CLS]']), ('[SEP]', vocab['[SEP]'])],
    )
    fast = transformers.PreTrainedTokenizerFast(  # type: ignore[no-untyped-call]
        tokenizer_object=tok,
        unk_token='[UNK]',
        pad_token='[PAD]',
        cls_token='[CLS]',
        sep_token='[SEP]',
        mask_token='[MASK]',
        model_max_length=128,
    )
    config = transformers.BertConfig(  # type: ignore[call-arg]  # PretrainedConfig takes num_labels
        vocab_size=len(vocab),
        hidden_size=16,
        num_hidden_layers=1,
        num_attention_heads=2,
        intermediate_size=32,
        max_position_embeddings=128,
        num_labels=num_labels,
        initializer_range=0.5,  # large random weights: scores that depend strongly on the text
    )
    torch.manual_seed(7)
    model = transformers.BertForSequenceClassification(config)
    with torch.no_grad():
        model.classifier.weight.mul_(4.0)  # spread the logits: distinct scores, a real order
    model.save_pretrained(path)
    fast.save_pretrained(path)
    return path


@pytest.fixture(scope='module')
def model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_cross_encoder(tmp_path_factory.mktemp('tiny-cross-encoder'))


@pytest.fixture(scope='module')
def cross_encoder(model_dir: Path) -> CrossEncoder:
    model: CrossEncoder = CrossEncoder(str(model_dir), device='cpu')
    return model


TEXTS = [
    'Refunds are paid within thirty days of the return.',
    'Keep the receipt.',
    'Parcels ship within two working days.',
    'Shipping of parcels.',
    'The refund receipt.',
    'Two days.',
]


def hits(texts: list[str] = TEXTS) -> list[SearchHit]:
    b = DocumentBuilder('file:///handbook.md', 'Handbook', indexed_text=None)
    for t in texts:
        b.add_chunk(None, t)
    return [SearchHit(c, 1.0 - i / 10) for i, c in enumerate(b.build().chunks)]


def sigmoid(x: float) -> float:
    return 1 / (1 + math.exp(-x))


def test_it_is_a_reranker(cross_encoder: CrossEncoder) -> None:
    reranker = CrossEncoderReranker(cross_encoder)
    assert isinstance(reranker, Reranker)
    assert reranker.score_meaning == 'a cross-encoder relevance probability'


async def test_order_and_scores_are_the_cross_encoders(cross_encoder: CrossEncoder) -> None:
    query = 'when are refunds paid'
    given = hits()
    logits = cross_encoder.predict(
        [(query, t) for t in TEXTS], activation_fn=torch.nn.Identity(), show_progress_bar=False
    ).tolist()
    expected = sorted(range(len(TEXTS)), key=lambda i: -logits[i])
    assert expected != list(range(len(TEXTS)))  # the reranker has something to change
    result = await CrossEncoderReranker(cross_encoder).rerank(query, given)
    assert [h.id for h in result] == [given[i].id for i in expected]
    assert [h.score for h in result] == pytest.approx([sigmoid(logits[i]) for i in expected], abs=1e-5)
    assert all(0.0 <= h.score <= 1.0 for h in result)
    assert [h.record for h in result] == [given[i].record for i in expected]


async def test_a_model_with_logit_output_is_mapped_through_a_sigmoid(model_dir: Path) -> None:
    # Configured to output raw logits: 'sigmoid' still gives a probability; 'model' keeps (and clips) them.
    raw = CrossEncoder(str(model_dir), device='cpu', activation_fn=torch.nn.Identity())
    given = hits()
    logits = raw.predict([('refund', t) for t in TEXTS], show_progress_bar=False).tolist()
    assert any(not 0 <= x <= 1 for x in logits)
    by_sigmoid = {h.id: h.score for h in await CrossEncoderReranker(raw).rerank('refund', given)}
    assert [by_sigmoid[h.id] for h in given] == pytest.approx([sigmoid(x) for x in logits], abs=1e-5)
    by_model = {h.id: h.score for h in await CrossEncoderReranker(raw, activation='model').rerank('refund', given)}
    assert [by_model[h.id] for h in given] == pytest.approx([min(1, max(0, x)) for x in logits], abs=1e-5)


async def test_pairs_are_scored_in_batches_of_batch_size(model_dir: Path) -> None:
    model = CrossEncoder(str(model_dir), device='cpu')
    batches: list[int] = []
    model[0].register_forward_pre_hook(lambda module, args: batches.append(len(args[0]['input_ids'])))
    await CrossEncoderReranker(model, batch_size=4).rerank('refund', hits())
    assert batches == [4, 2]
    batches.clear()
    await CrossEncoderReranker(model, batch_size=32).rerank('refund', hits())
    assert batches == [6]


async def test_texts_are_cut_to_max_chars(cross_encoder: CrossEncoder) -> None:
    long = hits(['refund ' * 50 + 'ship', 'refund ' * 50 + 'parcel'])
    cut = await CrossEncoderReranker(cross_encoder, max_chars=20).rerank('refund', long)
    # Cut to their first 20 characters, the two texts are the same: the same score.
    assert cut[0].score == pytest.approx(cut[1].score, abs=1e-6)
    whole = await CrossEncoderReranker(cross_encoder).rerank('refund', long)
    assert whole[0].score != pytest.approx(whole[1].score, abs=1e-6)


async def test_a_path_loads_lazily_once_and_is_shared_by_concurrent_calls(model_dir: Path) -> None:
    import asyncio

    reranker = CrossEncoderReranker(str(model_dir), device='cpu')
    results = await asyncio.gather(*(reranker.rerank('refund', hits()) for _ in range(4)))
    assert all([h.id for h in r] == [h.id for h in results[0]] for r in results)
    assert reranker._model is not None  # loaded once, kept


async def test_an_unloadable_or_wrong_model_fails_open_without_logging_texts(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    given = hits()
    two_labels = build_cross_encoder(tmp_path / 'nli', num_labels=2)
    with caplog.at_level(logging.WARNING, logger='toolish_rag.rerank'):
        for source in (str(tmp_path / 'missing'), str(two_labels)):
            reranker = CrossEncoderReranker(source, device='cpu')
            assert await reranker.rerank('secret query', given) == given
            outcome = await rerank_or_keep(reranker, 'secret query', given)
            assert not outcome.reranked and outcome.hits == given
    assert len(caplog.records) == 4
    assert not any('secret' in r.getMessage() or 'Refunds' in r.getMessage() for r in caplog.records)


async def test_run_tool_returns_the_cross_encoders_best_of_the_candidates(cross_encoder: CrossEncoder) -> None:
    b = DocumentBuilder('file:///handbook.md', 'Handbook', indexed_text=None)
    for t in TEXTS:
        b.add_chunk(None, t)
    store = InMemoryStore(HashingEmbeddingModel(64))
    await store.upsert([b.build()])
    query = 'refunds paid'
    reranker = CrossEncoderReranker(cross_encoder)
    rag: ToolishRag[Any] = ToolishRag(store, reranker=reranker, rerank_candidates=6)
    plain: ToolishRag[Any] = ToolishRag(store)
    candidates = (await plain.run_tool('vector_search', {'query': query, 'top_k': 6})).metadata['hits']
    expected = (await reranker.rerank(query, candidates))[:2]
    result = await rag.run_tool('vector_search', {'query': query, 'top_k': 2})
    got = result.metadata['hits']
    assert [h.id for h in got] == [h.id for h in expected]
    assert [h.score for h in got] == pytest.approx([h.score for h in expected])
    assert 'reranked:' in str(result.return_value).splitlines()[0]
    (definition,) = [d for d in await rag.tool_definitions() if d.name == 'docs_vector_search']
    assert 'the score is a cross-encoder relevance probability' in (definition.description or '')


def test_the_cli_reranks_with_a_cross_encoder_path(
    model_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from toolish_rag.cli import main

    monkeypatch.chdir(tmp_path)
    (tmp_path / 'docs').mkdir()
    (tmp_path / 'docs' / 'handbook.md').write_text('# Refunds\n\n' + '\n\n'.join(TEXTS) + '\n', encoding='utf-8')
    store = ['--store', 'memory:./kb', '--embedder', 'hashing']
    assert main(['ingest', 'docs', *store]) == 0
    rerank = ['--reranker', str(model_dir), '--rerank-candidates', '4']
    assert main(['search', 'refunds paid', '--tool', 'vector', *store]) == 0
    assert ', reranked:' not in capsys.readouterr().out
    assert main(['search', 'refunds paid', '--tool', 'vector', *store, *rerank]) == 0
    assert "Vector search results for 'refunds paid', reranked:" in capsys.readouterr().out
    assert main(['tools', *store, *rerank]) == 0
    assert 'the score is a cross-encoder relevance probability' in capsys.readouterr().out
    with pytest.raises(SystemExit, match='--rerank-candidates'):
        main(['search', 'refunds', *store, '--reranker', str(model_dir), '--rerank-candidates', '0'])
    # A model that cannot load stops the command with the reason, instead of every search failing open.
    with pytest.raises(SystemExit, match=r'--reranker .* cannot be loaded'):
        main(['search', 'refunds', *store, '--reranker', str(tmp_path / 'no-such-model')])
