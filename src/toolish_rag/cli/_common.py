"""What every subcommand shares: opening the store and building the toolset."""

from __future__ import annotations

import argparse
import os
import re
import sys
from typing import TYPE_CHECKING, Any

from ..manifest import EmbedderMismatch, ManifestError
from ..stores._location import STORE_DIR, default_spec, local_folder, missing_store, spec_with_location
from ..stores.lock import StoreLock, StoreLocked
from ..stores.registry import available_stores, default_store_name, open_store
from ._extras import check_model
from ._filter_arg import add_filter_argument, scoped as scoped_rag

if TYPE_CHECKING:  # the toolset (pydantic-ai) is imported when a command opens its store: `toolish-rag` starts light
    from ..toolset import FilterableKey, ToolishRag

__all__ = [
    'MODEL_ENV',
    'STORE_DIR',
    'add_model_arguments',
    'add_store_arguments',
    'default_store_spec',
    'filterable_keys',
    'hold_store_lock',
    'model_and_scoped_rag',
    'open_rag',
    'open_store_for',
    'release_store_locks',
    'reranking',
    'store_spec',
]

MODEL_ENV = 'TOOLISH_RAG_MODEL'
"""The environment variable a model-using command (chat, ask) reads when ``--model`` is not given."""


def default_store_spec() -> str:
    """``$TOOLISH_RAG_STORE``, else ``.toolish-rag/store`` as the kind it holds (a new one: LanceDB when
    installed, else memory). See docs/stores/manifest.md."""
    return default_spec(default_store_name())


FEDERATING = frozenset({'tools', 'search', 'mcp', 'chat', 'ask'})
"""The commands that take ``--store`` several times, each ``NAME=SPEC``, and serve the federation (docs/federation.md)."""
_MEMBER = re.compile(r'([a-z][a-z0-9_-]{0,31})=(.+)', re.DOTALL)
_NAMED = re.compile(r'([^:/\\=]+)=(.+)', re.DOTALL)
"""A ``NAME=SPEC`` whatever the name's characters: a ``=`` before any ``:`` or path separator."""


def store_members(args: argparse.Namespace) -> dict[str, str] | None:
    """``--store NAME=SPEC`` options as member name -> spec, or ``None`` for one plain ``--store`` (or none).

    A spec's own ``=`` (in a location) does not count: a member name comes before any ``:``.
    """
    given: str | list[str] | None = getattr(args, 'store', None)
    stores = [given] if isinstance(given, str) else list(given or [])
    named = [_MEMBER.fullmatch(s) for s in stores]
    if not stores or (len(stores) == 1 and named[0] is None):
        return None
    if any(m is None for m in named):
        for bad in (s.partition('=')[0] for s in stores if _NAMED.fullmatch(s) and not _MEMBER.fullmatch(s)):
            raise SystemExit(
                f'toolish-rag: --store {bad!r}=...: a member name is 1 to 32 of a-z, 0-9, _ and -, starting with '
                'a lowercase letter (e.g. --store docs=lancedb:./kb)'
            )
        raise SystemExit(
            'toolish-rag: --store given several times: name each store, e.g. '
            '--store docs=lancedb:./kb --store code=tantivy:./idx'
        )
    members: dict[str, str] = {}
    for m in named:
        assert m is not None
        name, spec = m.group(1), m.group(2)
        if name in members:
            raise SystemExit(f'toolish-rag: --store names member {name!r} twice')
        members[name] = spec_with_location(spec)
    return members


def store_spec(args: argparse.Namespace) -> str:
    """The store a command opens: ``--store`` (a bare name kept under ``.toolish-rag/NAME``), else the default."""
    given: str | list[str] | None = getattr(args, 'store', None)
    if isinstance(given, list):
        if store_members(args) is not None:
            raise SystemExit(
                f'toolish-rag: {getattr(args, "command", "this command")} takes exactly one store, not a federation '
                f'of named members (those are for {", ".join(sorted(FEDERATING))})'
            )
        given = given[0] if given else None
    elif given and _MEMBER.fullmatch(given):
        raise SystemExit(
            f'toolish-rag: {getattr(args, "command", "this command")} takes one store as NAME[:LOCATION]; '
            f'a member name (MEMBER=SPEC) is for {", ".join(sorted(FEDERATING))}'
        )
    return spec_with_location(given) if given else default_store_spec()


_LOCKS: list[StoreLock] = []
"""The writer locks this process holds (released by `release_store_locks`, or by the OS at exit)."""


def hold_store_lock(spec: str) -> None:
    """Take the writer lock of a local store folder (one writer at a time, docs/deploy.md); refuse in one line."""
    location = local_folder(spec)  # a server (URL or key=value connection string) locks its own writes
    if location is None:
        return
    try:
        _LOCKS.append(StoreLock(location).acquire())
    except StoreLocked as e:
        raise SystemExit(f'toolish-rag: {e}') from None


def release_store_locks() -> None:
    while _LOCKS:
        _LOCKS.pop().release()


def open_store_for(args: argparse.Namespace, *, write: bool, spec: str | None = None) -> Any:
    """Open the command's store. A reader refuses a store that does not exist (naming what exists nearby)
    and never creates a folder; a writer takes the store's lock first. Several ``--store NAME=SPEC``
    open a `Federated` store of them (a reader's), each member refused like a missing store."""
    members = None if spec or write else store_members(args)
    if members is not None:
        from ..stores.federated import Federated

        opened = {}
        for name, member_spec in members.items():
            try:
                opened[name] = open_store_for(args, write=False, spec=member_spec)
            except SystemExit as e:
                raise SystemExit(str(e.code).replace('toolish-rag: ', f'toolish-rag: --store {name}=: ', 1)) from None
        return Federated(opened)
    spec = spec or store_spec(args)
    if write:
        hold_store_lock(spec)
    else:
        missing = missing_store(spec)
        if missing is not None:
            raise SystemExit(f'toolish-rag: {missing}')
    try:
        return open_store(spec, embedder=args.embedder, language=getattr(args, 'language', None))
    except (EmbedderMismatch, ManifestError) as e:
        raise SystemExit(f'toolish-rag: {e}') from None


def add_store_arguments(
    parser: argparse.ArgumentParser, *, toolset: bool = True, rerank: bool = True, store_help: str | None = None
) -> None:
    """``--store``, ``--embedder`` and ``--language``; with ``toolset`` the toolset's options (``--name``,
    ``--filterable``, ``--group-by-document``), with ``rerank`` the reranker's; ``store_help`` says where a
    command with its own stores keeps them (eval)."""
    group = parser.add_argument_group('store')
    where = store_help or (
        f'a bare NAME is kept under {STORE_DIR}/NAME (default: $TOOLISH_RAG_STORE, else {STORE_DIR}/store)'
    )
    federating = parser.prog.rpartition(' ')[2] in FEDERATING
    several = (
        '; give it several times, each MEMBER=SPEC (--store docs=lancedb:./kb --store code=tantivy:./idx), '
        'to search them as one federation (docs/federation.md)'
        if federating
        else ''
    )
    group.add_argument(
        '--store',
        default=None,
        action='append' if federating else _OneStore,
        help=f'NAME[:LOCATION], NAME one of {", ".join(available_stores())}, e.g. {default_store_name()}:./kb; '
        f'a bare path is refused, as a path does not say which kind of store it holds; {where}{several}',
    )
    group.add_argument('--embedder', default=None, help='embedding model string (default: all-MiniLM-L6-v2, offline)')
    group.add_argument(
        '--language',
        type=_language,
        default=None,
        metavar='CODE',
        help='language of the text search analyzer: auto (each document and chunk in its detected language), an '
        'ISO 639-1 code (de, fr, zh, ja...) or none; picks stop words and stemming, Chinese/Japanese/Thai text '
        'is cut into character pairs in every language (default: what the store was saved with; a new store: '
        'auto; see docs/text-analysis.md)',
    )
    if toolset:
        _add_toolset_arguments(group)
    if rerank:
        _add_rerank_arguments(group)


class _OneStore(argparse.Action):
    """``--store`` of a command that writes or reads one store: given twice is refused, not the last kept."""

    def __call__(
        self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, value: Any, _: Any = None
    ) -> None:
        command = parser.prog.rpartition(' ')[2]
        if getattr(namespace, self.dest, None) is not None:
            parser.error(
                f'{command} takes exactly one --store (a federation of several is for {", ".join(sorted(FEDERATING))})'
            )
        setattr(namespace, self.dest, value)


def _add_toolset_arguments(group: argparse._ArgumentGroup) -> None:
    group.add_argument('--name', default='docs', help='tool name prefix (default: docs)')
    group.add_argument(
        '--filterable',
        action='append',
        default=[],
        metavar='KEY=TYPE',
        help='a metadata key the model may filter on (repeatable): TYPE is int, float, str or bool, or '
        'allowed text values separated by "|" (product=basic|pro); e.g. --filterable year=int --filterable path=str',
    )
    group.add_argument(
        '--group-by-document',
        action='store_true',
        help='offer group_by="document" on the ranked search tools (one hit per document)',
    )


def _add_rerank_arguments(group: argparse._ArgumentGroup) -> None:
    group.add_argument(
        '--reranker',
        default=None,
        metavar='MODEL',
        help='rerank the vector, text and hybrid search results with this sentence-transformers CrossEncoder '
        '(a local path, or a hub name such as cross-encoder/ms-marco-MiniLM-L6-v2, which must be cached offline)',
    )
    group.add_argument(
        '--rerank-candidates',
        type=int,
        default=30,
        metavar='N',
        help='how many hits a search fetches for the reranker (default: 30)',
    )


_TYPES: dict[str, type[str] | type[int] | type[float] | type[bool]] = {
    'int': int,
    'float': float,
    'str': str,
    'bool': bool,
}


def _language(code: str) -> str:
    """``--language``: a code the analyzer knows, normalised (``DE`` and ``german`` are ``de``)."""
    from ..analysis import analyzer_for

    try:
        return analyzer_for(code).language
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def filterable_keys(specs: list[str]) -> dict[str, FilterableKey] | None:
    """``--filterable KEY=TYPE`` options as a ``filterable=`` declaration (``None`` when there are none)."""
    if not specs:
        return None
    from ..toolset import FilterableKey

    keys: dict[str, FilterableKey] = {}
    for spec in specs:
        key, sep, kind = spec.partition('=')
        if not sep or not key or not kind:
            raise SystemExit(f'--filterable takes KEY=TYPE (TYPE: int, float, str, bool or a|b|c), got {spec!r}')
        try:
            if kind in _TYPES:
                keys[key] = FilterableKey(_TYPES[kind])
            else:
                keys[key] = FilterableKey(str, values=tuple(kind.split('|')))
        except (TypeError, ValueError) as e:
            raise SystemExit(f'--filterable {spec!r}: {e}') from None
    return keys


def reranking(args: argparse.Namespace) -> dict[str, Any]:
    """``--reranker`` and ``--rerank-candidates`` as `ToolishRag` keyword arguments (none without a reranker)."""
    model = getattr(args, 'reranker', None)
    if not model:
        return {}
    candidates = getattr(args, 'rerank_candidates', 30)
    if candidates < 1:
        raise SystemExit(f'--rerank-candidates must be at least 1, got {candidates}')
    from ..rerank import CrossEncoderReranker

    reranker = CrossEncoderReranker(model)
    try:  # fail at start-up with the reason; a search would fail open and hide it
        reranker.load()
    except Exception as e:
        raise SystemExit(f'--reranker {model!r} cannot be loaded: {type(e).__name__}: {e}') from None
    return {'reranker': reranker, 'rerank_candidates': candidates}


def open_rag(args: argparse.Namespace, *, write: bool = False) -> tuple[Any, ToolishRag[Any]]:
    """The store (see `open_store_for`) and the toolset over it; argument errors come before the store's."""
    from ..toolset import ToolishRag

    filterable = filterable_keys(getattr(args, 'filterable', []))
    store = open_store_for(args, write=write)
    rerank = reranking(args)
    try:
        rag: ToolishRag[Any] = ToolishRag(
            store,
            name=args.name,
            filterable=filterable,
            allow_grouping=getattr(args, 'group_by_document', False),
            **rerank,
        )
    except (TypeError, ValueError) as e:
        raise SystemExit(f'--filterable: {e}') from None
    return store, rag


def add_model_arguments(parser: argparse.ArgumentParser, *, scope_help: str) -> None:
    """``--model`` and ``--filter``: what every command that runs a model over a scope takes."""
    parser.add_argument(
        '--model', '-m', default=None, help=f'pydantic-ai model string, e.g. openai:gpt-5-mini (default: ${MODEL_ENV})'
    )
    add_filter_argument(parser, scope_help)


def model_and_scoped_rag(args: argparse.Namespace, no_model: str) -> tuple[str, ToolishRag[Any]] | None:
    """The model string and the toolset narrowed by ``--filter``; ``None`` (after printing ``no_model``) without a model."""
    model = args.model or os.environ.get(MODEL_ENV)
    if not model:
        print(no_model, file=sys.stderr)
        return None
    check_model(model)  # a missing provider library is said before the store is opened
    import pydantic_ai

    pydantic_ai.BANNER_ENABLED = False  # the command owns its output: no first-run banner above an answer
    _, rag = open_rag(args)
    rag = scoped_rag(rag, args.filter)
    return model, rag
