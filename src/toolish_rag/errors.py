"""Exceptions a store or the facade raises on purpose; a caller's mistakes become retries.

See docs/concepts.md#how-the-core-is-built.
"""

from __future__ import annotations

__all__ = ['ECHO_CHARS', 'InvalidRequestError', 'QuerySyntaxError', 'ToolishRagError', 'echo']

ECHO_CHARS = 60
"""How many characters of a caller's argument an error message quotes."""


class ToolishRagError(Exception):
    """Base class for toolish-rag's own errors."""


class InvalidRequestError(ToolishRagError, ValueError):
    """A request a caller (often a model) can correct: the message says how."""


class QuerySyntaxError(InvalidRequestError):
    """A text query or regex pattern the store cannot run as written."""


def echo(value: str) -> str:
    """``value`` quoted for an error message: its ``repr``, cut to the first `ECHO_CHARS` characters and '…'."""
    return repr(value if len(value) <= ECHO_CHARS else value[:ECHO_CHARS] + '…')


class UnsupportedValueError(ToolishRagError, ValueError):
    """A value a store cannot hold, refused by ``upsert`` before any of the batch is written.

    Stores never change a typed value to make it fit (no clamping, no stringifying): they
    refuse the batch, and this error names the item (``document_id`` or ``entity_id``) and
    the metadata key or record field (``key``) holding the value. A bulk writer reads those
    attributes, so it can set that item aside with the reason and write the rest of the batch
    (`toolish_rag.ingest` reports it as failed); any other exception from ``upsert`` is an
    outage or a bug and stops the run.
    """

    def __init__(
        self, message: str, *, document_id: str | None = None, entity_id: str | None = None, key: str | None = None
    ) -> None:
        super().__init__(message)
        self.document_id = document_id
        self.entity_id = entity_id
        self.key = key


__all__ += ['UnsupportedValueError']
