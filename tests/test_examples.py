"""The examples run and show what they claim."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parents[1] / 'examples'


def run_example(name: str, *args: str) -> str:
    env = {**os.environ, 'TOOLISH_RAG_MODEL': '', 'HF_HUB_OFFLINE': '1'}
    done = subprocess.run(
        [sys.executable, str(EXAMPLES / name), *args], capture_output=True, text=True, env=env, timeout=300, check=False
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


def test_custom_text_store_gets_only_the_text_tool() -> None:
    out = run_example('custom_text_store.py')
    assert "tools offered: ['faq_text_search']" in out
    assert 'Shipping takes 3-5 business days' in out


def test_per_request_scoping_never_leaks() -> None:
    out = run_example('per_request_scoping.py')
    assert 'acme refunds are paid within 30 days' in out
    assert 'globex refunds' not in out
    assert out.count('was not found') == 2


@pytest.mark.model
def test_quickstart_ingests_and_searches_with_the_real_model(tmp_path: Path) -> None:
    out = run_example('quickstart.py', str(tmp_path / 'kb'))
    assert '- handbook_hybrid_search:' in out and '- handbook_zoom_out:' in out
    assert 'Hybrid search results for' in out
    assert 'ERR-4012' in out
    assert 'No model configured' in out
    assert 'added 5' in out
    again = run_example('quickstart.py', str(tmp_path / 'kb'))
    assert 'unchanged 5' in again and 'added 0' in again
