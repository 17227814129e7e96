"""Evidence compaction: earlier questions' search results shrink to receipts in what the model is sent.

Request-only: `RagCapability.before_model_request` replaces the request's messages with
`compacted`'s, never ``ctx.messages``, so ``result.all_messages()`` keeps every tool return whole
and a later run (or another policy) can recompute any view from it. (pydantic-ai's
``compact_history``/``CompactionPart`` replaces the stored history instead, and runs only after
``ctx.request_compaction()``: the stored evidence would be gone for grounding and for the user.)

Boundaries: compaction happens only at the start of a turn (a request holding a user prompt), and
only when the evidence carried whole since the last boundary passes ``budget`` characters. Each
evidence part is compacted at the first boundary after its turn and its receipt never changes
again, so between boundaries every request begins with the previous request (prompt caches keep
working); at a boundary, the cache breaks once. A receipt keeps whole every chunk an answer cited
before that boundary. Everything is a function of the message history. See docs/compaction.md.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from pydantic_ai.messages import ModelMessage, ModelRequest, ModelRequestPart, ToolReturnPart

from .._evidence import EagerResultsPart, EvidenceLedger, as_chunk, evidence_parts, hit_records, turn_of_messages
from .._record_text import field_text, render_record

__all__ = ['CompactionPlan', 'compacted', 'plan_compaction', 'receipt', 'visible_whole']

REFERENCED = 'referenced'
"""The metadata key of a return's hits shown as one-line references (their text was already on view)."""


@dataclass(frozen=True)
class CompactionPlan:
    """Where compaction happens in a history: the boundary turns, and the turn of the last message."""

    boundaries: tuple[int, ...]
    current_turn: int

    def compacted_at(self, turn: int) -> int | None:
        """The boundary at which evidence shown in ``turn`` is compacted, if it has been by now."""
        for boundary in self.boundaries:
            if boundary > turn:
                return boundary if boundary <= self.current_turn else None
        return None


def _evidence_chars(messages: Sequence[ModelMessage], rag: str, readers: Collection[str]) -> dict[int, int]:
    chars: dict[int, int] = {}
    for turn, message in turn_of_messages(messages):
        if isinstance(message, ModelRequest):
            for part in message.parts:
                if evidence_parts(part, rag, readers):
                    chars[turn] = chars.get(turn, 0) + len(str(part.content))
    return chars


def plan_compaction(
    messages: Sequence[ModelMessage], rag: str, readers: Collection[str], budget: int
) -> CompactionPlan:
    """The boundaries of ``messages``: each turn start where the evidence carried whole since the last one passes ``budget``."""
    chars = _evidence_chars(messages, rag, readers)
    current = max((t for t, _ in turn_of_messages(messages)), default=0)
    boundaries: list[int] = []
    since = 1
    for turn in range(2, current + 1):
        if sum(chars.get(t, 0) for t in range(since, turn)) > budget:
            boundaries.append(turn)
            since = turn
    return CompactionPlan(tuple(boundaries), current)


def compacted(
    messages: Sequence[ModelMessage], ledger: EvidenceLedger, readers: Collection[str], plan: CompactionPlan
) -> list[ModelMessage]:
    """``messages`` as the model is sent them: each evidence part compacted by now replaced by its receipt (copies)."""
    out: list[ModelMessage] = []
    for turn, message in turn_of_messages(messages):
        boundary = plan.compacted_at(turn)
        if boundary is None or not isinstance(message, ModelRequest):
            out.append(message)
            continue
        kept = {i for i, t in ledger.cited.items() if t < boundary}
        parts = [
            _as_receipt(part, kept, turn) if evidence_parts(part, ledger.rag, readers) else part
            for part in message.parts
        ]
        out.append(replace(message, parts=parts))
    return out


def _as_receipt(part: ToolReturnPart | EagerResultsPart, kept: Collection[str], turn: int) -> ModelRequestPart:
    """A copy of ``part`` whose content is its receipt (metadata, and so the records, kept)."""
    if isinstance(part, ToolReturnPart):
        return replace(part, content=receipt(part, kept, turn))
    return replace(part, content=receipt(part, kept, turn))


def _metadata(part: ToolReturnPart | EagerResultsPart) -> Mapping[str, Any]:
    return part.metadata if isinstance(part.metadata, Mapping) else {}


def _whole_ids(metadata: Mapping[str, Any]) -> list[str]:
    """The ids of a part's hits shown with their text (not as references), in order."""
    referenced = set(metadata.get(REFERENCED) or ())
    return [i for i, _ in hit_records(metadata.get('hits')) if i not in referenced]


def receipt(part: ToolReturnPart | EagerResultsPart, kept: Collection[str], turn: int) -> str:
    """A compacted evidence part: one line naming what it showed, with the chunks cited since kept whole."""
    metadata = _metadata(part)
    referenced = set(metadata.get(REFERENCED) or ())
    records = [(i, r) for i, r in hit_records(metadata.get('hits')) if i not in referenced]
    whole = [(i, as_chunk(r)) for i, r in records if i in kept]
    dropped = [field_text(i) for i, r in records if i not in kept]
    what = f'{part.tool_name} results' if isinstance(part, ToolReturnPart) else 'preloaded results'
    line = f'[Compacted {what} of turn {turn}.'
    if dropped:
        line += f' Not kept: chunk {", ".join(dropped)} (search or read again to see them).'
    if not whole:
        return line + ']'
    body = '\n\n'.join(render_record(c, n) for n, (_, c) in enumerate(whole, start=1) if c is not None)
    return f'{line} Kept whole, as cited:]\n\n{body}'


def visible_whole(
    messages: Sequence[ModelMessage], ledger: EvidenceLedger, readers: Collection[str], plan: CompactionPlan | None
) -> set[str]:
    """The chunks whose whole text the model's current view holds (``plan`` ``None``: nothing compacted)."""
    visible: set[str] = set()
    for turn, message in turn_of_messages(messages):
        if not isinstance(message, ModelRequest):
            continue
        boundary = plan.compacted_at(turn) if plan is not None else None
        kept = None if boundary is None else {i for i, t in ledger.cited.items() if t < boundary}
        for part in message.parts:
            if evidence_parts(part, ledger.rag, readers):
                ids = _whole_ids(_metadata(part))
                visible.update(ids if kept is None else (i for i in ids if i in kept))
    return visible
