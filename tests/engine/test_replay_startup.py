"""An offline replay's start-up: what it imports, and the empty store it makes without Alembic.

A replay reads the cache and writes the run store; the local judge's HTTP probe (httpx), the
shared tier's PostgreSQL dialect and Alembic (an empty SQLite store is made at the head from
the store's own tables) are not on its path. The empty store must be the one the revisions
build, column for column and index for index. The run's report counts its results as they
are stored instead of reading them back: the same figures.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

from conftest import EXAMPLE_SUITE, judge_env
from sqlalchemy import create_engine, inspect

from judge.app.runs.running import RunRequest, run_suite
from judge.app.workspace.workspace import Workspace
from judge.store import migrations
from judge.store.runs import RunStore
from judge.system.resources import load_suite

HEAVY = ("alembic", "httpx", "litellm", "sqlalchemy.dialects.postgresql")
MODEL = "hosted_vllm/fake-judge"


def _schema(url: str) -> dict[str, Any]:
    engine = create_engine(url)
    try:
        with engine.connect() as conn:
            found = inspect(conn)
            return {table: {
                "columns": [(c["name"], str(c["type"]), c["nullable"], c.get("default"))
                            for c in found.get_columns(table)],
                "primary": found.get_pk_constraint(table)["constrained_columns"],
                "indexes": sorted((i["name"], tuple(i["column_names"]), bool(i["unique"]))
                                  for i in found.get_indexes(table)),
                "foreign": [(f["constrained_columns"], f["referred_table"],
                             f["referred_columns"]) for f in found.get_foreign_keys(table)],
            } for table in sorted(found.get_table_names())}
    finally:
        engine.dispose()


def test_an_empty_sqlite_store_is_the_schema_the_revisions_build(tmp_path: Path) -> None:
    made = f"sqlite:///{tmp_path / 'made.db'}"
    with RunStore(made) as store:
        assert store.schema_before.revision is None
        assert store.schema_revision() == migrations.HEAD
    migrated = f"sqlite:///{tmp_path / 'migrated.db'}"
    engine = create_engine(migrated)
    with engine.begin() as conn:
        migrations.upgrade(conn, migrations.schema_state(conn))
    engine.dispose()
    expected = _schema(migrated)
    assert set(expected) == {"alembic_version", "case_results", "labels", "runs"}
    assert _schema(made) == expected
    with RunStore(made) as again:  # at the head: opening it changes nothing
        assert again.schema_before.current
    # A version table with no revision in it yet (nothing else): stamped at the head too.
    bare = f"sqlite:///{tmp_path / 'bare.db'}"
    engine = create_engine(bare)
    with engine.begin() as conn:
        conn.exec_driver_sql("CREATE TABLE alembic_version (version_num VARCHAR(32) NOT NULL)")
    engine.dispose()
    with RunStore(bare) as store:
        assert store.schema_revision() == migrations.HEAD
    assert set(_schema(bare)) == set(expected)


def test_an_offline_replay_imports_nothing_it_does_not_use(workspace: Path) -> None:
    shutil.copy(EXAMPLE_SUITE, workspace / "suite.yaml")
    code = ("import sys, atexit\n"
            f"atexit.register(lambda: print('HEAVY=' + ','.join(m for m in {HEAVY!r} "
            "if m in sys.modules), file=sys.stderr))\n"
            "from judge.cli import main\nmain(sys.argv[1:])\n")
    proc = subprocess.run(
        [sys.executable, "-c", code, "run", "suite.yaml", "--offline", "--no-check",
         "--model", "hosted_vllm/fake-judge"],
        cwd=workspace, env=judge_env(), capture_output=True, text=True, timeout=120,
        check=False)
    assert proc.returncode == 3, proc.stderr  # nothing cached: every judgment a miss
    assert (workspace / ".judge" / "judge.db").is_file()  # the store was made, and written
    assert "HEAVY=\n" in proc.stderr, proc.stderr


def test_the_report_counts_what_the_store_holds(fake_server: Any, workspace: Path) -> None:
    # Half the cases judged (and cached), then the whole suite replayed offline: the
    # report's counts, tallied as results are stored, equal a read-back of the stored run.
    shutil.copy(EXAMPLE_SUITE, workspace / "suite.yaml")
    suite = workspace / "suite.yaml"
    everything = load_suite(suite)
    some = tuple(c.id for c in everything.cases[::2])
    live = Workspace.open(workspace, {"model": [MODEL], "api_base": fake_server.openai_base_url},
                          env={})
    assert run_suite(live, RunRequest(suite=suite, ids=some, check=False)).exit_code == 0
    offline = Workspace.open(workspace, {"model": [MODEL], "cache_mode": "offline"}, env={})
    report = run_suite(offline, RunRequest(suite=suite, check=False))
    with offline.open_store() as store:
        stored = list(store.iter_results(report.run.id))
    llm = [r for r in stored if r.judged_by == "llm"]
    unscored = [r for r in llm if r.status != "scored"]
    assert unscored and len(unscored) < len(llm)  # both kinds, or the test proves nothing
    assert report.scored_llm == len(llm) - len(unscored)
    assert report.first_failure == unscored[0].reason
    assert report.missing == tuple(sorted({r.id for r in stored if r.status == "cache_miss"}))
    assert set(report.missing) == {c.id for c in everything.cases if c.id not in some
                                   and c.judged_by == "llm"}
