"""Pin the thread pools of a benchmark process; the first thing every benchmark script does.

A module of its own, importing nothing but the standard library, because the pins are
environment variables that numpy's BLAS and OpenMP read once, when their libraries load:
``benchmarks/common.py`` imports numpy, so pinning from there came too late (OpenBLAS kept
its default of one thread per core while the thread note claimed one).
"""

from __future__ import annotations

import os
import sys

__all__ = ['set_thread_counts']

_BLAS_VARS = ('OPENBLAS_NUM_THREADS', 'MKL_NUM_THREADS', 'NUMEXPR_NUM_THREADS')


def set_thread_counts(n: int, *, blas: int = 1, torch: bool = True) -> str:
    """Pin thread pools: torch/OpenMP to ``n``, numpy's BLAS to ``blas``; returns a line saying so.

    BLAS gets one thread by default: numpy's matrix-vector products here are small, and in a
    standalone check an OpenBLAS pool at 2 threads next to torch's OpenMP pool on two cores
    made each MiniLM query embedding about 7x slower (107 ms instead of 15 ms).
    The environment variables only take effect if set before numpy/torch load their
    libraries, so call this first thing in a script: calling it after numpy loaded, with the
    BLAS pin not already in place, raises rather than print a thread note that is not true.
    A later call (``torch=True`` once a script knows it needs the model) is fine.
    ``torch=False`` leaves torch unimported (for runs that use no neural model).
    """
    if 'numpy' in sys.modules and any(os.environ.get(var) != str(blas) for var in _BLAS_VARS):
        raise RuntimeError('set_thread_counts must run before numpy is imported (import pin_threads first)')
    os.environ['OMP_NUM_THREADS'] = str(n)
    for var in _BLAS_VARS:
        os.environ[var] = str(blas)
    os.environ.setdefault('TOKENIZERS_PARALLELISM', 'false')
    # What toolish_rag.embedding.prefer_passive_openmp does for users; set here because torch
    # is imported below, before any embedder is resolved.
    os.environ.setdefault('OMP_WAIT_POLICY', 'PASSIVE')
    note = (
        f'threads: OMP_NUM_THREADS={n}, OMP_WAIT_POLICY={os.environ["OMP_WAIT_POLICY"]}, '
        f'OPENBLAS/MKL/NUMEXPR_NUM_THREADS={blas}, TOKENIZERS_PARALLELISM={os.environ["TOKENIZERS_PARALLELISM"]}'
    )
    if torch:
        import torch as _torch

        _torch.set_num_threads(n)
        note += f', torch.set_num_threads({n}) (torch reports {_torch.get_num_threads()})'
    return note
