"""The shared cache tier on a real PostgreSQL: two machines, one cache; tampering; offline
replay from the shared tier alone; push/pull; the tier lost mid-run; under the team secret a
resealed or stripped row refused; without it, a run saying once that the rows are
unauthenticated."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from conftest import EXAMPLE_SUITE, judge_env, run_judge
from sqlalchemy import create_engine, text
from sqlalchemy.engine import make_url
from sqlalchemy.pool import NullPool
from test_cache_tiers import entry

from judge.app.admin.cache_ops import cache_stats, pull_cache, push_cache
from judge.app.runs.running import NullObserver, RunReport, RunRequest, run_suite
from judge.app.workspace.workspace import JudgePool, Workspace
from judge.cache.disk import JudgmentCache
from judge.cache.entry import with_digest
from judge.cache.tiers import TieredCache
from judge.core.formats.models import CaseResult
from judge.core.text.canonical import canonical_json
from judge.core.text.secrets import MASK

pytestmark = pytest.mark.postgres
MODEL = "hosted_vllm/fake-judge"


class Heard(NullObserver):
    """Keeps the notices and counts the results of a run."""

    def __init__(self, after: int | None = None, then: Any = None) -> None:
        self.notices: list[str] = []
        self.results = 0
        self._after, self._then = after, then

    def notice(self, text: str) -> None:
        self.notices.append(text)

    def result(self, result: CaseResult) -> None:
        self.results += 1
        if self.results == self._after:
            self._then()


class NoJudges:
    """A judge factory that must never be asked (offline replay opens no client)."""

    def open(self, workspace: Workspace, models: Sequence[str]) -> JudgePool:
        raise AssertionError("offline replay asked for a model client")


def machine(root: Path, fake_server: Any, cache_url: str | None, *, judges: Any = None,
            env: dict[str, str] | None = None, **more: Any) -> Workspace:
    root.mkdir(exist_ok=True)
    return Workspace.open(root, {"model": MODEL, "api_base": fake_server.base_url + "/v1",
                                 "cache_url": cache_url, **more}, env=env or {},
                          judges=judges)


def unauthenticated(notices: list[str]) -> list[str]:
    """The notices a run without the team secret says of its tier's rows (one, first)."""
    return [n for n in notices if "rows are not authenticated" in n]


def requests(fake_server: Any) -> int:
    return int(fake_server.stats()["requests"])


def run(ws: Workspace, observer: Heard | None = None) -> RunReport:
    report = run_suite(ws, RunRequest(suite=EXAMPLE_SUITE, check=False), observer=observer)
    assert report.run.status == "complete" and not report.missing
    return report


def local_keys(ws: Workspace) -> list[str]:
    with JudgmentCache(ws.path(ws.settings.cache_dir), "read-only") as cache:
        return [e.key for e in cache.iter_entries()]


def test_two_machines_share_one_cache_and_the_second_run_calls_no_model(
        fake_server: Any, pg_url: str, tmp_path: Path) -> None:
    first = run(machine(tmp_path / "a", fake_server, pg_url))
    called = requests(fake_server)
    assert called > 0 and first.summary.cache_hits == 0
    b = machine(tmp_path / "b", fake_server, pg_url)
    heard = Heard()
    second = run(b, heard)
    assert requests(fake_server) == called  # zero model calls on the second machine
    assert second.summary == first.summary.model_copy(
        update={"cache_hits": second.summary.cache_hits})
    assert second.summary.cache_hits == first.llm_cases > 0
    assert second.run.totals.calls == 0
    assert second.shared_tier is not None and second.shared_tier.rows == "unauthenticated"
    assert heard.notices == unauthenticated(heard.notices) == [second.shared_tier.notice]
    assert sorted(local_keys(b)) == sorted(local_keys(machine(tmp_path / "a", fake_server,
                                                              pg_url)))
    third = run(b)  # now local, through the replay index: still no call
    assert requests(fake_server) == called and third.summary == second.summary


def test_a_tampered_shared_entry_is_ignored_reported_and_judged_again(
        fake_server: Any, pg_url: str, tmp_path: Path) -> None:
    run(machine(tmp_path / "a", fake_server, pg_url))
    called = requests(fake_server)
    engine = create_engine(pg_url, poolclass=NullPool)
    with engine.begin() as conn:
        key = conn.execute(text("SELECT key FROM judge_cache_entries ORDER BY key LIMIT 1")
                           ).scalar_one()
        conn.execute(text("UPDATE judge_cache_entries SET body = overlay(body placing 'X' "
                          "from length(body) - 20 for 1) WHERE key = :k"), {"k": key})
    engine.dispose()
    b = machine(tmp_path / "b", fake_server, pg_url)
    heard = Heard()
    report = run(b, heard)
    assert requests(fake_server) == called + 1  # that one judgment, asked of the model again
    assert report.summary.cache_hits == report.llm_cases - 1
    assert len(heard.notices) == 2 and unauthenticated(heard.notices) == heard.notices[:1]
    assert key[:16] in heard.notices[1]
    # The fresh verdict replaced the tampered row (an upsert): nothing is left
    # rejected, and the next runner pays for it no more.
    stats = cache_stats(b)
    assert stats.shared is not None and stats.shared.rejected == 0
    assert stats.shared.entries == report.llm_cases
    run(machine(tmp_path / "c", fake_server, pg_url))
    assert requests(fake_server) == called + 1


def test_offline_replay_from_the_shared_tier_alone(
        fake_server: Any, pg_url: str, tmp_path: Path) -> None:
    first = run(machine(tmp_path / "a", fake_server, pg_url))
    called = requests(fake_server)
    c = machine(tmp_path / "c", fake_server, pg_url, cache_mode="offline", judges=NoJudges())
    assert local_keys(c) == []
    report = run(c)
    assert requests(fake_server) == called
    assert report.offline and report.summary.cache_misses == 0
    assert report.summary.mean_overall == first.summary.mean_overall
    assert not (tmp_path / "c" / "cache").exists()  # offline writes no tier


def test_push_pull_round_trip(fake_server: Any, pg_url: str, tmp_path: Path) -> None:
    run(machine(tmp_path / "a", fake_server, None))  # judged with no shared tier: local only
    a = machine(tmp_path / "a", fake_server, pg_url)
    keys = local_keys(a)
    shared = cache_stats(a).shared
    assert keys and shared is not None and shared.entries == 0
    pushed = push_cache(a)
    assert (pushed.added, pushed.kept, pushed.rejected) == (len(keys), 0, 0)
    assert push_cache(a).kept == len(keys)
    d = machine(tmp_path / "d", fake_server, pg_url)
    pulled = pull_cache(d)
    assert (pulled.added, pulled.kept, pulled.rejected) == (len(keys), 0, 0)
    assert (pull_cache(d).added, pull_cache(d).kept) == (0, len(keys))
    with JudgmentCache(a.path("cache"), "read-only") as one, \
            JudgmentCache(d.path("cache"), "read-only") as other:
        assert list(one.iter_entries()) == list(other.iter_entries())
    assert MASK in pushed.url or make_url(pg_url).password is None


def test_the_shared_tier_lost_mid_run_leaves_the_local_cache(
        fake_server: Any, pg_url: str, tmp_path: Path) -> None:
    database = make_url(pg_url).database
    admin = make_url(pg_url).set(database="postgres")

    def drop() -> None:
        engine = create_engine(admin, isolation_level="AUTOCOMMIT", poolclass=NullPool)
        with engine.connect() as conn:
            conn.execute(text(f'DROP DATABASE "{database}" WITH (FORCE)'))
        engine.dispose()

    ws = machine(tmp_path / "a", fake_server, pg_url)
    heard = Heard(after=3, then=drop)
    report = run(ws, heard)
    assert heard.results > 3 and report.summary.scored == report.summary.cases
    lost = [n for n in heard.notices if "local cache only" in n]
    assert len(lost) == 1 and heard.notices == [*unauthenticated(heard.notices), *lost]
    assert len(local_keys(ws)) == report.llm_cases  # every verdict kept locally
    assert report.run.totals.judged_anew == report.llm_cases


def test_a_server_restart_is_weathered_without_losing_the_tier(
        postgres_server: Any, pg_url: str, tmp_path: Path) -> None:
    one, two = entry(1), entry(2)
    heard: list[str] = []
    with TieredCache(tmp_path / "a", shared_url=pg_url, notice=heard.append) as cache:
        assert cache.put(one)
        assert cache.turns(two.key) is None  # the kept reader connection is open
        postgres_server.restart()  # every connection dropped
        with TieredCache(tmp_path / "b", "read-only", shared_url=pg_url) as other:
            assert other.turns(one.key) == one.turns
        assert cache.put(two)  # a write after the restart: the pool pings and reconnects
        cache.remove([two.key])
        assert cache.turns(two.key) == two.turns  # a read: the reader reconnects
        assert cache.down is None and heard == []


SECRET = "team-secret-for-tests"


def _unsign(url: str, key: str, *, score: int | None = None) -> None:
    """Set the row's ``sig`` to NULL; with ``score``, edit its verdict and reseal its digest
    first (what a writer without the secret can do)."""
    engine = create_engine(url, poolclass=NullPool)
    with engine.begin() as conn:
        body = conn.execute(text("SELECT body FROM judge_cache_entries WHERE key = :k"),
                            {"k": key}).scalar_one()
        entry = json.loads(bytes(body))
        if score is not None:
            before = json.dumps(entry["turns"])
            for turn in entry["turns"]:
                turn["text"] = turn["text"].replace('"score": ', f'"score": {score}, "was": ')
            assert json.dumps(entry["turns"]) != before
            entry = with_digest({k: v for k, v in entry.items() if k != "digest"}).data
        conn.execute(text("UPDATE judge_cache_entries SET body = :b, digest = :d, sig = NULL "
                          "WHERE key = :k"),
                     {"b": canonical_json(entry).encode("utf-8"), "d": entry["digest"],
                      "k": key})
    engine.dispose()


def test_under_the_secret_a_resealed_or_stripped_row_is_refused_and_judged_again(
        fake_server: Any, pg_url: str, tmp_path: Path) -> None:
    """With JUDGE_CACHE_SECRET set, signatures are required by default: a row edited and
    resealed without the secret (digest recomputed, ``sig`` gone) and a row merely stripped
    of its ``sig`` are both refused like tampered ones — judged again, named, never used —
    and the fresh signed verdicts replace them. (They used to be served: every score 100.)"""
    env = {"JUDGE_CACHE_SECRET": SECRET}
    first = run(machine(tmp_path / "a", fake_server, pg_url, env=env))
    called = requests(fake_server)
    engine = create_engine(pg_url, poolclass=NullPool)
    with engine.connect() as conn:
        keys = list(conn.execute(text("SELECT key FROM judge_cache_entries ORDER BY key "
                                      "LIMIT 2")).scalars())
    engine.dispose()
    _unsign(pg_url, keys[0], score=100)
    _unsign(pg_url, keys[1])
    heard = Heard()
    second = run(machine(tmp_path / "b", fake_server, pg_url, env=env), heard)
    assert requests(fake_server) == called + 2  # both asked of the judge again
    assert second.summary.mean_overall == first.summary.mean_overall  # no 100 got in
    assert second.shared_tier is not None and second.shared_tier.rows == "signed"
    assert second.shared_tier.notice is None and not unauthenticated(heard.notices)
    refused = [n for n in heard.notices if "ignored, never used" in n]
    assert len(refused) == 2 and all("unsigned" in n for n in refused)
    assert {k[:16] for k in keys} == {n.split("entry ")[1][:16] for n in refused}
    stats = cache_stats(machine(tmp_path / "b", fake_server, pg_url, env=env))
    assert stats.shared is not None and stats.shared.rejected == 0  # replaced, signed


def test_a_run_says_once_what_the_shared_tiers_rows_are_checked_for(
        fake_server: Any, pg_url: str, tmp_path: Path) -> None:
    """Without the secret, ``judge run`` says once (stderr, and ``sharedTier`` in its JSON)
    that the tier's rows are unauthenticated. With it: ``signed``, nothing said; waived by
    the command's ``--allow-unsigned-shared``: ``unsigned-accepted``, said. A settings file
    or the environment cannot waive signatures; the waiver contradicts
    ``cache_require_signed`` (exit 2)."""
    root = tmp_path / "ws"
    root.mkdir()
    (root / "judge.toml").write_text(f'model = "{MODEL}"\napi_base = "{fake_server.base_url}'
                                     f'/v1"\ncache_url = "{pg_url}"\n'
                                     "cache_allow_unsigned = true\n")  # ignored: flag only
    args = ["run", str(EXAMPLE_SUITE), "--json", "--no-check"]

    def tier(env: dict[str, str], *more: str) -> tuple[dict[str, Any], str]:
        done = run_judge([*args, *more], root, env=judge_env(**env))
        assert done.returncode == 0, done.stderr
        return json.loads(done.stdout)["sharedTier"], done.stderr

    bare, err = tier({})
    assert bare["rows"] == "unauthenticated"
    assert MASK in bare["url"] or make_url(pg_url).password is None
    assert err.count("rows are not authenticated") == 1 and bare["notice"] in err
    signed, err = tier({"JUDGE_CACHE_SECRET": SECRET, "JUDGE_CACHE_ALLOW_UNSIGNED": "1"})
    assert signed == {"url": bare["url"], "rows": "signed", "notice": None}
    assert "authenticated" not in err and "unsigned" not in err
    waived, err = tier({"JUDGE_CACHE_SECRET": SECRET}, "--allow-unsigned-shared")
    assert waived["rows"] == "unsigned-accepted" and err.count(waived["notice"]) == 1
    config = run_judge(["workspace", "config"], root, env=judge_env(JUDGE_CACHE_ALLOW_UNSIGNED="1"))
    assert "ignored: a command's flag only" in config.stdout
    (root / "judge.toml").write_text(f'cache_url = "{pg_url}"\ncache_require_signed = true\n')
    both = run_judge([*args, "--allow-unsigned-shared"], root,
                     env=judge_env(JUDGE_CACHE_SECRET=SECRET))
    assert both.returncode == 2 and "contradicts cache_require_signed" in both.stderr
