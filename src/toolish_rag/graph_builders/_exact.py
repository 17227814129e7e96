"""The exact-name linker: MENTIONS from a chunk to every node whose name it writes as a whole word.

See docs/graph.md (How the builders work).
"""

from __future__ import annotations

import html
import re
import unicodedata
from collections import defaultdict
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass

from ..content import Chunk, Entity, NodeKind, Relation
from .base import (
    DERIVED_SCOPE_VERSION,
    BuildReport,
    DocumentGraph,
    DocumentInput,
    GraphBuildStore,
    build_documents,
    derived_relation,
    fingerprint,
    group_mark,
    iter_documents,
    scope_group,
)

__all__ = ['ExactNameLinker', 'NameDictionary']

_WORD = re.compile(r'\w+')
_WHITESPACE = re.compile(r'\s+')
_QUALIFIER = re.compile(r'^(.*\S)\s*\([^()]*\)$', re.DOTALL)
_COMMA_QUALIFIER = re.compile(r'^([^,]*\S)\s*,\s*[^,]*\S$', re.DOTALL)
_MATCHING = 2
"""The version of the matching rule (text normalisation, name forms): in every mark, so a change rebuilds."""


@dataclass(frozen=True, slots=True)
class _Target:
    """A node a name stands for."""

    id: str
    kind: NodeKind


@dataclass(frozen=True, slots=True)
class _Name:
    text: str
    offset: int
    """Where the name's first word starts inside it (0 unless it starts with punctuation: ``.NET``)."""
    targets: tuple[_Target, ...]


class NameDictionary:
    """The names of one scope group and the nodes they stand for, indexed by first word."""

    __slots__ = ('_by_first_word', '_fold', 'digest')

    def __init__(self, names: dict[str, set[_Target]], fold: bool) -> None:
        self._fold = fold
        index: dict[str, list[_Name]] = defaultdict(list)
        for text, targets in names.items():
            first = _WORD.search(text)
            if first is not None:
                index[first.group()].append(_Name(text, first.start(), tuple(sorted(targets, key=lambda t: t.id))))
        for candidates in index.values():
            candidates.sort(key=lambda n: n.text)
        self._by_first_word = dict(index)
        self.digest = fingerprint(sorted((text, sorted((t.id, t.kind) for t in ts)) for text, ts in names.items()))

    def matches(self, text: str) -> Iterator[_Target]:
        """The targets of every name ``text`` writes as a whole word, overlapping ones included.

        No name competes with another: "New York City" yields the city and "New York" (see docs/graph.md).
        """
        text = _normalise(text, self._fold)
        for word in _WORD.finditer(text):
            for name in self._by_first_word.get(word.group(), ()):
                start = word.start() - name.offset
                end = start + len(name.text)
                if start < 0 or not text.startswith(name.text, start):
                    continue
                if (start and _is_word(text[start - 1])) or (end < len(text) and _is_word(text[end])):
                    continue
                yield from name.targets


def _is_word(char: str) -> bool:
    return _WORD.match(char) is not None


def _normalise(text: str, fold: bool) -> str:
    """HTML character references decoded (``&amp;`` is ``&``), whitespace runs collapsed, NFC, case-folded if ``fold``."""
    text = unicodedata.normalize('NFC', _WHITESPACE.sub(' ', html.unescape(text))).strip()
    return text.casefold() if fold else text


def _forms(name: str, comma: bool = False) -> Iterator[str]:
    """A name and, when it ends with a ``(qualifier)``, the name without it; with ``comma``, a name with one
    comma also as the part before it (``Waterford, New York``: ``Waterford``), the qualifier removed first."""
    yield name
    bare = _QUALIFIER.match(name)
    if bare is not None:
        name = bare.group(1)
        yield name
    if comma:
        head = _COMMA_QUALIFIER.match(html.unescape(name))
        if head is not None:
            yield head.group(1)


@dataclass(frozen=True, slots=True)
class ExactNameLinker:
    """MENTIONS from chunks to entities, documents and sections they name (see docs/graph.md).

    ``scope_keys``: link only between a chunk and targets whose values of these keys are equal.
    ``comma_titles``: a document title with one comma also matches as the part before it
    (``"Waterford, New York"`` as ``"Waterford"``, ``"Frederick Lindemann, 1st Viscount Cherwell"`` as
    ``"Frederick Lindemann"``), as running text names such pages.
    """

    scope_keys: tuple[str, ...] = ()
    case_sensitive: bool = True
    min_name_length: int = 3
    include_titles: bool = True
    comma_titles: bool = True
    name: str = 'exact'

    async def build(self, store: GraphBuildStore) -> BuildReport:
        documents = [document async for document in iter_documents(store)]
        dictionaries = self.dictionaries(await store.list_entities(), documents)
        config = (
            self.name,
            DERIVED_SCOPE_VERSION,
            self.scope_keys,
            self.case_sensitive,
            self.min_name_length,
            self.include_titles,
            self.comma_titles,
            _MATCHING,
        )

        digests = {group: dictionary.digest for group, dictionary in dictionaries.items()}

        def mark_of(document: DocumentInput) -> str:
            return group_mark(config, document, self.scope_keys, digests)

        async def graph_of(document: DocumentInput) -> DocumentGraph:
            return DocumentGraph(tuple(self._mentions(document.chunks, dictionaries)))

        return await build_documents(store, self.name, documents, mark_of, graph_of)

    def dictionaries(self, entities: Iterable[Entity], documents: Iterable[DocumentInput]) -> dict[str, NameDictionary]:
        """One `NameDictionary` per scope group, from entity names and aliases and (optionally) titles."""
        names: dict[str, dict[str, set[_Target]]] = defaultdict(lambda: defaultdict(set))

        def add(group: str, name: str, target: _Target, comma: bool = False) -> None:
            for form in _forms(name, comma):
                text = _normalise(form, not self.case_sensitive)
                if len(text) >= self.min_name_length:
                    names[group][text].add(target)

        for entity in entities:
            group = scope_group(entity.metadata, self.scope_keys)
            for name in (entity.name, *entity.aliases):
                add(group, name, _Target(entity.id, 'entity'))
        if self.include_titles:
            for document in documents:
                for chunk in document.chunks:
                    group = scope_group(chunk.metadata, self.scope_keys)
                    add(group, chunk.document_title, _Target(chunk.document_id, 'document'), self.comma_titles)
                    for section_id, title in zip(chunk.section_ids, chunk.section_path, strict=True):
                        add(group, title, _Target(section_id, 'section'))
        return {group: NameDictionary(by_name, not self.case_sensitive) for group, by_name in names.items()}

    def _mentions(self, chunks: Sequence[Chunk], dictionaries: dict[str, NameDictionary]) -> Iterator[Relation]:
        for chunk in chunks:
            dictionary = dictionaries.get(scope_group(chunk.metadata, self.scope_keys))
            if dictionary is None:
                continue
            own = {chunk.id, chunk.document_id, *chunk.section_ids}
            seen: set[str] = set()
            for target in dictionary.matches(chunk.urtext):
                if target.id in own or target.id in seen:
                    continue
                seen.add(target.id)
                yield derived_relation(chunk, self.name, chunk.id, 'chunk', target.id, target.kind, 'MENTIONS')
