"""Where the suite's temporary directories live: in memory (/dev/shm) unless durability is the point.

Most tests write stores to ``tmp_path`` and wait on fsync there without testing it; the tests
that check what survives a crash or a new process keep a directory on disk. See docs/testing.md.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

MEMORY_FS = Path('/dev/shm')

REAL_DISK = (
    'tests/test_memory_persistence.py::',
    'stores/lancedb/tests/test_lancedb_durability.py::',
    'stores/tantivy/tests/test_tantivy_store.py::test_kill_9_during_writes_leaves_a_consistent_index',
    'stores/tantivy/tests/test_tantivy_store.py::test_reopen_in_another_process_gives_identical_results',
)
"""Node id prefixes of the tests whose ``tmp_path`` stays on disk: kill -9 and reopen-in-a-new-process checks."""


class _RealDisk:
    """A ``tmp_path`` on disk for the `REAL_DISK` tests; registered as a plugin, so it covers stores/*/tests too."""

    @pytest.fixture
    def tmp_path(self, tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[Path]:
        if not request.node.nodeid.startswith(REAL_DISK):
            yield tmp_path
            return
        with tempfile.TemporaryDirectory(prefix='toolish-rag-real-disk-') as disk:
            yield Path(disk)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """A `REAL_DISK` entry naming a file or test that no longer exists fails the run: it would silently
    put a durability test on tmpfs."""
    stale = []
    for prefix in REAL_DISK:
        file, _, name = prefix.partition('::')
        modules = [getattr(item, 'module', None) for item in items if item.nodeid.startswith(f'{file}::')]
        if not (config.rootpath / file).is_file() or (name and modules and not hasattr(modules[0], name)):
            stale.append(prefix)
    if stale:
        raise pytest.UsageError(f'tests/conftest.py REAL_DISK names tests that do not exist: {stale}')


@pytest.hookimpl(tryfirst=True)  # before pytest's tmpdir plugin reads --basetemp
def pytest_configure(config: pytest.Config) -> None:
    config.pluginmanager.register(_RealDisk(), 'toolish-rag-real-disk')
    if 'TOOLISH_RAG_CACHE_DIR' not in os.environ:  # `toolish-rag mcp` keeps handshakes there: never in ~/.cache
        cache = tempfile.mkdtemp(prefix='toolish-rag-cache-')
        os.environ['TOOLISH_RAG_CACHE_DIR'] = cache
        config.add_cleanup(lambda: shutil.rmtree(cache, ignore_errors=True))
    worker = hasattr(config, 'workerinput')  # pytest-xdist workers get their basetemp from the controller
    if worker or config.option.basetemp is not None or os.environ.get('TOOLISH_RAG_TEST_TMP') == 'disk':
        return
    if not (MEMORY_FS.is_dir() and os.access(MEMORY_FS, os.W_OK)):
        return
    base = tempfile.mkdtemp(prefix='toolish-rag-pytest-', dir=MEMORY_FS)
    config.option.basetemp = base
    config.add_cleanup(lambda: shutil.rmtree(base, ignore_errors=True))
