"""Adversarial measurement of citation verification (issue 14) on XQuAD-en: genuine quotes against rule-made fakes.

    .venv/bin/python benchmarks/grounding_bench.py                # all 1,190 questions
    .venv/bin/python benchmarks/grounding_bench.py --quick        # 100 questions, seconds (a smoke test)
    .venv/bin/python benchmarks/grounding_bench.py --limit 300 --search hybrid

What it does, and why each step is the real thing rather than a stand-in:

* Corpus: ``../shared/data/xquad-en`` (BEIR layout, read with `common.load_beir`; the
  answers and paragraph order come from the rows' ``metadata``, which `load_beir` drops).
  The 48 articles are rebuilt from their 5 paragraphs (blank lines between them, as
  benchmarks/ingest_chunk_sizes.py does) and cut by the ingestion `Chunker` (default size,
  500 characters), so quotes are checked against real chunks with real ``urtext``, offsets
  and sequence neighbours. The same articles are stored twice in one `InMemoryStore`: under
  tenant ``acme`` (ids ``acme-<article>``) and tenant ``globex`` (``globex-<article>``).
* Retrieval: every question is searched with ``ToolishRag.run_tool`` on a toolset scoped to
  ``acme`` (text search by default: BM25 needs no model; ``--search hybrid`` uses MiniLM),
  then ``broaden_chunk`` (one chunk either side) on the best hit holding the answer (the
  gold paragraph's answer span, from ``answer_starts``, inside the chunk's offsets). ``seen``
  is every chunk those two calls returned: what would have reached a model.
* Genuine quote: the sentence of that chunk's ``urtext`` holding the answer (a small
  splitter: ``.``/``!``/``?`` then whitespace and a capital, digit or quote; common
  abbreviations and initials do not end a sentence; a blank line does), copied verbatim,
  one per question (questions share sentences: the table counts distinct quotes too); and
  once each, every other sentence of the seen chunks. Variants that must also be accepted:
  whitespace runs changed (double space, newline, tab, no-break space, padding), quote marks
  swapped straight <-> curly within their kind, dashes swapped hyphen <-> en dash (every
  other dash to a hyphen), and all three at once.
* Corruptions, each a rule: a number changed (digits or a number word), a negation inserted
  (``not`` after an auxiliary, else ``never`` before a past tense), two adjacent words
  swapped, an entity (capitalised run) replaced by one from another article, one letter
  changed, a negation prefix dropped (a sentence of the chunk quoted from just after a
  hyphenated ``non-``/``un-``/``in-``/``dis-``/``anti-`` or up to the apostrophe of a ``n't``),
  a number cut (a sentence of the chunk quoted from just after, or up to just before, the
  joint inside a number: ``/ : . , -`` between digits or a digit-group space), a sentence of
  the neighbouring chunk cited with this chunk's id, the last sentence of this chunk and the
  first of the next stitched together, the genuine sentence cited with the globex copy's
  chunk id, and the sentence cut below the minimum length. When a rule does not apply (no
  number, no neighbour...) it is skipped and counted, and a text corruption found in the
  cited chunk anyway (under a normalisation more lenient than the verifier's: all quote marks
  alike, all dashes alike) is not a corruption: skipped and counted too. The negation, number
  cut, truncation and other-tenant rules are present verbatim by design (cut inside a word or
  number; too short; the right text under the wrong tenant's chunk id).
* Verdict: `toolish_rag.citations.verify_answer` on a one-claim ``answered`` answer
  citing the quote, with ``seen``. Accepted genuine quotes must also be located: the filled
  ``source`` offsets must point at the quoted text in the chunk and in the article.

Prints markdown; exits 1 when a criterion fails (100% of genuine quotes and variants
accepted and located, no corruption accepted, no retrieved chunk outside the scope; in a full
run also >= 1,000 answer sentences, >= 1,000 distinct genuine quotes, >= 1,000 distinct corruptions).
Wrong verdicts are printed with the exact quote and chunk text.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import os
import platform
import random
import re
import sys
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

sys.path.insert(0, str(Path(__file__).resolve().parent))

from pin_threads import set_thread_counts

THREADS = 2
THREAD_NOTE = set_thread_counts(THREADS, torch=False)

from common import (  # noqa: E402
    BagOfRandomVectors,
    BeirDataset,
    cpu_model,
    data_dir,
    load_beir,
    memory_gib,
    peak_rss_mib,
)

from toolish_rag import PropertyFilter as F  # noqa: E402
from toolish_rag.citations import (  # noqa: E402
    DEFAULT_MIN_QUOTE_CHARS,
    Citation,
    Claim,
    GroundedAnswer,
    Verification,
    verify_answer,
)
from toolish_rag.content import Chunk, Document  # noqa: E402
from toolish_rag.ingest import Chunker, OutlineBuilder, ParsedDocument  # noqa: E402
from toolish_rag.ingest._readers.text import paragraph_spans, trim_spans  # noqa: E402
from toolish_rag.stores import InMemoryStore  # noqa: E402
from toolish_rag.toolset import ToolishRag  # noqa: E402

DATASET = 'xquad-en'
SPLIT = 'test'
TENANTS = ('acme', 'globex')
TOP_K = 5
QUICK_QUESTIONS = 100
TARGET = 1000
"""Genuine quotes and corruptions a full run must produce (issue 14's acceptance)."""
MIN_CHARS = DEFAULT_MIN_QUOTE_CHARS

Kind = Literal['genuine', 'variant', 'corrupt']

# -- the corpus ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Article:
    """One XQuAD article rebuilt from its paragraphs: the source text the chunker cuts."""

    name: str
    title: str
    source: str
    offsets: dict[str, int]
    """Paragraph id -> where the paragraph starts in ``source``."""


@dataclass(frozen=True)
class Question:
    qid: str
    text: str
    paragraph_id: str
    answer: str
    answer_start: int
    """Offset of the (first) answer in its paragraph."""


def _rows(path: Path) -> Iterator[dict[str, Any]]:
    with path.open(encoding='utf-8') as f:
        for line in f:
            yield json.loads(line)


def load_xquad(root: Path) -> tuple[BeirDataset, list[Article], list[Question]]:
    """The dataset (`load_beir`), its articles in paragraph order, and every judged question with its answer."""
    dataset = load_beir(DATASET, SPLIT, root)
    base = root / DATASET
    paragraphs: dict[str, list[tuple[int, str]]] = defaultdict(list)
    for row in _rows(base / 'corpus.jsonl'):
        meta = row['metadata']
        paragraphs[meta['article']].append((int(meta['paragraph_index']), str(row['_id'])))
    articles = []
    for name, paras in sorted(paragraphs.items()):
        offsets, texts, pos = {}, [], 0
        for _, pid in sorted(paras):
            offsets[pid] = pos
            texts.append(dataset.corpus[pid][1])
            pos += len(texts[-1]) + 2
        articles.append(Article(name, dataset.corpus[paras[0][1]][0], '\n\n'.join(texts), offsets))
    questions = []
    for row in _rows(base / 'queries.jsonl'):
        qid = str(row['_id'])
        if qid in dataset.queries and row['metadata']['answers']:
            (pid,) = dataset.qrels[qid]
            meta = row['metadata']
            questions.append(
                Question(qid, dataset.queries[qid], pid, meta['answers'][0], int(meta['answer_starts'][0]))
            )
    return dataset, articles, questions


def document_id(tenant: str, article: str) -> str:
    return f'{tenant}-{re.sub(r"[^a-z0-9]+", "-", article.lower()).strip("-")}'


def build_documents(articles: Sequence[Article], tenant: str, chunker: Chunker) -> list[Document]:
    """Each article chunked by the ingestion `Chunker`, as ``tenant``'s document (its own ids)."""
    documents = []
    for article in articles:
        outline = OutlineBuilder()
        for s, e in paragraph_spans(article.source):
            outline.add_span(s, e)
        parsed = ParsedDocument(source=article.source, title=article.title, root=outline.root, format='text')
        documents.append(
            chunker.build(
                parsed,
                f'xquad://{tenant}/{article.name}',
                document_id=document_id(tenant, article.name),
                metadata={'tenant': tenant, 'article': article.name},
            )
        )
    return documents


# -- sentences and normalisation -----------------------------------------------------------------

_SENTENCE_END = re.compile(r'[.!?]["\'\u201d\u2019)\]]*(?=\s+["\'\u201c\u2018(\[]?[A-Z0-9])|\n\s*\n')
_ABBREVIATIONS = frozenset(
    {'e.g', 'i.e', 'etc', 'vs', 'mr', 'mrs', 'ms', 'dr', 'prof', 'st', 'no', 'fig', 'cf', 'approx', 'inc', 'jr', 'sr'}
)
_DOUBLE_QUOTES = '"\u201c\u201d\u201e\u201f\u2033\u00ab\u00bb'
_SINGLE_QUOTES = "'\u2018\u2019\u201a\u201b\u2032`\u00b4"
_DASHES = '-\u2010\u2011\u2012\u2013\u2014\u2015\u2212'
_LENIENT = str.maketrans({**dict.fromkeys(_DOUBLE_QUOTES + _SINGLE_QUOTES, "'"), **dict.fromkeys(_DASHES, '-')})


def sentence_spans(text: str) -> list[tuple[int, int]]:
    """``(start, end)`` of each sentence of ``text``, trimmed of surrounding whitespace."""
    spans, start = [], 0
    for m in _SENTENCE_END.finditer(text):
        words = text[start : m.start()].split()
        last = words[-1].lower().lstrip('("\'') if words else ''
        if m.group().strip() and (last in _ABBREVIATIONS or (len(last) == 1 and last.isalpha())):
            continue  # "St. Louis", "J. R. R. Tolkien": not a sentence end
        spans.append((start, m.end() if m.group().strip() else m.start()))
        start = m.end()
    spans.append((start, len(text)))
    return trim_spans(text, spans)


def lenient(text: str) -> str:
    """Whitespace runs to one space, every quote mark to ``'``, every dash to ``-``: wider than the verifier's rule."""
    return ' '.join(text.translate(_LENIENT).split())


def in_text(quote: str, text: str) -> bool:
    """Whether ``quote`` stands in ``text`` even under `lenient` normalisation (the guard for corruptions)."""
    return lenient(quote) in lenient(text)


# -- cases -----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Case:
    """One citation to verify: which rule made it, the chunk id it cites, the quote."""

    rule: str
    kind: Kind
    chunk_id: str
    quote: str


@dataclass(frozen=True)
class Probe:
    """One question's retrieval: the chunk holding its answer, what reached the model, the genuine sentence."""

    question: Question
    chunk: Chunk
    seen: dict[str, Chunk]
    sentence: str
    other_tenant_id: str
    """The globex copy of ``chunk``: the same text under another tenant's id (never in ``seen``)."""


Rule = Callable[[Probe, random.Random], str | None]
"""A rule's text change: the new quote, or ``None`` when the rule does not apply to this sentence."""


def _whitespace(p: Probe, rng: random.Random) -> str | None:
    runs = ['  ', '\n', '\t', '\u00a0', ' \n  ']
    return '\n ' + re.sub(r'\s+', lambda m: rng.choice(runs), p.sentence) + ' \t'


def _swap_marks(text: str, rng: random.Random) -> str:
    out = []
    for ch in text:
        if ch in _DOUBLE_QUOTES:
            ch = rng.choice([c for c in '"\u201c\u201d\u201e\u00ab\u00bb' if c != ch])
        elif ch in _SINGLE_QUOTES:
            ch = rng.choice([c for c in "'\u2018\u2019\u201b" if c != ch])
        out.append(ch)
    return ''.join(out)


def _quote_marks(p: Probe, rng: random.Random) -> str | None:
    return _swap_marks(p.sentence, rng) if any(c in _DOUBLE_QUOTES + _SINGLE_QUOTES for c in p.sentence) else None


def _swap_dashes(text: str) -> str:
    return ''.join('\u2013' if c == '-' else '-' if c in _DASHES else c for c in text)


def _dashes(p: Probe, rng: random.Random) -> str | None:
    return _swap_dashes(p.sentence) if any(c in _DASHES for c in p.sentence) else None


def _all_three(p: Probe, rng: random.Random) -> str | None:
    text = '  ' + re.sub(r'\s+', lambda m: rng.choice(['  ', '\n', '\u00a0']), p.sentence)
    return _swap_dashes(_swap_marks(text, rng))


VARIANTS: dict[str, Rule] = {
    'whitespace changed': _whitespace,
    'quote marks straight/curly': _quote_marks,
    'dashes hyphen/en dash': _dashes,
    'whitespace + quote marks + dashes': _all_three,
}

_NUMBER_WORDS = ['one', 'two', 'three', 'four', 'five', 'six', 'seven', 'eight', 'nine', 'ten', 'eleven', 'twelve']
_NUMBER = re.compile(r'\d+|\b(?:' + '|'.join(_NUMBER_WORDS) + r')\b', re.IGNORECASE)
_AUXILIARY = re.compile(
    r'\b(?:is|was|are|were|has|have|had|can|could|will|would|should|may|might|must|did|does|do)\b(?! not)'
)
_PAST = re.compile(r'(?<=\s)[a-z]{3,}ed\b')
_ENTITY = re.compile(r"(?<=\s)[A-Z][\w'\u2019.-]*(?:\s+(?:of\s+|the\s+|and\s+)?[A-Z][\w'\u2019.-]*)*")
_WORDS = re.compile(r'[A-Za-z]+')


def _number(p: Probe, rng: random.Random) -> str | None:
    found = list(_NUMBER.finditer(p.sentence))
    if not found:
        return None
    m = rng.choice(found)
    old = m.group()
    if old.isdigit():
        new = old[:-1] + str((int(old[-1]) + rng.randint(1, 9)) % 10)
    else:
        choice = rng.choice([w for w in _NUMBER_WORDS if w != old.lower()])
        new = choice.capitalize() if old[0].isupper() else choice
    return p.sentence[: m.start()] + new + p.sentence[m.end() :]


def _negation(p: Probe, rng: random.Random) -> str | None:
    m = _AUXILIARY.search(p.sentence)
    if m is not None:
        return f'{p.sentence[: m.end()]} not{p.sentence[m.end() :]}'
    m = _PAST.search(p.sentence)
    if m is not None:
        return f'{p.sentence[: m.start()]}never {p.sentence[m.start() :]}'
    return None


def _word_swap(p: Probe, rng: random.Random) -> str | None:
    words = list(_WORDS.finditer(p.sentence))
    pairs = [
        (a, b)
        for a, b in itertools.pairwise(words)
        if a.group() != b.group() and p.sentence[a.end() : b.start()] == ' '
    ]
    if not pairs:
        return None
    a, b = rng.choice(pairs)
    s = p.sentence
    return f'{s[: a.start()]}{b.group()} {a.group()}{s[b.end() :]}'


def _char_edit(p: Probe, rng: random.Random) -> str | None:
    letters = [i for i, c in enumerate(p.sentence) if c.islower()]
    if not letters:
        return None
    i = rng.choice(letters)
    new = rng.choice([c for c in 'aeioustrnl' if c != p.sentence[i]])
    return p.sentence[:i] + new + p.sentence[i + 1 :]


def _truncated(p: Probe, rng: random.Random) -> str | None:
    cut = p.sentence[: MIN_CHARS - 1].rstrip()
    return cut if len(' '.join(cut.split())) < MIN_CHARS else None


_NEGATION_PREFIX = re.compile(r'\b(?:non|un|in|dis|anti)[-\u2010\u2011](?=[^\W\d_])', re.IGNORECASE)
"""A negating prefix joined by a hyphen: ``non-profit``, ``Anti-inflammatory``."""
_CONTRACTION = re.compile(r"\b[^\W\d_]+n(['\u2019\u02bc])t\b")
"""A negative contraction; group 1 is its apostrophe: ``don't``, ``didn\u2019t``."""
_NUMBER_JOINT = re.compile(r'(?<=\d)[/:.,\-\u2010-\u2015\u2212](?=\d)')
"""The joint inside one number: ``1/5``, ``12:30``, ``3.5``, ``1,000``, ``1914\u20131918``."""
_DIGIT_GROUPS = re.compile(r'(?<!\d)\d{1,3}(?:[ \u00a0\u2009\u202f]\d{3})+(?!\d)')
"""A number written in digit groups: ``12 500 000`` (plain, no-break, thin or narrow no-break spaces)."""


def _chunk_sentences(p: Probe) -> list[str]:
    return [p.chunk.urtext[s:e] for s, e in sentence_spans(p.chunk.urtext)]


def _cut_pick(p: Probe, rng: random.Random, cuts: list[str]) -> str | None:
    """One of the cut quotes that is long enough and stands once in all the seen chunks (so its one place is the cut).

    A cut quote is a substring of the chunk by design, so the lenient guard of the other rules
    cannot apply; a quote found twice might stand somewhere else on real word boundaries
    (``'institutional settings.'`` is cut from ``'non-institutional settings.'`` but stands whole
    in the next chunk).
    """
    texts = [lenient(c.urtext) for c in p.seen.values()]
    pool = [q for q in cuts if len(lenient(q)) >= MIN_CHARS and sum(t.count(lenient(q)) for t in texts) == 1]
    return rng.choice(pool) if pool else None


def _negation_dropped(p: Probe, rng: random.Random) -> str | None:
    """A sentence of the cited chunk quoted from just after a ``non-``/``un-``/... prefix, or up to a ``n't``.

    Such words are rare (a few dozen in XQuAD), so every sentence of the chunk is a candidate,
    not only the answer's: ``'refundable after 30 days'`` from ``'non-refundable after 30 days'``,
    ``'Patients can'`` from ``"Patients can't"``.
    """
    cuts = []
    for sentence in _chunk_sentences(p):
        cuts += [sentence[m.end() :] for m in _NEGATION_PREFIX.finditer(sentence)]
        cuts += [sentence[: m.start(1)] for m in _CONTRACTION.finditer(sentence)]
    return _cut_pick(p, rng, cuts)


def _number_cut(p: Probe, rng: random.Random) -> str | None:
    """A sentence of the cited chunk quoted from inside a number, or up to inside one.

    It starts just after a joint (``'5 of the patients'`` from ``'1/5 of the patients'``,
    ``'500 000 people'`` from ``'12 500 000 people'``) or ends just before one (``'In 1914'`` from
    ``'In 1914\u20131918'``). Every sentence of the chunk is a candidate, as for `_negation_dropped`.
    """
    cuts = []
    for sentence in _chunk_sentences(p):
        joints = [m.start() for m in _NUMBER_JOINT.finditer(sentence)]
        for m in _DIGIT_GROUPS.finditer(sentence):
            joints += [m.start() + i for i, c in enumerate(m.group()) if not c.isdigit()]
        cuts += [sentence[j + 1 :] for j in joints] + [sentence[:j] for j in joints]
    return _cut_pick(p, rng, cuts)


def _neighbours(p: Probe) -> list[Chunk]:
    seq = p.chunk.sequence_number
    return [c for c in p.seen.values() if c.document_id == p.chunk.document_id and abs(c.sequence_number - seq) == 1]


def _neighbour_sentence(p: Probe, rng: random.Random) -> str | None:
    pool = [n.urtext[s:e] for n in _neighbours(p) for s, e in sentence_spans(n.urtext) if e - s >= MIN_CHARS]
    return rng.choice(pool) if pool else None


def _stitched(p: Probe, rng: random.Random) -> str | None:
    """The last sentence of this chunk and the first of the next, as one quote (cited with this chunk's id)."""
    after = [n for n in _neighbours(p) if n.sequence_number == p.chunk.sequence_number + 1]
    if not after:
        return None
    own, nxt = sentence_spans(p.chunk.urtext), sentence_spans(after[0].urtext)
    if not own or not nxt:
        return None
    quote = f'{p.chunk.urtext[own[-1][0] : own[-1][1]]} {after[0].urtext[nxt[0][0] : nxt[0][1]]}'
    return quote if len(quote) >= MIN_CHARS else None  # else it would fail the length check, not the span check


@dataclass(frozen=True)
class EntityPool:
    """Capitalised word runs (not sentence-initial) of every article, to swap one article's entity for another's."""

    by_article: dict[str, list[str]]

    @classmethod
    def of(cls, articles: Sequence[Article]) -> EntityPool:
        return cls({a.name: sorted(set(m.group().rstrip('.') for m in _ENTITY.finditer(a.source))) for a in articles})

    def rule(self, article_of: Mapping[str, str]) -> Rule:
        def entity(p: Probe, rng: random.Random) -> str | None:
            found = [m for m in _ENTITY.finditer(p.sentence) if len(m.group().rstrip('.')) > 1]
            if not found:
                return None
            m = rng.choice(found)
            old = m.group().rstrip('.')
            others = [a for a in self.by_article if a != article_of[p.chunk.document_id]]
            new = rng.choice(self.by_article[rng.choice(others)])
            return None if new == old else p.sentence[: m.start()] + new + p.sentence[m.start() + len(old) :]

        return entity


@dataclass(frozen=True)
class Corruption:
    """A corruption rule: the text change, and whether it cites this chunk or the other tenant's copy."""

    make: Rule
    cites_other_tenant: bool = False
    verbatim: bool = False
    """Present in the chunk by design (too short, or the right text under the wrong id): no guard."""


def corruptions(entities: Rule) -> dict[str, Corruption]:
    return {
        'number changed': Corruption(_number),
        'negation inserted': Corruption(_negation),
        'two adjacent words swapped': Corruption(_word_swap),
        'entity from another article': Corruption(entities),
        'one letter changed': Corruption(_char_edit),
        'negation prefix dropped': Corruption(_negation_dropped, verbatim=True),
        'number cut': Corruption(_number_cut, verbatim=True),
        'sentence of the neighbouring chunk': Corruption(_neighbour_sentence),
        'stitched across two chunks': Corruption(_stitched),
        "other tenant's copy (globex id)": Corruption(
            lambda p, rng: p.sentence, cites_other_tenant=True, verbatim=True
        ),
        f'cut below {MIN_CHARS} characters': Corruption(_truncated, verbatim=True),
    }


@dataclass
class Tally:
    generated: int = 0
    accepted: int = 0
    skipped: Counter[str] = field(default_factory=Counter)
    reasons: Counter[str] = field(default_factory=Counter)
    distinct: set[tuple[str, str]] = field(default_factory=set)
    """(chunk id, quote) pairs: questions that share a sentence can yield the same case."""
    examples: list[tuple[Case, Chunk]] = field(default_factory=list)
    """Wrong verdicts (genuine rejected, corruption accepted), kept to print the exact pair."""
    not_located: int = 0
    seconds: float = 0.0
    """Time spent in `verify_answer` for this rule's cases."""


def cases_of(probe: Probe, rules: Mapping[str, Corruption], tallies: dict[str, Tally], seed: int) -> list[Case]:
    """The genuine quote, its accepted variants and every applicable corruption (skips counted in ``tallies``)."""
    rng = random.Random(f'{seed}:{probe.question.qid}')
    chunk_id = probe.chunk.id
    out = [Case('genuine sentence', 'genuine', chunk_id, probe.sentence)]
    for name, variant in VARIANTS.items():
        quote = variant(probe, rng)
        if quote is None or quote == probe.sentence:
            tallies[name].skipped['nothing to vary'] += 1
        else:
            out.append(Case(name, 'variant', chunk_id, quote))
    for name, rule in rules.items():
        quote = rule.make(probe, rng)
        if quote is None:
            tallies[name].skipped['rule does not apply'] += 1
        elif not rule.verbatim and in_text(quote, probe.chunk.urtext):
            tallies[name].skipped['found in the chunk anyway'] += 1
        else:
            out.append(Case(name, 'corrupt', probe.other_tenant_id if rule.cites_other_tenant else chunk_id, quote))
    return out


OTHER_SENTENCES = 'other sentences of the seen chunks'


def other_sentences(probe: Probe, done: set[tuple[str, str]]) -> list[Case]:
    """Every sentence of every seen chunk not verified yet in this run: genuine quotes beyond the answers."""
    out = []
    for chunk in probe.seen.values():
        for s, e in sentence_spans(chunk.urtext):
            key = (chunk.id, chunk.urtext[s:e])
            if key not in done and len(' '.join(key[1].split())) >= MIN_CHARS:
                done.add(key)
                out.append(Case(OTHER_SENTENCES, 'genuine', chunk.id, key[1]))
    return out


# -- retrieval -------------------------------------------------------------------------------------


@dataclass
class Retrieval:
    """Why questions yield no probe, counted."""

    skipped: Counter[str] = field(default_factory=Counter)
    ranks: Counter[int] = field(default_factory=Counter)
    out_of_scope: int = 0
    seconds: float = 0.0


def _answer_chunk(hits: Sequence[Chunk], document: str, lo: int, hi: int) -> tuple[int, Chunk] | None:
    for rank, c in enumerate(hits):
        start, end = c.start_char, c.end_char
        if c.document_id == document and start is not None and end is not None and start <= lo and hi <= end:
            return rank, c
    return None


def _sentence_at(chunk: Chunk, lo: int, hi: int) -> str:
    """The sentence(s) of ``chunk.urtext`` covering chunk offsets ``lo:hi`` (the answer)."""
    spans = [(s, e) for s, e in sentence_spans(chunk.urtext) if s < hi and lo < e]
    return chunk.urtext[spans[0][0] : spans[-1][1]]


async def probe(
    rag: ToolishRag[None], search: str, question: Question, article: Article, stats: Retrieval
) -> Probe | None:
    """Search as the model would (scoped to acme), broaden the answer's chunk, and pick the genuine sentence."""
    lo = article.offsets[question.paragraph_id] + question.answer_start
    hi = lo + len(question.answer)
    if article.source[lo:hi] != question.answer:
        stats.skipped['answer offset does not match the paragraph'] += 1
        return None
    result = await rag.run_tool(f'{search}_search', {'query': question.text, 'top_k': TOP_K})
    hits = [h.record for h in result.metadata['hits'] if isinstance(h.record, Chunk)]
    found = _answer_chunk(hits, document_id('acme', article.name), lo, hi)
    if found is None:
        stats.skipped[f'answer not in the top {TOP_K} chunks'] += 1
        return None
    rank, chunk = found
    stats.ranks[rank + 1] += 1
    broadened = await rag.run_tool('broaden_chunk', {'chunk_id': chunk.id, 'chunks_to_add': 1})
    seen = {c.id: c for c in [*hits, *(h.record for h in broadened.metadata['hits'])] if isinstance(c, Chunk)}
    stats.out_of_scope += sum(c.metadata.get('tenant') != 'acme' for c in seen.values())
    assert chunk.start_char is not None
    sentence = _sentence_at(chunk, lo - chunk.start_char, hi - chunk.start_char)
    if len(' '.join(sentence.split())) < MIN_CHARS:
        stats.skipped[f'answer sentence under {MIN_CHARS} characters'] += 1
        return None
    other = chunk.id.replace(document_id('acme', article.name), document_id('globex', article.name), 1)
    return Probe(question, chunk, seen, sentence, other)


# -- verification ----------------------------------------------------------------------------------


def _located(v: Verification, case: Case, chunk: Chunk) -> bool:
    """The filled source points at the quoted text: in the chunk, and in the article (chunk offset + quote offset)."""
    source = v.answer.claims[0].citations[0].source
    if source is None or lenient(chunk.urtext[source.chunk_start : source.chunk_end]) != lenient(case.quote):
        return False
    return chunk.start_char is None or source.start_char == chunk.start_char + source.chunk_start


def verify(probe: Probe, case: Case, tally: Tally, globex: Mapping[str, Chunk]) -> float:
    """Verify one case, record the verdict in ``tally``; returns the seconds `verify_answer` took."""
    answer = GroundedAnswer(
        status='answered',
        claims=[Claim(text=probe.question.text, citations=[Citation(chunk_id=case.chunk_id, quote=case.quote)])],
    )
    start = time.perf_counter()
    v = verify_answer(answer, probe.seen)
    elapsed = time.perf_counter() - start
    tally.generated += 1
    tally.accepted += v.ok
    tally.seconds += elapsed
    tally.distinct.add((case.chunk_id, case.quote))
    for problem in v.problems:
        tally.reasons[_reason_shape(problem.reason)] += 1
    chunk = probe.seen.get(case.chunk_id) or globex[case.chunk_id]
    wrong = v.ok != (case.kind != 'corrupt')
    if v.ok and case.kind != 'corrupt' and not _located(v, case, chunk):
        tally.not_located += 1
        wrong = True
    if wrong and len(tally.examples) < 5:
        tally.examples.append((case, chunk))
    return elapsed


def _reason_shape(reason: str) -> str:
    """A reason's gist: up to its first parenthesis or colon, ids and numbers blanked, so one kind counts together."""
    gist = re.split(r' \(|: ', reason, maxsplit=1)[0]
    return re.sub(r'\d+', 'N', re.sub(r"'[^']*'", 'X', gist))[:80]


# -- the run ---------------------------------------------------------------------------------------


@dataclass
class Results:
    tallies: dict[str, Tally]
    kinds: dict[str, Kind]
    retrieval: Retrieval
    verify_seconds: float
    chunks: int
    questions: int
    ingest_seconds: float


async def run(root: Path, limit: int | None, search: str, seed: int) -> Results:
    """Ingest both tenants, probe every question, verify every case."""
    _, articles, questions = load_xquad(root)
    if limit is not None:
        questions = questions[:limit]
    start = time.perf_counter()
    store = InMemoryStore(None if search == 'hybrid' else BagOfRandomVectors(64))
    documents = {t: build_documents(articles, t, Chunker()) for t in TENANTS}
    await store.upsert([d for t in TENANTS for d in documents[t]])
    ingest_seconds = time.perf_counter() - start
    globex = {c.id: c for d in documents['globex'] for c in d.chunks}
    article_of = {document_id(t, a.name): a.name for t in TENANTS for a in articles}
    rules = corruptions(EntityPool.of(articles).rule(article_of))
    tallies = {name: Tally() for name in ['genuine sentence', OTHER_SENTENCES, *VARIANTS, *rules]}
    kinds: dict[str, Kind] = {'genuine sentence': 'genuine', OTHER_SENTENCES: 'genuine'}
    kinds |= dict.fromkeys(VARIANTS, 'variant')
    kinds |= dict.fromkeys(rules, 'corrupt')
    rag = ToolishRag(store, name='docs').with_metadata_filter(F.eq('tenant', 'acme'))
    by_name = {a.name: a for a in articles}
    stats = Retrieval()
    verify_seconds = 0.0
    done: set[tuple[str, str]] = set()
    for question in questions:
        t0 = time.perf_counter()
        article = by_name[question.paragraph_id.split('#', 1)[0]]
        found = await probe(rag, search, question, article, stats)
        stats.seconds += time.perf_counter() - t0
        if found is None:
            continue
        done.add((found.chunk.id, found.sentence))
        for case in [*cases_of(found, rules, tallies, seed), *other_sentences(found, done)]:
            verify_seconds += verify(found, case, tallies[case.rule], globex)
    chunks = sum(len(d.chunks) for d in documents['acme'])
    return Results(tallies, kinds, stats, verify_seconds, chunks, len(questions), ingest_seconds)


# -- the report ------------------------------------------------------------------------------------


def machine() -> list[str]:
    gib = memory_gib()
    mem = '' if gib is None else f', {gib:.0f} GiB RAM'
    load = os.getloadavg()
    return [
        f'- machine: {cpu_model(platform.processor() or "unknown CPU")}, {os.cpu_count()} logical CPUs{mem}; '
        f'{platform.system()} {platform.release()}; load average at the start {load[0]:.1f} (shared machine)',
        f'- Python {platform.python_version()}; {THREAD_NOTE}',
    ]


def _table(r: Results) -> list[str]:
    lines = [
        '| rule | kind | generated | distinct | accepted | rejected | skipped (why) | rejection reasons |',
        '|---|---|---:|---:|---:|---:|---|---|',
    ]
    for name, t in r.tallies.items():
        skipped = ', '.join(f'{n} {why}' for why, n in t.skipped.most_common()) or '-'
        reason = '; '.join(f'{n} {why}' for why, n in t.reasons.most_common(2)).replace('|', '\\|') or '-'
        lines.append(
            f'| {name} | {r.kinds[name]} | {t.generated} | {len(t.distinct)} | {t.accepted} | '
            f'{t.generated - t.accepted} | {skipped} | {reason} |'
        )
    return lines


@dataclass(frozen=True)
class Sums:
    generated: int
    distinct: int
    accepted: int
    not_located: int
    seconds: float

    @property
    def rate(self) -> str:
        return f'{self.generated / max(self.seconds, 1e-9):,.0f} quotes/s'


def sums(r: Results, kinds: Sequence[Kind]) -> Sums:
    chosen = [t for n, t in r.tallies.items() if r.kinds[n] in kinds]
    return Sums(
        sum(t.generated for t in chosen),
        len(set().union(*(t.distinct for t in chosen))),
        sum(t.accepted for t in chosen),
        sum(t.not_located for t in chosen),
        sum(t.seconds for t in chosen),
    )


def criteria(r: Results, full: bool) -> list[tuple[str, bool]]:
    """The acceptance criteria as (line, passed); the counts only for a full run."""
    good, bad = sums(r, ['genuine', 'variant']), sums(r, ['corrupt'])
    answers = r.tallies['genuine sentence']
    located = good.accepted - good.not_located
    out = [
        (f'genuine quotes and variants accepted: {good.accepted}/{good.generated} (100% required)',
         good.accepted == good.generated > 0),
        (f'accepted genuine quotes located at the quoted text: {located}/{good.accepted}', good.not_located == 0),
        (f'corruptions accepted: {bad.accepted}/{bad.generated} (0 required)', bad.accepted == 0 and bad.generated > 0),
        (f'retrieved chunks outside the acme scope: {r.retrieval.out_of_scope} (0 required)',
         r.retrieval.out_of_scope == 0),
    ]  # fmt: skip
    if full:
        distinct_genuine = sums(r, ['genuine']).distinct
        out += [
            (f'genuine answer sentences: {answers.generated} (>= {TARGET} required)', answers.generated >= TARGET),
            (f'distinct genuine quotes: {distinct_genuine} (>= {TARGET} required)', distinct_genuine >= TARGET),
            (f'distinct corruptions: {bad.distinct} (>= {TARGET} required)', bad.distinct >= TARGET),
        ]
    return out


def _findings(r: Results) -> list[str]:
    lines = []
    for name, t in r.tallies.items():
        for case, chunk in t.examples:
            verdict = 'accepted' if r.kinds[name] == 'corrupt' else 'rejected or mislocated'
            lines += [
                f'- {name}: {verdict}: chunk `{case.chunk_id}`, quote {case.quote!r}',
                f'  chunk urtext: {chunk.urtext!r}',
            ]
    return lines


def _notes(r: Results, command: str, search: str) -> list[str]:
    good, bad = sums(r, ['genuine', 'variant']), sums(r, ['corrupt'])
    total = good.generated + bad.generated
    answers = r.tallies['genuine sentence']
    ranks = ', '.join(f'rank {k}: {v}' for k, v in sorted(r.retrieval.ranks.items()))
    skipped = ', '.join(f'{n} {why}' for why, n in r.retrieval.skipped.most_common()) or 'none'
    return [
        f'- command: `{command}`',
        f'- corpus: XQuAD-en, {r.questions} questions; the 48 articles rebuilt from their paragraphs and '
        f'chunked by `Chunker()` (500 characters): {r.chunks} chunks per tenant, stored twice '
        f'(tenants acme and globex, own document ids) in one InMemoryStore; ingest {r.ingest_seconds:.1f} s',
        f'- retrieval: `{search}_search` (top_k={TOP_K}), then `broaden_chunk` (1 each side) on the best hit '
        f'holding the answer, through `ToolishRag.run_tool` scoped to tenant acme; seen = every chunk those '
        f'calls returned. Answer chunk found for {answers.generated} questions ({ranks}); skipped: {skipped}; '
        f'{r.retrieval.seconds:.1f} s',
        f"- genuine quote: the sentence of the chunk's urtext holding the answer (XQuAD `answer_starts`), one "
        f'per question ({len(answers.distinct)} distinct: questions share sentences), and once each every other '
        'sentence of the seen chunks',
        f'- verification: `verify_answer` (min quote {MIN_CHARS} characters), one single-citation `answered` '
        f'answer per quote: {total} quotes in {r.verify_seconds:.2f} s = '
        f'{total / max(r.verify_seconds, 1e-9):,.0f} quotes/s (genuine and variants {good.rate}; corruptions '
        f'{bad.rate}: a rejected quote costs a search of its neighbours, the other seen chunks and the closest '
        'sentence)',
    ]


def report(r: Results, head: list[str], command: str, search: str, full: bool) -> tuple[str, bool]:
    """The markdown report and whether every criterion passed."""
    good, bad = sums(r, ['genuine', 'variant']), sums(r, ['corrupt'])
    checks = criteria(r, full)
    lines = [
        *head,
        *_notes(r, command, search),
        '',
        *_table(r),
        '',
        f'Totals: genuine quotes and variants {good.generated} ({good.distinct} distinct), accepted '
        f'{good.accepted}; corruptions {bad.generated} ({bad.distinct} distinct), accepted {bad.accepted}.',
        '',
        *[f'- {"PASS" if ok else "FAIL"}: {line}' for line, ok in checks],
        f'- peak RSS of the whole run: {peak_rss_mib():.0f} MiB',
    ]
    findings = _findings(r)
    if findings:
        lines += ['', 'Wrong verdicts (up to 5 per rule), exact quote and chunk:', '', *findings]
    return '\n'.join(lines), all(ok for _, ok in checks)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument('--quick', action='store_true', help=f'the first {QUICK_QUESTIONS} questions (a smoke test)')
    parser.add_argument('--limit', type=int, default=None, help='use the first N questions')
    parser.add_argument('--search', choices=['text', 'hybrid'], default='text', help='hybrid embeds with MiniLM')
    parser.add_argument('--seed', type=int, default=14, help="seed of the rules' random choices")
    parser.add_argument('--data', type=Path, default=data_dir(), help='the directory holding xquad-en/')
    a = parser.parse_args()
    if not (a.data / DATASET / 'corpus.jsonl').is_file():
        sys.exit(f'{DATASET} is not at {a.data / DATASET} (../shared/data next to the repository)')
    if a.search == 'hybrid':
        global THREAD_NOTE
        THREAD_NOTE = set_thread_counts(THREADS, torch=True)
    limit = QUICK_QUESTIONS if a.quick else a.limit
    command = ' '.join(['.venv/bin/python', 'benchmarks/grounding_bench.py', *sys.argv[1:]])
    head = machine()
    print(f'# grounding_bench: citation verification against rule-made corruptions, XQuAD-en ({a.search} search)')
    results = asyncio.run(run(a.data, limit, a.search, a.seed))
    text, ok = report(results, head, command, a.search, full=limit is None)
    print(text)
    sys.exit(0 if ok else 1)


if __name__ == '__main__':
    main()
