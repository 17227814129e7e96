"""Embedding windows: several vectors for a text longer than the embedder reads (MaxP).

See docs/multivector.md.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np
import numpy.typing as npt
from pydantic_ai.embeddings import Embedder, EmbeddingModel

from .writes import PrecomputedVectors, embed_documents

__all__ = [
    'DEFAULT_WINDOWS',
    'EmbeddingWindows',
    'WindowPlan',
    'embed_windows',
    'plan_windows',
    'window_budget',
    'window_texts',
]

_WORD = re.compile(r'\S+')
_BATCH = 256


@dataclass(frozen=True, slots=True)
class EmbeddingWindows:
    """How a long text is cut into embedding windows.

    Args:
        max_tokens: a text longer than this many tokens is windowed. ``None``: what the
            embedder reads (``max_input_tokens()`` less its special tokens); an embedder that
            states no limit reads the whole text, so its texts are never windowed unless
            ``max_tokens`` is given. A text within it has one vector, as without windows.
        window_tokens: tokens per window of a windowed text (at most ``max_tokens``): windows
            shorter than all-MiniLM-L6-v2's 254 measured better on SciFact train
            (docs/multivector.md). ``None``: ``max_tokens``.
        overlap: tokens each window shares with the previous one, so a passage cut by a window
            boundary is still whole in one of them (at most half a window less one).
        max_windows: at most this many rows per text (the text's own vector included); the end
            of a text longer than that is not covered. Bounds the store's size and the write's
            embedding time for pathological inputs.
        scoring: how a record's rows make its vector score. ``'mean_whole_best'`` (default): the
            mean of the whole text's cosine (row 0) and the best row's, so a passage found by
            one window still counts what the chunk as a whole is about; ``'best'``: the best
            row's alone (plain MaxP). A record with one vector scores its cosine either way.
            The mean measured better on all five English collections (docs/fusion.md); it is a
            query-time choice, so switching it needs no re-embedding.
    """

    max_tokens: int | None = None
    window_tokens: int | None = 128
    overlap: int = 32
    max_windows: int = 16
    scoring: Literal['mean_whole_best', 'best'] = 'mean_whole_best'

    def __post_init__(self) -> None:
        if self.max_tokens is not None and self.max_tokens < 8:
            raise ValueError('max_tokens must be at least 8')
        if self.overlap < 0:
            raise ValueError('overlap must not be negative')
        if self.window_tokens is not None and self.window_tokens < 8:
            raise ValueError('window_tokens must be at least 8')
        size = min(t for t in (self.max_tokens, self.window_tokens, 1 << 30) if t is not None)
        if self.overlap >= size // 2:
            raise ValueError('overlap must be less than half of the window')
        if self.max_windows < 1:
            raise ValueError('max_windows must be at least 1')
        if self.scoring not in ('mean_whole_best', 'best'):
            raise ValueError("scoring must be 'mean_whole_best' or 'best'")

    def size(self, reads: int) -> int:
        """Tokens per window for an embedder that reads ``reads`` tokens."""
        return min(reads, self.window_tokens) if self.window_tokens is not None else reads

    def key(self, reads: int | None) -> str:
        """What identifies the windows made for an embedder reading ``reads`` tokens (stored beside them)."""
        size = self.size(reads) if reads is not None else None
        overlap = min(self.overlap, (size or 2) // 2 - 1)
        return f'tokens={reads};window={size};overlap={overlap};max={self.max_windows}'


DEFAULT_WINDOWS = EmbeddingWindows()
"""The stores' default: a text longer than the embedder reads gets windows of 128 tokens, 32 shared."""


@dataclass(frozen=True, slots=True)
class WindowPlan:
    """Per text, the texts of its rows (row 0 the text itself), and the config's key."""

    texts: tuple[tuple[str, ...], ...]
    key: str

    @property
    def counts(self) -> list[int]:
        """Rows per text."""
        return [len(t) for t in self.texts]


def _as_embedder(embedder: Embedder | EmbeddingModel) -> Embedder:
    return embedder if isinstance(embedder, Embedder) else Embedder(embedder)


class _Tokens:
    """Token counting with the embedder's tokenizer, or by words when it has none."""

    def __init__(self, embedder: Embedder) -> None:
        self._embedder = embedder
        self._words: dict[str, int] = {}
        self._special: int | None = None
        self.native = True

    async def special(self) -> int:
        """The special tokens the tokenizer adds to every text (0 without a tokenizer)."""
        await self.count('')
        return self._special or 0

    async def count(self, text: str) -> int:
        """Tokens of ``text`` without the special tokens the tokenizer adds."""
        if self.native:
            try:
                if self._special is None:
                    self._special = await self._embedder.count_tokens('')
                return max(0, await self._embedder.count_tokens(text) - self._special)
            except NotImplementedError:
                self.native = False
        return len(_WORD.findall(text))

    async def word(self, word: str) -> int:
        cached = self._words.get(word)
        if cached is None:
            cached = self._words[word] = max(1, await self.count(word)) if self.native else 1
        return cached


async def _budget(embedder: Embedder, config: EmbeddingWindows, tokens: _Tokens) -> int | None:
    """Tokens per window: the config's, else what the embedder reads less its special tokens."""
    if config.max_tokens is not None:
        return config.max_tokens
    try:
        limit = await embedder.max_input_tokens()
    except NotImplementedError:
        return None
    if limit is None:
        return None
    return max(8, limit - await tokens.special())


async def window_budget(embedder: Embedder | EmbeddingModel, config: EmbeddingWindows) -> int | None:
    """The tokens a text may have before ``config`` windows it with ``embedder``; ``None``: never.

    ``config.max_tokens`` when given, else what the embedder reads less its special tokens; an
    embedder that states no limit (it reads the whole text) gets no windows.
    """
    model = _as_embedder(embedder)
    return await _budget(model, config, _Tokens(model))


async def plan_windows(
    embedder: Embedder | EmbeddingModel, texts: Sequence[str], config: EmbeddingWindows
) -> WindowPlan:
    """The rows of each text (see docs/multivector.md): row 0 the text, then its windows after the first."""
    model = _as_embedder(embedder)
    tokens = _Tokens(model)
    budget = await _budget(model, config, tokens)
    key = config.key(budget)
    if budget is None or config.max_windows == 1:
        return WindowPlan(tuple((t,) for t in texts), key)
    out: list[tuple[str, ...]] = []
    for text in texts:
        out.append((text, *await _windows(text, budget, config, tokens)))
    return WindowPlan(tuple(out), key)


async def _fits(text: str, budget: int, tokens: _Tokens) -> bool:
    # A tokenizer that truncates (sentence-transformers does) reports at most what it reads,
    # so only a count under the budget proves the text fits.
    return await tokens.count(text) < budget if tokens.native else len(_WORD.findall(text)) <= budget


async def _windows(text: str, reads: int, config: EmbeddingWindows, tokens: _Tokens) -> list[str]:
    """The windows of ``text`` after its first (empty when the embedder reads all of it)."""
    if await _fits(text, reads, tokens):
        return []
    spans = [m.span() for m in _WORD.finditer(text)]
    sizes = [await tokens.word(text[a:b]) for a, b in spans]
    if sum(sizes) <= reads:
        return []
    budget = config.size(reads)
    overlap = min(config.overlap, budget // 2 - 1)
    out: list[str] = []
    start = 0
    rows = 1
    while start < len(spans):
        end, used = start, 0
        while end < len(spans) and (end == start or used + sizes[end] <= budget):
            used += sizes[end]
            end += 1
        if start > 0:
            window = await _shrunk(text, spans, start, end, budget, tokens)
            out.append(window)
            rows += 1
        if end >= len(spans) or rows >= config.max_windows:
            break
        # The next window starts so that it shares about ``overlap`` tokens with this one.
        nxt, shared = end, 0
        while nxt - 1 > start and shared + sizes[nxt - 1] <= overlap:
            nxt -= 1
            shared += sizes[nxt]
        start = max(nxt, start + 1)
    return out


async def _shrunk(text: str, spans: list[tuple[int, int]], start: int, end: int, budget: int, tokens: _Tokens) -> str:
    """The window of words ``start:end``, shortened if the tokenizer counts it over ``budget``."""
    window = text[spans[start][0] : spans[end - 1][1]]
    if not tokens.native:
        return window
    while end - start > 1 and await tokens.count(window) > budget:
        end = max(start + 1, end - max(1, (end - start) // 10))
        window = text[spans[start][0] : spans[end - 1][1]]
    return window


async def window_texts(
    embedder: Embedder | EmbeddingModel, texts: Sequence[str], config: EmbeddingWindows
) -> list[list[str]]:
    """Per text, the texts its rows embed: ``[text, window 2, window 3, ...]`` (see docs/multivector.md)."""
    plan = await plan_windows(embedder, texts, config)
    return [list(t) for t in plan.texts]


async def embed_windows(
    embedder: Embedder | EmbeddingModel,
    texts: Sequence[str],
    config: EmbeddingWindows,
    *,
    batch_size: int = _BATCH,
    known: PrecomputedVectors | None = None,
) -> list[npt.NDArray[np.float32]]:
    """Per text a ``(rows, dims)`` float32 array: its own embedding, then its windows' (see docs/multivector.md).

    Every row of every text goes through ``embed_documents`` together, ``batch_size`` texts per
    call, so a write makes as few embedding calls as it would without windows for the same
    number of texts. Rows are the embedder's vectors as returned (not re-normalised); a row whose
    text is in ``known`` takes that vector instead (`toolish_rag.writes.embed_documents`).
    """
    plan = await plan_windows(embedder, texts, config)
    model = _as_embedder(embedder)
    flat = [t for rows in plan.texts for t in rows]
    parts: list[npt.NDArray[np.float32]] = []
    for start in range(0, len(flat), batch_size):
        vectors = await embed_documents(model, flat[start : start + batch_size], known)
        parts.append(np.asarray(vectors, dtype=np.float32))
    matrix = np.vstack(parts) if parts else np.zeros((0, 0), dtype=np.float32)
    out: list[npt.NDArray[np.float32]] = []
    offset = 0
    for count in plan.counts:
        out.append(matrix[offset : offset + count])
        offset += count
    return out
