"""The light store reader (no SQLAlchemy, no psycopg) reads what RunStore reads, and steps
aside when it cannot serve; ``judge show`` pages; ``history``/``show`` start without the heavy
imports; on PostgreSQL it reads through libpq itself (judge.store.libpq)."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import judge_env
from test_store import canonical, make_result, make_run

from judge.app.runs import show_run
from judge.app.store_access import StoreLocation, reading
from judge.core.errors import StoreError, UnknownRunError
from judge.core.models import RunOwner
from judge.store import libpq
from judge.store.reader import StoreReader, open_reader
from judge.store.runs import RunStore

# Run in a child process: each `judge ARGS --store URL` call of argv[1] (JSON), then the heavy
# modules loaded; none may be, so no call loaded one (one start-up for all the calls).
LIGHT_CALLS = (
    "import contextlib, io, json, sys\n"
    "from judge.cli import main\n"
    "done = []\n"
    "for args in json.loads(sys.argv[1]):\n"
    "    out, err = io.StringIO(), io.StringIO()\n"
    "    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):\n"
    "        try:\n"
    "            main([*args, '--store', sys.argv[2]])\n"
    "        except SystemExit as exc:\n"
    "            code = exc.code\n"
    "        else:\n"
    "            code = 0\n"
    "    done.append([code, out.getvalue(), err.getvalue()])\n"
    "heavy = sorted(m for m in ('sqlalchemy', 'psycopg', 'litellm', 'jinja2', 'alembic',"
    " 'httpx', 'diskcache') if m in sys.modules)\n"
    "print(json.dumps({'calls': done, 'heavy': heavy}))\n")


def _light_calls(calls: list[list[str]], url: str, cwd: Path) -> list[str]:
    """The stdout of each call, run in one fresh process that must load no heavy module."""
    proc = subprocess.run([sys.executable, "-c", LIGHT_CALLS, json.dumps(calls), url], cwd=cwd,
                          env=judge_env(COLUMNS="250"), capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    assert report["heavy"] == [], report["heavy"]  # start-up stays light
    for (code, _, err), args in zip(report["calls"], calls, strict=True):
        assert code in (0, None), (args, err)
    return [out for _, out, _ in report["calls"]]


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def filled(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """A store URL holding two runs: one of 30 results (every 7th unscored), one empty."""
    url = f"sqlite:///{tmp_path / 'judge.db'}" if request.param == "sqlite" \
        else request.getfixturevalue("pg_url")
    with RunStore(url) as store:
        store.create_run(make_run("r-0001-aa", created="2025-03-01T10:00:00Z"))
        store.add_results("r-0001-aa", [make_result(i, status="unscored" if i % 7 == 0
                                                    else "scored") for i in range(30)])
        store.create_run(make_run("r-0002-bb", suite="other", created="2025-03-02T10:00:00Z"))
    yield url


def test_reader_reads_what_the_store_reads(filled: str, tmp_path: Path) -> None:
    reader = open_reader(filled, tmp_path)
    assert isinstance(reader, StoreReader)
    with reader, RunStore(filled) as store:
        assert reader.url == store.url
        assert reader.list_runs() == store.list_runs()
        assert reader.list_runs("other", limit=5) == store.list_runs("other", limit=5)
        assert [r.id for r in reader.list_runs(limit=1)] == ["r-0002-bb"]
        assert reader.get_run("r-0001") == store.get_run("r-0001-aa")
        for ask in ({}, {"offset": 25}, {"offset": 3, "limit": 4}, {"failures_only": True},
                    {"failures_only": True, "offset": 2, "limit": 3}, {"limit": 0},
                    {"offset": 5, "limit": 2}):  # a page of one batch: one query
            mine = [canonical(r) for r in reader.iter_results("r-0001-aa", batch=2, **ask)]
            theirs = [canonical(r) for r in store.iter_results("r-0001-aa", **ask)]
            assert mine == theirs, ask
        everything = list(store.iter_results("r-0001-aa"))
        failing = [r for r in everything if r.status != "scored" or r.passed is False]
        assert 0 < len(failing) < 30
        assert reader.result_count("r-0001-aa") == store.result_count("r-0001-aa") == 30
        assert reader.result_count("r-0001-aa", failures_only=True) == len(failing) == \
            store.result_count("r-0001-aa", failures_only=True)
        assert reader.result_count("r-0002-bb") == 0
        with pytest.raises(StoreError, match=r"ambiguous.*r-0001-aa, r-0002-bb"):
            reader.get_run("r-000")
        for call in (lambda: reader.get_run("nope"), lambda: reader.iter_results("nope"),
                     lambda: reader.result_count("nope"), lambda: reader.get_run("")):
            with pytest.raises(UnknownRunError, match="judge history"):
                call()
        # LIKE's wildcards in a prefix are plain characters.
        with pytest.raises(UnknownRunError):
            reader.get_run("r-%")


def test_reader_steps_aside_for_what_it_cannot_serve(tmp_path: Path) -> None:
    missing = tmp_path / "none.db"
    assert open_reader(f"sqlite:///{missing}", tmp_path) is None
    assert not missing.exists()  # nothing created: RunStore does that
    assert open_reader("sqlite://", tmp_path) is None
    assert open_reader(f"sqlite:///{tmp_path}/x.db?mode=ro", tmp_path) is None
    empty = tmp_path / "empty.db"
    empty.write_bytes(b"")
    assert open_reader(f"sqlite:///{empty}", tmp_path) is None  # no schema yet
    older = f"sqlite:///{tmp_path / 'old.db'}"
    RunStore(older).close()
    with RunStore(older) as store, store.engine.begin() as conn:
        conn.exec_driver_sql("UPDATE alembic_version SET version_num = '0001'")
    assert open_reader(older, tmp_path) is None  # to migrate: RunStore decides
    # A relative path is the workspace's, as RunStore resolves it.
    RunStore("sqlite:///rel/judge.db", workspace=tmp_path).close()
    reader = open_reader("sqlite:///rel/judge.db", tmp_path)
    assert reader is not None and reader.url == f"sqlite:///{tmp_path / 'rel' / 'judge.db'}"
    reader.close()


def test_a_run_of_this_host_still_running_goes_to_the_full_store(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'judge.db'}"
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True, timeout=60)
    owner = RunOwner(host=socket.gethostname(), pid=int(dead.stdout))
    with RunStore(url) as store:
        run = make_run("r-dead").model_copy(update={"status": "running", "owner": owner})
        store.create_run(run)
        store.add_results(run.id, [make_result(1), make_result(2)])
    where = StoreLocation.open(tmp_path, {"store_url": url}, env={})
    with reading(where) as store:
        assert isinstance(store, RunStore)  # the reaper needs it
        assert store.get_run("r-dead").status == "abandoned"
    with reading(where) as store:
        assert isinstance(store, StoreReader)  # nothing left to reap: light again


def test_show_pages(filled: str, tmp_path: Path) -> None:
    where = StoreLocation.open(tmp_path, {"store_url": filled}, env={})
    page = show_run(where, "r-0001", offset=10, limit=8)
    assert [c.id for c in page.cases] == [f"case-{i:05d}" for i in range(10, 18)]
    assert (page.total, page.offset, page.limit, page.more) == (30, 10, 8, 12)
    last = show_run(where, "r-0001", offset=28, limit=8)
    assert len(last.cases) == 2 and last.more == 0
    failing = show_run(where, "r-0001", failures_only=True, limit=2)
    assert len(failing.cases) == 2 and failing.more == failing.total - 2
    assert len(show_run(where, "r-0001").cases) == 30  # the library's default: all


def test_show_door_pages_and_says_what_is_left(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'judge.db'}"
    with RunStore(url) as store:
        store.create_run(make_run("r-0001-aa"))
        store.add_results("r-0001-aa", [make_result(i) for i in range(60)])
    calls = [["show", "r-0001"], ["show", "r-0001", "--offset", "50"],
             ["show", "r-0001", "--offset", "70"], ["show", "r-0001", "--json", "-n", "5"],
             ["show", "r-0001", "--json", "--all"], ["history"]]
    pages, offset, past, head, whole, history = _light_calls(calls, url, tmp_path)

    assert "case-00049" in pages and "case-00050" not in pages
    assert "cases 1-50 of 60; 10 more: `judge show r-0001-aa --offset 50`" in pages
    assert "case-00050" in offset and "case-00059" in offset and "more" not in offset
    assert "60 cases; none on this page (from case 71" in past
    body = json.loads(head)
    assert [c["id"] for c in body["cases"]] == [f"case-{i:05d}" for i in range(5)]
    assert (body["total"], body["offset"], body["limit"], body["more"]) == (60, 0, 5, 55)
    body = json.loads(whole)
    assert len(body["cases"]) == 60 and body["limit"] is None and body["more"] == 0
    assert "r-0001-aa" in history


@pytest.mark.postgres
def test_postgres_reads_through_libpq(pg_url: str, tmp_path: Path) -> None:
    with RunStore(pg_url) as store:
        store.create_run(make_run("r-ünï"))
        store.add_results("r-ünï", [make_result(i) for i in range(25)])
    reader = open_reader(pg_url, tmp_path)
    assert isinstance(reader, StoreReader)
    with reader, RunStore(pg_url) as store:
        stream = reader.iter_results("r-ünï", batch=4)
        first = [canonical(next(stream)) for _ in range(5)]
        stream.close()  # given up half-way: its cursor and transaction end with it
        again = [canonical(r) for r in reader.iter_results("r-ünï", batch=4)]
        assert again == [canonical(r) for r in store.iter_results("r-ünï")]
        assert again[:5] == first and len(again) == 25 == reader.result_count("r-ünï")
    # The values as psycopg gives them: integers, booleans, NULL, text in UTF-8.
    conn = libpq.connect("postgresql://" + pg_url.split("://", 1)[1])
    assert conn is not None
    try:
        assert conn.execute("SELECT $1::int, $2::boolean, NULL, $3::text, 7::bigint, $4",
                            [-3, False, "é✓ 'x'", None]) == [(-3, False, None, "é✓ 'x'", 7,
                                                              None)]
        with pytest.raises(libpq.PgError, match="no_such_table"):
            conn.execute("SELECT * FROM no_such_table")
        assert conn.execute("SELECT 1") == [(1,)]  # an error leaves it usable
    finally:
        conn.close()
    with pytest.raises(libpq.PgError, match="closed"):
        conn.execute("SELECT 1")
    with pytest.raises(libpq.ConninfoError):
        libpq.connect("host=127.0.0.1 no_such_option=1")


@pytest.mark.postgres
def test_postgres_reader_steps_aside(pg_url: str, tmp_path: Path,
                                     monkeypatch: pytest.MonkeyPatch) -> None:
    RunStore(pg_url).close()
    # A URL libpq does not take (SQLAlchemy's own parsing decides), and no libpq to load.
    assert open_reader(pg_url + "?no_such_option=1", tmp_path) is None
    monkeypatch.setattr(libpq, "library", lambda: None)
    assert open_reader(pg_url, tmp_path) is None
    monkeypatch.undo()
    with pytest.raises(StoreError, match="run store postgresql"):
        open_reader(pg_url.replace(pg_url.rsplit("/", 1)[1], "no_such_db"), tmp_path)


@pytest.mark.postgres
def test_postgres_history_starts_light(pg_url: str, tmp_path: Path) -> None:
    with RunStore(pg_url) as store:
        store.create_run(make_run("r-0001-aa"))
    # Neither SQLAlchemy nor psycopg: the reader goes through libpq.
    assert "r-0001-aa" in _light_calls([["history"]], pg_url, tmp_path)[0]
