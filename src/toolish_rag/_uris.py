"""`local_path`: the local file a ``file://`` uri names, decoded once (the one place that does it).

Ingestion makes such uris with `pathlib.Path.as_uri` (``%`` quoted as ``%25``); the graph builders
and ingestion read them back here. See docs/graph.md (Code graph).
"""

from __future__ import annotations

from pathlib import Path
from urllib.parse import urlsplit
from urllib.request import url2pathname

__all__ = ['local_path']


def local_path(uri: str) -> Path | None:
    """The local file ``uri`` names when it is a ``file://`` uri, else ``None``.

    The path is percent-decoded exactly once (`url2pathname`): ``file:///a%2520b.html`` is the file
    literally named ``a%20b.html``, ``file:///a%20b.html`` the one named ``a b.html``.
    """
    parts = urlsplit(uri)
    if parts.scheme != 'file':
        return None
    return Path(url2pathname(parts.path))
