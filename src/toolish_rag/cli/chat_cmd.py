"""``toolish-rag chat``: talk to an agent that searches the store with the toolset's tools.

The chat loop is pydantic-ai's own (``pydantic_ai._cli``: prompt history, ``/exit``,
``/markdown``, ``/usage``..., streamed Markdown answers and a line per tool call); this
module adds the store's toolset and one line per tool call with its arguments and how
many hits it returned. Piped input (not a terminal) is read one prompt per line.

`chat` is what the command calls, with a model string or a `pydantic_ai.models.Model`
object, so tests drive the very same code with a scripted model.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import IO, Any

from pydantic_ai import Agent
from pydantic_ai.models import Model

from ..filters import parse_filter
from ..toolset import RagEvent, ToolishRag
from .common import open_rag

__all__ = ['CHAT_INSTRUCTIONS', 'MODEL_ENV', 'build_agent', 'chat', 'register', 'run', 'tool_line']

MODEL_ENV = 'TOOLISH_RAG_MODEL'

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
    parser.add_argument(
        '--model', '-m', default=None, help=f'pydantic-ai model string, e.g. openai:gpt-5-mini (default: ${MODEL_ENV})'
    )
    parser.add_argument('--filter', default=None, help='scope filter JSON the agent cannot leave')
    parser.add_argument('--no-stream', action='store_true', help='print each answer when complete instead of streaming')
    parser.set_defaults(run=run)
    return parser


async def run(args: argparse.Namespace) -> int:
    model = args.model or os.environ.get(MODEL_ENV)
    if not model:
        print(_NO_MODEL, file=sys.stderr)
        return 2
    _, rag = open_rag(args)
    if args.filter:
        rag = rag.with_metadata_filter(parse_filter(args.filter))
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
    return Agent(model, toolsets=[rag], instructions=CHAT_INSTRUCTIONS, name='toolish-rag')


def tool_line(event: RagEvent) -> str:
    """One line per tool call: ``↳ docs_text_search(query='refunds', top_k=5) → 3 hits``."""
    args = ', '.join(f'{k}={v!r}' for k, v in event.arguments.items() if v is not None)
    call = f'{event.rag}_{event.tool}({args})'
    if event.error is not None:
        return f'↳ {call} → rejected: {event.error}'
    n = len(event.hits)
    return f'↳ {call} → {n} {"hit" if n == 1 else "hits"}{" (scoped)" if event.filtered else ""}'


async def chat(
    rag: ToolishRag[Any],
    model: Model | str,
    *,
    stream: bool = True,
    console: Any = None,
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
        interactive: use pydantic-ai's prompt-toolkit session (history, key bindings);
            default: when stdin is a terminal.
        config_dir: where the prompt history is kept (default: ``~/.toolish-rag``).
    """
    try:
        from pydantic_ai._cli import ask_agent, handle_slash_command, run_chat
        from rich.console import Console
        from rich.markup import escape
    except ImportError as e:  # pragma: no cover - depends on the installed extras
        print(f'toolish-rag chat needs pydantic-ai\'s CLI extra: pip install "toolish-rag[mcp]" ({e})', file=sys.stderr)
        return 2

    out = console if console is not None else Console()
    resolved = _resolve_model(model)
    if isinstance(resolved, str):
        (console if console is not None else Console(stderr=True)).print(resolved, markup=False, highlight=False)
        return 2

    def show_call(event: RagEvent) -> None:
        out.print(tool_line(event), style='dim', markup=False, highlight=False)

    agent = build_agent(rag.with_listener(show_call), resolved)
    source = input if input is not None else sys.stdin
    if interactive is None:
        interactive = input is None and sys.stdin.isatty()
    out.print(
        f'[green]{prog_name} chat[/green] with [magenta]{resolved.model_name}[/magenta] over '
        f'{type(rag.store).__name__} ({len(rag.tool_names)} tools). /exit to quit.',
        highlight=False,
    )
    if interactive:
        home = config_dir if config_dir is not None else Path.home() / '.toolish-rag'
        return await run_chat(stream, agent, out, 'monokai', prog_name, config_dir=home)

    # Piped input: one prompt per line, the same slash commands and the same answer display.
    messages: list[Any] = []
    multiline = False
    for line in source:
        text = line.strip()
        if not text:
            continue
        if text.startswith('/'):
            exit_code, multiline = handle_slash_command(
                text.lower().replace(' ', '-'), messages, multiline, out, 'monokai'
            )
            if exit_code is not None:
                return exit_code
            continue
        out.print(f'[bold]{prog_name} ➤[/bold] {escape(text)}', highlight=False)
        try:
            messages = await ask_agent(agent, text, stream, out, 'monokai', messages=messages)
        except Exception as e:
            out.print(f'[red]{type(e).__name__}:[/red] {escape(str(e))}', highlight=False)
            return 1
    return 0
