"""The tiered cache in-process, over a SQLite shared tier: reads, writes, modes, faults."""

from __future__ import annotations

import io
import json
from pathlib import Path

from conftest import judge_env, run_judge
from sqlalchemy import create_engine, text

from judge.app.admin.cache_ops import cache_stats, pull_cache, push_cache
from judge.app.workspace.configview import config_view
from judge.app.workspace.workspace import Workspace
from judge.cache.disk import JudgmentCache
from judge.cache.entry import CacheEntry, build_entry
from judge.cache.interchange import CacheInterchange
from judge.cache.maintenance import CacheMaintenance
from judge.cache.shared import SharedCache
from judge.cache.tiers import TieredCache
from judge.core.formats.turns import CachedTurn
from judge.core.text.canonical import canonical_json


def entry(n: int) -> CacheEntry:
    return build_entry({"model": "m", "messages": [{"role": "user", "content": f"case {n}"}]},
                       [CachedTurn({"text": f'{{"score": {n}}}'})],
                       {"createdAt": "2025-03-01T12:00:00Z"})


def shared_url(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'shared.db'}"


def seed_shared(url: str, *entries: CacheEntry) -> None:
    with SharedCache(url) as tier:
        tier.put_many([(e.key, canonical_json(e.data).encode()) for e in entries])


def tamper(url: str, key: str) -> None:
    engine = create_engine(url)
    with engine.begin() as conn:
        body = conn.execute(text("SELECT body FROM judge_cache_entries WHERE key = :k"),
                            {"k": key}).scalar_one()
        conn.execute(text("UPDATE judge_cache_entries SET body = :b WHERE key = :k"),
                     {"b": bytes(body).replace(b"score", b"scorE"), "k": key})
    engine.dispose()


def test_a_local_miss_asks_the_shared_tier_and_copies_the_hit(tmp_path: Path) -> None:
    url, one = shared_url(tmp_path), entry(1)
    seed_shared(url, one)
    heard: list[str] = []
    with TieredCache(tmp_path / "c", shared_url=url, notice=heard.append) as cache:
        assert cache.turns(one.key) == one.turns
        assert cache.turns(entry(2).key) is None
        counts = cache.counters()
        assert counts["hits"] == 1 and counts["misses"] == 1
        assert counts["sharedHits"] == 1 and counts["sharedMisses"] == 1
        assert counts["copiedLocal"] == 1
    with JudgmentCache(tmp_path / "c", "read-only") as local:  # now in the local tier
        assert local.get(one.key) == one
    assert heard == []


def test_a_new_verdict_is_written_to_both_tiers(tmp_path: Path) -> None:
    url, two = shared_url(tmp_path), entry(2)
    with TieredCache(tmp_path / "c", shared_url=url) as cache:
        assert cache.put(two, built=True)
        assert cache.counters()["sharedWrites"] == 1
        assert cache.put(two)  # again: locally replaced, the shared row kept
        assert cache.counters()["sharedWrites"] == 1
    with SharedCache(url) as tier:
        assert tier.get(two.key) == canonical_json(two.data).encode()
    with JudgmentCache(tmp_path / "c", "read-only") as local:
        assert local.get(two.key) == two


def test_modes_hold_for_both_tiers(tmp_path: Path) -> None:
    url, one, two = shared_url(tmp_path), entry(1), entry(2)
    seed_shared(url, one)
    for mode in ("read-only", "offline"):  # read both, write neither
        with TieredCache(tmp_path / mode, mode, shared_url=url) as cache:
            assert cache.turns(one.key) == one.turns
            assert not cache.put(two)
            assert cache.counters()["copiedLocal"] == 0
        assert not (tmp_path / mode).exists()
    with TieredCache(tmp_path / "r", "refresh", shared_url=url) as cache:  # write, never read
        assert cache.turns(one.key) is None
        assert cache.counters()["sharedHits"] == 0
        assert cache.put(two)
    with SharedCache(url) as tier:
        assert tier.count() == 2


def test_a_tampered_shared_entry_is_ignored_reported_and_counted(tmp_path: Path) -> None:
    url, one = shared_url(tmp_path), entry(1)
    seed_shared(url, one)
    tamper(url, one.key)
    heard: list[str] = []
    with TieredCache(tmp_path / "c", shared_url=url, notice=heard.append) as cache:
        assert cache.turns(one.key) is None
        assert cache.get(one.key) is None
        assert cache.counters()["sharedRejected"] == 1 and cache.counters()["misses"] == 2
        assert list(cache.rejected) == [one.key]
        assert len(cache) == 0  # never copied
    assert len(heard) == 1 and "ignored, never used" in heard[0]
    assert one.key[:16] in heard[0]
    ws = Workspace.open(tmp_path, {"cache_dir": "c", "cache_url": url}, env={})
    stats = cache_stats(ws)
    assert stats.shared is not None and stats.shared.reachable
    assert stats.shared.rejected == 1 and stats.shared.entries == 0
    assert stats.shared.rejected_keys == (one.key,)


def test_a_corrupt_local_entry_is_replaced_from_the_shared_tier(tmp_path: Path) -> None:
    url, one = shared_url(tmp_path), entry(1)
    seed_shared(url, one)
    with JudgmentCache(tmp_path / "c") as local:
        local.put(one)
        local._store().set(one.key, canonical_json(one.data).encode().replace(b"score", b"scorE"))
    with TieredCache(tmp_path / "c", shared_url=url) as cache:
        assert cache.turns(one.key) == one.turns
        assert cache.counters()["corrupt"] == 1 and cache.counters()["copiedLocal"] == 1
    with JudgmentCache(tmp_path / "c", "read-only") as local:
        assert CacheMaintenance(local).verify().corrupt == ()


def test_an_unreachable_tier_is_said_once_masked_and_the_cache_goes_on(tmp_path: Path) -> None:
    url = "postgresql+psycopg://judge:hunter2-secret@127.0.0.1:1/judge"
    heard: list[str] = []
    one = entry(1)
    with TieredCache(tmp_path / "c", shared_url=url, notice=heard.append) as cache:
        assert cache.turns(one.key) is None
        assert cache.put(one) and cache.turns(one.key) == one.turns
        assert cache.turns(entry(2).key) is None
        assert cache.down is not None
    assert len(heard) == 1 and "local cache only" in heard[0]
    assert "hunter2-secret" not in heard[0] + repr(cache)
    ws = Workspace.open(tmp_path, {"cache_url": url}, env={})
    shown = {s.name: s.value for s in config_view(ws).settings}
    assert shown["cache_url"] == "postgresql+psycopg://judge:[REDACTED]@127.0.0.1:1/judge"
    stats = cache_stats(ws)
    assert stats.shared is not None and not stats.shared.reachable
    assert "hunter2-secret" not in stats.model_dump_json()


def test_push_and_pull_are_batched_idempotent_and_report(tmp_path: Path) -> None:
    url = shared_url(tmp_path)
    entries = [entry(i) for i in range(7)]
    a = Workspace.open(tmp_path, {"cache_dir": "a", "cache_url": url}, env={})
    with JudgmentCache(tmp_path / "a") as local:
        for e in entries:
            local.put(e)
    first = push_cache(a)
    assert (first.added, first.kept, first.rejected) == (7, 0, 0)
    again = push_cache(a)
    assert (again.added, again.kept, again.rejected) == (0, 7, 0)
    tamper(url, entries[3].key)
    b = Workspace.open(tmp_path, {"cache_dir": "b", "cache_url": url}, env={})
    pulled = pull_cache(b)
    assert (pulled.added, pulled.kept, pulled.rejected) == (6, 0, 1)
    assert pulled.rejected_keys == (entries[3].key,)
    assert (pull_cache(b).added, pull_cache(b).kept) == (0, 6)
    with JudgmentCache(tmp_path / "b", "read-only") as local:
        assert sorted(e.key for e in local.iter_entries()) == sorted(
            e.key for i, e in enumerate(entries) if i != 3)


def test_the_cli_doors_show_both_tiers_and_copy(tmp_path: Path) -> None:
    url = shared_url(tmp_path)
    with JudgmentCache(tmp_path / "cache") as local:
        for i in range(3):
            local.put(entry(i))
    env = judge_env(JUDGE_CACHE_URL=url)
    pushed = run_judge(["cache", "push"], tmp_path, env=env)
    assert pushed.returncode == 0 and "added 3, kept 0" in pushed.stdout
    assert "added 0, kept 3" in run_judge(["cache", "push"], tmp_path, env=env).stdout
    tamper(url, entry(1).key)
    stats = run_judge(["cache", "stats", "--json"], tmp_path, env=env)
    assert stats.returncode == 0
    shared = json.loads(stats.stdout)["shared"]
    assert (shared["entries"], shared["rejected"]) == (2, 1)
    shown = run_judge(["cache", "stats"], tmp_path, env=env)
    assert "shared cache tier" in shown.stdout
    assert any(line.split()[:2] == ["rejected", "1"] for line in shown.stdout.splitlines())
    pulled = run_judge(["cache", "pull", "--cache-dir", "other", "--json"], tmp_path, env=env)
    assert pulled.returncode == 1  # one shared row failed its digest
    assert (json.loads(pulled.stdout)["added"], json.loads(pulled.stdout)["rejected"]) == (2, 1)
    none = run_judge(["cache", "pull"], tmp_path, env=judge_env())
    assert none.returncode == 2 and "no shared cache configured" in none.stderr


def test_import_and_upgrade_of_a_tiered_cache_write_the_local_folder_only(
        tmp_path: Path) -> None:
    # Interchange and maintenance act on the local folder (JudgmentCache.write_local): an
    # import is no push, and the shared tier is never connected to.
    url, one, two = shared_url(tmp_path), entry(1), entry(2)
    old = {k: v for k, v in two.data.items() if k != "digest"}  # written before digests
    with TieredCache(tmp_path / "c", shared_url=url) as cache:
        report = CacheInterchange(cache).import_jsonl(io.StringIO(canonical_json(one.data) + "\n"))
        assert report.added == 1
        cache._store().set(old["key"], canonical_json(old).encode())
        assert CacheMaintenance(cache).upgrade() == 1
        assert cache.counters()["writes"] == 2 and cache.counters()["sharedWrites"] == 0
        assert cache._tier is None  # never connected
    with JudgmentCache(tmp_path / "c", "read-only") as local:
        assert local.get(one.key) == one and local.get(two.key) == two
    assert not (tmp_path / "shared.db").exists()
