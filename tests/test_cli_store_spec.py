"""``--store`` takes ``NAME[:LOCATION]``; a bare path is refused with the spec to write instead.

Regression: ``--store ./kb`` said "unknown store '.'", which did not say what was wrong.
A path is not opened as the default kind of store: the kind a directory holds cannot be
told from its path, and the default kind depends on what is installed.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from toolish_rag.cli import main
from toolish_rag.manifest import StoreManifest, write_manifest
from toolish_rag.stores import open_store
from toolish_rag.stores.registry import default_store_name


@pytest.mark.parametrize('spec', ['./kb', '../kb', '/srv/data/kb', '~/kb', 'data/kb', 'kb'])
def test_a_bare_path_is_refused_with_the_spec_to_use(
    spec: str, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / 'kb').mkdir()  # `kb` alone is a path only because this directory exists
    assert main(['tools', '--store', spec, '--embedder', 'hashing']) == 2
    err = capsys.readouterr().err
    assert f"'{spec}' is a path, not a store spec" in err
    assert f'e.g. {default_store_name()}:{spec} ' in err
    assert [p.name for p in tmp_path.iterdir()] == ['kb'] and not any((tmp_path / 'kb').iterdir())  # nothing opened


@pytest.mark.parametrize(('spec', 'name'), [('lancdb:./kb', 'lancdb'), ('kb', 'kb'), ('elastic', 'elastic')])
def test_an_unknown_store_name_is_still_unknown(spec: str, name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:  # fmt: skip
    monkeypatch.chdir(tmp_path)  # no `kb` directory here
    with pytest.raises(ValueError, match=rf"^unknown store '{name}'; installed stores: .*memory") as error:
        open_store(spec)
    assert f'e.g. {default_store_name()}:./kb' in str(error.value)


def test_a_spec_with_a_path_location_opens(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    write_manifest(tmp_path / 'kb', StoreManifest('memory'))  # an empty store (a read command refuses a missing one)
    assert main(['tools', '--store', 'memory:./kb', '--embedder', 'hashing']) == 0
