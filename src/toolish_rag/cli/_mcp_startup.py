"""``toolish-rag mcp`` over stdio: the handshake answered at once, the toolset built after it.

The handshake's instructions are the toolset's own (``await rag.instructions()``), which depend on
the command's options, the store's kind and its manifest (embedder, languages, graph...), not on its
records. They are kept, after a start computed them, in a small file under the user's cache folder
keyed by exactly those: the options, each store's location and manifest bytes (for a store on a server,
the identity its adapter reads: ``handshake_key``), and the installed toolish-rag. A start whose key is known answers ``initialize`` from that file without importing
pydantic-ai or the store engine; the toolset is then built in the background and its instructions
compared (a difference rewrites the file and is said on stderr). An unknown key (the first start,
an ingest that changed the manifest) builds the toolset first, as before. See docs/mcp.md#start-up-time.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..manifest import MANIFEST_FILE
from ._common import open_rag, store_members, store_spec
from ._filter_arg import scoped as scoped_rag

if TYPE_CHECKING:
    from ..toolset import ToolishRag

__all__ = ['CACHE_ENV', 'HandshakeCache', 'serve_stdio_command']

CACHE_ENV = 'TOOLISH_RAG_CACHE_DIR'
"""Where toolish-rag keeps what it can compute again (default: ``$XDG_CACHE_HOME/toolish-rag``, ``~/.cache/...``)."""

_OPTIONS = (
    'embedder',
    'language',
    'name',
    'filterable',
    'group_by_document',
    'reranker',
    'rerank_candidates',
    'filter',
)
"""The options the toolset (so its instructions) is built from, besides the stores."""


def _cache_dir() -> Path:
    given = os.environ.get(CACHE_ENV)
    if given:
        return Path(given)
    base = os.environ.get('XDG_CACHE_HOME') or str(Path.home() / '.cache')
    return Path(base) / 'toolish-rag'


def _package_fingerprint() -> list[Any]:
    """The installed toolish-rag: its version and its sources' latest change (a source tree has no version)."""
    from importlib.metadata import PackageNotFoundError, version

    package = Path(__file__).resolve().parents[1]
    try:
        installed = version('toolish-rag-slim')
    except PackageNotFoundError:  # pragma: no cover - a source tree
        installed = '0'
    return [installed, str(package), max(p.stat().st_mtime_ns for p in package.rglob('*.py'))]


def _store_key(spec: str) -> list[Any]:
    """A store's part of the key: its folder and manifest; for a store that keeps neither in a folder (a
    server), what its adapter's ``handshake_key(location)`` says identifies it (`_adapter_key`)."""
    kind, _, location = spec.partition(':')
    folder = Path(location).expanduser().resolve() if location and '://' not in location else None
    try:
        manifest = hashlib.sha256((folder / MANIFEST_FILE).read_bytes()).hexdigest() if folder else None
    except OSError:
        manifest = None
    if manifest is None and kind.strip().lower() != 'memory':
        own = _adapter_key(kind.strip().lower(), location)
        if own is not None:
            return [kind, own]
    return [kind, str(folder) if folder else location, manifest]


def _adapter_key(kind: str, location: str) -> list[Any] | None:
    """``handshake_key(location)`` of the module the store's entry point names, when it defines one.

    Only stores without a manifest file come here: importing their adapter's module is the cost,
    so it should be light (``toolish_rag_postgres`` reads its server's identity with psycopg alone).
    """
    import importlib
    from importlib.metadata import entry_points

    from ..stores.registry import ENTRY_POINT_GROUP

    for ep in entry_points(group=ENTRY_POINT_GROUP, name=kind):
        key = getattr(importlib.import_module(ep.module), 'handshake_key', None)
        return list(key(location)) if callable(key) else None
    return None


@dataclass(frozen=True)
class HandshakeCache:
    """The instructions last computed for one key (options, stores, package), in one small JSON file."""

    path: Path

    @classmethod
    def for_args(cls, args: argparse.Namespace) -> HandshakeCache:
        members = store_members(args)
        stores = {name: _store_key(spec) for name, spec in (members or {'': store_spec(args)}).items()}
        options = {option: getattr(args, option, None) for option in _OPTIONS}
        key = json.dumps([_package_fingerprint(), stores, options, sys.version_info[:2]], sort_keys=True, default=str)
        digest = hashlib.sha256(key.encode()).hexdigest()[:32]
        return cls(_cache_dir() / 'mcp-handshake' / f'{digest}.json')

    def read(self) -> tuple[bool, str | None]:
        """``(found, instructions)``; an unreadable file is not found."""
        try:
            data = json.loads(self.path.read_text(encoding='utf-8'))
        except (OSError, ValueError):
            return False, None
        instructions = data.get('instructions') if isinstance(data, dict) else None
        return isinstance(data, dict) and 'instructions' in data, instructions if isinstance(
            instructions, str
        ) else None

    def write(self, instructions: str | None) -> None:
        """Keep ``instructions`` (atomically; readable by this user only); a cache that cannot be written is skipped."""
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            tmp = self.path.with_name(f'{self.path.name}.{os.getpid()}.tmp')
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            with os.fdopen(fd, 'w', encoding='utf-8') as f:
                json.dump({'instructions': instructions}, f)
            os.replace(tmp, self.path)
        except OSError:
            pass


def _built(args: argparse.Namespace) -> ToolishRag[Any]:
    """The command's toolset (blocking: imports, opens the store); a refusal as a RuntimeError naming it."""
    try:
        _, rag = open_rag(args)
    except SystemExit as e:  # open_rag refuses in one line (`toolish-rag: ...`), as for every command
        raise RuntimeError(str(e.code).removeprefix('toolish-rag: ')) from None
    return scoped_rag(rag, args.filter)


async def _warm_up(rag: ToolishRag[Any], cache: HandshakeCache, sent: str | None) -> None:
    """Check the instructions sent at the handshake, then load the embedding model (in a thread)."""
    import asyncio

    from .._store_attributes import embedder_of
    from ..embedding import preload_embedder

    actual = await rag.instructions()
    if actual != sent:
        cache.write(actual)
        print(
            'toolish-rag mcp: the instructions sent at connect were out of date (the store changed since the last '
            'start); the client gets the new ones when it reconnects',
            file=sys.stderr,
        )
    await asyncio.to_thread(preload_embedder, embedder_of(rag.store))


async def serve_stdio_command(args: argparse.Namespace, *, short_names: bool) -> None:
    """Serve the command's toolset over stdio: at once from the kept instructions, else after building it."""
    from ..mcp._stdio import Startup, serve_stdio, serve_stdio_lazily

    cache = HandshakeCache.for_args(args)
    found, instructions = cache.read()
    if not found:
        rag = _built(args)
        cache.write(await rag.instructions())
        await serve_stdio(rag, short_names=short_names)
        return
    startup = Startup(lambda: _built(args), lambda rag: _warm_up(rag, cache, instructions))
    await serve_stdio_lazily(startup, collection=args.name, instructions=instructions, short_names=short_names)
