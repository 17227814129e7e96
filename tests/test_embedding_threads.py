"""`prefer_passive_openmp`: OpenMP threads sleep between operations unless the user chose otherwise.

Each check needs a fresh interpreter (whether torch is loaded is the point); two interpreters
cover the five cases, in an order where each case's precondition holds when it is checked.
"""

from __future__ import annotations

import os
import subprocess
import sys

CHECK = """
import os, sys
from toolish_rag.embedding import resolve_embedder
for spec in sys.argv[1:]:
    if spec == 'unset':
        del os.environ['OMP_WAIT_POLICY']
        continue
    if spec == 'torch':  # what a first embedding does: the model is built lazily
        import torch
        continue
    resolve_embedder(spec)
    print(spec, os.environ.get('OMP_WAIT_POLICY', '<unset>'), 'torch' in sys.modules)
"""

MINILM = 'sentence-transformers:all-MiniLM-L6-v2'


def run(*specs: str, **env: str) -> list[list[str]]:
    """``[spec, OMP_WAIT_POLICY, torch loaded]`` after resolving each spec in turn in one fresh interpreter
    (``'unset'`` removes the variable between two specs)."""
    environ = {k: v for k, v in os.environ.items() if k != 'OMP_WAIT_POLICY'} | env
    done = subprocess.run(
        [sys.executable, '-c', CHECK, *specs],
        capture_output=True,
        text=True,
        env=environ | {'HF_HUB_OFFLINE': '1'},
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return [line.split() for line in done.stdout.splitlines()]


def test_other_embedders_leave_the_environment_alone_and_sentence_transformers_makes_openmp_passive() -> None:
    # hashing and OpenAI first: neither may set the variable nor load torch; then MiniLM, before torch loads
    # (resolving it loads nothing: the model and torch come with its first embedding).
    assert run('hashing', 'openai:text-embedding-3-small', MINILM, OPENAI_API_KEY='sk-test-not-used') == [
        ['hashing', '<unset>', 'False'],
        ['openai:text-embedding-3-small', '<unset>', 'False'],
        [MINILM, 'PASSIVE', 'False'],
    ]


def test_the_users_choice_is_kept_and_it_is_too_late_once_torch_is_loaded() -> None:
    # The user's ACTIVE is kept (torch not loaded yet); once torch is loaded, an unset variable stays unset:
    # the OpenMP runtime has read it already, so setting it then would only mislead.
    assert run(MINILM, 'torch', 'unset', MINILM, OMP_WAIT_POLICY='ACTIVE') == [
        [MINILM, 'ACTIVE', 'False'],
        [MINILM, '<unset>', 'True'],
    ]
