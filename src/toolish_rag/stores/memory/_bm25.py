"""BM25 whose corpus statistics are those of the records in scope, over segments, for `InMemoryStore`.

bm25s's formula, bit for bit with whole-store statistics. See docs/stores/memory.md (BM25 with the
statistics of the scope).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from itertools import accumulate, chain

import numpy as np
import numpy.typing as npt

__all__ = ['Bm25Index', 'Bm25Segment', 'ScopeStatistics']

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


@dataclass(frozen=True, eq=False)
class Bm25Segment:
    """The postings of a contiguous run of records, numbered from 0 within the run; immutable.

    A store appends one segment per write instead of rebuilding every posting list: a word's
    postings are the union of its postings in every segment, so scoring gathers them (shifted by
    each segment's offset) before counting document frequencies, and the scores equal one index
    built over all the records at once (a test holds this). Small segments are merged (`merge`,
    array work, no re-tokenising) so a store keeps a logarithmic number of them.
    """

    vocabulary: dict[str, int]
    starts: npt.NDArray[np.int64]
    """Word ``w``'s postings are ``positions[starts[w]:starts[w + 1]]`` (ascending)."""
    positions: npt.NDArray[np.int64]
    frequencies: npt.NDArray[np.float32]
    lengths: npt.NDArray[np.int64]
    """Tokens per record (after stop words): BM25's document length."""
    languages: tuple[str, ...] = ()
    """The language each record was analysed in (`toolish_rag.analysis.Analysis`); ``()``: not known."""
    detected: bool = False
    """Whether ``languages`` were detected (``language='auto'``): a saved store keeps them, so a
    reopened one analyses its records without detecting them again."""

    @classmethod
    def build(
        cls,
        token_ids: list[list[int]],
        vocabulary: dict[str, int],
        languages: Sequence[str] = (),
        detected: bool = False,
    ) -> Bm25Segment:
        """Index records given as word ids (``bm25s.tokenize(..., return_ids=True)``)."""
        n = len(token_ids)
        lengths = np.fromiter((len(t) for t in token_ids), dtype=np.int64, count=n)
        words = np.fromiter(chain.from_iterable(token_ids), dtype=np.int64, count=int(lengths.sum()))
        records = np.repeat(np.arange(n, dtype=np.int64), lengths)
        # One (word, record) pair per posting, sorted by word then record; the run lengths are the counts.
        pairs, counts = np.unique(words * max(n, 1) + records, return_counts=True)
        posting_words = pairs // max(n, 1)
        return cls(
            vocabulary=vocabulary,
            starts=_starts(posting_words, len(vocabulary)),
            positions=pairs % max(n, 1),
            frequencies=counts.astype(np.float32),
            lengths=lengths,
            languages=tuple(languages),
            detected=detected,
        )

    def __len__(self) -> int:
        return int(self.lengths.size)

    def _posting_words(self) -> npt.NDArray[np.int64]:
        return np.repeat(np.arange(len(self.starts) - 1, dtype=np.int64), np.diff(self.starts))

    @classmethod
    def merge(cls, parts: Sequence[Bm25Segment]) -> Bm25Segment:
        """One segment holding ``parts``' records in order (``parts[1]``'s follow ``parts[0]``'s...).

        Linear in the postings, no sort: each part's postings of a word are contiguous, and land
        after the same word's postings of the parts before it, so every posting's place is the
        word's start in the merged segment, plus the earlier parts' counts of the word, plus its
        rank within its part's run.
        """
        vocabulary: dict[str, int] = {}
        mapped: list[npt.NDArray[np.int64]] = []
        for part in parts:
            local = np.fromiter(
                (vocabulary.setdefault(w, len(vocabulary)) for w in part.vocabulary),
                dtype=np.int64,
                count=len(part.vocabulary),
            )
            mapping = np.empty(len(part.vocabulary), dtype=np.int64)
            mapping[np.fromiter(part.vocabulary.values(), dtype=np.int64, count=len(part.vocabulary))] = local
            mapped.append(mapping)  # local word id -> merged word id
        words = len(vocabulary)
        before = np.zeros(words, dtype=np.int64)  # the parts so far: postings per merged word
        counts = []
        for part, mapping in zip(parts, mapped, strict=True):
            count = np.zeros(words, dtype=np.int64)
            count[mapping] = np.diff(part.starts)
            counts.append(count)
        starts = np.zeros(words + 1, dtype=np.int64)
        np.cumsum(np.sum(counts, axis=0) if counts else np.zeros(words, np.int64), out=starts[1:])
        total = int(starts[-1])
        positions = np.empty(total, dtype=np.int64)
        frequencies = np.empty(total, dtype=np.float32)
        offset = 0
        for part, mapping, count in zip(parts, mapped, counts, strict=True):
            local_words = part._posting_words()
            merged_words = mapping[local_words]
            rank = np.arange(local_words.size, dtype=np.int64) - part.starts[local_words]
            place = starts[merged_words] + before[merged_words] + rank
            positions[place] = part.positions + offset
            frequencies[place] = part.frequencies
            before += count
            offset += len(part)
        return cls(
            vocabulary=vocabulary,
            starts=starts,
            positions=positions,
            frequencies=frequencies,
            lengths=np.concatenate([p.lengths for p in parts]) if parts else np.zeros(0, dtype=np.int64),
            languages=tuple(chain.from_iterable(p.languages or ('',) * len(p) for p in parts)),
            detected=bool(parts) and all(p.detected for p in parts),
        )

    def select(self, keep: Mask) -> Bm25Segment:
        """The segment of the records ``keep`` admits, renumbered in order (their postings unchanged)."""
        renumber = np.cumsum(keep, dtype=np.int64) - 1
        kept = keep[self.positions]
        return Bm25Segment(
            vocabulary=self.vocabulary,
            starts=_starts(self._posting_words()[kept], len(self.vocabulary)),
            positions=renumber[self.positions[kept]],
            frequencies=self.frequencies[kept],
            lengths=self.lengths[keep],
            languages=tuple(code for code, kept in zip(self.languages, keep.tolist(), strict=True) if kept)
            if self.languages
            else (),
            detected=self.detected,
        )


def _starts(posting_words: npt.NDArray[np.int64], words: int) -> npt.NDArray[np.int64]:
    """CSR offsets of postings sorted by word: word ``w``'s run is ``starts[w]:starts[w + 1]``."""
    starts = np.zeros(words + 1, dtype=np.int64)
    np.cumsum(np.bincount(posting_words, minlength=words), out=starts[1:])
    return starts


@dataclass(frozen=True, eq=False)
class Bm25Index:
    """Posting lists (record positions and term frequencies per word) and record lengths, in segments.

    Segment ``s`` holds the records from ``offsets[s]`` on. Scores are those of one index over all
    the records: a word's postings are gathered from every segment first (see `Bm25Segment`).
    """

    segments: tuple[Bm25Segment, ...]
    offsets: tuple[int, ...]
    lengths: npt.NDArray[np.int64]
    """Tokens per record, every segment's in order."""
    whole: ScopeStatistics
    language_names: tuple[str, ...] = ()
    """The languages records were analysed in (``''``: not known), indexed by `language_codes`."""
    language_codes: npt.NDArray[np.int64] = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    """Each record's language, as a position in `language_names`."""

    @classmethod
    def of(cls, segments: Sequence[Bm25Segment]) -> Bm25Index:
        offsets = tuple(accumulate((len(s) for s in segments), initial=0))[:-1]
        lengths = np.concatenate([s.lengths for s in segments]) if segments else np.zeros(0, dtype=np.int64)
        per_record = list(chain.from_iterable(s.languages or ('',) * len(s) for s in segments))
        names = tuple(sorted(set(per_record)))
        position = {name: i for i, name in enumerate(names)}
        codes = np.fromiter((position[c] for c in per_record), dtype=np.int64, count=len(per_record))
        return cls(tuple(segments), offsets, lengths, ScopeStatistics.of(lengths, None), names, codes)

    @classmethod
    def build(
        cls,
        token_ids: list[list[int]],
        vocabulary: dict[str, int],
        languages: Sequence[str] = (),
        detected: bool = False,
    ) -> Bm25Index:
        """An index of one segment (see `Bm25Segment.build`)."""
        return cls.of([Bm25Segment.build(token_ids, vocabulary, languages, detected)])

    def languages(self, mask: Mask | None) -> dict[str, int]:
        """How many of the records ``mask`` admits were analysed in each language (all records when ``None``).

        A query is analysed in these (`toolish_rag.analysis.TextAnalyzer.query_tokens`): those of
        the scope only, so what other tenants hold never changes a scope's query.
        """
        codes = self.language_codes if mask is None else self.language_codes[mask]
        counts = np.bincount(codes, minlength=len(self.language_names))
        return {
            self.language_names[i]: int(counts[i]) for i in np.flatnonzero(counts).tolist() if self.language_names[i]
        }

    def __len__(self) -> int:
        return int(self.lengths.size)

    def __contains__(self, word: object) -> bool:
        """Whether any record was ever indexed with ``word`` (it may score nothing in a scope)."""
        return any(word in s.vocabulary for s in self.segments)

    def postings(self, word: str) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.float32]] | None:
        """``word``'s record positions (ascending) and term frequencies over every segment."""
        found = [
            (s.positions[s.starts[w] : s.starts[w + 1]] + offset, s.frequencies[s.starts[w] : s.starts[w + 1]])
            for s, offset in zip(self.segments, self.offsets, strict=True)
            if (w := s.vocabulary.get(word)) is not None
        ]
        if not found:
            return None
        if len(found) == 1:
            return found[0]
        return np.concatenate([p for p, _ in found]), np.concatenate([f for _, f in found])

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
            found = self.postings(word)
            if found is None:
                continue
            positions, tf = found
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
