"""The evidence ledger: which chunks a conversation showed the model, when, and which its answers cited.

Rebuilt from the message history alone, never from process-local state, so a fresh capability in
every run (a chat app, a durable-execution worker, a benchmark replaying turns) sees the same
ledger: from the structured ``hits`` metadata of this collection's tool returns and eager-search
parts (never their text, which a record's fields could forge), and from the snapshot the
capability stamps on each model response's metadata, which survives a history processor that
drops old tool returns. Below both the toolset and `toolish_rag.grounded`, which read it. See
docs/compaction.md.
"""

from __future__ import annotations

import json
import re
from collections.abc import Collection, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeGuard

from pydantic import ValidationError
from pydantic_ai.messages import (
    DataCapabilityPart,
    ModelMessage,
    ModelRequest,
    ModelResponse,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)

from ._tool_names import TOOL_NAMES, tool_name
from .content import Chunk
from .filters import Filter, matches
from .retriever import Retriever
from .search import ID_RULE, SearchHit

__all__ = [
    'LEDGER_KEY',
    'NOT_A_READER',
    'EagerResultsPart',
    'EvidenceLedger',
    'Sighting',
    'as_chunk',
    'evidence_parts',
    'hit_records',
    'offered_readers',
    'opens_turn',
    'readers_of',
    'turn_of_messages',
]

LEDGER_KEY = 'toolish_rag_ledger'
"""The key of the ledger snapshot in a `ModelResponse`'s metadata (one entry per collection name)."""

_CITED_IN_TEXT = re.compile(r'\[chunk ([^\]\s]+)\]')


@dataclass(repr=False, kw_only=True)
class EagerResultsPart(
    DataCapabilityPart[str],
    namespace='toolish_rag',
    name='eager_results',
    tag='search_results',
    attributes=('collection',),
):
    """An eager search's results, delivered as data before the user's prompt (never as instructions).

    Its ``metadata`` holds the hits as records (``{'rag', 'tool': 'eager_search', 'hits'}``), as a
    tool return's does, so they count as seen; the model reads only ``content``.
    """

    collection: str


@dataclass(frozen=True, slots=True)
class Sighting:
    """Where a chunk was shown: the turn (1 for the first user prompt), the tool, and the record if carried."""

    turn: int
    tool: str
    record: Chunk | Mapping[str, Any] | None = None


@dataclass(frozen=True)
class EvidenceLedger:
    """The chunks collection ``rag`` showed the model in a conversation (first sighting) and the ones cited.

    ``shown`` maps a chunk id to its first `Sighting`, in first-seen order; ``cited`` maps a chunk id
    to the turn an answer first cited it (only ids also shown count). Serialisable with `snapshot`.
    """

    rag: str
    shown: Mapping[str, Sighting] = field(default_factory=dict)
    cited: Mapping[str, int] = field(default_factory=dict)

    @classmethod
    def from_messages(
        cls,
        messages: Sequence[ModelMessage],
        rag: str,
        *,
        tools: Collection[str] | None = None,
        scope: Filter | None = None,
    ) -> EvidenceLedger:
        """The ledger of ``messages`` for collection ``rag``.

        ``tools`` are the full names whose returns show chunks (default: every search and read tool
        a collection named ``rag`` can offer). With ``scope``, a record outside it never enters the
        ledger, nor does one that cannot be read as a chunk (a history from elsewhere cannot widen it).
        """
        readers = frozenset(tools) if tools is not None else readers_of(rag)
        shown: dict[str, Sighting] = {}
        cited: dict[str, int] = {}
        for turn, message in turn_of_messages(messages):
            if isinstance(message, ModelResponse):
                _merge_snapshot(shown, cited, message, rag)
                for chunk_id in _cited_ids(message):
                    if chunk_id in shown:
                        cited.setdefault(chunk_id, turn)
                continue
            for part in message.parts:
                for chunk_id, record, tool in _part_chunks(part, rag, readers):
                    if chunk_id not in shown and _in_scope(record, scope):
                        shown[chunk_id] = Sighting(turn, tool, record)
        return cls(rag, shown, cited)

    @property
    def unchecked(self) -> list[str]:
        """The ids known only from a snapshot (no record to check against a scope)."""
        return [i for i, s in self.shown.items() if s.record is None]

    async def within(self, retriever: Retriever) -> EvidenceLedger:
        """This ledger without the snapshot-only ids ``retriever`` (the run's scope) cannot read."""
        unchecked = self.unchecked
        if not unchecked or retriever.filter is None:
            return self
        valid = [i for i in unchecked if ID_RULE.forbidden.search(i) is None]  # a forged id: never read
        readable = {r.id for r in await retriever.records(valid)} if valid else set()
        dropped = set(unchecked) - readable
        if not dropped:
            return self
        shown = {i: s for i, s in self.shown.items() if i not in dropped}
        return EvidenceLedger(self.rag, shown, {i: t for i, t in self.cited.items() if i in shown})

    def snapshot(self) -> dict[str, Any]:
        """The ledger as JSON-ready data (ids, turns, tools; no record text): what a response's metadata carries."""
        return {
            'shown': {i: [s.turn, s.tool] for i, s in self.shown.items()},
            'cited': dict(self.cited),
        }


def opens_turn(message: ModelMessage) -> bool:
    """Whether ``message`` starts a question: a request holding a user prompt."""
    return isinstance(message, ModelRequest) and any(isinstance(p, UserPromptPart) for p in message.parts)


def turn_of_messages(messages: Iterable[ModelMessage]) -> Iterator[tuple[int, ModelMessage]]:
    """Each message with its turn: 1 from the first request holding a user prompt, +1 at every further one."""
    turn = 0
    for message in messages:
        turn += opens_turn(message)
        yield turn, message


NOT_A_READER = 'verify_citations'
"""The one tool whose return shows the model no chunk (it checks quotes): never evidence."""


def readers_of(rag: str) -> frozenset[str]:
    """The full names of every tool a collection named ``rag`` can offer that shows chunks (not ``verify_citations``)."""
    return frozenset(tool_name(rag, t) for t in TOOL_NAMES if t != NOT_A_READER)


def offered_readers(offered: Sequence[str], names: Sequence[str]) -> frozenset[str]:
    """Of a collection's offered tools (short names, and their full names in the same order), those showing chunks."""
    return frozenset(n for s, n in zip(offered, names, strict=True) if s != NOT_A_READER)


def evidence_parts(part: object, rag: str, readers: Collection[str]) -> TypeGuard[ToolReturnPart | EagerResultsPart]:
    """Whether ``part`` is one of ``rag``'s evidence parts: a reader's tool return or an eager-results part."""
    metadata = getattr(part, 'metadata', None)
    if not isinstance(metadata, Mapping) or metadata.get('rag') != rag:
        return False
    if isinstance(part, ToolReturnPart):
        return part.tool_name in readers
    return isinstance(part, EagerResultsPart)


def _part_chunks(part: Any, rag: str, readers: Collection[str]) -> Iterator[tuple[str, Chunk | Mapping[str, Any], str]]:
    if not evidence_parts(part, rag, readers):
        return
    tool = part.tool_name if isinstance(part, ToolReturnPart) else 'eager_search'
    metadata = part.metadata if isinstance(part.metadata, Mapping) else {}
    for chunk_id, record in hit_records(metadata.get('hits')):
        yield chunk_id, record, tool


def hit_records(hits: Any) -> Iterator[tuple[str, Chunk | Mapping[str, Any]]]:
    """The chunk records of a ``hits`` metadata list: `SearchHit`s, or their dicts after a JSON round trip."""
    if not isinstance(hits, list):
        return
    for hit in hits:
        if isinstance(hit, SearchHit):
            if isinstance(hit.record, Chunk):
                yield hit.record.id, hit.record
        elif isinstance(hit, Mapping):
            record = hit.get('record')
            if isinstance(record, Mapping) and record.get('kind', 'chunk') == 'chunk':
                chunk_id = record.get('id')
                if isinstance(chunk_id, str):
                    yield chunk_id, record


def as_chunk(record: Chunk | Mapping[str, Any] | None) -> Chunk | None:
    """``record`` as a `Chunk` (a dict read back), or ``None`` when it is not one."""
    if isinstance(record, Chunk) or record is None:
        return record
    try:
        return Chunk.model_validate(dict(record))
    except (ValidationError, TypeError, ValueError):
        return None


def _in_scope(record: Chunk | Mapping[str, Any] | None, scope: Filter | None) -> bool:
    if scope is None:
        return True
    chunk = as_chunk(record)
    return chunk is not None and matches(scope, chunk)


def _merge_snapshot(shown: dict[str, Sighting], cited: dict[str, int], response: ModelResponse, rag: str) -> None:
    """Add what a response's ledger snapshot holds and the history no longer does (a processor dropped it).

    A snapshot's ids carry no record, so under a scope they stay unchecked (``record`` ``None``)
    until `EvidenceLedger.within` reads them through the scoped retriever.
    """
    metadata = response.metadata
    entry = metadata.get(LEDGER_KEY, {}).get(rag) if isinstance(metadata, Mapping) else None
    if not isinstance(entry, Mapping):
        return
    for chunk_id, seen in (entry.get('shown') or {}).items():
        if isinstance(chunk_id, str) and isinstance(seen, Sequence) and len(seen) == 2 and chunk_id not in shown:
            shown[chunk_id] = Sighting(int(seen[0]), str(seen[1]))
    for chunk_id, turn in (entry.get('cited') or {}).items():
        if isinstance(chunk_id, str) and chunk_id in shown and isinstance(turn, int):
            cited.setdefault(chunk_id, turn)


def _cited_ids(response: ModelResponse) -> Iterator[str]:
    """The chunk ids an answer in ``response`` cites: a `GroundedAnswer`'s citations, or ``[chunk <id>]`` in text."""
    for part in response.parts:
        if isinstance(part, ToolCallPart):
            yield from _answer_citations(part.args)
        elif isinstance(part, TextPart):
            yield from _answer_citations(part.content)
            yield from _CITED_IN_TEXT.findall(part.content)


def _answer_citations(args: Any) -> Iterator[str]:
    if isinstance(args, str):
        if '"claims"' not in args:
            return
        try:
            args = json.loads(args)
        except ValueError:
            return
    claims = args.get('claims') if isinstance(args, Mapping) else None
    if not isinstance(claims, list):
        return
    for claim in claims:
        citations = claim.get('citations') if isinstance(claim, Mapping) else None
        for citation in citations if isinstance(citations, list) else ():
            chunk_id = citation.get('chunk_id') if isinstance(citation, Mapping) else None
            if isinstance(chunk_id, str):
                yield chunk_id.strip()
