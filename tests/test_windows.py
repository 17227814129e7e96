"""`toolish_rag.windows`: how long texts are cut into embedding windows, and embedded in batches."""

from __future__ import annotations

import itertools
import re
from collections.abc import Sequence

import numpy as np
import pytest
from pydantic_ai.embeddings import EmbeddingResult, EmbeddingSettings
from pydantic_ai.embeddings.result import EmbedInputType

from toolish_rag import EmbeddingWindows, embed_windows, window_texts
from toolish_rag.embedding import HashingEmbeddingModel, resolve_embedder

_WORDS = re.compile(r'\w+')


def _long(n: int) -> str:
    return ' '.join(f'w{i}' for i in range(n))


class _Counting(HashingEmbeddingModel):
    """The hashing embedder, recording how many texts each embedding call carried."""

    def __init__(self) -> None:
        super().__init__(64)
        self.calls: list[int] = []

    async def embed(
        self, inputs: str | Sequence[str], *, input_type: EmbedInputType, settings: EmbeddingSettings | None = None
    ) -> EmbeddingResult:
        self.calls.append(1 if isinstance(inputs, str) else len(inputs))
        return await super().embed(inputs, input_type=input_type, settings=settings)


class _NoTokenizer(HashingEmbeddingModel):
    """An embedder that cannot count tokens (pydantic-ai's default): windows count words."""

    async def count_tokens(self, text: str) -> int:
        raise NotImplementedError


class _WordPieces(HashingEmbeddingModel):
    """An embedder with a tokenizer that, like sentence-transformers', splits words into pieces of
    at most 3 characters, adds 2 special tokens and truncates at its window of 24."""

    async def max_input_tokens(self) -> int | None:
        return 24

    async def count_tokens(self, text: str) -> int:
        pieces = sum(-(-len(w) // 3) for w in text.split())
        return min(24, 2 + pieces)


async def test_a_text_within_the_window_is_one_row_equal_to_its_embedding() -> None:
    model = HashingEmbeddingModel(64)
    config = EmbeddingWindows(max_tokens=20, overlap=4)
    [rows] = await embed_windows(model, ['a short text'], config)
    direct = await resolve_embedder(model).embed_documents(['a short text'])
    assert rows.shape == (1, 64)
    assert rows.dtype == np.float32
    np.testing.assert_array_equal(rows[0], np.asarray(direct.embeddings[0], dtype=np.float32))


async def test_windows_cover_the_text_on_word_boundaries_with_overlap() -> None:
    text = _long(100)
    [rows] = await window_texts(HashingEmbeddingModel(), [text], EmbeddingWindows(max_tokens=20, overlap=5))
    assert rows[0] == text
    windows = rows[1:]
    assert windows, 'a 100-word text in 20-word windows has windows'
    for window in windows:
        assert window in text
        assert len(_WORDS.findall(window)) <= 20
        assert window.split()[0] in text.split() and window.split()[-1] in text.split()  # whole words
    assert windows[-1].endswith('w99')
    # Each window after the first row starts 15 words after the previous window's start.
    starts = [int(w.split()[0][1:]) for w in windows]
    assert starts == list(range(15, 15 * (len(starts) + 1), 15))
    # Consecutive windows share the overlap.
    assert all(set(a.split()) & set(b.split()) for a, b in itertools.pairwise(windows))


async def test_windows_are_deterministic_and_capped() -> None:
    text = _long(400)
    config = EmbeddingWindows(max_tokens=20, overlap=5, max_windows=4)
    first = await window_texts(HashingEmbeddingModel(), [text], config)
    again = await window_texts(HashingEmbeddingModel(), [text], config)
    assert first == again
    assert len(first[0]) == 4


async def test_no_limit_no_windows_unless_asked() -> None:
    # The hashing embedder reads the whole text: its texts need no windows by default.
    text = _long(1000)
    assert await window_texts(HashingEmbeddingModel(), [text], EmbeddingWindows()) == [[text]]


async def test_without_a_tokenizer_windows_count_words() -> None:
    text = ' '.join(f"don't{i}" for i in range(60))  # 2 tokens per word for the hashing tokenizer
    config = EmbeddingWindows(max_tokens=20, overlap=4)
    [by_words] = await window_texts(_NoTokenizer(), [text], config)
    [by_tokens] = await window_texts(HashingEmbeddingModel(), [text], config)
    assert max(len(w.split()) for w in by_words[1:]) == 20
    assert max(len(w.split()) for w in by_tokens[1:]) == 10


async def test_the_embedders_window_and_special_tokens_size_the_windows() -> None:
    model = _WordPieces()
    short = 'abc def'  # 2 pieces + 2 specials: fits
    text = ' '.join('abcdef' for _ in range(40))  # 2 pieces per word
    [short_rows, rows] = await window_texts(model, [short, text], EmbeddingWindows(overlap=4))
    assert short_rows == [short]
    for window in rows[1:]:
        assert await model.count_tokens(window) <= 24  # 22 tokens of text + 2 specials
        assert len(window.split()) == 11 or window is rows[-1]


async def test_all_rows_of_a_write_are_embedded_in_as_few_calls_as_batches() -> None:
    model = _Counting()
    texts = [_long(100), 'short', _long(50)]
    config = EmbeddingWindows(max_tokens=20, overlap=5)
    result = await embed_windows(model, texts, config, batch_size=8)
    total = sum(r.shape[0] for r in result)
    assert [r.shape[0] for r in result] == [len(w) for w in await window_texts(model, texts, config)]
    assert model.calls == [min(8, total - start) for start in range(0, total, 8)]


def test_config_is_validated() -> None:
    with pytest.raises(ValueError):
        EmbeddingWindows(max_tokens=4)
    with pytest.raises(ValueError):
        EmbeddingWindows(max_tokens=20, overlap=10)
    with pytest.raises(ValueError):
        EmbeddingWindows(max_windows=0)
    with pytest.raises(ValueError):
        EmbeddingWindows(overlap=-1)


@pytest.mark.model
async def test_minilm_windows_fit_its_256_word_pieces() -> None:
    embedder = resolve_embedder(None)
    text = ' '.join(f'measurement{i} of plasma-membrane proteins,' for i in range(120))
    [rows] = await window_texts(embedder, [text], EmbeddingWindows())
    assert len(rows) > 3
    limit = await embedder.max_input_tokens()
    assert limit == 256
    counts = [await embedder.count_tokens(w) for w in rows[1:]]
    assert max(counts) <= 130  # windows of 128 word pieces (the default), 2 special tokens
    assert min(counts[:-1]) >= 100  # filled, not cut short
    assert rows[-1].endswith('measurement119 of plasma-membrane proteins,')


async def test_only_texts_the_embedder_truncates_get_windows_of_window_tokens() -> None:
    model = _WordPieces()  # reads 22 tokens of text
    config = EmbeddingWindows(window_tokens=10, overlap=2)
    within = ' '.join('abcdef' for _ in range(10))  # 20 tokens: read whole, one vector
    longer = ' '.join(f'ab{i:02d}' for i in range(40))  # 80 tokens
    [within_rows, rows] = await window_texts(model, [within, longer], config)
    assert within_rows == [within]
    assert len(rows) > 2
    for window in rows[1:]:
        assert await model.count_tokens(window) - 2 <= 10
    assert rows[-1].endswith('ab39')
