"""What ``judge runs list``, ``show`` and ``export`` read through RunStore: pages, prefixes,
failures; a dead run of this host is marked abandoned on the way; ``judge runs show`` pages; the
doors start without the judge's imports (no LiteLLM, Jinja, httpx, diskcache, Alembic)."""

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

from judge.app.runs.stored import show_run
from judge.app.workspace.store_access import StoreLocation, reading
from judge.core.formats.models import CaseResult, RunOwner
from judge.core.text.errors import StoreError, UnknownRunError
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
    "heavy = sorted(m for m in ('litellm', 'jinja2', 'alembic', 'httpx', 'diskcache')"
    " if m in sys.modules)\n"
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


def _failing(results: list[CaseResult]) -> list[CaseResult]:
    """What ``--failures`` keeps, by judge.app.runs.stored.is_failure's rule, in Python."""
    return [r for r in results if r.status != "scored" or r.passed is False]


def test_the_store_reads_pages_prefixes_and_failures(filled: str) -> None:
    with RunStore(filled) as store:
        assert [r.id for r in store.list_runs()] == ["r-0002-bb", "r-0001-aa"]
        assert [r.id for r in store.list_runs("other", limit=5)] == ["r-0002-bb"]
        assert [r.id for r in store.list_runs(limit=1)] == ["r-0002-bb"]
        assert store.get_run("r-0001") == store.get_run("r-0001-aa")
        everything = list(store.iter_results("r-0001-aa"))
        assert [r.id for r in everything] == [f"case-{i:05d}" for i in range(30)]
        failing = _failing(everything)
        assert 0 < len(failing) < 30
        for ask, expected in (({"offset": 25}, everything[25:]),
                              ({"offset": 3, "limit": 4}, everything[3:7]),
                              ({"failures_only": True}, failing),
                              ({"failures_only": True, "offset": 2, "limit": 3}, failing[2:5]),
                              ({"limit": 0}, []), ({"offset": 5, "limit": 2}, everything[5:7])):
            got = [canonical(r) for r in store.iter_results("r-0001-aa", batch=2, **ask)]
            assert got == [canonical(r) for r in expected], ask
        assert store.result_count("r-0001-aa") == 30
        assert store.result_count("r-0001-aa", failures_only=True) == len(failing)
        assert store.result_count("r-0002-bb") == 0
        with pytest.raises(StoreError, match=r"ambiguous.*r-0001-aa, r-0002-bb"):
            store.get_run("r-000")
        for call in (lambda: store.get_run("nope"), lambda: store.iter_results("nope"),
                     lambda: store.result_count("nope"), lambda: store.get_run("")):
            with pytest.raises(UnknownRunError, match="judge runs list"):
                call()
        # LIKE's wildcards in a prefix are plain characters.
        with pytest.raises(UnknownRunError):
            store.get_run("r-%")


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
        assert store.get_run("r-dead").status == "abandoned"
        assert store.result_count("r-dead") == 2


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
    calls = [["runs", "show", "r-0001"], ["runs", "show", "r-0001", "--offset", "50"],
             ["runs", "show", "r-0001", "--offset", "70"],
             ["runs", "show", "r-0001", "--json", "-n", "5"],
             ["runs", "show", "r-0001", "--json", "--all"], ["runs", "list"]]
    pages, offset, past, head, whole, history = _light_calls(calls, url, tmp_path)

    assert "case-00049" in pages and "case-00050" not in pages
    assert "cases 1-50 of 60; 10 more: `judge runs show r-0001-aa --offset 50`" in pages
    assert "case-00050" in offset and "case-00059" in offset and "more" not in offset
    assert "60 cases; none on this page (from case 71" in past
    body = json.loads(head)
    assert [c["id"] for c in body["cases"]] == [f"case-{i:05d}" for i in range(5)]
    assert (body["total"], body["offset"], body["limit"], body["more"]) == (60, 0, 5, 55)
    body = json.loads(whole)
    assert len(body["cases"]) == 60 and body["limit"] is None and body["more"] == 0
    assert "r-0001-aa" in history


@pytest.mark.postgres
def test_postgres_streams_and_gives_up_half_way(pg_url: str) -> None:
    with RunStore(pg_url) as store:
        store.create_run(make_run("r-ünï"))
        store.add_results("r-ünï", [make_result(i) for i in range(25)])
    with RunStore(pg_url) as store:
        stream = store.iter_results("r-ünï", batch=4)
        first = [canonical(next(stream)) for _ in range(5)]
        stream.close()  # given up half-way: its connection goes back to the pool
        again = [canonical(r) for r in store.iter_results("r-ünï", batch=4)]
        assert again == [canonical(make_result(i)) for i in range(25)]
        assert again[:5] == first and store.result_count("r-ünï") == 25


@pytest.mark.postgres
def test_postgres_history_starts_light(pg_url: str, tmp_path: Path) -> None:
    with RunStore(pg_url) as store:
        store.create_run(make_run("r-0001-aa"))
    assert "r-0001-aa" in _light_calls([["history"]], pg_url, tmp_path)[0]
