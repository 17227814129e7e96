"""``toolish-rag ask``: the command's function with scripted models, and the command itself offline."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from tests.grounded.grounded_helpers import ACME_0_ID, Scripted, answer, build_store, cite
from toolish_rag import PropertyFilter as F, ToolishRag
from toolish_rag.cli import main
from toolish_rag.cli._ask_cmd import ask_and_print
from toolish_rag.manifest import StoreManifest, write_manifest

GOOD_ANSWER = answer(
    'answered',
    ('Refunds are paid within 30 days.', [cite(ACME_0_ID, 'Refunds are paid within 30 days of the request.')]),
)


async def test_piped_output_is_plain_text_with_scripted_models() -> None:
    rag = ToolishRag(await build_store(), name='docs').with_metadata_filter(F.eq('tenant', 'acme'))
    grader, model = Scripted([{'sufficient': True}]), Scripted([GOOD_ANSWER])
    out = io.StringIO()
    code = await ask_and_print(rag, 'How long do refunds take?', model=model.model, grader_model=grader.model, out=out)
    assert code == 0
    text = out.getvalue()
    assert text.startswith('Refunds are paid within 30 days. [1]\n')  # issue 40: no Markdown escapes in a pipe
    assert '“Refunds are paid within 30 days of the request.” — Acme refund policy > Refunds, page 2' in text
    assert 'file:///acme/refunds.md' in text and '\\' not in text and '`' not in text and '**' not in text


async def test_json_output_with_scripted_models() -> None:
    rag = ToolishRag(await build_store(), name='docs')
    grader, model = Scripted([{'sufficient': True}]), Scripted([GOOD_ANSWER])
    out = io.StringIO()
    code = await ask_and_print(rag, 'Refunds?', model=model.model, grader_model=grader.model, as_json=True, out=out)
    data = json.loads(out.getvalue())
    assert code == 0 and data['grounded'] is True and data['model_calls'] == 2
    assert data['answer']['claims'][0]['citations'][0]['source']['document_title'] == 'Acme refund policy'


def test_the_command_runs_offline_with_the_test_model(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import asyncio

    import pydantic_ai

    monkeypatch.setattr(pydantic_ai, 'BANNER_ENABLED', True)
    asyncio.run(build_store(tmp_path))
    argv = ['ask', 'How long do refunds take?', '--model', 'test', '--store', f'memory:{tmp_path}']
    code = main([*argv, '--embedder', 'hashing', '--json', '--filter', '{"op":"eq","key":"tenant","value":"acme"}'])
    assert code == 0
    data = json.loads(capsys.readouterr().out)
    assert data['question'] == 'How long do refunds take?'
    assert data['attempts'][0]['hits'] > 0 and data['model_calls'] <= 6
    # pydantic-ai's test model writes schema-shaped filler, never a quote that verifies.
    assert data['grounded'] is False and data['answer']['status'] == 'insufficient_evidence'
    assert pydantic_ai.BANNER_ENABLED is False  # issue 40: no first-run banner in a terminal


def test_the_command_needs_a_model(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv('TOOLISH_RAG_MODEL', raising=False)
    assert main(['ask', 'q', '--store', f'memory:{tmp_path}', '--embedder', 'hashing']) == 2
    assert 'needs a model' in capsys.readouterr().err


def test_an_unknown_model_is_a_usage_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    write_manifest(tmp_path, StoreManifest('memory'))  # an empty store (a read command refuses a missing one)
    code = main(['ask', 'q', '--model', 'nosuchprovider:x', '--store', f'memory:{tmp_path}', '--embedder', 'hashing'])
    assert code == 2 and 'cannot use model' in capsys.readouterr().err


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


async def test_a_terminal_gets_the_markdown_rendered_not_escaped(monkeypatch: pytest.MonkeyPatch) -> None:
    import sys

    rag = ToolishRag(await build_store(), name='docs').with_metadata_filter(F.eq('tenant', 'acme'))
    grader, model = Scripted([{'sufficient': True}]), Scripted([GOOD_ANSWER])
    terminal = _Terminal()
    monkeypatch.setattr(sys, 'stdout', terminal)
    monkeypatch.setenv('COLUMNS', '200')
    assert await ask_and_print(rag, 'How long do refunds take?', model=model.model, grader_model=grader.model) == 0
    shown = terminal.getvalue()
    assert 'Refunds are paid within 30 days. [1]' in shown  # issue 27 item 8: not `days\. [1]`
    assert '\\.' not in shown and '`file:///' not in shown
