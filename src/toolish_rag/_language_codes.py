"""The languages the text analyzer knows, by ISO 639-1 code (shared by `analysis` and `languages`)."""

from __future__ import annotations

__all__ = ['CODES', 'UNSTEMMED']

CODES: dict[str, str] = {
    'ar': 'arabic',
    'ca': 'catalan',
    'cs': 'czech',
    'da': 'danish',
    'de': 'german',
    'el': 'greek',
    'en': 'english',
    'eo': 'esperanto',
    'es': 'spanish',
    'et': 'estonian',
    'eu': 'basque',
    'fa': 'persian',
    'fi': 'finnish',
    'fr': 'french',
    'ga': 'irish',
    'hi': 'hindi',
    'hu': 'hungarian',
    'hy': 'armenian',
    'id': 'indonesian',
    'it': 'italian',
    'lt': 'lithuanian',
    'ne': 'nepali',
    'nl': 'dutch',
    'no': 'norwegian',
    'pl': 'polish',
    'pt': 'portuguese',
    'ro': 'romanian',
    'ru': 'russian',
    'sr': 'serbian',
    'st': 'sesotho',
    'sv': 'swedish',
    'ta': 'tamil',
    'tr': 'turkish',
    'yi': 'yiddish',
}
UNSTEMMED: dict[str, str] = {'ja': 'japanese', 'ko': 'korean', 'th': 'thai', 'zh': 'chinese'}
"""Languages PyStemmer has no stemmer for: their text is bigrammed."""
