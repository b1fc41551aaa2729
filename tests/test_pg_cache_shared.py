"""The shared cache tier on both engines: bytes in and out, many writers, bad digests."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import create_engine, text

from judge.cache_shared import SharedCache, entry_digest
from judge.errors import StoreError


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def cache_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'shared.db'}"
    else:
        yield request.getfixturevalue("pg_url")


def test_put_get_iter_count(cache_url: str) -> None:
    body = b'{"turns": [1, 2]}\x00\xff'  # arbitrary bytes, kept exactly
    with SharedCache(cache_url) as tier:
        assert tier.get("k1") is None and tier.count() == 0
        assert tier.put("k1", body) is True
        assert tier.put("k1", b"other bytes") is False  # the first row is kept
        assert tier.get("k1") == body
        assert tier.put_many([(f"k{i}", bytes([i])) for i in range(2, 5)]) == 3
        assert tier.count() == 4
        assert [k for k, _ in tier.iter(batch=2)] == ["k1", "k2", "k3", "k4"]
        with pytest.raises(ValueError):
            tier.put("", b"x")
        assert not tier.rejected
    with SharedCache(cache_url) as again:  # another workspace sees them
        assert again.get("k3") == b"\x03"


def test_an_entry_failing_its_digest_is_ignored_and_reported(cache_url: str) -> None:
    with SharedCache(cache_url) as tier:
        tier.put_many([("good", b"good bytes"), ("bad", b"original")])
    engine = create_engine(cache_url)
    with engine.begin() as conn:
        conn.execute(text("UPDATE judge_cache_entries SET body = :b WHERE key = 'bad'"),
                     {"b": b"tampered"})
    engine.dispose()
    with SharedCache(cache_url) as tier:
        assert tier.get("bad") is None and tier.rejected == ["bad"]
        assert [k for k, _ in tier.iter()] == ["good"] and tier.rejected == ["bad", "bad"]
        assert tier.get("good") == b"good bytes"
        assert len(entry_digest(b"good bytes")) == 64


def test_two_workspaces_writing_the_same_entries_at_once(cache_url: str) -> None:
    entries = [(f"key-{i:04d}", f"entry {i}".encode()) for i in range(300)]
    errors: list[BaseException] = []
    added: list[int] = []
    start = threading.Barrier(3)

    def write() -> None:
        try:
            with SharedCache(cache_url, batch=50) as tier:
                start.wait(timeout=10)
                added.append(tier.put_many(entries))
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=write) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert not errors, errors
    assert sum(added) == len(entries)  # every entry written once, whoever won it
    with SharedCache(cache_url) as tier:
        assert tier.count() == len(entries)
        assert dict(tier.iter()) == dict(entries)


@pytest.mark.postgres
def test_password_never_in_errors(pg_url: str) -> None:
    from sqlalchemy.engine import make_url

    url = make_url(pg_url).set(password="hunter2-secret", port=1).render_as_string(
        hide_password=False)
    with pytest.raises(StoreError) as info:
        SharedCache(url)
    assert "hunter2-secret" not in str(info.value) and "***" in str(info.value)
