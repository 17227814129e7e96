"""``toolish-rag chat``: talk to an agent that searches the store with the toolset's tools.

See docs/mcp.md#chat-in-the-terminal and docs/mcp.md#how-the-commands-are-built.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import AsyncIterable, AsyncIterator, Iterable, Mapping
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from .._extras import install_command
from ._common import MODEL_ENV, add_model_arguments, model_and_scoped_rag
from ._terminal import terminal_safe

if TYPE_CHECKING:  # pydantic-ai is imported when a chat starts: `toolish-rag` itself starts light
    from pydantic_ai import Agent, RunContext
    from pydantic_ai.agent import EventStreamHandler
    from pydantic_ai.messages import AgentStreamEvent, ModelMessage, ToolCallPart, ToolReturnPart
    from pydantic_ai.models import Model
    from rich.console import Console

    from ..toolset import RagEvent, ToolishRag

__all__ = ['CHAT_INSTRUCTIONS', 'HISTORY_FILE', 'MODEL_ENV', 'build_agent', 'chat', 'register', 'run', 'tool_line']

HISTORY_FILE = 'prompt-history.txt'
_EXIT_COMMANDS = frozenset({'/exit', '/quit'})

CHAT_INSTRUCTIONS = (
    'You answer questions from a document collection. Search it with the tools before answering, '
    'broaden or zoom out on a result when you need more context, and say which documents your answer '
    'comes from. If the collection does not contain the answer, say so rather than guessing.'
)

_NO_MODEL = f"""\
toolish-rag chat needs a model. Pass one with --model, or set ${MODEL_ENV}:

    toolish-rag chat --model openai:gpt-5-mini
    export {MODEL_ENV}=anthropic:claude-sonnet-4-5

Any pydantic-ai model string works (PROVIDER:MODEL); the provider's API key is read from its usual
environment variable (OPENAI_API_KEY, ANTHROPIC_API_KEY, GEMINI_API_KEY, ...)."""


def register(sub: Any) -> argparse.ArgumentParser:
    parser: argparse.ArgumentParser = sub.add_parser('chat', help='chat with an agent that searches the store')
    add_model_arguments(parser, scope_help='a scope the agent cannot leave')
    parser.add_argument('--no-stream', action='store_true', help='print each answer when complete instead of streaming')
    parser.set_defaults(run=run)
    return parser


async def run(args: argparse.Namespace) -> int:
    chosen = model_and_scoped_rag(args, _NO_MODEL)
    if chosen is None:
        return 2
    model, rag = chosen
    return await chat(rag, model, stream=not args.no_stream)


def _resolve_model(model: Model | str) -> Model | str:
    """The model object, or an error message saying plainly what is missing."""
    from pydantic_ai.exceptions import UserError
    from pydantic_ai.models import infer_model

    try:
        return infer_model(model)
    except (UserError, ImportError, ValueError) as e:
        return f'toolish-rag chat: cannot use model {model!r}: {e}'


def build_agent(rag: ToolishRag[Any], model: Model | str) -> Agent[None, str]:
    """The chat agent: ``model``, the store's toolset, and `CHAT_INSTRUCTIONS`."""
    from pydantic_ai import Agent

    return Agent(model, toolsets=[rag], instructions=CHAT_INSTRUCTIONS, name='toolish-rag')


def _call(name: str, arguments: Mapping[str, Any]) -> str:
    return f'{name}({", ".join(f"{k}={v!r}" for k, v in arguments.items() if v is not None)})'


def tool_line(event: RagEvent) -> str:
    """One line per tool call: ``↳ docs_text_search(query='refunds', top_k=5) → 3 hits``."""
    from ..toolset import tool_name

    call = _call(tool_name(event.rag, event.tool), event.arguments)
    if event.error is not None:
        return terminal_safe(f'↳ {call} → rejected: {event.error}')
    n = len(event.hits)
    return terminal_safe(f'↳ {call} → {n} {"hit" if n == 1 else "hits"}{" (scoped)" if event.filtered else ""}')


def _rejected_line(call: ToolCallPart, result: ToolReturnPart) -> str:
    """The line of a call sent back to the model: ``↳ docs_text_search(query='x', top_k=500) → rejected: ...``."""
    content = result.content if isinstance(result.content, str) else result.model_response_str()
    return terminal_safe(f'↳ {_call(call.tool_name, call.args_as_dict())} → rejected: {content}')


async def chat(
    rag: ToolishRag[Any],
    model: Model | str,
    *,
    stream: bool = True,
    console: Console | None = None,
    input: IO[str] | None = None,
    interactive: bool | None = None,
    config_dir: Path | None = None,
    prog_name: str = 'toolish-rag',
) -> int:
    """Chat with an agent over ``rag`` until ``/exit`` or end of input; returns the exit code.

    Args:
        rag: the toolset the agent searches with.
        model: a pydantic-ai model string or `Model` object.
        stream: stream answers as they are generated.
        console: the ``rich.console.Console`` to write to (default: stdout).
        input: where prompts come from when not interactive (default: stdin).
        interactive: read prompts with prompt-toolkit (history, line editing); default: when
            stdin is a terminal. A failed answer ends a piped session (exit code 1) but not an
            interactive one.
        config_dir: where the prompt history is kept (default: ``~/.toolish-rag``).
    """
    from rich.console import Console
    from rich.markup import escape

    out = console if console is not None else Console()
    resolved = _resolve_model(model)
    if isinstance(resolved, str):
        (console if console is not None else Console(stderr=True)).print(resolved, markup=False, highlight=False)
        return 2
    if interactive is None:
        interactive = input is None and sys.stdin.isatty()
    if interactive:
        try:
            home = config_dir if config_dir is not None else Path.home() / '.toolish-rag'
            prompts = _terminal_prompts(prog_name, home / HISTORY_FILE)
        except ImportError as e:  # pragma: no cover - depends on the installed extras
            out.print(f'toolish-rag chat in a terminal needs prompt-toolkit: {install_command("mcp")} ({e})')
            return 2
    else:
        prompts = _piped_prompts(input if input is not None else sys.stdin)

    def show_call(event: RagEvent) -> None:
        # A rejected call is shown from the run's events (`_show_as_it_comes`): one its arguments'
        # validation refused never reaches the tool, so no `RagEvent` tells of it.
        if event.error is None:
            out.print(tool_line(event), style='dim', markup=False, highlight=False)

    agent = build_agent(rag.with_listener(show_call), resolved)
    out.print(
        f'[green]{prog_name} chat[/green] with [magenta]{resolved.model_name}[/magenta] over '
        f'{type(rag.store).__name__} ({len(rag.tool_names)} tools). /exit to quit.',
        highlight=False,
    )
    messages: list[ModelMessage] = []
    async for text in prompts:
        if text.startswith('/'):
            if text.lower() in _EXIT_COMMANDS:
                return 0
            out.print(terminal_safe(f'unknown command {text}: /exit ends the session'), markup=False, highlight=False)
            continue
        if not interactive:  # a terminal shows the prompt as typed; show piped ones the same way
            out.print(f'[bold]{prog_name} ➤[/bold] {escape(terminal_safe(text))}', highlight=False)
        try:
            messages = await _answer(agent, text, messages, out, stream=stream)
        except Exception as e:
            out.print(f'[red]{type(e).__name__}:[/red] {escape(terminal_safe(str(e)))}', highlight=False)
            if not interactive:
                return 1
    return 0


async def _answer(
    agent: Agent[None, str], prompt: str, history: list[ModelMessage], out: Console, *, stream: bool
) -> list[ModelMessage]:
    """Answer ``prompt`` in the conversation so far, show the answer, and return the conversation with it.

    Always a full ``Agent.run``, streamed through an event handler: ``Agent.run_stream`` would take
    the first text a model writes ("Let me search...") as the answer and skip the tool calls after it.
    """
    from rich.markdown import Markdown

    if not stream:  # no event handler: with one, pydantic-ai streams every model request
        result = await agent.run(prompt, message_history=history)
        for line in _rejections(result.new_messages()):
            out.print(line, style='dim', markup=False, highlight=False)
        out.print(Markdown(terminal_safe(result.output)))
    else:
        result = await agent.run(prompt, message_history=history, event_stream_handler=_show_as_it_comes(out))
    return result.all_messages()


def _rejections(messages: Iterable[ModelMessage]) -> list[str]:
    """The line of each tool call in ``messages`` that was sent back to the model (`_rejected_line`)."""
    from pydantic_ai.messages import ModelRequest, ModelResponse, ToolCallPart, ToolReturnPart

    calls: dict[str, ToolCallPart] = {}
    lines = []
    for message in messages:
        parts = message.parts if isinstance(message, ModelRequest | ModelResponse) else ()
        for part in parts:
            if isinstance(part, ToolCallPart):
                calls[part.tool_call_id] = part
            elif isinstance(part, ToolReturnPart) and part.outcome == 'retried' and part.tool_call_id in calls:
                lines.append(_rejected_line(calls[part.tool_call_id], part))
    return lines


def _show_as_it_comes(out: Console) -> EventStreamHandler[None]:
    """An event handler showing each model response's text live, as Markdown, while it streams, and each
    rejected tool call."""
    from pydantic_ai.messages import (
        FunctionToolCallEvent,
        FunctionToolResultEvent,
        PartDeltaEvent,
        PartStartEvent,
        TextPart,
        TextPartDelta,
    )
    from rich.live import Live
    from rich.markdown import Markdown

    async def show(ctx: RunContext[None], events: AsyncIterable[AgentStreamEvent]) -> None:
        text = ''
        live: Live | None = None
        calls: dict[str, ToolCallPart] = {}
        try:
            async for event in events:
                if isinstance(event, FunctionToolCallEvent):
                    calls[event.part.tool_call_id] = event.part
                    continue
                if isinstance(event, FunctionToolResultEvent):
                    call = calls.get(event.tool_call_id)
                    if call is not None and event.part.outcome == 'retried':
                        out.print(_rejected_line(call, event.part), style='dim', markup=False, highlight=False)
                    continue
                if isinstance(event, PartStartEvent) and isinstance(event.part, TextPart):
                    text += event.part.content
                elif isinstance(event, PartDeltaEvent) and isinstance(event.delta, TextPartDelta):
                    text += event.delta.content_delta
                else:
                    continue
                if live is None:
                    live = Live(console=out, vertical_overflow='visible')
                    live.start()
                live.update(Markdown(terminal_safe(text)))
        finally:
            if live is not None:
                live.stop()
                if not out.is_terminal:
                    out.line()  # Live ends a terminal's last line itself, but not a file's or a pipe's

    return show


async def _piped_prompts(lines: Iterable[str]) -> AsyncIterator[str]:
    for line in lines:
        if text := line.strip():
            yield text


def _terminal_prompts(prog_name: str, history: Path) -> AsyncIterator[str]:
    """Prompts typed in the terminal, with line editing and a persistent history."""
    from prompt_toolkit import PromptSession
    from prompt_toolkit.history import FileHistory

    history.parent.mkdir(parents=True, exist_ok=True)
    session: PromptSession[str] = PromptSession(history=FileHistory(str(history)))

    async def prompts() -> AsyncIterator[str]:
        while True:
            try:
                text = await session.prompt_async(f'{prog_name} ➤ ')
            except (EOFError, KeyboardInterrupt):
                return
            if text := text.strip():
                yield text

    return prompts()
