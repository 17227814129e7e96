"""The benchmark suite still runs end to end: `benchmarks/suite.py --quick` (tiny synthetic data).

Timings are never asserted; what is asserted is what the suite claims: every store x tool was
measured beside its raw library on the same data and agrees with it, every speed table has its
raw column, and filtered searches returned exactly top_k.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PEER_PYTHON = ROOT / 'benchmarks' / '.venv-peer' / 'bin' / 'python'


@pytest.fixture(scope='module')
def quick_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, object], str]:
    out = tmp_path_factory.mktemp('bench')
    done = subprocess.run(
        [
            sys.executable,
            str(ROOT / 'benchmarks' / 'suite.py'),
            '--quick',
            '--no-peer',
            '--out',
            str(out / 'benchmarks.md'),
            '--json',
            str(out / 'results.json'),
        ],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=ROOT,
    )
    assert done.returncode == 0, done.stderr[-4000:]
    return json.loads((out / 'results.json').read_text()), (out / 'benchmarks.md').read_text()


def test_every_store_and_tool_is_measured_beside_its_raw_library(quick_run: tuple[dict[str, object], str]) -> None:
    results, page = quick_run
    quality = results['quality']
    assert isinstance(quality, dict)
    entry = quality['synthetic']
    stores = entry['stores']
    assert set(stores) == {'memory', 'memory-single-vector', 'lancedb', 'tantivy'}
    assert set(stores['memory']) == {'text', 'vector', 'hybrid'}
    assert set(stores['memory-single-vector']) == {'vector', 'hybrid'}
    assert set(stores['lancedb']) == {'text', 'vector', 'hybrid'}
    assert set(stores['tantivy']) == {'text'}
    raw = entry['raw']
    pairs = {
        ('memory', 'text'): 'bm25s',
        ('memory', 'vector'): 'numpy cosine',  # the hashing embedder reads whole texts: one window each
        ('memory-single-vector', 'vector'): 'numpy cosine',
        ('lancedb', 'text'): 'LanceDB FTS',
        ('lancedb', 'vector'): 'LanceDB vector (exact)',
        ('tantivy', 'text'): 'tantivy BM25',
    }
    for (store, tool), raw_name in pairs.items():
        ours, theirs = stores[store][tool], raw[raw_name]
        for metric in ('ndcg@10', 'recall@100', 'mrr@10'):
            assert abs(ours[metric] - theirs[metric]) <= 0.005, (store, tool, metric, ours, theirs)
    # The synthetic queries name their document's topic word: text search must find it.
    assert stores['memory']['text']['mrr@10'] > 0.9
    assert 'RRF k=60 (bm25s + cosine)' in raw
    assert '## Retrieval quality' in page and '| raw: bm25s |' in page
    assert '| InMemoryStore hybrid minus its better leg (target >= -0.01) |' in page


def test_speed_tables_pair_every_search_with_its_raw_call(quick_run: tuple[dict[str, object], str]) -> None:
    results, page = quick_run
    speed = results['speed']
    assert isinstance(speed, dict)
    assert set(speed) == {'memory', 'lancedb', 'tantivy'}
    for store, result in speed.items():
        tools = {t['tool']: t for corpus in result['corpora'] for t in corpus['tools']}
        assert 'text_search' in tools, store
        for name, t in tools.items():
            assert t['p50_ms'] > 0 and t['p99_ms'] >= t['p50_ms'], (store, name)
            if name.endswith('_search'):
                assert t['raw_p50_ms'] and t['raw_p50_ms'] > 0, (store, name)
        filtered = [f for corpus in result['corpora'] for f in corpus['filtered']]
        assert {f['selectivity'] for f in filtered} >= {0.01, 0.1, 0.5}, store
        # exactly top_k, or every in-scope match when fewer exist
        assert all(f['exact_top_k'] == f['n'] for f in filtered), (store, filtered)
        assert result['peak_rss_mib'] > 0
    ingest = results['ingest']
    assert isinstance(ingest, dict) and ingest['documents'] == 50 and ingest['chunks'] >= 50
    assert results['import_ms']['toolish_rag'] > 0  # type: ignore[index]
    for heading in ('## Speed', '## Ingest throughput', '## Import time', '## Machine'):
        assert heading in page


@pytest.mark.skipif(not PEER_PYTHON.exists(), reason='the peer environment is not installed (benchmarks/peer/setup)')
def test_the_peer_benchmark_runs_on_a_tiny_collection(tmp_path: Path) -> None:
    sys.path.insert(0, str(ROOT / 'benchmarks'))
    from synthetic_beir import write_synthetic_beir

    folder = write_synthetic_beir(tmp_path / 'synthetic', docs=60, queries=8)
    out = tmp_path / 'peer.json'
    done = subprocess.run(
        [
            str(PEER_PYTHON),
            str(ROOT / 'benchmarks' / 'peer' / 'llamaindex_bench.py'),
            str(folder),
            '--split',
            'test',
            '--latency-queries',
            '5',
            '--json-out',
            str(out),
        ],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-4000:]
    peer = json.loads(out.read_text())
    assert peer['tools']['bm25']['mrr@10'] > 0.9
    assert peer['best_fusion'] in peer['tools']
