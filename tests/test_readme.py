"""The README's quick start runs as written: saved as a script and run from the repository's root.

Its first ```python block is the whole script. One interpreter runs it twice (one model load):
without ``TOOLISH_RAG_MODEL``, as a new user without a key would, and with it set, the model
resolved to pydantic-ai's `TestModel` calling the search tool (no key, no network). See issue 27.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
BLOCK = re.compile(r'```python\n(.*?)```', re.DOTALL)

DRIVER = """
import contextlib, io, json, os, runpy, sys

import pydantic_ai.models
from pydantic_ai.models.test import TestModel

script = sys.argv[1]
outputs = {}
for label, model in (('no model', None), ('model', 'openai:gpt-5')):
    if model is None:
        os.environ.pop('TOOLISH_RAG_MODEL', None)
    else:
        os.environ['TOOLISH_RAG_MODEL'] = model
        # The one substitution: the configured model string resolves to a keyless test model.
        pydantic_ai.models.infer_model = lambda name, *a, **k: TestModel(call_tools=['docs_hybrid_search'])
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        runpy.run_path(script, run_name='__main__')
    outputs[label] = out.getvalue()
print(json.dumps(outputs))
"""


def quick_start() -> str:
    return BLOCK.findall((ROOT / 'README.md').read_text(encoding='utf-8'))[0]


def test_the_quick_start_is_a_script() -> None:
    """No top-level ``await`` (a SyntaxError in a script), no model built before one is configured."""
    source = quick_start()
    compile(source, 'quickstart.py', 'exec')  # no ast.PyCF_ALLOW_TOP_LEVEL_AWAIT: a plain script
    assert 'asyncio.run(main())' in source
    before_check = source[: source.index("os.environ.get('TOOLISH_RAG_MODEL')")]
    assert 'Agent(' not in before_check, 'an Agent built before the model check fails without its provider extra'


@pytest.mark.model
def test_the_quick_start_runs_as_written(tmp_path: Path) -> None:
    script = tmp_path / 'quickstart.py'
    script.write_text(quick_start(), encoding='utf-8')
    env = {**os.environ, 'HF_HUB_OFFLINE': '1', 'TOKENIZERS_PARALLELISM': 'false'}
    env.pop('OPENAI_API_KEY', None)
    done = subprocess.run(
        [sys.executable, '-c', DRIVER, str(script)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert 'Traceback' not in done.stderr, done.stderr[-3000:]
    outputs = json.loads(done.stdout.splitlines()[-1])

    bare = outputs['no model']
    assert "'docs_hybrid_search'" in bare and "'docs_read_section'" in bare  # the tools, listed
    # The scope F.eq('tenant', 'acme') matches the example pages: the refund rule is found.
    assert 'No results' not in bare
    assert 'Hybrid search results for' in bare and 'refunds.md' in bare and 'within 30 days' in bare
    assert 'about.txt' not in bare  # the one file without tenant: acme
    assert 'set TOOLISH_RAG_MODEL' in bare and 'docs/models.md' in bare

    with_model = outputs['model']
    assert 'No model configured' not in with_model
    # TestModel's answer is the JSON of the tool returns it got: the agent searched, within the scope.
    answer = json.loads(with_model.splitlines()[-1])
    assert answer['docs_hybrid_search'].startswith('Hybrid search results for')
    assert 'examples/docs/' in answer['docs_hybrid_search'] and 'about.txt' not in answer['docs_hybrid_search']


def test_the_demo_writes_the_store_the_next_command_reads(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """After `bash scripts/demo`, the README's next command (`toolish-rag search ...`, same folder) finds its documents."""
    from toolish_rag.cli._common import default_store_spec

    monkeypatch.chdir(tmp_path)
    for variable in ('TOOLISH_RAG_STORE', 'TRANSFORMERS_VERBOSITY', 'HF_HUB_DISABLE_PROGRESS_BARS'):
        monkeypatch.delenv(variable, raising=False)  # the example sets the last two on import
    spec = importlib.util.spec_from_file_location('quickstart_example', ROOT / 'examples' / 'quickstart.py')
    assert spec is not None and spec.loader is not None
    demo = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(demo)
    assert default_store_spec() == f'lancedb:{demo.DEFAULT_STORE.as_posix()}'
