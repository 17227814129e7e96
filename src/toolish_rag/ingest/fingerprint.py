"""Content fingerprints: what decides that a document is unchanged and can be skipped."""

from __future__ import annotations

import hashlib

__all__ = ['fingerprint']

_SCHEME = b'toolish-rag-ingest/1\x00'


def fingerprint(data: bytes, config_key: str) -> str:
    """``sha256`` of the file's bytes and the chunker configuration (and reader version).

    Changing either the file or how it is chunked changes the fingerprint, so the
    document is re-ingested; anything else (mtime, a touch, a copy) does not.
    """
    h = hashlib.sha256(_SCHEME)
    h.update(config_key.encode('utf-8'))
    h.update(b'\x00')
    h.update(data)
    return 'sha256:' + h.hexdigest()
