"""`prefer_passive_openmp`: OpenMP threads sleep between operations unless the user chose otherwise."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

CHECK = """
import os, sys
{before}
from toolish_rag.embedding import resolve_embedder
resolve_embedder({spec!r})
print(os.environ.get('OMP_WAIT_POLICY', '<unset>'), 'torch' in sys.modules)
"""


def run(spec: str, before: str = '', **env: str) -> list[str]:
    environ = {k: v for k, v in os.environ.items() if k != 'OMP_WAIT_POLICY'} | env
    done = subprocess.run(
        [sys.executable, '-c', CHECK.format(before=before, spec=spec)],
        capture_output=True,
        text=True,
        env=environ | {'HF_HUB_OFFLINE': '1'},
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout.split()


def test_a_sentence_transformers_embedder_makes_openmp_passive_before_torch_loads() -> None:
    policy, _ = run('sentence-transformers:all-MiniLM-L6-v2')
    assert policy == 'PASSIVE'


def test_the_users_choice_is_kept() -> None:
    policy, _ = run('sentence-transformers:all-MiniLM-L6-v2', OMP_WAIT_POLICY='ACTIVE')
    assert policy == 'ACTIVE'


@pytest.mark.parametrize('spec', ['hashing', 'openai:text-embedding-3-small'])
def test_other_embedders_leave_the_environment_alone(spec: str) -> None:
    policy, torch_loaded = run(spec, OPENAI_API_KEY='sk-test-not-used')
    assert (policy, torch_loaded) == ('<unset>', 'False')


def test_too_late_once_torch_is_loaded() -> None:
    # The OpenMP runtime has read the variable already: setting it now would only mislead.
    policy, torch_loaded = run('sentence-transformers:all-MiniLM-L6-v2', before='import torch')
    assert (policy, torch_loaded) == ('<unset>', 'True')
