"""Text files in a legacy code page read as their writer meant (issue 27 item 7: a French Windows-1252 file read
as Windows-1257, ``crème brûlée`` -> ``crčme brūlée``), and the report says when the code page was a guess."""

from __future__ import annotations

import asyncio
import codecs
from pathlib import Path

import pytest

from toolish_rag.ingest import ingest
from toolish_rag.ingest._readers.text import decode_text, decode_text_noting
from toolish_rag.search import SearchRequest
from toolish_rag.stores import InMemoryStore

FRENCH = 'La crème brûlée du garçon était déjà prête à l\u2019hôtel, près de la fenêtre où l\u2019été dure.'
SAMPLES = [
    pytest.param(FRENCH, 'cp1252', id='French cp1252'),
    pytest.param('crème brûlée', 'cp1252', id='the issue words alone'),
    pytest.param('Die Größe der Straße ist für Bäcker und Müller über alle Maßen schön.', 'cp1252', id='German'),
    pytest.param('¿Dónde está el señor? El niño comió piña por la mañana. ¡Qué año!', 'cp1252', id='Spanish'),
    pytest.param('Ąžuolas, ėjimas, šuo, žąsis, ūkis ir čiuožykla: lietuvių kalba.', 'cp1257', id='Lithuanian'),
    pytest.param('Latviešu valoda: ģimene, ķēde, ļoti, ņemt, šķērslis un žurnāls.', 'cp1257', id='Latvian'),
    pytest.param('Zażółć gęślą jaźń. Łódź jest pięknym miastem.', 'cp1250', id='Polish'),
    pytest.param('Съешь же ещё этих мягких французских булок, да выпей чаю.', 'cp1251', id='Russian'),
    pytest.param('Ξεσκεπάζω την ψυχοφθόρα βδελυγμία.', 'cp1253', id='Greek'),
]


@pytest.mark.parametrize(('text', 'encoding'), SAMPLES)
def test_a_legacy_code_page_reads_as_written(text: str, encoding: str) -> None:
    decoded, warning = decode_text_noting(text.encode(encoding))
    assert decoded == text
    assert warning is None  # one language's letters: sure


@pytest.mark.parametrize(
    'data',
    [
        FRENCH.encode('utf-8'),
        codecs.BOM_UTF8 + FRENCH.encode('utf-8'),
        codecs.BOM_UTF16_LE + FRENCH.encode('utf-16-le'),
        codecs.BOM_UTF16_BE + FRENCH.encode('utf-16-be'),
    ],
    ids=['utf-8', 'utf-8 BOM', 'utf-16-le BOM', 'utf-16-be BOM'],
)
def test_unicode_files_are_read_exactly(data: bytes) -> None:
    assert decode_text_noting(data) == (FRENCH, None)


def test_an_ambiguous_file_prefers_windows_1252_and_says_it_guessed() -> None:
    # One accented letter: French "crème" (cp1252) and Czech "crčme" (cp1250) are the same bytes.
    text, warning = decode_text_noting('He said \u201ccrème\u201d and left.'.encode('cp1252'))
    assert text == 'He said \u201ccrème\u201d and left.'
    assert warning is not None and 'read as cp1252' in warning and 'UTF-8' in warning


def test_the_report_carries_the_guess_and_text_search_finds_the_real_words(tmp_path: Path) -> None:
    (tmp_path / 'menu.txt').write_bytes(FRENCH.encode('cp1252'))
    (tmp_path / 'note.txt').write_bytes('Il a dit « crème » et il est parti.'.encode('cp1252'))
    store = InMemoryStore(embedder='hashing')
    report = asyncio.run(ingest(store, [tmp_path], progress=False))
    assert sorted(Path(u).name for u in report.added) == ['menu.txt', 'note.txt']
    warned = {Path(w.path).name: w.reason for w in report.warnings}
    assert 'menu.txt' not in warned  # sure: no noise
    assert 'read as cp1252' in warned['note.txt']
    hits = asyncio.run(store.text_search(SearchRequest(query='brûlée', top_k=3)))
    assert hits and 'crème brûlée' in hits[0].record.text


def test_decode_text_is_the_text_alone() -> None:
    assert decode_text(FRENCH.encode('cp1252')) == FRENCH
