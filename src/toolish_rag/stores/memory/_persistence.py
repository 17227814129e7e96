"""How `InMemoryStore` saves itself: a log of segments, and versions that name which segments they hold.

A write saves its own segment; ``CURRENT`` switches by one atomic rename, so a crash leaves the
previous version readable. The layout is in docs/stores/memory.md (On-disk layout).
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import shutil
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
from pydantic import TypeAdapter

from ...content import Document, Record, Relation
from ...manifest import EmbedderIdentity, StoreManifest, read_manifest, update_manifest, write_manifest
from ...protocols import DocumentInfo
from ._graph import GraphState
from ._segments import Segment, new_name
from ._windows import WINDOW_FILES, WindowVectors, load_windows, save_windows

__all__ = [
    'FORMAT',
    'SavedSegment',
    'current_version',
    'document_info',
    'legacy_manifest',
    'load',
    'record_manifest',
    'record_reembed',
    'save',
]

FORMAT = 2
_LEGACY_FORMAT = 1
_SEGMENTS = 'segments'
_RELATIONS, _MARKS, _MANIFEST = 'relations.jsonl', 'marks.json', 'manifest.json'
_SEGMENT_FILES = ('records.jsonl', 'vectors.npy', *WINDOW_FILES, 'documents.json', 'removed.json')
_LANGUAGES = 'languages.json'
_RECORD_ADAPTER: TypeAdapter[Record] = TypeAdapter(Record)


@dataclass(frozen=True)
class SavedSegment:
    """One write: what a segment directory holds, and what a store's write applies (see docs/stores/memory.md).

    Replaying it removes ``removed_documents`` and ``removed_entities``, and the documents and
    entities it holds (a write replaces them), then appends ``records``.
    """

    records: list[Record]
    vectors: npt.NDArray[np.float32]
    """The records' first vectors, normalised."""
    windows: WindowVectors
    documents: list[DocumentInfo]
    removed_documents: frozenset[str] = frozenset()
    removed_entities: frozenset[str] = frozenset()
    name: str | None = None
    """Its directory under ``segments/`` (``None``: a write not saved yet, named when applied)."""
    languages: tuple[str, ...] | None = None
    """The language ``language='auto'`` analysed each record in (``languages.json``, optional: a
    segment saved without it, or by a fixed-language store, is detected again when reopened as auto)."""


def document_info(d: Document) -> DocumentInfo:
    """What a segment's ``documents.json`` keeps of ``d`` (its chunks are the segment's records)."""
    return DocumentInfo(
        id=d.id,
        uri=d.uri,
        title=d.title,
        fingerprint=d.fingerprint,
        chunk_count=len(d.chunks),
        metadata=dict(d.metadata),
    )


def model_id(model: Any) -> str:
    return f'{getattr(model, "system", "?")}:{getattr(model, "model_name", "?")}'


def legacy_manifest(path: Path) -> StoreManifest | None:
    """The store's manifest (docs/stores/manifest.md), else one derived from an older store's own files.

    Before manifests, the current version's ``manifest.json`` named the embedder (the bundled
    all-MiniLM-L6-v2 by its folder) and ``settings.json`` the analyzer; ``None``: nothing saved.
    """
    found = read_manifest(path)
    if found is not None and found.reembedding is not None:
        return _settled(path, found)
    if found is not None:
        return found
    if not (path / 'CURRENT').exists():
        return None
    embedder = _saved_embedder(path)
    settings = path / 'settings.json'
    analyzer = json.loads(settings.read_text(encoding='utf-8')).get('analyzer') if settings.exists() else None
    language = str(analyzer).rpartition(':')[2] if analyzer else None
    return StoreManifest('memory', embedder=embedder, language=language)


def _saved_embedder(path: Path) -> EmbedderIdentity | None:
    """The embedder the current version names (switched with its vectors by the ``CURRENT`` rename)."""
    current = path / 'CURRENT'
    if not current.exists():
        return None
    version = json.loads((path / current.read_text(encoding='utf-8').strip() / _MANIFEST).read_text(encoding='utf-8'))
    saved = str(version.get('embedder') or '')
    # Always 'system:model_name' (`model_id`); '?' where the model did not say: unknown, not compared.
    return EmbedderIdentity.from_legacy(saved) if ':' in saved and '?' not in saved else None


def _settled(path: Path, found: StoreManifest) -> StoreManifest:
    """A manifest whose re-embed was interrupted, resolved by the current version's embedder (and saved
    when the folder is writable; a reader without write access resolves it again next time)."""
    settled = found.settled(_saved_embedder(path))
    with contextlib.suppress(OSError):
        write_manifest(path, settled)
    return settled


def record_reembed(path: Path, identity: EmbedderIdentity, *, done: bool) -> StoreManifest:
    """A re-embed's manifest steps: before it, ``identity`` marked as re-embedding; after the version with its
    vectors is saved, recorded as the store's embedder (docs/stores/manifest.md, Re-embedding)."""

    def change(manifest: StoreManifest) -> StoreManifest:
        if done:
            return dataclasses.replace(manifest, embedder=identity, reembedding=None)
        return dataclasses.replace(manifest, reembedding=identity)

    return update_manifest(path, 'memory', change, legacy=lambda: legacy_manifest(path))


def record_manifest(path: Path, identity: EmbedderIdentity, language: str) -> StoreManifest:
    """Before a save: refuse vectors of another embedder than the store holds, record this one's identity."""
    location = str(path)

    def recorded(manifest: StoreManifest) -> StoreManifest:
        manifest.checked_embedder(identity, location)
        return dataclasses.replace(manifest, embedder=identity, language=language)

    return update_manifest(path, 'memory', recorded, legacy=lambda: legacy_manifest(path))


def _sync(directory: Path, names: Sequence[str]) -> None:
    for name in names:
        with open(directory / name, 'rb') as fh:
            os.fsync(fh.fileno())


def _write_segment(root: Path, saved: SavedSegment) -> None:
    assert saved.name is not None
    target = root / _SEGMENTS / saved.name
    partial = root / _SEGMENTS / f'{saved.name}.partial'
    shutil.rmtree(partial, ignore_errors=True)
    partial.mkdir(parents=True)
    with open(partial / 'records.jsonl', 'wb') as f:
        for r in saved.records:
            f.write(_RECORD_ADAPTER.dump_json(r))
            f.write(b'\n')
    np.save(partial / 'vectors.npy', saved.vectors)
    save_windows(partial, saved.windows)
    documents = [dataclasses.asdict(d) for d in saved.documents]
    (partial / 'documents.json').write_text(json.dumps(documents), encoding='utf-8')
    removed = {'documents': sorted(saved.removed_documents), 'entities': sorted(saved.removed_entities)}
    (partial / 'removed.json').write_text(json.dumps(removed), encoding='utf-8')
    files: tuple[str, ...] = _SEGMENT_FILES
    if saved.languages is not None:
        (partial / _LANGUAGES).write_text(json.dumps(list(saved.languages)), encoding='utf-8')
        files = (*files, _LANGUAGES)
    _sync(partial, files)
    os.replace(partial, target)  # a segment directory without the suffix is always complete


def save(
    path: Path,
    segments: Sequence[Segment],
    content: Callable[[Segment], SavedSegment],
    graph: GraphState,
    model: Any,
    records: int,
) -> str:
    """Write a new version of ``segments`` (saving those not on disk yet) and switch ``CURRENT`` to it: its name.

    ``content`` gives a segment's records, vectors and documents when it must be written.
    """
    (path / _SEGMENTS).mkdir(parents=True, exist_ok=True)
    for segment in segments:
        if not (path / _SEGMENTS / segment.name).is_dir():
            _write_segment(path, content(segment))
    version = f'v{time.time_ns()}'
    target = path / version
    target.mkdir()
    with open(target / _RELATIONS, 'wb') as f:
        for relation in graph.relations.values():
            f.write(relation.model_dump_json().encode('utf-8'))
            f.write(b'\n')
    (target / _MARKS).write_text(json.dumps(graph.marks), encoding='utf-8')
    manifest = {
        'format': FORMAT,
        'embedder': model_id(model),
        'segments': [s.name for s in segments],
        'records': records,
        'relations': len(graph.relations),
    }
    (target / _MANIFEST).write_text(json.dumps(manifest), encoding='utf-8')
    _sync(target, (_RELATIONS, _MARKS, _MANIFEST))
    pointer = path / 'CURRENT.tmp'
    pointer.write_text(version, encoding='utf-8')
    os.replace(pointer, path / 'CURRENT')
    for old in path.iterdir():
        if old.is_dir() and old.name.startswith('v') and old.name != version:
            shutil.rmtree(old, ignore_errors=True)
    named = {s.name for s in segments}
    for old in (path / _SEGMENTS).iterdir():
        if old.name not in named:
            shutil.rmtree(old, ignore_errors=True)
    return version


def current_version(path: Path) -> str | None:
    """The name of the version ``CURRENT`` points at (``None``: nothing saved)."""
    try:
        return (path / 'CURRENT').read_text(encoding='utf-8').strip()
    except FileNotFoundError:
        return None


def _read_records(source: Path) -> list[Record]:
    with open(source / 'records.jsonl', 'rb') as f:
        return [_RECORD_ADAPTER.validate_json(line) for line in f if line.strip()]


def _read_documents(source: Path) -> list[DocumentInfo]:
    return [DocumentInfo(**d) for d in json.loads((source / 'documents.json').read_text(encoding='utf-8'))]


def _read_segment(source: Path) -> SavedSegment:
    records = _read_records(source)
    removed = json.loads((source / 'removed.json').read_text(encoding='utf-8'))
    languages_file = source / _LANGUAGES
    languages = json.loads(languages_file.read_text(encoding='utf-8')) if languages_file.is_file() else None
    return SavedSegment(
        name=source.name,
        records=records,
        vectors=np.load(source / 'vectors.npy'),
        windows=load_windows(source, len(records)),
        documents=_read_documents(source),
        removed_documents=frozenset(removed['documents']),
        removed_entities=frozenset(removed['entities']),
        languages=tuple(str(code) for code in languages) if isinstance(languages, list) else None,
    )


def load(path: Path) -> tuple[list[SavedSegment], GraphState] | None:
    """The current version's segments, to replay in order, and its graph (``None``: nothing saved)."""
    current = path / 'CURRENT'
    if not current.exists():
        return None
    source = path / current.read_text(encoding='utf-8').strip()
    manifest = json.loads((source / _MANIFEST).read_text(encoding='utf-8'))
    fmt = manifest.get('format')
    if fmt == _LEGACY_FORMAT:
        # One full copy per version: one segment, not on disk in this layout (the next save writes it).
        records = _read_records(source)
        legacy = SavedSegment(
            name=new_name(),
            records=records,
            vectors=np.load(source / 'vectors.npy'),
            windows=load_windows(source, len(records)),
            documents=_read_documents(source),
            removed_documents=frozenset(),
            removed_entities=frozenset(),
        )
        return [legacy], _load_graph(source)
    if fmt != FORMAT:
        raise ValueError(f'{path} was written by an incompatible toolish-rag (format {fmt})')
    segments = [_read_segment(path / _SEGMENTS / name) for name in manifest['segments']]
    return segments, _load_graph(source)


def _load_graph(source: Path) -> GraphState:
    relations: dict[str, Relation] = {}
    if (source / _RELATIONS).exists():
        with open(source / _RELATIONS, 'rb') as f:
            relations = {r.id: r for r in (Relation.model_validate_json(line) for line in f if line.strip())}
    marks_file = source / _MARKS
    marks = json.loads(marks_file.read_text(encoding='utf-8')) if marks_file.exists() else {}
    return GraphState(relations, marks)
