"""The kit's ``language='auto'`` check: a store analysing each text in its detected language finds a passage
across languages (docs/text-analysis.md#automatic-language).

Runs on a store whose `text_analyzer` is ``'auto'`` (the default of the stores toolish-rag ships), and is
skipped with the reason otherwise. See docs/text-analysis.md#automatic-language and docs/testing.md.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from .._store_attributes import text_analyzer_of
from ..builder import DocumentBuilder
from ..content import Chunk, Document
from ..protocols import TextSearch
from ..search import SearchRequest
from ._kit import KitBase, check

_TEXTS = {
    'de': (
        'Die Verteidigung der Panthers gab in der gesamten Saison nur 308 Punkte ab und stand damit '
        'auf dem sechsten Platz der Liga. Kawann Short führte das Team bei den Sacks an.'
    ),
    'en': (
        'The Broncos defeated the Carolina Panthers in Super Bowl 50 at the stadium; Peyton '
        'Manning became the oldest quarterback ever to win a championship game.'
    ),
    'de-filler': 'Das Wetter in Hamburg war im Herbst sehr regnerisch und die Straßen blieben oft nass.',
    'en-filler': 'The weather in Leeds was rainy during the autumn and the streets often stayed wet.',
    'zh': '上海是中国最大的城市，也是重要的金融中心和港口。',  # noqa: RUF001 (Chinese punctuation)
    'zh-filler': '长江是亚洲最长的河流，流经多个省份后注入东海。',  # noqa: RUF001
}
_QUERIES = [
    ('Welche Verteidigungen hatten die Panthers?', 'de', 'a German question, German stems'),
    ('Wann gewannen die Broncos gegen die Panthers im Super Bowl?', 'en', 'a German question, an English passage'),
    ('Which quarterbacks won championships?', 'en', 'an English question, English stems'),
    ('How many Sacks did Kawann Short have?', 'de', 'an English question, a German passage'),
    ('"sechsten Platz"', 'de', 'a German phrase'),
    ('中国最大的城市是哪个？', 'zh', 'a Chinese question (bigrams, no spaces)'),  # noqa: RUF001
]


def _documents() -> list[Document]:
    docs = []
    for key, text in _TEXTS.items():
        b = DocumentBuilder(f'file:///auto-language/{key}.md', key)
        b.add_chunk(b.section('Body'), text)
        docs.append(b.build())
    return docs


class AutoLanguageChecks(KitBase):
    """``language='auto'``: German, English and Chinese passages in one store, each found by its questions."""

    @check(TextSearch, aspect='search')
    async def test_auto_language_finds_passages_across_languages(
        self, empty: Any, store_path: Path, embedder: Any
    ) -> None:
        analyzer = text_analyzer_of(empty)
        if not (analyzer is not None and analyzer.auto):
            pytest.skip(f"{type(empty).__name__} does not analyse its text with language='auto' (text_analyzer)")
        await empty.upsert(_documents())
        problems = await _misses(empty, 'a new store')
        try:
            reopened = await self.reopen_store(store_path, embedder)
        except pytest.skip.Exception:
            reopened = None  # not persistent: nothing more to check
        if reopened is not None:
            problems += await _misses(reopened, 'the store reopened (another process)')
        assert not problems, '\n'.join(problems)


async def _misses(store: Any, which: str) -> list[str]:
    """One line per question whose top text hit is not its passage."""
    problems = []
    for query, key, what in _QUERIES:
        hits = await store.text_search(SearchRequest(query, 1))
        record = hits[0].record if hits else None
        got = record.document_title if isinstance(record, Chunk) else None
        if got != key:
            problems.append(
                f'{which}: text_search({query!r}) ranked {got!r} first, expected the {key!r} passage ({what}): '
                "with language='auto' each passage is analysed in its detected language and a query in the "
                "store's languages (docs/text-analysis.md#automatic-language)"
            )
    return problems
