"""The shared cache tier on both engines: entries' bytes in and out, many writers, bad digests."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import create_engine, text

from judge.cache.entry import build_entry, entry_digest
from judge.cache.shared import SharedCache, sealed_digest
from judge.core.formats.turns import CachedTurn
from judge.core.text.canonical import canonical_json
from judge.core.text.errors import StoreError
from judge.core.text.secrets import MASK


def sealed(n: int) -> tuple[str, bytes]:
    """A real cache entry's key and bytes (as the local cache stores them)."""
    entry = build_entry({"model": "m", "messages": [{"role": "user", "content": f"case {n}"}]},
                        [CachedTurn({"text": f'{{"score": {n}}}'})],
                        {"createdAt": "2025-03-01T12:00:00Z"})
    return entry.key, canonical_json(entry.data).encode("utf-8")


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def cache_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'shared.db'}"
    else:
        yield request.getfixturevalue("pg_url")


def test_put_get_iter_count(cache_url: str) -> None:
    (k1, b1), (k2, b2), *more = [sealed(i) for i in range(5)]
    with SharedCache(cache_url) as tier:
        assert tier.get(k1) is None and tier.count() == 0
        assert tier.put(k1, b1) is True
        assert tier.put(k1, b1) is False  # the first row is kept
        assert tier.get(k1) == b1
        assert tier.put_many([(k2, b2), *more]) == 4
        assert tier.count() == 5
        assert [k for k, _ in tier.iter(batch=2)] == sorted(k for k, _ in [(k1, b1), (k2, b2),
                                                                            *more])
        with pytest.raises(ValueError):
            tier.put("", b1)
        with pytest.raises(ValueError, match="not a sound cache entry"):
            tier.put(k2, b1)  # another key's entry
        with pytest.raises(ValueError, match="not a sound cache entry"):
            tier.put(k1, b1.replace(b"score", b"scorE"))
        assert not tier.rejected
    with SharedCache(cache_url) as again:  # another workspace sees them
        assert again.get(k2) == b2


def test_the_digest_column_is_the_entrys_own(tmp_path: Path) -> None:
    key, body = sealed(1)
    entry = json.loads(body)
    assert sealed_digest(key, body) == entry["digest"] == entry_digest(entry)
    spaced = json.dumps(entry, indent=1).encode()  # not the canonical layout: parsed, checked
    assert sealed_digest(key, spaced) == entry["digest"]
    assert sealed_digest(key, body.replace(b"case 1", b"case 2")) is None
    assert sealed_digest("0" * 64, body) is None
    url = f"sqlite:///{tmp_path / 's.db'}"
    with SharedCache(url) as tier:
        tier.put(key, body)
    engine = create_engine(url)
    with engine.connect() as conn:
        assert conn.execute(text("SELECT digest FROM judge_cache_entries")).scalar_one() \
            == entry["digest"]
    engine.dispose()


def test_an_entry_failing_its_digest_is_ignored_and_reported(cache_url: str) -> None:
    (good, good_body), (bad, bad_body) = sealed(1), sealed(2)
    with SharedCache(cache_url) as tier:
        tier.put_many([(good, good_body), (bad, bad_body)])
    engine = create_engine(cache_url)
    with engine.begin() as conn:
        conn.execute(text("UPDATE judge_cache_entries SET body = :b WHERE key = :k"),
                     {"b": bad_body.replace(b"score", b"scorE"), "k": bad})
    engine.dispose()
    with SharedCache(cache_url) as tier:
        assert tier.get(bad) is None and tier.rejected == [bad]
        assert [k for k, _ in tier.iter()] == [good] and tier.rejected == [bad, bad]
        assert tier.get(good) == good_body


def test_two_workspaces_writing_the_same_entries_at_once(cache_url: str) -> None:
    entries = [sealed(i) for i in range(300)]
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
    assert "hunter2-secret" not in str(info.value) and MASK in str(info.value)
