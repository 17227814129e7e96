"""Document structure as edges: PART_OF (chunk -> section -> document) and LINKS_TO between documents.

See docs/graph.md (How the builders work).
"""

from __future__ import annotations

import asyncio
import posixpath
import re
import warnings
from collections import defaultdict
from collections.abc import AsyncIterator, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from urllib.parse import unquote, urljoin

from .._extras import require_extra
from .._uris import local_path
from ..content import Chunk, NodeKind, Relation
from ..protocols import DocumentInfo
from .base import (
    DERIVED_SCOPE_VERSION,
    BuildReport,
    DocumentGraph,
    DocumentInput,
    GraphBuildStore,
    build_documents,
    chunks_digest,
    derived_relation,
    fingerprint,
    iter_documents,
    scope_group,
)

__all__ = ['StructureBuilder']

_MARKDOWN_LINK = re.compile(r'\[[^\]\n]*\]\(\s*<?([^)\s>]+)>?(?:\s+["\'(][^)]*)?\)')
_REFERENCE_DEFINITION = re.compile(r'^[ \t]{0,3}\[[^\]\n]+\]:[ \t]*<?(\S+?)>?(?:[ \t]|$)', re.MULTILINE)
_BARE = re.compile(r'[^\s<>()\[\]{}"\'`|,;]+')
_SCHEME = re.compile(r'^[A-Za-z][A-Za-z0-9+.-]*:')
_HTML_SUFFIXES = frozenset({'.html', '.htm', '.xhtml'})
_WHITESPACE = re.compile(r'\s+')


@dataclass(frozen=True, slots=True)
class _Link:
    """A resolved link: from ``chunk`` to document ``target``."""

    chunk: Chunk
    target: str


@dataclass(frozen=True, slots=True)
class _DocumentIndex:
    """Stored documents by every key a link may resolve to (uri, ``path`` metadata, both without suffix)."""

    exact: Mapping[str, tuple[str, ...]]
    stems: Mapping[str, tuple[str, ...]]
    groups: Mapping[str, str]
    """Document id -> its scope group."""

    @classmethod
    def of(cls, infos: Sequence[DocumentInfo], scope_keys: Sequence[str]) -> _DocumentIndex:
        exact: dict[str, list[str]] = defaultdict(list)
        stems: dict[str, list[str]] = defaultdict(list)
        for info in infos:
            for key in _keys_of(info):
                exact[key].append(info.id)
                stem = _without_suffix(key)
                if stem != key:
                    stems[stem].append(info.id)
        return cls(
            {k: tuple(v) for k, v in exact.items()},
            {k: tuple(v) for k, v in stems.items()},
            {info.id: scope_group(info.metadata, scope_keys) for info in infos},
        )

    def resolve(self, keys: Sequence[str]) -> tuple[str, ...]:
        """Every document a link's keys name: exact matches and, for a key without suffix, stem matches too.

        Both, never one instead of the other: a document at the exact key must not hide another's stem
        match (another tenant could then take this tenant's link; see docs/graph.md).
        """
        found = [d for key in keys for d in self.exact.get(key, ())]
        found += [d for key in keys if _without_suffix(key) == key for d in self.stems.get(key, ())]
        return tuple(dict.fromkeys(found))


def _uri_key(uri: str) -> str:
    return 'uri:' + unquote(uri.split('#', 1)[0].split('?', 1)[0])


def _path_key(path: str) -> str:
    return 'path:' + posixpath.normpath(path.replace('\\', '/'))


def _keys_of(info: DocumentInfo) -> list[str]:
    keys = [_uri_key(info.uri)]
    path = info.metadata.get('path')
    if isinstance(path, str) and path:
        keys.append(_path_key(path))
    return keys


def _without_suffix(key: str) -> str:
    prefix, _, rest = key.partition(':')
    name = PurePosixPath(rest).name
    suffix = PurePosixPath(name).suffix
    return f'{prefix}:{rest[: -len(suffix)]}' if suffix and name != suffix else key


def _target_keys(info: DocumentInfo, target: str) -> list[str]:
    """Where ``target``, written in ``info``'s document, may point: uri and path keys."""
    target = target.strip()
    bare = target.split('#', 1)[0].split('?', 1)[0]
    if not bare:
        return []  # a link within the same page
    if _SCHEME.match(target):
        return [_uri_key(target)]
    keys = []
    if _SCHEME.match(info.uri):
        keys.append(_uri_key(urljoin(info.uri, bare)))
    else:
        base = posixpath.dirname(info.uri)
        keys.append(_uri_key(posixpath.normpath(posixpath.join(base, unquote(bare)))))
    path = info.metadata.get('path')
    if isinstance(path, str) and path and not bare.startswith('/'):
        keys.append(_path_key(posixpath.join(posixpath.dirname(path.replace('\\', '/')), unquote(bare))))
    return keys


def _text_targets(text: str) -> Iterator[str]:
    """Link targets written in ``text``: Markdown links, reference definitions, then bare tokens."""
    for match in _MARKDOWN_LINK.finditer(text):
        yield match.group(1)
    for match in _REFERENCE_DEFINITION.finditer(text):
        yield match.group(1)
    for match in _BARE.finditer(text):
        token = match.group().rstrip('.:!?')
        if '/' in token or '.' in token:
            yield token


def _local_html(info: DocumentInfo) -> Path | None:
    """The readable local HTML file ``info`` was ingested from, if any."""
    path = info.metadata.get('path')
    is_html = info.metadata.get('source_format') == 'html' or any(
        str(candidate).lower().endswith(tuple(_HTML_SUFFIXES)) for candidate in (info.uri, path)
    )
    if not is_html:
        return None
    candidates: list[Path] = []
    uri_path = local_path(info.uri)
    if uri_path is not None:
        candidates.append(uri_path)
    if isinstance(path, str) and Path(path).is_absolute():
        candidates.append(Path(path))  # a relative one would be read against the working directory: not ours
    return next((c for c in candidates if c.is_file()), None)


def _html_links(path: Path) -> tuple[tuple[str, str], ...]:
    """``(href, link text)`` of every ``<a href>`` in an HTML file; nothing when it cannot be read (blocking)."""
    require_extra('StructureBuilder reading HTML links', 'graph', 'bs4')
    from bs4 import BeautifulSoup, MarkupResemblesLocatorWarning, XMLParsedAsHTMLWarning

    try:
        data = path.read_bytes()
    except OSError:
        return ()
    with warnings.catch_warnings():
        # XHTML read as HTML finds the same links (bs4 warns in 12 lines on every build); a tiny file that looks
        # like a file name is still a page
        warnings.simplefilter('ignore', XMLParsedAsHTMLWarning)
        warnings.simplefilter('ignore', MarkupResemblesLocatorWarning)
        soup = BeautifulSoup(data, 'lxml')
    links = []
    for anchor in soup.find_all('a', href=True):
        href = anchor.get('href')
        if isinstance(href, str) and href.strip():
            links.append((href.strip(), _squash(anchor.get_text(' '))))
    return tuple(links)


def _squash(text: str) -> str:
    return _WHITESPACE.sub(' ', text).strip()


def _holder(chunks: Sequence[Chunk], squashed: Sequence[str], text: str) -> Chunk:
    """The first chunk showing a link's ``text``, else the first chunk."""
    if text:
        for chunk, content in zip(chunks, squashed, strict=True):
            if text in content:
                return chunk
    return chunks[0]


@dataclass(frozen=True, slots=True)
class StructureBuilder:
    """PART_OF edges of the section tree and LINKS_TO edges between stored documents (see docs/graph.md).

    ``scope_keys``: LINKS_TO only between documents whose values of these keys are equal.
    """

    scope_keys: tuple[str, ...] = ()
    name: str = 'structure'

    async def build(self, store: GraphBuildStore) -> BuildReport:
        infos = await store.list_documents()
        index = _DocumentIndex.of(infos, self.scope_keys)
        html: dict[str, tuple[tuple[str, str], ...]] = {}
        links: dict[str, tuple[_Link, ...]] = {}
        broken: dict[str, Exception] = {}

        async def documents() -> AsyncIterator[DocumentInput]:
            """Every document, its HTML file's links read (in a thread) and all its links resolved."""
            async for document in iter_documents(store, infos):
                try:
                    file = _local_html(document.info)
                    html[document.id] = await asyncio.to_thread(_html_links, file) if file is not None else ()
                    links[document.id] = self._links(document, html[document.id], index)
                except Exception as e:  # reported by the driver for this document alone (see mark_of)
                    broken[document.id] = e
                yield document

        def mark_of(document: DocumentInput) -> str:
            if document.id in broken:
                raise broken[document.id]
            resolved = sorted((link.chunk.id, link.target) for link in links[document.id])
            return fingerprint(
                self.name,
                DERIVED_SCOPE_VERSION,
                self.scope_keys,
                chunks_digest(document.chunks),
                html[document.id],
                resolved,
            )

        async def graph_of(document: DocumentInput) -> DocumentGraph:
            return DocumentGraph((*self._part_of(document), *self._links_to(document, links[document.id])))

        return await build_documents(store, self.name, documents(), mark_of, graph_of)

    def _links(
        self, document: DocumentInput, html: Sequence[tuple[str, str]], index: _DocumentIndex
    ) -> tuple[_Link, ...]:
        if not document.chunks:
            return ()
        found: dict[tuple[str, str], _Link] = {}
        for chunk in document.chunks:
            for target in _text_targets(chunk.urtext):
                self._add(found, document, chunk, target, index)
        if html:
            squashed = [_squash(chunk.urtext) for chunk in document.chunks]
            for href, text in html:
                self._add(found, document, _holder(document.chunks, squashed, text), href, index)
        return tuple(found.values())

    def _add(
        self,
        found: dict[tuple[str, str], _Link],
        document: DocumentInput,
        chunk: Chunk,
        target: str,
        index: _DocumentIndex,
    ) -> None:
        group = scope_group(chunk.metadata, self.scope_keys)
        for document_id in index.resolve(_target_keys(document.info, target)):
            if document_id != document.id and index.groups[document_id] == group:
                found.setdefault((chunk.id, document_id), _Link(chunk, document_id))

    def _part_of(self, document: DocumentInput) -> Iterator[Relation]:
        sections: set[str] = set()
        for chunk in document.chunks:
            up_kind: NodeKind
            up, up_kind = (chunk.section_id, 'section') if chunk.section_id else (document.id, 'document')
            yield derived_relation(chunk, self.name, chunk.id, 'chunk', up, up_kind, 'PART_OF')
            for depth, section_id in enumerate(chunk.section_ids):
                if section_id in sections:
                    continue
                sections.add(section_id)  # first seen with its first chunk: the edge is scoped like it
                parent = chunk.section_ids[depth - 1] if depth else document.id
                yield derived_relation(
                    chunk,
                    self.name,
                    section_id,
                    'section',
                    parent,
                    'section' if depth else 'document',
                    'PART_OF',
                    read_from_chunk=False,
                )

    def _links_to(self, document: DocumentInput, links: Sequence[_Link]) -> Iterator[Relation]:
        for link in links:
            yield derived_relation(link.chunk, self.name, link.chunk.id, 'chunk', link.target, 'document', 'LINKS_TO')
