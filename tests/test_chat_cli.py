"""``toolish-rag chat``: the function the command calls, driven by a scripted pydantic-ai model and stdin."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)
from pydantic_ai.models.function import AgentInfo, DeltaToolCall, DeltaToolCalls, FunctionModel
from rich.console import Console

from toolish_rag import DocumentBuilder, PropertyFilter as F, ToolishRag
from toolish_rag.cli import main
from toolish_rag.cli._chat_cmd import CHAT_INSTRUCTIONS, chat
from toolish_rag.embedding import HashingEmbeddingModel
from toolish_rag.manifest import StoreManifest, write_manifest
from toolish_rag.stores import InMemoryStore


async def make_rag(path: Path | None = None) -> ToolishRag[Any]:
    store = InMemoryStore(HashingEmbeddingModel(), path=path)
    docs = []
    for tenant, days in (('acme', 30), ('globex', 14)):
        b = DocumentBuilder(f'file:///{tenant}/refunds.md', f'{tenant} refunds', metadata={'tenant': tenant})
        b.add_chunk(b.section('Refunds'), f'{tenant} refunds are paid within {days} days. Error ERR-4012 means late.')
        docs.append(b.build())
    await store.upsert(docs)
    return ToolishRag(store, name='docs', description='Refund policies')


def _turns(messages: list[ModelMessage]) -> int:
    """Model responses since the last user prompt."""
    n = 0
    for m in reversed(messages):
        if isinstance(m, ModelRequest) and any(p.part_kind == 'user-prompt' for p in m.parts):
            return n
        n += isinstance(m, ModelResponse)
    return n


class Scripted:
    """Per user prompt: a text search, then (after the result) an answer quoting the first line of it."""

    def __init__(self) -> None:
        self.seen: list[str] = []
        self.infos: list[AgentInfo] = []

    def _last_tool_text(self, messages: list[ModelMessage]) -> str:
        part = messages[-1].parts[0]
        assert isinstance(part, ToolReturnPart)
        text = part.model_response_str(wrap_if_error=False)
        self.seen.append(text)
        return text

    def respond(self, messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        self.infos.append(info)
        if _turns(messages) == 0:
            return ModelResponse(parts=[ToolCallPart('docs_text_search', {'query': 'refund days', 'top_k': 3})])
        lines = self._last_tool_text(messages).splitlines()
        return ModelResponse(parts=[TextPart(f'Answer: {next(x.strip() for x in lines if "paid within" in x)}')])

    async def stream(self, messages: list[ModelMessage], info: AgentInfo) -> AsyncIterator[str | DeltaToolCalls]:
        self.infos.append(info)
        if _turns(messages) == 0:
            args = json.dumps({'pattern': 'ERR-[0-9]{4}', 'top_k': 2})
            yield {0: DeltaToolCall(name='docs_regex_search', json_args=args, tool_call_id='call-1')}
            return
        text = self._last_tool_text(messages)
        for piece in ('Streamed ', 'answer: ', text.splitlines()[0]):
            yield piece

    @property
    def model(self) -> FunctionModel:
        return FunctionModel(self.respond, stream_function=self.stream)


def console() -> tuple[Console, io.StringIO]:
    buffer = io.StringIO()
    return Console(file=buffer, width=200, force_terminal=False, color_system=None), buffer


async def test_chat_answers_each_line_of_stdin_and_shows_each_tool_call(monkeypatch: pytest.MonkeyPatch) -> None:
    rag = await make_rag()
    script = Scripted()
    out, buffer = console()
    monkeypatch.setattr(sys, 'stdin', io.StringIO('How long do refunds take?\n\nAnd ERR codes?\n/exit\nnot reached\n'))
    code = await chat(rag.with_metadata_filter(F.eq('tenant', 'acme')), script.model, stream=False, console=out)
    text = buffer.getvalue()
    assert code == 0
    assert "↳ docs_text_search(query='refund days', top_k=3) → 1 hit (scoped)" in text
    assert 'Answer: acme refunds are paid within 30 days.' in text
    assert 'globex' not in text and 'not reached' not in text
    assert len(script.seen) == 2  # two prompts, each got its tool result
    assert script.infos[0].instructions and CHAT_INSTRUCTIONS in script.infos[0].instructions
    assert 'Refund policies' in script.infos[0].instructions
    assert [t.name for t in script.infos[0].function_tools] == rag.tool_names


async def test_chat_streams_answers(monkeypatch: pytest.MonkeyPatch) -> None:
    rag = await make_rag()
    script = Scripted()
    out, buffer = console()
    code = await chat(rag, script.model, console=out, input=io.StringIO('Which [error] codes exist?\n'))
    text = buffer.getvalue()
    assert code == 0
    assert 'Which [error] codes exist?' in text
    assert "↳ docs_regex_search(pattern='ERR-[0-9]{4}', top_k=2) → 2 hits" in text
    assert "Streamed answer: Regex matches for 'ERR-[0-9]{4}':" in text
    # The tool call is shown as it happens, before the answer it led to, each on its own line.
    lines = text.splitlines()
    call = next(i for i, x in enumerate(lines) if x.startswith('↳ docs_regex_search'))
    answer = next(i for i, x in enumerate(lines) if x.startswith('Streamed answer:'))
    assert call < answer == len(lines) - 1


async def test_a_streamed_preamble_does_not_end_the_turn_before_its_tool_call() -> None:
    """Models often write "Let me search." before a tool call: the call still runs, then the answer streams."""
    rag = await make_rag()

    async def stream(messages: list[ModelMessage], info: AgentInfo) -> AsyncIterator[str | DeltaToolCalls]:
        if _turns(messages) == 0:
            yield 'Let me search. '
            args = json.dumps({'query': 'refund days'})
            yield {0: DeltaToolCall(name='docs_text_search', json_args=args, tool_call_id='call-1')}
            return
        yield 'Refunds take 30 days.'

    out, buffer = console()
    code = await chat(rag, FunctionModel(stream_function=stream), console=out, input=io.StringIO('How long?\n'))
    lines = buffer.getvalue().splitlines()
    assert code == 0
    assert [x.split(' →')[0].strip() for x in lines[2:]] == [
        'Let me search.',
        "↳ docs_text_search(query='refund days', top_k=5)",
        'Refunds take 30 days.',
    ]


def _user_prompts(messages: list[ModelMessage]) -> list[str]:
    return [
        str(p.content)
        for m in messages
        if isinstance(m, ModelRequest)
        for p in m.parts
        if isinstance(p, UserPromptPart)
    ]


async def test_each_prompt_continues_the_conversation() -> None:
    rag = await make_rag()
    seen: list[list[str]] = []

    def respond(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        seen.append(_user_prompts(messages))
        return ModelResponse(parts=[TextPart(f'answer {len(seen)}')])

    out, buffer = console()
    code = await chat(rag, FunctionModel(respond), stream=False, console=out, input=io.StringIO('first\nsecond\n'))
    assert code == 0
    assert seen == [['first'], ['first', 'second']]  # the second turn sees the first
    assert 'answer 1' in buffer.getvalue() and 'answer 2' in buffer.getvalue()


async def test_slash_commands_never_reach_the_model() -> None:
    rag = await make_rag()
    prompts: list[list[str]] = []

    def respond(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        prompts.append(_user_prompts(messages))
        return ModelResponse(parts=[TextPart('ok')])

    out, buffer = console()
    source = io.StringIO('/help\nhello\n/QUIT\nnot reached\n')
    assert await chat(rag, FunctionModel(respond), stream=False, console=out, input=source) == 0
    assert prompts == [['hello']]
    assert 'unknown command /help: /exit ends the session' in buffer.getvalue()
    assert 'not reached' not in buffer.getvalue()


async def test_a_failed_answer_ends_a_piped_session_with_status_1() -> None:
    rag = await make_rag()

    def respond(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        raise ConnectionError('provider unreachable')

    out, buffer = console()
    code = await chat(rag, FunctionModel(respond), stream=False, console=out, input=io.StringIO('a\nb\n'))
    assert code == 1
    assert 'ConnectionError: provider unreachable' in buffer.getvalue()
    assert 'toolish-rag ➤ b' not in buffer.getvalue()


async def test_a_rejected_tool_call_is_shown_and_the_model_gets_the_retry(monkeypatch: pytest.MonkeyPatch) -> None:
    rag = await make_rag()
    replies: list[str] = []

    def respond(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        if _turns(messages) == 0:
            return ModelResponse(parts=[ToolCallPart('docs_text_search', {'query': 'refund', 'top_k': 500})])
        replies.append(str(messages[-1].parts[0].content))
        return ModelResponse(parts=[TextPart('sorry')])

    out, buffer = console()
    assert await chat(rag, FunctionModel(respond), stream=False, console=out, input=io.StringIO('q\n')) == 0
    assert '→ rejected: top_k must be between 1 and 50; you sent 500' in buffer.getvalue()
    assert 'top_k must be between 1 and 50' in replies[0]


async def test_a_rejected_tool_call_is_shown_as_it_happens_when_streaming() -> None:
    """Refused at validation (top_k) or by the tool (an unknown id): both are shown, before the answer."""
    rag = await make_rag()

    async def stream(messages: list[ModelMessage], info: AgentInfo) -> AsyncIterator[str | DeltaToolCalls]:
        if _turns(messages) == 0:
            yield {0: DeltaToolCall('docs_text_search', json.dumps({'query': 'refund', 'top_k': 500}))}
            yield {1: DeltaToolCall('docs_zoom_out', json.dumps({'id': 'no-such-id'}))}
        else:
            yield 'sorry'

    out, buffer = console()
    assert await chat(rag, FunctionModel(stream_function=stream), console=out, input=io.StringIO('q\n')) == 0
    text = buffer.getvalue()
    top_k = text.index("↳ docs_text_search(query='refund', top_k=500) → rejected: top_k must be between 1 and 50")
    unknown = text.index("↳ docs_zoom_out(id='no-such-id') → rejected: 'no-such-id' was not found.")
    assert max(top_k, unknown) < text.index('sorry') and text.count('rejected') == 2


async def test_the_interactive_session_keeps_history_and_survives_a_failed_answer(tmp_path: Path) -> None:
    """A terminal session reads prompts with prompt-toolkit (here fed by a pipe) and keeps their history."""
    pytest.importorskip('prompt_toolkit', reason='needs pydantic-ai-slim[cli] (the mcp extra)')
    from prompt_toolkit.application import create_app_session
    from prompt_toolkit.input import create_pipe_input
    from prompt_toolkit.output import DummyOutput

    rag = await make_rag()
    script = Scripted()

    def respond(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        if _user_prompts(messages)[-1] == 'fail':
            raise ConnectionError('provider unreachable')
        return script.respond(messages, info)

    out, buffer = console()
    with create_pipe_input() as pipe, create_app_session(input=pipe, output=DummyOutput()):
        pipe.send_text('fail\rHow long do refunds take?\r/exit\rnot reached\r')
        code = await chat(rag, FunctionModel(respond), stream=False, console=out, interactive=True, config_dir=tmp_path)
    assert code == 0
    text = buffer.getvalue()
    assert 'ConnectionError: provider unreachable' in text  # shown, and the session went on
    assert 'refunds are paid within' in text and '↳ docs_text_search' in text
    assert 'not reached' not in text
    history = (tmp_path / 'prompt-history.txt').read_text()
    assert 'How long do refunds take?' in history and 'not reached' not in history


async def test_an_unusable_model_string_is_reported_plainly() -> None:
    rag = await make_rag()
    out, buffer = console()
    code = await chat(rag, 'no-such-provider:some-model', console=out, input=io.StringIO('hi\n'))
    assert code == 2
    assert "cannot use model 'no-such-provider:some-model'" in buffer.getvalue()


def test_without_a_model_the_command_says_how_to_set_one(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != 'TOOLISH_RAG_MODEL'}
    done = subprocess.run(
        [sys.executable, '-m', 'toolish_rag.cli', 'chat', '--store', f'memory:{tmp_path}', '--embedder', 'hashing'],
        input='hello\n',
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=False,
    )
    assert done.returncode == 2
    assert '--model' in done.stderr and 'TOOLISH_RAG_MODEL' in done.stderr and 'OPENAI_API_KEY' in done.stderr
    assert done.stdout == ''


def test_the_model_can_come_from_the_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv('TOOLISH_RAG_MODEL', 'no-such-provider:from-env')
    monkeypatch.setattr(sys, 'stdin', io.StringIO('hi\n'))
    write_manifest(tmp_path, StoreManifest('memory'))  # an empty store (a read command refuses a missing one)
    assert main(['chat', '--store', f'memory:{tmp_path}', '--embedder', 'hashing']) == 2
    assert "cannot use model 'no-such-provider:from-env'" in capsys.readouterr().err
