"""Which legacy code page a non-UTF-8 text file is in: the candidate whose letters make one language's alphabet.

Byte statistics alone cannot tell Windows-1252 French from Windows-1257 Baltic (``crème`` and ``crčme`` are
equally plausible bytes), so each candidate decoding is scored by how many of its non-ASCII letters belong to a
single language; ties go to the common Western code pages. See docs/ingestion.md#formats.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ['CODE_PAGES', 'Guess', 'guess_code_page']

CODE_PAGES = ('cp1252', 'cp1250', 'cp1257', 'cp1251', 'cp1253', 'cp1254', 'cp1255', 'cp1256', 'koi8_r')
"""The candidates in order of preference on a tie: Western European first, the most common legacy text."""

_ALPHABETS: dict[str, str] = {
    'French': 'àâæçéèêëîïôœùûüÿ',
    'German': 'äöüß',
    'Spanish': 'áéíñóúü¿¡',
    'Portuguese': 'ãõáâàçéêíóôú',
    'Italian': 'àèéìíòóù',
    'Dutch': 'ëïéèóá',
    'Danish/Norwegian': 'æøåé',
    'Swedish/Finnish': 'åäöé',
    'Icelandic': 'áðéíóúýþæö',
    'Polish': 'ąćęłńóśźż',
    'Czech/Slovak': 'áäčďéěíĺľňóôŕřšťúůýž',
    'Hungarian': 'áéíóöőúüű',
    'Croatian/Slovene': 'čćđšž',
    'Romanian': 'ăâîșțşţ',
    'Lithuanian': 'ąčęėįšųūž„“',
    'Latvian': 'āčēģīķļņšūž',
    'Estonian': 'äõöüšž',
    'Turkish': 'çğıöşüâî',
    'Russian/Ukrainian/Bulgarian': 'абвгдеёжзийклмнопрстуфхцчшщъыьэюяіїєґў',
    'Greek': 'αβγδεζηθικλμνξοπρστυφχψωάέήίόύώϊϋΐΰς',
    'Hebrew': 'אבגדהוזחטיכךלמםנןסעפףצץקרשת',
    'Arabic': 'ءآأؤإئابةتثجحخدذرزسشصضطظعغفقكلمنهوىي',
}
_NON_LATIN = frozenset({'Russian/Ukrainian/Bulgarian', 'Greek', 'Hebrew', 'Arabic'})
_PUNCTUATION = set('\u2013\u2014\u2018\u2019\u201c\u201d\u201e\u2026\u2022\u20ac«»°§©®™·\u00d7÷±¢£¥\u00a0')
"""Non-ASCII characters that belong to no language and fit every text."""


@dataclass(frozen=True, slots=True)
class Guess:
    """The chosen code page, the text it gives, and the language whose alphabet fits it best."""

    encoding: str
    text: str
    language: str | None
    fit: float
    rival: str | None
    """Another code page that fits as well and reads differently."""

    @property
    def unsure(self) -> bool:
        return self.rival is not None or self.fit < 0.9

    def warning(self) -> str | None:
        """What the ingest report says when the guess is unsure (``None`` when it is not)."""
        if not self.unsure:
            return None
        other = f'; {self.rival} fits as well and reads differently' if self.rival else ''
        return f'not UTF-8: read as {self.encoding}{other}; save the file as UTF-8 to be sure'


def _fit(text: str) -> tuple[float, str | None]:
    """The share of ``text``'s non-ASCII characters that one language's alphabet explains (1.0 with none).

    A letter of a non-Latin script next to an ASCII letter (``crиme``) is explained by no language, nor is a
    capital after a small letter (``мЯб``).
    """
    counts: dict[str, int] = {}
    mixed: dict[str, int] = {}
    odd = 0
    for i, ch in enumerate(text):
        if ord(ch) > 127 and ch not in _PUNCTUATION:
            low = ch.lower()
            counts[low] = counts.get(low, 0) + 1
            if _ascii_letter(text, i - 1) or _ascii_letter(text, i + 1):
                mixed[low] = mixed.get(low, 0) + 1
            odd += ch.isupper() and i > 0 and text[i - 1].islower()
    total = sum(counts.values())
    if not total:
        return 1.0, None
    best, language = max(
        (sum(n - (mixed.get(c, 0) if name in _NON_LATIN else 0) for c, n in counts.items() if c in letters), name)
        for name, letters in _ALPHABETS.items()
    )
    return max(best - odd, 0) / total, language


def _ascii_letter(text: str, i: int) -> bool:
    return 0 <= i < len(text) and text[i].isascii() and text[i].isalpha()


def guess_code_page(data: bytes) -> Guess | None:
    """The best candidate of `CODE_PAGES` for ``data`` (``None`` when none decodes it)."""
    scored: list[tuple[float, int, str, str, str | None]] = []
    for rank, encoding in enumerate(CODE_PAGES):
        try:
            text = data.decode(encoding)
        except UnicodeDecodeError:
            continue
        fit, language = _fit(text)
        scored.append((fit, -rank, encoding, text, language))
    if not scored:
        return None
    scored.sort(reverse=True)
    fit, _, encoding, text, language = scored[0]
    rival = next((s[2] for s in scored[1:] if s[0] >= fit - 0.02 and s[3] != text), None)
    return Guess(encoding, text, language, fit, rival)
