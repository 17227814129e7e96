"""``toolish-rag ask "question"``: one grounded answer, with verified citations, from the store.

See docs/grounded.md and docs/mcp.md#how-the-commands-are-built.
"""

from __future__ import annotations

import argparse
import sys
from typing import IO, TYPE_CHECKING, Any

from ._common import MODEL_ENV, add_model_arguments, model_and_scoped_rag
from ._terminal import json_safe, print_markdown, terminal_safe

if TYPE_CHECKING:
    from pydantic_ai.models import Model

    from ..toolset import ToolishRag

__all__ = ['ask_and_print', 'register', 'run']


_NO_MODEL = f"""\
toolish-rag ask needs a model. Pass one with --model, or set ${MODEL_ENV}:

    toolish-rag ask "How long do refunds take?" --model openai:gpt-5-mini

Any pydantic-ai model string works (PROVIDER:MODEL); 'test' is pydantic-ai's offline test model."""


def register(sub: Any) -> argparse.ArgumentParser:
    parser: argparse.ArgumentParser = sub.add_parser(
        'ask', help='answer one question with verified exact-quote citations'
    )
    parser.add_argument('question', help='the question (also the first search query)')
    add_model_arguments(parser, scope_help='a scope the answer cannot leave')
    parser.add_argument('--grader-model', default=None, help='a smaller model to grade passages and rewrite the query')
    parser.add_argument(
        '--semantic-model', default=None, help='a model to judge whether each claim follows from its quotes'
    )
    parser.add_argument('--top-k', type=int, default=8, help='passages per search (default: 8)')
    parser.add_argument(
        '--evidence-chars', type=int, default=10_000, help='passage text budget of the answer prompt (default: 10000)'
    )
    parser.add_argument('--json', action='store_true', help='print the whole result as JSON')
    parser.set_defaults(run=run)
    return parser


async def run(args: argparse.Namespace) -> int:
    chosen = model_and_scoped_rag(args, _NO_MODEL)
    if chosen is None:
        return 2
    model, rag = chosen
    return await ask_and_print(
        rag,
        args.question,
        model=model,
        grader_model=args.grader_model,
        semantic_model=args.semantic_model,
        top_k=args.top_k,
        evidence_chars=args.evidence_chars,
        as_json=args.json,
    )


async def ask_and_print(
    rag: ToolishRag[Any],
    question: str,
    *,
    model: Model | str,
    grader_model: Model | str | None = None,
    semantic_model: Model | str | None = None,
    top_k: int = 8,
    evidence_chars: int = 10_000,
    as_json: bool = False,
    out: IO[str] | None = None,
    err: IO[str] | None = None,
) -> int:
    """Ask, print the result (Markdown or JSON) to ``out``; returns the exit code."""
    from ..errors import InvalidRequestError
    from ..grounded._ask import ask
    from ..grounded._render import render_markdown, to_json

    out = out if out is not None else sys.stdout
    err = err if err is not None else sys.stderr
    try:
        models = [_resolve(m) for m in (model, grader_model, semantic_model)]
    except ValueError as e:
        print(terminal_safe(f'toolish-rag ask: {e}'), file=err)
        return 2
    try:
        result = await ask(
            rag,
            question,
            model=models[0] or model,
            grader_model=models[1],
            semantic_model=models[2],
            top_k=top_k,
            evidence_chars=evidence_chars,
        )
    except InvalidRequestError as e:
        print(terminal_safe(f'toolish-rag ask: {e}'), file=err)
        return 2
    if as_json:
        print(json_safe(to_json(result)), file=out)
    else:  # rendered in a terminal, plain text in a pipe: never Markdown escapes
        print_markdown(render_markdown(result), out)
    return 0


def _resolve(model: Model | str | None) -> Model | None:
    """The model object (``None`` stays ``None``), or a ValueError saying plainly what is missing."""
    from pydantic_ai.exceptions import UserError
    from pydantic_ai.models import infer_model

    if model is None:
        return None
    try:
        return infer_model(model)
    except (UserError, ImportError, ValueError) as e:
        raise ValueError(f'cannot use model {model!r}: {e}') from None
