"""Regex search on LanceDB means RE2, and LanceDB's own regex engine never speaks to the model.

Four layers:

* the rewrite (`prefilter_pattern`) selects at least what RE2 matches: its ASCII tables and
  fold partners equal RE2's over every code point, and a property test checks the superset
  claim on random patterns in RE2's full syntax;
* a scoped store answers patterns LanceDB's engine rejects or reads differently (``\\Q…\\E``,
  ``\\C``, ``\\<``, ``[a&&b]``...) with RE2's hits, or with our own message, never with text
  from LanceDB (which quoted the SQL filter, other tenants' values included);
* the fallbacks: a pattern with no rewrite scans the scope (refused past ``regex_scan_limit``
  with the Tantivy store's message), and a rewrite LanceDB will not run does too;
* the cap: more candidates than ``regex_scan_limit`` (in scope) are refused with that message,
  never ranked from the first few read, which a wide prefilter fills with false positives.
"""

from __future__ import annotations

import asyncio
import pathlib
from collections.abc import Iterator

import pytest
from hypothesis import HealthCheck, assume, given, settings, strategies as st
from pydantic_ai import ModelRetry

from toolish_rag import ToolishRag
from toolish_rag.builder import DocumentBuilder
from toolish_rag.content import Document
from toolish_rag.embedding import HashingEmbeddingModel
from toolish_rag.filters import PropertyFilter as F
from toolish_rag.regex import compile_pattern, regex_text, scan_limit_error
from toolish_rag.search import RegexRequest
from toolish_rag.stores import InMemoryStore
from toolish_rag_lancedb import LanceDBStore
from toolish_rag_lancedb._regex_prefilter import prefilter_pattern

# -- the rewrite, against RE2 over every code point -------------------------------------------

_ALL = ''.join(chr(cp) for cp in range(0x110000) if not 0xD800 <= cp <= 0xDFFF)


def _cp(index: int) -> int:
    return index if index < 0xD800 else index + 0x800


def _members(pattern: str, *, case_sensitive: bool = True) -> list[tuple[int, int]]:
    """The code points a one-character pattern matches, as ranges, found by bisecting `_ALL` with RE2."""
    every = compile_pattern(f'(?:{pattern})*', case_sensitive=case_sensitive)
    some = compile_pattern(pattern, case_sensitive=case_sensitive)
    found: list[tuple[int, int]] = []

    def walk(lo: int, hi: int) -> None:  # the block _ALL[lo:hi]
        block = _ALL[lo:hi]
        if some.search(block) is None:
            return
        if every.fullmatch(block) is not None:
            found.append((_cp(lo), _cp(hi - 1)))
            return
        mid = (lo + hi) // 2
        walk(lo, mid)
        walk(mid, hi)

    walk(0, len(_ALL))
    merged: list[tuple[int, int]] = []
    for lo, hi in found:
        if merged and lo == merged[-1][1] + 1:
            merged[-1] = (merged[-1][0], hi)
        else:
            merged.append((lo, hi))
    return merged


def _rewritten(pattern: str, *, case_sensitive: bool = True) -> str:
    rewritten = prefilter_pattern(pattern, case_sensitive=case_sensitive)
    assert rewritten is not None, pattern
    return rewritten


def test_the_only_non_ascii_fold_partners_of_ascii_are_the_kelvin_sign_and_long_s() -> None:
    assert _members(r'[\x00-\x7F]', case_sensitive=False) == [(0, 0x7F), (0x17F, 0x17F), (0x212A, 0x212A)]


@pytest.mark.parametrize('case_sensitive', [True, False])
def test_every_ascii_character_selects_exactly_what_re2_matches(case_sensitive: bool) -> None:
    # With the test above, this pins the rewrite's fold partners to RE2's over every code point.
    candidates = [chr(cp) for cp in range(0x80)] + ['\u017f', '\u212a']
    for cp in range(0x80):
        pattern = f'\\x{{{cp:X}}}'
        original = compile_pattern(pattern, case_sensitive=case_sensitive)
        rewritten = compile_pattern(_rewritten(pattern, case_sensitive=case_sensitive))
        expected = [ch for ch in candidates if original.search(ch)]
        assert [ch for ch in candidates if rewritten.search(ch)] == expected, (cp, expected)


_CLASSES = [
    r'\d', r'\s', r'\w', r'\D', r'\S', r'\W', r'[^\d]', r'[^\W]', r'[\W\d]', r'[^a-fK]',
    *(f'[[:{name}:]]' for name in ('alnum', 'alpha', 'ascii', 'blank', 'cntrl', 'digit', 'graph', 'lower')),
    *(f'[[:{name}:]]' for name in ('print', 'punct', 'space', 'upper', 'word', 'xdigit')),
    '[[:^alpha:]]', '[^[:^space:]]', '[a&&b]', '[[]', '[]a-]', '[a-b-c]', '[--/]', r'[\x{E9}-\x{EF}]', '[é-ï]',
]  # fmt: skip


@pytest.mark.parametrize('pattern', _CLASSES)
def test_classes_select_re2s_set_exactly_or_more_under_folding(pattern: str) -> None:
    assert _members(_rewritten(pattern)) == _members(pattern)
    folded = _members(pattern, case_sensitive=False)
    wider = _members(_rewritten(pattern, case_sensitive=False))
    assert _covers(wider, folded), (pattern, folded, wider)


def _covers(outer: list[tuple[int, int]], inner: list[tuple[int, int]]) -> bool:
    return all(any(a <= lo and hi <= b for a, b in outer) for lo, hi in inner)


@pytest.mark.parametrize(
    ('pattern', 'text'),
    [
        (r'\bve', 'naïve'),  # RE2's \b is ASCII: ï is not a word character; Rust's is Unicode
        (r'\Bve', 'eve'),
        (r'(?i)naïve', 'NAÏVE'),
        (r'\Q.*\E', 'a.*b'),
        (r'\<b', 'a<b'),  # a literal < in RE2, a word start in Rust
        (r'a{,3}', 'a{,3}'),  # not a repetition in RE2
        (r'\101\x42\x{43}', 'ABC'),
        (r'[a&&b]+', '&&'),
        ('^x$', 'x'),
        (r'(?m)^b$', 'a\nb\nc'),
        (r'(?s)a.b', 'a\nb'),
        (r'\pL\p{Greek}', 'aΣ'),
        ('(?P<first>x)(?<second>y)+?', 'xyy'),
    ],
)
def test_rewrite_selects_what_re2_matches(pattern: str, text: str) -> None:
    assert compile_pattern(pattern).search(text) is not None  # the case is a real RE2 match
    assert compile_pattern(_rewritten(pattern)).search(text) is not None


def test_any_byte_has_no_rewrite() -> None:
    assert prefilter_pattern(r'a\Cb') is None
    assert prefilter_pattern(r'\\C') is not None  # a backslash, then C


_CHARS = [
    'a',
    'b',
    'e',
    'v',
    'k',
    'K',
    's',
    'S',
    'é',
    'É',
    'ï',
    '\u017f',
    '\u212a',
    'Σ',
    '\u03c3',
    'ς',
    '_',
    '-',
    ' ',
    '\n',
    '0',
]
_ESCAPES = [
    r'\.', r'\\', r'\-', r'\<', r'\_', r'\Q.*\E', r'\Q\E', r'\Qa]\E', r'\x41', r'\x{e9}', r'\101', r'\0', r'\n',
    r'\pL', r'\p{Greek}', r'\PL', r'\d', r'\D', r'\s', r'\S', r'\w', r'\W', r'\b', r'\B', r'\A', r'\z',
    '^', '$', '.', ']', '}', '{', '{,2}', '{01}',
]  # fmt: skip
_CLASS_ITEMS = [
    'a', 'a-z', 'A-Z', 'k', 's', 'é', 'ï-ü', r'\d', r'\W', '[:alpha:]', '[:^space:]', r'\pL', '-', '&&', '~~',
    '[', r'\]', r'\-', r'\x{41}-\x{5A}', 'Σ',
]  # fmt: skip
_QUANTIFIERS = ['', '', '', '*', '+', '?', '*?', '{2}', '{1,3}', '{2,}']


@st.composite
def _class(draw: st.DrawFn) -> str:
    first = draw(st.sampled_from(['', ']']))
    items = draw(st.lists(st.sampled_from(_CLASS_ITEMS), min_size=0 if first else 1, max_size=4))
    return '[' + draw(st.sampled_from(['', '^'])) + first + ''.join(items) + ']'


_ATOM = st.one_of(st.sampled_from(_CHARS), st.sampled_from(_ESCAPES), _class())


def _groups(inner: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    opener = st.sampled_from(['(', '(?:', '(?i:', '(?-i:', '(?P<g>', '(?<g>', '(?s:'])
    alternation = st.lists(inner, min_size=1, max_size=3).map('|'.join)
    return st.builds(lambda o, a, q: f'{o}{a}){q}', opener, alternation, st.sampled_from(_QUANTIFIERS))


_PIECE = st.recursive(
    st.builds(lambda a, q: a + q, _ATOM, st.sampled_from(_QUANTIFIERS)),
    lambda inner: st.one_of(_groups(inner), st.lists(inner, min_size=1, max_size=3).map(''.join)),
    max_leaves=8,
)
_PATTERN = st.builds(
    lambda flag, pieces: flag + '|'.join(pieces),
    st.sampled_from(['', '', '(?i)', '(?s)', '(?m)', '(?U)']),
    st.lists(_PIECE, min_size=1, max_size=2),
)
_TEXT = st.text(alphabet=st.sampled_from([*_CHARS, '.', '*', '<', ']', '{', ',', '}', '&', 'A', 'z']), max_size=12)
_FIXED_TEXTS = [
    'naïve',
    'a.*b',
    'ERR-4012',
    '\u017ftraße \u212aelvin',
    'Sisyphus \u03a3\u03c3\u03c2',
    'a{,3}',
    'x_y-z',
    '',
    '\n',
]


@settings(max_examples=250, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.filter_too_much])
@given(pattern=_PATTERN, case_sensitive=st.booleans(), texts=st.lists(_TEXT, max_size=6))
def test_rewrite_never_loses_an_re2_match(pattern: str, case_sensitive: bool, texts: list[str]) -> None:
    try:
        original = compile_pattern(pattern, case_sensitive=case_sensitive)
    except ValueError:
        assume(False)
        raise
    rewritten = prefilter_pattern(pattern, case_sensitive=case_sensitive)
    if rewritten is None:  # \C only: the store scans instead
        assert r'\C' in pattern
        return
    prefilter = compile_pattern(rewritten)  # the rewrite's syntax is also RE2's, read alike
    for text in [*texts, *_FIXED_TEXTS]:
        if original.search(text) is not None:
            assert prefilter.search(text) is not None, (pattern, rewritten, text)


# -- a scoped store: RE2's hits or our own message, never LanceDB's ---------------------------

_TEXTS = {
    'acme': [
        'A naïve approach: the naïve model.',
        'Literal a.*b and \\Q markers; a{,3} too.',
        'Café, ÜBER and résumé_v2 at 12:30 (ERR-4012).',
        'Long \u017f and the Kelvin sign \u212a, a<b && c.',
    ],
    'globex': ['globex naïve secret a.*b ERR-9999 a<b && c'],
}
_SECRET = 'globex'


def _corpus() -> list[Document]:
    docs = []
    for tenant, texts in _TEXTS.items():
        b = DocumentBuilder(f'file:///{tenant}/notes.md', f'{tenant} notes', metadata={'tenant': tenant})
        section = b.section('Notes')
        for text in texts:
            b.add_chunk(section, text)
        docs.append(b.build())
    return docs


_SCOPE = F.eq('tenant', 'acme')
_ENGINE_SPECIFIC = [
    r'\Q.*\E', r'\C', r'a\C', r'\<b', r'[a&&b]', '[[]', 'a{,3}', r'\101', r'\x{2E}\x2A', r'\pL\d', r'(?P<n>na)ïve',
    r'\z', r'(?U)a+?', r'\bve', r'(?i)NAÏVE', r'(?i)\W', r'[[:^alpha:]]{2}', '(' * 260 + 'naïve' + ')' * 260,
]  # fmt: skip
_LEAKS = ('tenant', _SECRET, 'WHERE', 'where', 'regexp', 'SQL', 'lance', 'datafusion', 'Invalid input', 'parse error')


@pytest.fixture(scope='module')
def runner() -> Iterator[asyncio.Runner]:
    with asyncio.Runner() as runner:
        yield runner


@pytest.fixture(scope='module')
def stores(
    runner: asyncio.Runner, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[LanceDBStore, InMemoryStore]]:
    lance = LanceDBStore(tmp_path_factory.mktemp('regex') / 'kb', embedder=HashingEmbeddingModel(64))
    memory = InMemoryStore(HashingEmbeddingModel(64))
    for store in (lance, memory):
        runner.run(store.upsert(_corpus()))
    yield lance, memory
    runner.run(lance.aclose())


def _hits(
    runner: asyncio.Runner, store: LanceDBStore | InMemoryStore, pattern: str
) -> list[tuple[str, float, tuple[str, ...]]]:
    hits = runner.run(store.regex_search(RegexRequest(pattern, 50, _SCOPE)))
    return [(h.id, h.score, h.matches) for h in hits]


@pytest.mark.parametrize('pattern', _ENGINE_SPECIFIC)
def test_scoped_patterns_get_re2_hits_and_no_engine_text(
    runner: asyncio.Runner, stores: tuple[LanceDBStore, InMemoryStore], pattern: str
) -> None:
    lance, memory = stores
    assert _hits(runner, lance, pattern) == _hits(runner, memory, pattern)
    rag: ToolishRag[None] = ToolishRag(lance, name='kb').with_metadata_filter(_SCOPE)
    try:
        result = runner.run(rag.run_tool('regex_search', {'pattern': pattern}))
    except ModelRetry as retry:  # pragma: no cover - the failure this test exists for
        pytest.fail(f'{pattern!r} was sent back to the model: {retry.message}')
    text = str(result.return_value)
    assert not any(leak in text for leak in (_SECRET, 'WHERE', 'regexp', 'lance')), text


def test_naive_word_boundary_is_re2s(runner: asyncio.Runner, stores: tuple[LanceDBStore, InMemoryStore]) -> None:
    lance, _ = stores
    hits = _hits(runner, lance, r'\bve')
    assert [matches for _, _, matches in hits] == [('ve', 've')]  # both naïves of the first chunk


def test_a_pattern_without_prefilter_scans_the_scope_up_to_the_limit(
    runner: asyncio.Runner, tmp_path: pathlib.Path
) -> None:
    async def run() -> None:
        store = LanceDBStore(tmp_path / 'kb', embedder=HashingEmbeddingModel(64), regex_scan_limit=3)
        await store.upsert(_corpus())
        rag: ToolishRag[None] = ToolishRag(store, name='kb').with_metadata_filter(_SCOPE)
        with pytest.raises(ModelRetry) as caught:
            await rag.run_tool('regex_search', {'pattern': r'na\C'})
        # The Tantivy store's message, counting only the records in scope (4 of 5).
        assert caught.value.message == str(scan_limit_error(4, 3))
        assert not any(leak in caught.value.message for leak in _LEAKS)
        # A pattern with a prefilter reads only its candidates: the same limit is no obstacle.
        assert len(await store.regex_search(RegexRequest('naïve', 5, _SCOPE))) == 1
        await store.aclose()
        wide = LanceDBStore(tmp_path / 'kb', embedder=HashingEmbeddingModel(64), regex_scan_limit=4)
        hits = await wide.regex_search(RegexRequest(r'na\C', 5, _SCOPE))
        assert [regex_text(h.record) for h in hits] == [_TEXTS['acme'][0]]
        await wide.aclose()

    runner.run(run())


def test_a_literal_nul_is_a_pattern_like_any_other(runner: asyncio.Runner, tmp_path: pathlib.Path) -> None:
    # The model's pattern no longer travels inside SQL, so a NUL needs no special refusal.
    async def run() -> None:
        b = DocumentBuilder('file:///nul.md', 'nul')
        b.add_chunk(None, 'before\x00after')
        store = LanceDBStore(tmp_path / 'kb', embedder=HashingEmbeddingModel(64))
        await store.upsert([b.build()])
        hits = await store.regex_search(RegexRequest('e\x00a', 5))
        assert [h.matches for h in hits] == [('e\x00a',)]
        await store.aclose()

    runner.run(run())


# -- the candidate cap: all candidates ranked, or a refusal, never the first few --------------


def _false_positives_first() -> list[Document]:
    """Scoped false positives first: ``\\bve``'s prefilter selects every "have" before the real hits.

    In scope, 6 false positives come first in table order, then 3 real matches (the last with
    the most matches, so it ranks first); the other tenant's 20 real matches never count.
    """
    texts = [('acme', 'we have it')] * 6 + [('acme', 've first'), ('acme', 've again'), ('acme', 've ve ve')]
    texts += [(_SECRET, 've secret')] * 20
    docs = []
    for i, (tenant, text) in enumerate(texts):
        b = DocumentBuilder(f'file:///{tenant}/{i:02d}.md', f'{tenant} {i}', metadata={'tenant': tenant})
        b.add_chunk(b.section('S'), text)
        docs.append(b.build())
    return docs


@pytest.mark.parametrize(('scope', 'candidates'), [(_SCOPE, 9), (None, 29)], ids=['scoped', 'unscoped'])
def test_candidates_past_the_limit_are_refused_not_cut_short(
    runner: asyncio.Runner, tmp_path: pathlib.Path, scope: F | None, candidates: int
) -> None:
    # Every record holds "ve", so all are candidates; in scope, the other tenant's are not counted.
    async def run() -> None:
        docs = _false_positives_first()
        memory = InMemoryStore(HashingEmbeddingModel(64))
        await memory.upsert(docs)
        seed = LanceDBStore(tmp_path / 'kb', embedder=HashingEmbeddingModel(64))
        await seed.upsert(docs)
        await seed.aclose()
        request = RegexRequest(r'\bve', 2, scope)
        expected = [(h.id, h.score, h.matches) for h in await memory.regex_search(request)]
        assert [m for _, _, m in expected] == [('ve', 've', 've'), ('ve',)]
        # 6: the false positives only; 7: they and one real match; then around the count.
        for limit in (1, 6, 7, candidates - 1, candidates, candidates + 5):
            store = LanceDBStore(tmp_path / 'kb', embedder=HashingEmbeddingModel(64), regex_scan_limit=limit)
            if limit >= candidates:
                assert [(h.id, h.score, h.matches) for h in await store.regex_search(request)] == expected, limit
            else:
                rag: ToolishRag[None] = ToolishRag(store, name='kb')
                if scope is not None:
                    rag = rag.with_metadata_filter(scope)
                with pytest.raises(ModelRetry) as caught:
                    await rag.run_tool('regex_search', {'pattern': r'\bve', 'top_k': 2})
                assert caught.value.message == str(scan_limit_error(candidates, limit)), limit
                assert not any(leak in caught.value.message for leak in _LEAKS)
            await store.aclose()

    runner.run(run())
