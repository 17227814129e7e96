"""Which languages an embedding model reads: its local model card, else its name (exported by `toolish_rag.embedding`).

See docs/text-analysis.md#the-embedders-languages.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
from pathlib import Path

from pydantic_ai.embeddings import Embedder, EmbeddingModel

from ._hashing_embedder import HashingEmbeddingModel
from ._local_embedder import MINILM_NAMES, bundled_minilm_path, hub_cached

__all__ = ['embedder_languages', 'model_card_languages']

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
    if f'{system}:{candidate}' in MINILM_NAMES and not hub_cached('sentence-transformers/all-MiniLM-L6-v2'):
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
