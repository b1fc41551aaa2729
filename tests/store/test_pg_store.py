"""The run store on both engines: migrations (from the schema before them), newer stores,
PostgreSQL behaving as SQLite does, and passwords never shown."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import judge_env, run_judge
from sqlalchemy import create_engine, inspect, text
from sqlalchemy.engine import make_url
from test_store import canonical, make_result, make_run

from judge.app.admin.store import upgrade_store
from judge.app.workspace.workspace import Workspace
from judge.core.text.errors import StoreError
from judge.core.text.secrets import MASK
from judge.store.migrations import HEAD, LEGACY, REVISIONS
from judge.store.runs import RunStore

# The DDL of the release before migrations (`git show 335b9f3:judge/store/runs.py`, its
# metadata.create_all), the same on SQLite and PostgreSQL.
LEGACY_DDL = (
    """CREATE TABLE runs (
        id VARCHAR(255) NOT NULL, suite VARCHAR(255) NOT NULL, rubric VARCHAR(255) NOT NULL,
        rubric_hash VARCHAR(128) NOT NULL, models TEXT NOT NULL, seed INTEGER,
        template_id VARCHAR(255) NOT NULL, template_hash VARCHAR(128) NOT NULL,
        created_at VARCHAR(64) NOT NULL, status VARCHAR(32) NOT NULL, info_json TEXT NOT NULL,
        format_version INTEGER NOT NULL, PRIMARY KEY (id))""",
    "CREATE INDEX ix_runs_suite_created_at ON runs (suite, created_at)",
    "CREATE INDEX ix_runs_created_at ON runs (created_at)",
    """CREATE TABLE case_results (
        run_id VARCHAR(255) NOT NULL, case_id VARCHAR(255) NOT NULL,
        model VARCHAR(255) NOT NULL, sample INTEGER NOT NULL, status VARCHAR(32) NOT NULL,
        overall_score INTEGER, band VARCHAR(64), passed BOOLEAN, result_json TEXT NOT NULL,
        format_version INTEGER NOT NULL, PRIMARY KEY (run_id, case_id, model, sample),
        FOREIGN KEY(run_id) REFERENCES runs (id))""",
)


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """A fresh store URL on each engine."""
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'judge.db'}"
    else:
        yield request.getfixturevalue("pg_url")


def write_legacy_store(url: str) -> tuple[str, list[str]]:
    """A store as the release before migrations wrote it: one run, three results."""
    run = make_run(created="2025-02-01T09:00:00Z")
    results = [make_result(i) for i in range(3)]
    engine = create_engine(url)
    with engine.begin() as conn:
        for statement in LEGACY_DDL:
            conn.execute(text(statement))
        row = RunStore._unsealed_row(run)
        conn.execute(text(
            "INSERT INTO runs (id, suite, rubric, rubric_hash, models, seed, template_id, "
            "template_hash, created_at, status, info_json, format_version) VALUES (:id, "
            ":suite, :rubric, :rubric_hash, :models, :seed, :template_id, :template_hash, "
            ":created_at, :status, :info_json, 1)"), row)
        for r in results:
            conn.execute(text(
                "INSERT INTO case_results VALUES (:run, :case, :model, 0, 'scored', :score, "
                ":band, :passed, :json, 1)"),
                {"run": run.id, "case": r.id, "model": r.judge.model if r.judge else "",
                 "score": r.overall_score, "band": r.band, "passed": r.passed,
                 "json": r.model_dump_json()})
    engine.dispose()
    return run.id, [canonical(r) for r in results]


def columns(url: str, table: str) -> set[str]:
    engine = create_engine(url)
    try:
        with engine.connect() as conn:
            return {c["name"] for c in inspect(conn).get_columns(table)}
    finally:
        engine.dispose()


def set_revision(url: str, revision: str) -> None:
    engine = create_engine(url)
    with engine.begin() as conn:
        conn.execute(text("UPDATE alembic_version SET version_num = :r"), {"r": revision})
    engine.dispose()


def test_revisions_match_the_scripts() -> None:
    from alembic.config import Config
    from alembic.script import ScriptDirectory

    import judge.store.migrations

    config = Config()
    config.set_main_option("script_location", str(Path(judge.store.migrations.__file__).parent))
    script = ScriptDirectory.from_config(config)
    chain = [s.revision for s in reversed(list(script.walk_revisions()))]
    assert chain == [r for r, _ in REVISIONS] and script.get_current_head() == HEAD


def test_new_store_is_at_head_with_the_store_columns(store_url: str) -> None:
    with RunStore(store_url) as store:
        assert store.schema_before.revision is None
        assert store.schema_revision() == HEAD
    from judge.store.runs import _metadata

    for table in _metadata.sorted_tables:
        assert columns(store_url, table.name) == {c.name for c in table.columns}


def test_store_from_the_previous_schema_upgrades_on_open(store_url: str) -> None:
    run_id, stored = write_legacy_store(store_url)
    assert "run_group" not in columns(store_url, "runs")
    with RunStore(store_url) as store:
        assert (store.schema_before.revision, store.schema_before.stamped) == (LEGACY, False)
        assert store.schema_revision() == HEAD
        assert [r.id for r in store.list_runs()] == [run_id]
        assert [canonical(r) for r in store.iter_results(run_id)] == stored
        # The upgraded store takes new runs and results as a new one would.
        store.create_run(make_run("r-new", created="2025-03-02T00:00:00Z"))
        store.add_results("r-new", [make_result(7)])
        assert store.count_results("r-new")["scored"] == 1
    assert {"run_group", "shard_index", "shard_count"} <= columns(store_url, "runs")
    with RunStore(store_url) as again:  # at head now: opening changes nothing
        assert again.schema_before.current


def test_store_upgrade_operation_reports_before_and_after(store_url: str, tmp_path: Path) -> None:
    write_legacy_store(store_url)
    ws = Workspace.open(tmp_path, {"store_url": store_url}, env={})
    done = upgrade_store(ws)
    assert (done.before, done.after, done.stamped_legacy, done.changed) == (
        LEGACY, HEAD, True, True)
    again = upgrade_store(ws)
    assert (again.before, again.after, again.changed) == (HEAD, HEAD, False)


def test_a_change_that_is_not_additive_waits_for_store_upgrade(
        store_url: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    import judge.store.migrations as migrations

    write_legacy_store(store_url)
    monkeypatch.setattr(migrations, "REVISIONS", (("0001", True), ("0002", False)))
    with pytest.raises(StoreError, match=r"revision 0002 changes existing data.*judge runs "
                                         r"upgrade"):
        RunStore(store_url)
    assert "run_group" not in columns(store_url, "runs")  # nothing half-applied
    done = upgrade_store(Workspace.open(tmp_path, {"store_url": store_url}, env={}))
    assert done.after == HEAD


def test_store_newer_than_the_code_is_a_clear_error(store_url: str, tmp_path: Path) -> None:
    RunStore(store_url).close()
    set_revision(store_url, "9999")
    with pytest.raises(StoreError, match=r"revision 9999, newer than this judgeflow knows "
                                         rf"\(head {HEAD}\).*upgrade judgeflow"):
        RunStore(store_url)
    proc = run_judge(["runs", "list", "--store", store_url], tmp_path)
    assert proc.returncode == 2, proc.stderr
    assert "newer than this judgeflow" in proc.stderr and "Traceback" not in proc.stderr
    proc = run_judge(["runs", "upgrade", "--store", store_url], tmp_path)
    assert proc.returncode == 2 and "newer than this judgeflow" in proc.stderr, proc.stderr


def test_two_processes_creating_one_store_at_once(store_url: str) -> None:
    errors: list[BaseException] = []
    start = threading.Barrier(4)

    def open_it(i: int) -> None:
        try:
            start.wait(timeout=10)
            with RunStore(store_url) as store:
                store.create_run(make_run(f"r-{i}", created=f"2025-03-0{i + 1}T00:00:00Z"))
                store.add_results(f"r-{i}", [make_result(j) for j in range(5)])
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=open_it, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert not errors, errors
    with RunStore(store_url) as store:
        assert store.schema_revision() == HEAD
        assert sorted(r.id for r in store.list_runs()) == [f"r-{i}" for i in range(4)]
        assert all(store.count_results(f"r-{i}")["scored"] == 5 for i in range(4))


@pytest.mark.postgres
def test_password_never_shown(pg_url: str, tmp_path: Path) -> None:
    # The test cluster trusts loopback, so any password connects; it must show nowhere.
    secret = "s3cr3t-Pa55"
    url = pg_url.replace("://judge@", f"://judge:{secret}@")
    with RunStore(url) as store:
        assert store.url.count("judge:[REDACTED]@") == 1 and secret not in store.url
        with pytest.raises(StoreError) as info:
            store.get_run("nope")
    assert secret not in str(info.value) and "judge:[REDACTED]@" in str(info.value)
    refused = make_url(url).set(port=1, database="nodb").render_as_string(hide_password=False)
    assert secret in refused
    with pytest.raises(StoreError) as info:
        RunStore(refused)
    assert secret not in str(info.value) and MASK in str(info.value)
    env = judge_env(JUDGE_STORE_URL=url)
    proc = run_judge(["workspace", "config", "--json"], tmp_path, env=env)
    assert secret not in proc.stdout + proc.stderr and "judge:[REDACTED]@" in proc.stdout
    proc = run_judge(["runs", "show", "nope"], tmp_path, env=env)
    assert proc.returncode == 2 and secret not in proc.stdout + proc.stderr, proc.stderr
    proc = run_judge(["runs", "list", "--store", refused], tmp_path)
    assert proc.returncode == 2 and secret not in proc.stdout + proc.stderr, proc.stderr


def test_mask_url() -> None:
    from judge.core.text.secrets import mask_url

    assert mask_url("postgresql+psycopg://u:p%40ss@h:5432/db") == \
        "postgresql+psycopg://u:[REDACTED]@h:5432/db"
    # A lone user part may be a token (https://TOKEN@host): masked too.
    assert mask_url("see postgresql://u@h/db and http://a:b@c/") == \
        "see postgresql://[REDACTED]@h/db and http://a:[REDACTED]@c/"
    assert mask_url("sqlite:///.judge/judge.db") == "sqlite:///.judge/judge.db"




@pytest.mark.postgres
def test_a_read_of_a_fresh_postgresql_database_makes_its_schema_as_before(
        pg_url: str, tmp_path: Path) -> None:
    proc = run_judge(["runs", "list", "--json"], tmp_path, env=judge_env(JUDGE_STORE_URL=pg_url))
    assert proc.returncode == 0 and proc.stdout.strip() == "[]", proc.stderr
    assert "no run store" not in proc.stderr and not any(tmp_path.iterdir())
    engine = create_engine(pg_url)
    try:
        assert {"runs", "case_results"} <= set(inspect(engine).get_table_names())
    finally:
        engine.dispose()
