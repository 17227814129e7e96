"""A tiny BEIR-layout collection for smoke runs of the benchmark suite (no shared data needed)."""

from __future__ import annotations

import json
import random
from pathlib import Path


def write_synthetic_beir(folder: Path, docs: int = 300, queries: int = 30, seed: int = 7) -> Path:
    """A tiny BEIR folder with real structure: topic words shared by a document and its query."""
    rng = random.Random(seed)
    vocab = [f'{a}{b}' for a in ('ka', 'lo', 'mi', 'nu', 'pe', 'ra', 'si', 'tu') for b in ('ber', 'dax', 'fen', 'gol')]
    folder.mkdir(parents=True, exist_ok=True)
    (folder / 'qrels').mkdir(exist_ok=True)
    with (folder / 'corpus.jsonl').open('w') as corpus:
        for i in range(docs):
            words = rng.choices(vocab, k=40) + [f'topic{i}'] * 3
            rng.shuffle(words)
            corpus.write(json.dumps({'_id': f'd{i}', 'title': f'Doc {i}', 'text': ' '.join(words)}) + '\n')
    with (folder / 'queries.jsonl').open('w') as q, (folder / 'qrels' / 'test.tsv').open('w') as qrels:
        qrels.write('query-id\tcorpus-id\tscore\n')
        for j in range(queries):
            target = rng.randrange(docs)
            q.write(json.dumps({'_id': f'q{j}', 'text': f'topic{target} {rng.choice(vocab)}'}) + '\n')
            qrels.write(f'q{j}\td{target}\t1\n')
    return folder
