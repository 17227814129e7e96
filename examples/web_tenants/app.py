"""Per-tenant scoping in a web app: every user's agent run only ever searches that user's tenant.

Run the demo (needs the ``web`` extra and a model; keys come from the environment):

    pip install "toolish-rag[web]"
    TOOLISH_RAG_MODEL=openai:gpt-5-mini python examples/web_tenants/app.py --port 8000
    curl -s localhost:8000/ask -H 'Authorization: Bearer alice-token' -d '{"question": "How long do refunds take?"}'
    curl -s localhost:8000/ask/grounded -H 'Authorization: Bearer alice-token' -H 'Accept: text/markdown' \\
        -d '{"question": "How long do refunds take?"}'

``POST /ask`` runs the agent and answers in free prose with the chunks its tools returned.
``POST /ask/grounded`` runs `ToolishRag.ask` instead: every claim cites exact quotes that were
verified in the tenant's own chunks (or the answer says the documents do not cover it), as the
`AskResult` JSON, or as Markdown with numbered citations when the client sends
``Accept: text/markdown`` (document text in it is escaped, so a document cannot inject markup).

One `ToolishRag` and one `Agent` serve every request. The scope comes from the run's
dependencies, ``metadata_filter=lambda ctx: F.eq('tenant', ctx.deps.tenant)``, and the
tenant comes from the authenticated user, never from the request body or the model: the
model sees no filter in any tool schema, and a chunk id from another tenant is simply
"not found" (and a grounded answer citing it fails verification).
"""

from __future__ import annotations

import argparse
import os
from dataclasses import dataclass
from typing import Any

from pydantic_ai import Agent
from pydantic_ai.exceptions import ModelHTTPError, UnexpectedModelBehavior
from pydantic_ai.messages import ToolReturnPart
from pydantic_ai.models import Model
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from toolish_rag import Chunk, DocumentBuilder, InvalidRequestError, PropertyFilter as F, StoreLike, ToolishRag
from toolish_rag.grounded import render_markdown, to_json
from toolish_rag.stores import InMemoryStore


@dataclass(frozen=True)
class User:
    name: str
    tenant: str


@dataclass(frozen=True)
class TenantDeps:
    """What one agent run depends on: who is asking, hence which tenant's documents it may read."""

    user: User

    @property
    def tenant(self) -> str:
        return self.user.tenant


# Demo users. In a real app this is your session or JWT check; only the tenant matters here.
DEMO_USERS = {
    'alice-token': User('alice', 'acme'),
    'bob-token': User('bob', 'globex'),
}

INSTRUCTIONS = (
    "You answer questions about the user's company policies. Search the documents before answering "
    'and say which document the answer comes from.'
)


def build_rag(store: StoreLike) -> ToolishRag[TenantDeps]:
    """One toolset for all users, scoped per run by ``ctx.deps.tenant``: the agent's tools and `ask` alike."""
    return ToolishRag(
        store,
        name='policies',
        description='Company policy documents of the signed-in user',
        metadata_filter=lambda ctx: F.eq('tenant', ctx.deps.tenant),
    )


def _sources(messages: list[Any]) -> list[dict[str, str]]:
    """The chunks the tools returned in this run (for citations)."""
    seen: dict[str, dict[str, str]] = {}
    for message in messages:
        for part in message.parts:
            if isinstance(part, ToolReturnPart) and isinstance(part.metadata, dict):
                for hit in part.metadata.get('hits', []):
                    if isinstance(hit.record, Chunk):
                        seen[hit.record.id] = {'chunk_id': hit.record.id, 'document': hit.record.document_uri}
    return list(seen.values())


def _model_failed(error: UnexpectedModelBehavior | ModelHTTPError) -> JSONResponse:
    """The model, not the request, failed: 503 when its provider is unavailable, else 502 (it kept calling its
    tools wrongly, past its retries), with the reason; never a bare 500."""
    if isinstance(error, ModelHTTPError):
        reason = f'the model provider answered {error.status_code}'
        return JSONResponse({'error': 'the model is unavailable, try again later', 'reason': reason}, status_code=503)
    return JSONResponse({'error': 'the model gave no usable answer', 'reason': error.message}, status_code=502)


def create_app(store: StoreLike, model: Model | str, users: dict[str, User] | None = None) -> Starlette:
    """The web app: ``POST /ask`` and ``POST /ask/grounded``, each with a bearer token and ``{"question": "..."}``."""
    rag = build_rag(store)
    agent = Agent(model, deps_type=TenantDeps, toolsets=[rag], instructions=INSTRUCTIONS)
    known = DEMO_USERS if users is None else users

    async def read_question(request: Request) -> tuple[User, str] | Response:
        """The signed-in user and their question, or the error response to send instead."""
        kind, _, token = request.headers.get('authorization', '').partition(' ')
        user = known.get(token.strip()) if kind.lower() == 'bearer' else None
        if user is None:
            return JSONResponse({'error': 'sign in first'}, status_code=401, headers={'WWW-Authenticate': 'Bearer'})
        try:
            body = await request.json()
        except ValueError:
            body = None
        question = body.get('question') if isinstance(body, dict) else None
        if not isinstance(question, str) or not question.strip():
            return JSONResponse({'error': 'send {"question": "..."}'}, status_code=400)
        return user, question

    async def ask(request: Request) -> Response:
        asked = await read_question(request)
        if isinstance(asked, Response):
            return asked
        user, question = asked
        try:
            result = await agent.run(question, deps=TenantDeps(user))
        except (UnexpectedModelBehavior, ModelHTTPError) as e:
            return _model_failed(e)
        return JSONResponse({'user': user.name, 'answer': result.output, 'sources': _sources(result.new_messages())})

    async def ask_grounded(request: Request) -> Response:
        """A verified answer: claims with exact quotes from the tenant's chunks, or why there is none."""
        asked = await read_question(request)
        if isinstance(asked, Response):
            return asked
        user, question = asked
        try:
            result = await rag.ask(question, model=model, deps=TenantDeps(user))
        except InvalidRequestError as e:  # a question the store cannot search as written
            return JSONResponse({'error': str(e)}, status_code=400)
        except (UnexpectedModelBehavior, ModelHTTPError) as e:
            return _model_failed(e)
        if 'text/markdown' in request.headers.get('accept', ''):
            return Response(render_markdown(result), media_type='text/markdown')
        return Response(to_json(result), media_type='application/json')

    return Starlette(
        routes=[Route('/ask', ask, methods=['POST']), Route('/ask/grounded', ask_grounded, methods=['POST'])]
    )


async def demo_store() -> InMemoryStore:
    """Two tenants with the same kind of documents and different facts."""
    store = InMemoryStore()
    docs = []
    for tenant, days, carrier in (('acme', 30, 'DHL'), ('globex', 14, 'UPS')):
        b = DocumentBuilder(
            f'https://intranet.example/{tenant}/policies', f'{tenant} policies', metadata={'tenant': tenant}
        )
        b.add_chunk(b.section('Refunds'), f'{tenant} refunds are paid within {days} days of the return.')
        b.add_chunk(b.section('Shipping'), f'{tenant} ships every parcel with {carrier}.')
        docs.append(b.build())
    await store.upsert(docs)
    return store


def main() -> None:  # pragma: no cover - the demo server
    import asyncio

    import uvicorn

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument('--host', default='127.0.0.1')
    parser.add_argument('--port', type=int, default=8000)
    parser.add_argument('--model', default=os.environ.get('TOOLISH_RAG_MODEL'))
    args = parser.parse_args()
    if not args.model:
        parser.exit(2, 'set a model: --model PROVIDER:MODEL or $TOOLISH_RAG_MODEL (e.g. openai:gpt-5-mini)\n')
    store = asyncio.run(demo_store())
    uvicorn.run(create_app(store, args.model), host=args.host, port=args.port)


if __name__ == '__main__':  # pragma: no cover
    main()
