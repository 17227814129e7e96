"""Content fingerprints: what decides that a document is unchanged and can be skipped."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..content import Document

__all__ = ['bytes_digest', 'document_fingerprint', 'file_fingerprint', 'fingerprint']

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
    if any(f' reader={name}/' in config_key for name in _PICTURED):
        # the file's own digest too: what shows a citation on its page checks that a file is the one read
        return f'sha256:{h.hexdigest()} bytes=sha256:{hashlib.sha256(data).hexdigest()}'
    return 'sha256:' + h.hexdigest()


_PICTURED = ('pdf', 'image')
"""Readers whose files the inspector may draw a page of (docs/inspect.md#citation-pages): their fingerprints
carry the digest of the bytes alone, which needs no chunker settings to check."""


def bytes_digest(fingerprint: str | None) -> str | None:
    """The ``sha256:...`` digest of a file's bytes alone that a PDF's or image's ``fingerprint`` carries."""
    if not fingerprint:
        return None
    _, found, digest = fingerprint.partition(' bytes=')
    return digest if found and digest.startswith('sha256:') else None


def file_fingerprint(path: Path, config_key: str) -> str:
    """The fingerprint of a file on disk: what an unchanged file costs on a re-run (raises `OSError`)."""
    return fingerprint(path.read_bytes(), config_key)


def document_fingerprint(document: Document, config_key: str) -> str:
    """The fingerprint of a ready-made `Document` that came without one: its content, minus that field."""
    return fingerprint(document.model_dump_json(exclude={'fingerprint'}).encode('utf-8'), config_key)
