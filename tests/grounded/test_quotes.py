"""Quote matching: exact but for whitespace, quote marks and dashes, with exact original offsets."""

from __future__ import annotations

import re
import sys
import time
import unicodedata

import pytest
from hypothesis import HealthCheck, assume, given, settings, strategies as st

from toolish_rag.citations._quotes import (
    _ABSENT,
    _DASHES,
    _DOUBLE_QUOTES,
    _SINGLE_QUOTES,
    _UNICODE_SCAN_END,
    _WHITESPACE,
    CLOSEST_MAX_CHARS,
    DEFAULT_MIN_QUOTE_CHARS,
    QuoteMatch,
    closest_sentence,
    find_quote,
    normalise_quote,
)

TEXT = (
    'The warranty covers parts and labour for 24 months.\n\n'
    'Claims must be filed within 30 days of the fault; the buyer\u2019s receipt is required.  '
    'The unit is rated for use between \u221220 and 45 °C \u2014 outdoors included.\n'
    'Paris is the seat of the company, which reported 3.5 million sales.'
)


def span(text: str, match: QuoteMatch | None) -> str:
    assert match is not None
    return text[match.start : match.end]


def test_whitespace_table_is_every_unicode_space() -> None:
    assert set(_WHITESPACE) == {chr(c) for c in range(sys.maxunicode + 1) if chr(c).isspace()}


@pytest.mark.parametrize(
    ('quote', 'original'),
    [
        # whitespace: runs, newlines, no-break and thin spaces, surrounding space
        ('labour for 24 months. Claims must', 'labour for 24 months.\n\nClaims must'),
        ('The  warranty\tcovers\u00a0parts', 'The warranty covers parts'),
        ('  \n Claims must be filed\u2009within 30 days ', 'Claims must be filed within 30 days'),
        # quote marks: straight apostrophe for a curly one
        ("the buyer's receipt is required", 'the buyer\u2019s receipt is required'),
        ('the buyer\u2032s receipt is required', 'the buyer\u2019s receipt is required'),
        # dashes: hyphen for minus and em dash
        ('between -20 and 45 °C - outdoors', 'between \u221220 and 45 °C \u2014 outdoors'),
        ('between \u201320 and 45 °C \u2013 outdoors', 'between \u221220 and 45 °C \u2014 outdoors'),
    ],
)
def test_variants_are_found_at_exact_offsets(quote: str, original: str) -> None:
    match = find_quote(quote, TEXT)
    assert span(TEXT, match) == original
    assert match == QuoteMatch(TEXT.index(original), TEXT.index(original) + len(original))


def test_double_quote_variants() -> None:
    text = 'He wrote \u00abthe system is stable\u00bb in his report.'
    assert (
        span(text, find_quote('He wrote "the system is stable" in', text))
        == 'He wrote \u00abthe system is stable\u00bb in'
    )
    assert (
        span(text, find_quote('He wrote \u201cthe system is stable\u201d in', text))
        == 'He wrote \u00abthe system is stable\u00bb in'
    )


def test_invisible_characters_are_absent() -> None:
    text = 'The de\u00adfault time\u200bout is 30\ufeff seconds.'
    match = find_quote('The default timeout is 30 seconds.', text)
    assert match == QuoteMatch(0, len(text))
    # and the other way round: a quote carrying them still matches the clean text
    clean = 'The default timeout is 30 seconds.'
    assert span(clean, find_quote('time\u200bout is 30 sec\u00adonds', clean)) == 'timeout is 30 seconds'


# --- canonical equivalence: NFC and NFD are one text; compatibility forms are not ---

_NFD = 'The menu of the cafe\u0301 lists the cre\u0300me bru\u0302le\u0301e at 4 euros.'
_NFC = 'The menu of the caf\u00e9 lists the cr\u00e8me br\u00fbl\u00e9e at 4 euros.'


@pytest.mark.parametrize(
    ('quote', 'text', 'expected'),
    [
        # a decomposed chunk (PDF extraction) quoted in composed form: whole sequences in the span
        ('of the caf\u00e9 lists the cr\u00e8me', _NFD, 'of the cafe\u0301 lists the cre\u0300me'),
        ('the cr\u00e8me br\u00fbl\u00e9e', _NFD, 'the cre\u0300me bru\u0302le\u0301e'),
        # the reverse: a composed chunk quoted in decomposed form
        ('of the cafe\u0301 lists the cre\u0300me', _NFC, 'of the caf\u00e9 lists the cr\u00e8me'),
        # marks in another (canonically equal) order: dot below and acute
        ('the value is e\u0301\u0323 here', 'so the value is e\u0323\u0301 here', 'the value is e\u0323\u0301 here'),
        # Hangul jamo and the syllable they compose, both ways
        (
            'the Korean word \ud55c here',
            'So the Korean word \u1112\u1161\u11ab here.',
            'the Korean word \u1112\u1161\u11ab here',
        ),
        ('the Korean word \u1112\u1161\u11ab here', 'So the Korean word \ud55c here.', 'the Korean word \ud55c here'),
        # a canonical singleton: ANGSTROM SIGN is A with ring above
        ('measured in \u00c5 units', 'It is measured in \u212b units.', 'measured in \u212b units'),
        # an invisible character inside a combining sequence is still absent
        ('of the caf\u00e9 lists', 'The menu of the cafe\u200b\u0301 lists it.', 'of the cafe\u200b\u0301 lists'),
    ],
)
def test_canonical_equivalents_match_at_exact_offsets(quote: str, text: str, expected: str) -> None:
    match = find_quote(quote, text)
    assert span(text, match) == expected
    assert match == QuoteMatch(text.index(expected), text.index(expected) + len(expected))


@pytest.mark.parametrize(
    ('quote', 'text'),
    [
        ('the file system is full', 'the \ufb01le system is full'),  # ligature
        ('the \ufb01le system is full', 'the file system is full'),
        ('the result was x2 overall', 'the result was x\u00b2 overall'),  # superscript
        ('Model ABC is discontinued', 'Model \uff21\uff22\uff23 is discontinued'),  # full-width
        ('an area of 5 km2 in all', 'an area of 5 \u33a2 in all'),  # square km sign
    ],
)
def test_compatibility_forms_do_not_match(quote: str, text: str) -> None:
    assert find_quote(quote, text) is None


@pytest.mark.parametrize(
    ('quote', 'text'),
    [
        # a base letter without its mark, composed or not
        ('The menu of the cafe', _NFD),
        ('The menu of the cafe', 'The menu of the cafe\u200b\u0301 here'),
        # a composed letter without the second of its marks (NFC: U+1EB9 then U+0301)
        ('so the value is \u1eb9', 'so the value is e\u0323\u0301 here'),
        ('so the value is \u1eb9', 'so the value is \u1eb9\u0301 here'),
        # a syllable without its final consonant
        ('So the Korean word \ud558', 'So the Korean word \u1112\u1161\u11ab here.'),
        ('So the Korean word \u1112\u1161', 'So the Korean word \ud55c here.'),
        # nor start or end between the parts of any sequence NFC rewrote (the Greek question mark
        # is canonically ';', and the jamo after it belong to its sequence)
        ('It was said here;', 'It was said here\u037e\u1161\u11ab and more follows.'),
        ('\u1161\u11ab and more follows', 'It was said here\u037e\u1161\u11ab and more follows.'),
    ],
)
def test_a_quote_may_not_end_inside_a_combining_sequence(quote: str, text: str) -> None:
    assert find_quote(quote, text) is None


def test_normalise_quote_is_nfc_not_nfkc() -> None:
    assert normalise_quote('cafe\u0301 \u2014 \u1112\u1161\u11ab') == 'caf\u00e9 - \ud55c'
    assert normalise_quote('\ufb01ne \u00b2') == '\ufb01ne \u00b2'


def test_no_code_point_past_the_scan_needs_composing() -> None:
    """The combining-sequence pattern scans code points below `_UNICODE_SCAN_END` only."""
    for code in range(_UNICODE_SCAN_END, sys.maxunicode + 1):
        char = chr(code)
        assert not unicodedata.combining(char) and unicodedata.normalize('NFD', char) == char, hex(code)


@pytest.mark.parametrize(
    ('kind', 'quote'),
    [
        ('number changed', 'labour for 25 months'),
        ('negation inserted', 'Claims must not be filed within 30 days'),
        ('two words swapped', 'covers labour and parts for 24 months'),
        ('entity replaced', 'Lyon is the seat of the company'),
        ('case changed', 'the warranty covers parts and labour'),
        ('word missing', 'Claims must filed within 30 days'),
        ('word added', 'Claims must be filed only within 30 days'),
        ('ellipsis for an omission', 'The warranty covers ... for 24 months'),
        ('unicode ellipsis', 'Claims must be filed within 30 days of the fault…'),
        ('space removed around a dash', 'rated for use between \u221220 and 45 °C\u2014outdoors'),
        ('space added inside a word', 'The warr anty covers parts'),
        ('cut inside a number', '5 million sales.'),
        ('cut inside a word', 'arranty covers parts and labour'),
        ('single for double quote class', 'the buyer"s receipt is required'),
    ],
)
def test_corruptions_are_rejected(kind: str, quote: str) -> None:
    assert find_quote(quote, TEXT) is None, kind


@pytest.mark.parametrize(
    ('quote', 'text'),
    [
        ('safe to use outdoors', 'The device is unsafe to use outdoors.'),
        ('5 million units were sold', 'About 3.5 million units were sold.'),
        ('5 million units were sold', 'About 1,5 million units were sold.'),
        ('5 degrees in the night', 'It fell to -5 degrees in the night.'),
        ('The loss was 3 million', 'The loss was 3.5 million.'),
        ('growth was about 50', 'growth was about 50% last year'),
        ('the menu of the cafe', 'the menu of the cafe\u0301 was short'),
        ('5 million units were sold', 'About .5 million units were sold.'),
        ('.5 million units were sold', 'About 3.5 million units were sold.'),
    ],
)
def test_a_quote_may_not_cut_a_word_or_number(quote: str, text: str) -> None:
    assert find_quote(quote, text) is None


@pytest.mark.parametrize(
    ('quote', 'text'),
    [
        # a negation prefix or contraction dropped: the hyphen or apostrophe joins one word
        ('refundable after 30 days', 'Tickets are non-refundable after 30 days.'),
        ('smokers have a lower risk of heart disease', 'Non-smokers have a lower risk of heart disease.'),
        ('toxic to humans in small doses', 'The compound is non-toxic to humans in small doses.'),
        ('toxic to humans in small doses', 'The compound is non\u2010toxic to humans in small doses.'),
        ('toxic to humans in small doses', 'The compound is non\u2011toxic to humans in small doses.'),
        ('-toxic to humans in small doses', 'The compound is non-toxic to humans in small doses.'),
        ('The compound is non', 'The compound is non-toxic to humans in small doses.'),
        ('The compound is non-', 'The compound is non-toxic to humans in small doses.'),
        ('Patients can', "Patients can't take aspirin with this drug."),
        ('Patients can', 'Patients can\u2019t take aspirin with this drug.'),
        ("Patients can'", 'Patients can\u2019t take aspirin with this drug.'),
        ('t take aspirin with this drug', "Patients can't take aspirin with this drug."),
        ('It is state-of-the-art', 'It is state-of-the-art-ish equipment.'),
        ('It is state', 'It is state-of-the-art equipment.'),
        ('art equipment in the lab', 'It is state-of-the-art equipment in the lab.'),
        ('Morley experiment failed', 'The Michelson\u2013Morley experiment failed.'),
        # a number cut: after a fraction bar, colon, decimal point, thousands separator, date dash
        ('5 of the patients recovered fully', 'Only 1/5 of the patients recovered fully.'),
        ('/5 of the patients recovered fully', 'Only 1/5 of the patients recovered fully.'),
        ('Of them, only 1', 'Of them, only 1/5 recovered fully.'),
        ('30 the doors open', 'At 12:30 the doors open.'),
        ('The doors open at 12', 'The doors open at 12:30 sharp.'),
        ('000 people came to see it', 'About 1,000 people came to see it.'),
        ('01-05 the sale began', 'On 2020-01-05 the sale began.'),
        ('The sale began on 2020', 'The sale began on 2020-01-05.'),
        ('The sale lasted from 10', 'The sale lasted from 10\u201320 May.'),
        # a number cut between digit groups: plain, no-break, thin and narrow no-break spaces
        ('500 000 inhabitants', 'The city has 12 500 000 inhabitants.'),
        ('500 000 inhabitants', 'The city has 12\u00a0500\u00a0000 inhabitants.'),
        ('500 000 inhabitants', 'The city has 12\u2009500\u2009000 inhabitants.'),
        ('000 inhabitants in all', 'The city has 12\u202f500\u202f000 inhabitants in all.'),
        ('The city has 12', 'The city has 12\u00a0500\u00a0000 inhabitants.'),
        ('The city has 12 500', 'The city has 12 500 000 inhabitants.'),
    ],
)
def test_a_quote_may_not_drop_a_negation_or_cut_a_number(quote: str, text: str) -> None:
    assert find_quote(quote, text) is None


@pytest.mark.parametrize(
    ('quote', 'text'),
    [
        ('Tickets are non-refundable after 30 days.', 'Tickets are non-refundable after 30 days.'),
        ('non-refundable after 30 days', 'Tickets are non-refundable after 30 days.'),
        ('Patients can\u2019t take aspirin', "Patients can't take aspirin with this drug."),
        ('state-of-the-art equipment', 'It is state-of-the-art equipment.'),
        ('It is state-of-the-art', 'It is state-of-the-art equipment.'),
        ('non-toxic) is safe to use', 'The drug (non-toxic) is safe to use.'),
        ('is safe to use', 'The drug (non-toxic) is safe to use.'),
        ('quietly at dawn', 'He left\u2014quietly at dawn.'),
        ('He left', 'He left\u2014quietly at dawn.'),
        ('hello there', "He said 'hello there' to me."),
        ('The students', "The students' books were old."),
        ('Only 1/5 of the patients', 'Only 1/5 of the patients recovered fully.'),
        ('12 500 000 inhabitants', 'The city has 12\u00a0500\u00a0000 inhabitants.'),
        ('The city has 12 500 000', 'The city has 12\u202f500\u202f000 inhabitants.'),
        ('500 people came', 'In 2019 500 people came.'),  # a four-digit group is no thousands group
        ('In 2019', 'In 2019 500 people came.'),
        ('500 people came', 'In 12\n500 people came.'),  # a line break is no group separator
        ('In 12', 'In 12  500 people came.'),  # nor are two spaces
        ('The limit is 3.', 'The limit is 3. 5 more were refused.'),
        ('5 more were refused.', 'The limit is 3. 5 more were refused.'),
        ('12:30 the doors open', 'At 12:30 the doors open.'),
    ],
)
def test_a_quote_may_start_and_end_at_any_real_boundary(quote: str, text: str) -> None:
    match = find_quote(quote, text)
    assert match is not None
    assert normalise_quote(text[match.start : match.end]) == normalise_quote(quote)


def test_later_occurrence_on_a_boundary_is_found() -> None:
    text = 'It is unsafe to use outdoors. It is safe to use outdoors when dry.'
    assert find_quote('safe to use outdoors', text) == QuoteMatch(36, 56)


def test_scripts_without_spaces_match_anywhere() -> None:
    text = '本产品的保修期为二十四个月\uff0c自购买之日起计算。'
    assert span(text, find_quote('保修期为二十四个月', text)) == '保修期为二十四个月'
    assert find_quote('保修期为二十五个月', text) is None


def test_sentence_end_digit_is_a_boundary() -> None:
    text = 'The limit is 3. Beyond that, requests are refused.'
    assert span(text, find_quote('The limit is 3.', text)) == 'The limit is 3.'
    assert span(text, find_quote('The limit is 3', text)) == 'The limit is 3'


def test_empty_and_blank_quotes_match_nothing() -> None:
    assert find_quote('', TEXT) is None
    assert find_quote(' \n\u200b ', TEXT) is None
    assert find_quote('anything at all', '') is None


def test_normalise_quote() -> None:
    assert normalise_quote('  \u201cHi\u201d \u2014\u00a0it\u2019s\n\n me\u200b ') == '"Hi" - it\'s me'
    assert DEFAULT_MIN_QUOTE_CHARS == 12


def test_closest_sentence_names_the_edited_sentence() -> None:
    assert closest_sentence('Claims must not be filed within 30 days of the fault', TEXT) == (
        'Claims must be filed within 30 days of the fault; the buyer\u2019s receipt is required.'
    )
    assert closest_sentence('labour for 25 months', TEXT) == 'The warranty covers parts and labour for 24 months.'


def test_closest_sentence_is_none_when_nothing_is_close() -> None:
    assert closest_sentence('Dogs bark loudly at the moon every night', TEXT) is None
    assert closest_sentence('anything', '') is None
    assert closest_sentence('', TEXT) is None


def test_megabyte_texts_are_fast_and_bounded() -> None:
    filler = ' '.join(f'Sentence number {i} says nothing of interest about item {i}.' for i in range(20_000))
    text = filler + ' The needle sentence stands here at the very end, after a long run-on clause ' + 'x' * 5000 + '.'
    assert len(text) > 1_000_000
    started = time.perf_counter()
    match = find_quote('The needle sentence stands here', text)
    assert span(text, match) == 'The needle sentence stands here'
    assert find_quote('The needle sentence stands there', text) is None
    closest = closest_sentence('The needle sentence stood here at the very end', text)
    assert closest is not None and closest.startswith('The needle sentence stands here')
    assert len(closest) <= CLOSEST_MAX_CHARS
    assert time.perf_counter() - started < 10


# --- property: a faithful copy with typographic variants is always found at the right place ---

_QUOTE_CLASSES = (_DOUBLE_QUOTES, _SINGLE_QUOTES, _DASHES)
_WORD_CHARS = st.sampled_from(
    [
        *'abcdefghijklmnopqrstuvwxyzABCDEZ0123456789.,;:!?()éßж',
        *_DOUBLE_QUOTES,
        *_SINGLE_QUOTES,
        *_DASHES,
        *('e\u0301', 'u\u0308', '\u1112\u1161\u11ab'),  # decomposed (NFD) letters, as PDF text has them
    ]
)
_words = st.lists(st.lists(_WORD_CHARS, min_size=1, max_size=9).map(''.join), min_size=3, max_size=40)
_separators = st.text(st.sampled_from(_WHITESPACE), min_size=1, max_size=3)
_DIGIT_GROUP = re.compile('\\d[ \u00a0\u2009\u202f]\\d')


def _variant(char: str, draw: st.DrawFn) -> str:
    for group in _QUOTE_CLASSES:
        if char in group:
            return draw(st.sampled_from(group))
    return char


@st.composite
def _texts_and_quotes(draw: st.DrawFn) -> tuple[str, str, int, int]:
    words = draw(_words)
    separators = [draw(_separators) for _ in range(len(words) + 1)]
    # invisible characters inside words: present in the text, maybe not in the quote
    words = [w[:1] + (draw(st.sampled_from(['', *_ABSENT])) if len(w) > 1 else '') + w[1:] for w in words]
    text = separators[0]
    starts = []
    for word, separator in zip(words, separators[1:], strict=True):
        starts.append(len(text))
        text += word + separator
    first = draw(st.integers(0, len(words) - 1))
    last = draw(st.integers(first, len(words) - 1))
    expected_start, expected_end = starts[first], starts[last] + len(words[last])
    pieces = []
    for word in words[first : last + 1]:
        copied = ''.join(_variant(c, draw) for c in word if c not in _ABSENT or draw(st.booleans()))
        pieces.append(unicodedata.normalize(draw(st.sampled_from(['NFC', 'NFD'])), copied))
    quote = draw(_separators.map(lambda s: s if len(s) < 2 else '')) + ''
    for index, piece in enumerate(pieces):
        quote += piece + (draw(_separators) if index < len(pieces) - 1 else '')
    return text, quote, expected_start, expected_end


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_texts_and_quotes())
def test_property_faithful_copies_are_found(case: tuple[str, str, int, int]) -> None:
    text, quote, expected_start, expected_end = case
    assume(len(normalise_quote(quote)) >= DEFAULT_MIN_QUOTE_CHARS)
    # 'a 12' and '345 b' are cuts of the number '12 345' (digit groups): not a boundary
    assume(not _DIGIT_GROUP.search(text[max(0, expected_start - 2) : expected_start + 1]))
    assume(not _DIGIT_GROUP.search(text[max(0, expected_end - 1) : expected_end + 2]))
    match = find_quote(quote, text)
    assert match is not None
    assert normalise_quote(text[match.start : match.end]) == normalise_quote(quote)
    haystack, needle = normalise_quote(text), normalise_quote(quote)
    if haystack.find(needle, haystack.find(needle) + 1) < 0:  # one occurrence (overlapping ones count)
        assert (match.start, match.end) == (expected_start, expected_end)
    else:  # the first of several equal spans
        assert match.start <= expected_start
