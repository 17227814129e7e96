"""BM25 whose corpus statistics are those of the records in scope, for `InMemoryStore`.

BM25 weighs a word by how rare it is in the corpus (IDF: the number of records and how many
contain the word) and a record by its length against the average. Computed over the whole
store, those statistics move when *any* record is added or removed, so a tenant scoped to
its own records could tell, from its own scores, whether another tenant holds records with a
given word. Here the statistics are taken from the records a search's filter admits: a
scoped search's scores are a function of the in-scope records alone, byte for byte.

That is cheap because the index keeps term frequencies, not precomputed scores: a posting
list per word (record positions and counts) and each record's length. A query reads the
posting lists of its few words, counts how many postings are in scope (the word's document
frequency in the scope) and scores just those; the scope's record count and average length
are computed once per filter (`ScopeStatistics.of`) and cached with the filter's mask.

The formula is bm25s's default (Lucene's BM25: ``k1=1.5``, ``b=0.75``, IDF
``log(1 + (N - df + 0.5) / (df + 0.5))``), evaluated with the same float types and in the same
order, so with whole-store statistics the scores equal ``bm25s.BM25().get_scores`` bit for bit
(a test holds this).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from itertools import chain

import numpy as np
import numpy.typing as npt

__all__ = ['Bm25Index', 'ScopeStatistics']

K1 = 1.5
B = 0.75

Mask = npt.NDArray[np.bool_]


@dataclass(frozen=True)
class ScopeStatistics:
    """The corpus statistics BM25 needs besides document frequencies: record count and mean length."""

    records: int
    mean_length: float

    @classmethod
    def of(cls, lengths: npt.NDArray[np.int64], mask: Mask | None) -> ScopeStatistics:
        """Statistics of the records ``mask`` admits (all records when ``None``).

        ``mean`` over the selected lengths in store order: the in-scope records keep their
        relative order whatever is written outside the scope, so the value is identical.
        """
        selected = lengths if mask is None else lengths[mask]
        if selected.size == 0:
            return cls(0, 0.0)
        return cls(int(selected.size), float(selected.mean()))


@dataclass(frozen=True)
class Bm25Index:
    """Posting lists (record positions and term frequencies per word) and record lengths."""

    vocabulary: dict[str, int]
    starts: npt.NDArray[np.int64]
    """Word ``w``'s postings are ``positions[starts[w]:starts[w + 1]]`` (ascending)."""
    positions: npt.NDArray[np.int64]
    frequencies: npt.NDArray[np.float32]
    lengths: npt.NDArray[np.int64]
    """Tokens per record (after stop words): BM25's document length."""
    whole: ScopeStatistics

    @classmethod
    def build(cls, token_ids: list[list[int]], vocabulary: dict[str, int]) -> Bm25Index:
        """Index records given as word ids (``bm25s.tokenize(..., return_ids=True)``)."""
        n = len(token_ids)
        lengths = np.fromiter((len(t) for t in token_ids), dtype=np.int64, count=n)
        words = np.fromiter(chain.from_iterable(token_ids), dtype=np.int64, count=int(lengths.sum()))
        records = np.repeat(np.arange(n, dtype=np.int64), lengths)
        # One (word, record) pair per posting, sorted by word then record; the run lengths are the counts.
        pairs, counts = np.unique(words * max(n, 1) + records, return_counts=True)
        posting_words = pairs // max(n, 1)
        starts = np.zeros(len(vocabulary) + 1, dtype=np.int64)
        np.cumsum(np.bincount(posting_words, minlength=len(vocabulary)), out=starts[1:])
        return cls(
            vocabulary=vocabulary,
            starts=starts,
            positions=pairs % max(n, 1),
            frequencies=counts.astype(np.float32),
            lengths=lengths,
            whole=ScopeStatistics.of(lengths, None),
        )

    def __len__(self) -> int:
        return int(self.lengths.size)

    def scores(self, words: list[str], statistics: ScopeStatistics, mask: Mask | None) -> npt.NDArray[np.float32]:
        """BM25 of every record for ``words`` under ``statistics``; records outside ``mask`` score 0.

        ``statistics`` must be those of the records ``mask`` admits (``whole`` when it is
        ``None``): document frequencies are counted inside ``mask``, so whole-store statistics
        with a mask would score with a mix of two corpora, neither bm25s's ranking nor the
        scope's. For whole-store scores of a scope, score without a mask and select afterwards.
        A repeated query word counts twice, as in bm25s. Words the index has never seen add
        nothing.
        """
        assert statistics.records == (len(self) if mask is None else int(np.count_nonzero(mask))), (
            'statistics and mask describe different records'
        )
        out = np.zeros(len(self), dtype=np.float32)
        if statistics.records == 0:
            return out
        n, mean_length = statistics.records, np.float64(statistics.mean_length)
        for word in words:
            w = self.vocabulary.get(word)
            if w is None:
                continue
            lo, hi = self.starts[w], self.starts[w + 1]
            positions, tf = self.positions[lo:hi], self.frequencies[lo:hi]
            if mask is not None:
                inside = mask[positions]
                positions, tf = positions[inside], tf[inside]
            df = positions.size
            if df == 0:
                continue
            # bm25s: float32 IDF from a float64 log; the length term in float64; the product rounded to float32.
            idf = np.float32(math.log(1 + (n - df + 0.5) / (df + 0.5)))
            tfc = tf / (K1 * ((1 - B) + B * self.lengths[positions] / mean_length) + tf)
            np.add.at(out, positions, (idf * tfc).astype(np.float32))
        return out
