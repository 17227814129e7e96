"""Terminal escapes in stored text never reach the operator's terminal (issue 41 item 10).

Hostile records (titles, headings and text holding clear-screen, retitle, OSC-8 link, single-byte CSI
and bidi-override sequences) are printed by ``search``, ``graph show``, ``chat``, ``ask`` and the error
report; every one shows the control characters as escapes (``\\x1b``) and prints none raw.
"""

from __future__ import annotations

import asyncio
import io
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart
from pydantic_ai.models.function import AgentInfo, DeltaToolCall, DeltaToolCalls, FunctionModel
from rich.console import Console

from tests.grounded.grounded_helpers import Scripted, answer, cite
from toolish_rag import DocumentBuilder, ToolishRag
from toolish_rag.cli import main
from toolish_rag.cli._ask_cmd import ask_and_print
from toolish_rag.cli._chat_cmd import chat
from toolish_rag.cli._errors import report
from toolish_rag.cli._terminal import terminal_safe
from toolish_rag.embedding import HashingEmbeddingModel
from toolish_rag.stores import InMemoryStore

CLEAR = '\x1b[2J\x1b[H'
RETITLE = '\x1b]0;pwned\x07'
LINK = '\x1b]8;;https://evil.example/\x1b\\click here\x1b]8;;\x1b\\'
CSI_C1 = '\x9b31m'
BIDI = '\u202etxt.exe'
HOSTILE = (CLEAR, RETITLE, LINK, CSI_C1, BIDI)
RAW = ('\x1b', '\x07', '\x9b', '\u202e')
QUOTE = f'Refunds take 30 days {LINK} {CLEAR}.'


def assert_clean(text: str) -> None:
    assert not [c for c in RAW if c in text], repr(text)


def test_every_control_character_is_escaped_and_text_is_kept() -> None:
    controls = [chr(c) for c in [*range(0x20), 0x7F, *range(0x80, 0xA0)] if chr(c) not in '\n\t']
    shown = terminal_safe('a' + ''.join(controls) + '\n\tb ünïcode 日本')
    assert shown.startswith('a\\x00\\x01') and shown.endswith('\n\tb ünïcode 日本')
    assert all(c not in shown for c in controls)
    assert terminal_safe(RETITLE) == '\\x1b]0;pwned\\x07' and terminal_safe(BIDI) == '\\u202etxt.exe'


async def hostile_store(path: Path | None = None) -> InMemoryStore:
    store = InMemoryStore(HashingEmbeddingModel(), path=path)
    b = DocumentBuilder('file:///refunds.md', f'Refund policy {RETITLE}{CLEAR}')
    b.add_chunk(b.section(f'Refunds {CSI_C1}{BIDI}'), QUOTE)
    other = DocumentBuilder('file:///other.md', f'Other {LINK}')
    other.add_chunk(other.section('Notes'), f'See the Refund policy {RETITLE} for refunds.')
    await store.upsert([b.build(), other.build()])
    return store


def test_search_and_graph_show_print_no_raw_escape(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    store = asyncio.run(hostile_store(tmp_path / 'kb'))
    argv = ['--store', 'memory:./kb', '--embedder', 'hashing']
    assert main(['search', 'refunds', '--tool', 'text', *argv]) == 0
    out = capsys.readouterr().out
    assert_clean(out)
    assert '\\x1b]0;pwned\\x07' in out and '\\x9b31m' in out and 'click here' in out
    assert main(['search', 'refunds', '--tool', 'text', '--json', *argv]) == 0
    out = capsys.readouterr().out
    assert_clean(out)
    assert any(h['document_title'] == f'Refund policy {RETITLE}{CLEAR}' for h in json.loads(out))  # exact in JSON
    assert main(['graph', 'build', *argv]) == 0
    capsys.readouterr()
    doc = next(d for d in asyncio.run(store.list_documents()) if d.title.startswith('Other'))
    assert main(['graph', 'show', doc.id, '--hops', '2', *argv]) == 0
    out = capsys.readouterr().out
    assert_clean(out)
    assert 'click here' in out


async def test_chat_shows_answers_tool_calls_and_errors_escaped() -> None:
    rag = ToolishRag(await hostile_store(), name='docs')

    query, reply = {'query': f'refunds {RETITLE}'}, f'# Answer {CLEAR}\n\nSee {LINK} and {CSI_C1}{BIDI}.'

    def respond(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        if len(messages) == 1:
            return ModelResponse(parts=[ToolCallPart('docs_text_search', query)])
        return ModelResponse(parts=[TextPart(reply)])

    async def streamed(messages: list[ModelMessage], info: AgentInfo) -> AsyncIterator[str | DeltaToolCalls]:
        if len(messages) == 1:
            yield {0: DeltaToolCall(name='docs_text_search', json_args=json.dumps(query), tool_call_id='c1')}
            return
        for piece in reply.split(' '):
            yield piece + ' '

    for streaming in (False, True):
        buffer = io.StringIO()
        console = Console(file=buffer, width=200, force_terminal=False, color_system=None)
        prompts = io.StringIO(f'refunds? {RETITLE}\n/what{CLEAR}\n')
        model = FunctionModel(respond, stream_function=streamed)
        assert await chat(rag, model, stream=streaming, console=console, input=prompts) == 0, buffer.getvalue()
        shown = buffer.getvalue()
        assert_clean(shown)
        assert 'docs_text_search' in shown and 'click here' in shown and '\\x1b[2J' in shown


async def test_ask_prints_no_raw_escape_in_a_pipe_a_terminal_or_json() -> None:
    rag = ToolishRag(await hostile_store(), name='docs')
    chunk = (await rag.run_tool('text_search', {'query': 'refunds'})).metadata['hits'][0].record
    claim = (f'Refunds take 30 days {RETITLE}.', [cite(chunk.id, QUOTE)])

    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    for out, as_json in ((io.StringIO(), False), (Terminal(), False), (io.StringIO(), True)):
        grader, model = Scripted([{'sufficient': True}]), Scripted([answer('answered', claim)])
        kwargs: dict[str, Any] = {'model': model.model, 'grader_model': grader.model, 'out': out, 'as_json': as_json}
        assert await ask_and_print(rag, 'How long do refunds take?', **kwargs) == 0
        shown = out.getvalue()
        assert not [c for c in ('\x1b]', '\x1b[2J', '\x07', '\x9b', '\u202e') if c in shown], repr(shown)
        if as_json:
            assert json.loads(shown)['answer']['claims'][0]['citations'][0]['quote'] == QUOTE
        else:
            assert '\\x1b]0;pwned' in shown and 'refunds.md' in shown


def test_an_error_message_is_reported_escaped(capsys: pytest.CaptureFixture[str]) -> None:
    assert report(ValueError(f'no such file: {RETITLE}{CLEAR}')) == 2
    err = capsys.readouterr().err
    assert_clean(err)
    assert '\\x1b]0;pwned' in err
