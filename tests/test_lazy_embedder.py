"""The embedder is loaded only when a vector is needed: listing tools and text search never import torch.

Regression (issue 27): every LanceDB command loaded all-MiniLM-L6-v2 (about 7.5 s of CPU), `tools`
and `search --tool text` included, because resolving the model string imported sentence-transformers.
One fresh interpreter (whether torch is loaded is the point) builds a LanceDB store whose manifest
names the default model, runs both commands' main in-process, then reports ``sys.modules``.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip('toolish_rag_lancedb')

SCRIPT = r"""
import asyncio, contextlib, io, sys
from pydantic_ai.embeddings import EmbeddingModel, EmbeddingResult
from toolish_rag import DocumentBuilder
from toolish_rag.cli import main
from toolish_rag.manifest import read_manifest
from toolish_rag_lancedb import LanceDBStore

class LooksLikeMiniLM(EmbeddingModel):
    # Writes the store as the default model would be recorded, without loading it.
    model_name = 'all-MiniLM-L6-v2'
    system = 'sentence-transformers'
    def __init__(self):
        super().__init__(settings={'sentence_transformers_normalize_embeddings': True})
    async def embed(self, inputs, *, input_type, settings=None):
        inputs, _ = self.prepare_embed(inputs, settings)
        return EmbeddingResult(embeddings=[[1.0] + [0.0] * 383 for _ in inputs], inputs=inputs,
                               input_type=input_type, model_name=self.model_name, provider_name=self.system)
    async def max_input_tokens(self):
        return None

async def build(path):
    b = DocumentBuilder('file:///refunds.md', 'Refunds')
    b.add_chunk(b.section('Refunds'), 'The refund window is 30 days.')
    await LanceDBStore(path, embedder=LooksLikeMiniLM()).upsert([b.build()])

asyncio.run(build(sys.argv[1]))
print('manifest', read_manifest(sys.argv[1]).embedder.model)
out = io.StringIO()
with contextlib.redirect_stdout(out):
    tools = main(['tools', '--store', f'lancedb:{sys.argv[1]}'])
    text = main(['search', 'refund window', '--tool', 'text', '--store', f'lancedb:{sys.argv[1]}'])
print('codes', tools, text, 'refund window is 30 days' in out.getvalue())
print('torch', 'torch' in sys.modules, 'sentence_transformers' in sys.modules)
"""


def test_tools_and_text_search_never_import_torch(tmp_path: Path) -> None:
    env = os.environ | {'HF_HUB_OFFLINE': '1', 'TOKENIZERS_PARALLELISM': 'false'}
    env.pop('TOOLISH_RAG_STORE', None)
    done = subprocess.run(
        [sys.executable, '-c', SCRIPT, str(tmp_path / 'kb')], capture_output=True, text=True, env=env, check=False
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.splitlines() == [
        'manifest sentence-transformers:all-MiniLM-L6-v2',
        'codes 0 0 True',
        'torch False False',
    ], done.stderr[-3000:]
