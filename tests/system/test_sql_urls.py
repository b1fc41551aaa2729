"""One database URL resolver: the run store and the shared cache tier read a URL the same way."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from sqlalchemy.engine import make_url

from judge.cache.shared import SharedCache
from judge.core.text.errors import NoStoreError
from judge.core.text.secrets import MASK
from judge.store.runs import RunStore
from judge.system.sql_urls import resolve_sql_url


def test_a_relative_sqlite_path_is_the_workspaces_for_both_databases(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    workspace, elsewhere = tmp_path / "ws", tmp_path / "elsewhere"
    workspace.mkdir()
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)  # a command run from another folder
    with RunStore("sqlite:///state/runs.sqlite", workspace=workspace) as store:
        assert store.url == f"sqlite:///{workspace / 'state' / 'runs.sqlite'}"
    with SharedCache("sqlite:///tier/shared.sqlite", workspace=workspace) as tier:
        assert tier.url == f"sqlite:///{workspace / 'tier' / 'shared.sqlite'}"
    assert (workspace / "state" / "runs.sqlite").is_file()
    assert (workspace / "tier" / "shared.sqlite").is_file()  # its folder made, as the store's
    assert not os.listdir(elsewhere)


def test_resolving_makes_nothing_and_a_store_opened_to_read_is_never_made(
        tmp_path: Path) -> None:
    sql = resolve_sql_url("sqlite:///state/runs.sqlite", tmp_path)
    assert sql.file == tmp_path / "state" / "runs.sqlite"
    with pytest.raises(NoStoreError) as caught:
        RunStore("sqlite:///state/runs.sqlite", workspace=tmp_path, create=False)
    assert caught.value.path == str(sql.file) and "--store URL" in (caught.value.fix or "")
    assert not list(tmp_path.iterdir())  # neither the file nor its folder
    with RunStore("sqlite:///state/runs.sqlite", workspace=tmp_path):
        pass  # a writer makes it
    with RunStore("sqlite:///state/runs.sqlite", workspace=tmp_path, create=False) as store:
        assert store.list_runs() == []


@pytest.mark.parametrize("url", ["sqlite://", "sqlite:///:memory:",
                                 "sqlite:///file:mem1?mode=memory&cache=shared&uri=true",
                                 "sqlite:///rel.db?uri=true"])
def test_memory_and_uri_databases_are_left_as_written(url: str, tmp_path: Path) -> None:
    assert resolve_sql_url(url, tmp_path).url == make_url(url)
    assert not list(tmp_path.iterdir())


def test_a_password_is_never_shown(tmp_path: Path) -> None:
    sql = resolve_sql_url("postgresql+psycopg://judge:hunter2-pw@db.example/judge", tmp_path)
    assert sql.server and sql.backend == "postgresql"
    assert sql.shown == f"postgresql+psycopg://judge:{MASK}@db.example/judge"
    assert "hunter2-pw" not in repr(sql)
    said = 'connection failed: password "hunter2-pw" rejected for postgresql://judge:x@h/d'
    assert sql.scrub(said) == (f'connection failed: password "{MASK}" rejected for '
                               f"postgresql://judge:{MASK}@h/d")
