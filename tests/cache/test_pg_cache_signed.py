"""The shared tier signed like exports, on SQLite and a real PostgreSQL.

A row edited to a better score with its digest recomputed (the digest is public arithmetic)
is served silently without the team secret; with ``JUDGE_CACHE_SECRET`` it fails its HMAC,
is never used, is reported, and the fresh verdict replaces it (an upsert). A row with a stale
digest is replaced too, not kept forever. ``require_signed`` refuses unsigned rows, and
``judge cache verify`` checks every row's signature.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import create_engine, text
from sqlalchemy.pool import NullPool
from test_cache_tiers import entry

from judge.app.admin.cache_ops import verify_cache
from judge.app.workspace.workspace import Workspace
from judge.cache.entry import with_digest
from judge.cache.shared import SharedCache
from judge.cache.signing import sign
from judge.cache.tiers import TieredCache
from judge.core.formats.turns import CachedTurn
from judge.core.text.canonical import canonical_json
from judge.core.text.errors import UsageError

SECRET = b"team-secret-for-tests"


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def cache_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'shared.db'}"
    else:
        yield request.getfixturevalue("pg_url")


def _rows(url: str) -> dict[str, tuple[str, bytes, str | None]]:
    engine = create_engine(url, poolclass=NullPool)
    with engine.connect() as conn:
        rows = conn.execute(text("SELECT key, digest, body, sig FROM judge_cache_entries"))
        found = {str(k): (str(d), bytes(b), s) for k, d, b, s in rows}
    engine.dispose()
    return found


def _tamper(url: str, key: str, *, recompute: bool = True) -> None:
    """Edit the row's verdict to a score of 100; with ``recompute``, its digest too."""
    _, body, _ = _rows(url)[key]
    edited = json.loads(body)
    edited["turns"][0]["text"] = '{"score": 100}'
    if recompute:
        edited = with_digest({k: v for k, v in edited.items() if k != "digest"}).data
    data = canonical_json(edited).encode("utf-8")
    engine = create_engine(url, poolclass=NullPool)
    with engine.begin() as conn:
        conn.execute(text("UPDATE judge_cache_entries SET body = :b, digest = :d WHERE key = :k"),
                     {"b": data, "d": edited["digest"], "k": key})
    engine.dispose()


def test_without_the_secret_a_recomputed_digest_passes(cache_url: str, tmp_path: Path) -> None:
    # What the tier promises without a secret: accidents, not someone with write access.
    one = entry(1)
    with TieredCache(tmp_path / "a", shared_url=cache_url) as writer:
        writer.put(one)
    _tamper(cache_url, one.key)
    with TieredCache(tmp_path / "b", "read-only", shared_url=cache_url) as reader:
        assert reader.turns(one.key) == (CachedTurn({"text": '{"score": 100}'}),)


def test_a_tampered_signed_row_is_never_used_reported_and_replaced(cache_url: str,
                                                                   tmp_path: Path) -> None:
    one, two = entry(1), entry(2)
    with TieredCache(tmp_path / "a", shared_url=cache_url, secret=SECRET) as writer:
        assert writer.put(one) and writer.put(two)
    rows = _rows(cache_url)
    assert rows[one.key][2] == sign(SECRET, rows[one.key][1])  # rows carry an HMAC
    _tamper(cache_url, one.key)
    heard: list[str] = []
    with TieredCache(tmp_path / "b", shared_url=cache_url, secret=SECRET,
                     notice=heard.append) as reader:
        assert reader.turns(one.key) is None  # a miss: the judge is asked again
        assert reader.turns(two.key) == two.turns  # the sound row still serves
        assert "signature does not match" in reader.rejected[one.key]
        assert len(heard) == 1 and "ignored, never used" in heard[0]
        assert reader.counters()["sharedRejected"] == 1
        assert reader.put(one)  # the fresh verdict...
    digest, body, sig = _rows(cache_url)[one.key]
    assert json.loads(body)["turns"] == one.data["turns"]  # ...replaced the tampered row
    assert sig == sign(SECRET, body) and digest == one.digest
    with TieredCache(tmp_path / "c", "read-only", shared_url=cache_url, secret=SECRET) as third:
        assert third.turns(one.key) == one.turns and not third.rejected


def test_a_stale_digest_row_is_replaced_not_kept_forever(cache_url: str) -> None:
    one = entry(1)
    key, body = one.key, canonical_json(one.data).encode("utf-8")
    with SharedCache(cache_url) as tier:
        tier.put(key, body)
    _tamper(cache_url, key, recompute=False)  # bytes changed, digest column stale
    with SharedCache(cache_url) as tier:
        assert tier.get(key) is None and tier.reasons[key].startswith("its digest")
        assert tier.put(key, body) is True  # replaced (was: ON CONFLICT DO NOTHING, kept)
        assert tier.put(key, body) is False  # a sound row is kept
        assert tier.get(key) == body


def test_with_the_secret_an_unsigned_row_is_refused_unless_waived(cache_url: str) -> None:
    """With the secret, signatures are required by default: an unsigned row (a writer without
    the secret, or a row stripped of its ``sig``) is refused, then replaced signed by the next
    verdict; only a command's waiver (``allow_unsigned``) takes it."""
    one = entry(1)
    key, body = one.key, canonical_json(one.data).encode("utf-8")
    with SharedCache(cache_url) as unsigned_writer:
        unsigned_writer.put(key, body)
    with SharedCache(cache_url) as no_secret:
        assert no_secret.get(key) == body  # nothing to check it against: digests only
    with SharedCache(cache_url, secret=SECRET, allow_unsigned=True) as waived:
        assert waived.get(key) == body
    with SharedCache(cache_url, secret=SECRET) as strict:
        assert strict.get(key) is None and "unsigned" in strict.reasons[key]
        assert strict.put(key, body)  # and the next verdict replaces it, signed
    assert _rows(cache_url)[key][2] == sign(SECRET, body)


def test_a_table_made_before_signing_gains_its_column(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'old.db'}"
    engine = create_engine(url, poolclass=NullPool)
    with engine.begin() as conn:
        conn.execute(text("CREATE TABLE judge_cache_entries (key VARCHAR(255) PRIMARY KEY, "
                          "digest VARCHAR(64) NOT NULL, body BLOB NOT NULL)"))
    engine.dispose()
    one = entry(1)
    with SharedCache(url, secret=SECRET) as tier:
        assert tier.put(one.key, canonical_json(one.data).encode("utf-8"))
        assert tier.get(one.key) is not None


def _workspace(root: Path, url: str, env: dict[str, str], **more: Any) -> Workspace:
    root.mkdir(exist_ok=True)
    return Workspace.open(root, {"cache_url": url, **more}, env=env)


def test_cache_verify_checks_the_tiers_signatures(cache_url: str, tmp_path: Path) -> None:
    env = {"JUDGE_CACHE_SECRET": SECRET.decode()}
    one, two = entry(1), entry(2)
    with TieredCache(tmp_path / "a", shared_url=cache_url, secret=SECRET) as writer:
        writer.put(one)
    with TieredCache(tmp_path / "a2", shared_url=cache_url) as unsigned:
        unsigned.put(two)
    ws = _workspace(tmp_path / "ws", cache_url, env)
    strict = verify_cache(ws)  # with the secret, the unsigned row is bad by default
    assert strict.bad and strict.shared is not None and strict.shared.signed
    assert strict.shared.rejected_keys == (two.key,)
    waived = verify_cache(_workspace(tmp_path / "ws", cache_url, env, cache_allow_unsigned=True))
    assert waived.shared is not None and not waived.bad
    assert (waived.shared.entries, waived.shared.rejected) == (2, 0)
    assert verify_cache(ws, require_signed=True).shared == strict.shared
    _tamper(cache_url, one.key)
    report = verify_cache(ws)
    assert report.bad and report.shared is not None
    assert set(report.shared.rejected_keys) == {one.key, two.key}
    assert "signature does not match" in report.shared.rejected_reasons[one.key]
    with pytest.raises(UsageError, match="needs the team secret"):
        verify_cache(_workspace(tmp_path / "ws2", cache_url, {}), require_signed=True)
    with pytest.raises(UsageError, match="needs the team secret"):
        _workspace(tmp_path / "ws3", cache_url, {}, cache_require_signed=True).open_cache()


def test_cache_verify_command_names_the_tampered_row(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    from judge.cli import main

    url = f"sqlite:///{tmp_path / 'shared.db'}"
    one = entry(1)
    with TieredCache(tmp_path / "a", shared_url=url, secret=SECRET) as writer:
        writer.put(one)
    _tamper(url, one.key)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("JUDGE_CACHE_URL", url)
    monkeypatch.setenv("JUDGE_CACHE_SECRET", SECRET.decode())
    with pytest.raises(SystemExit) as done:
        main(["cache", "verify"])
    assert done.value.code == 1
    out = capsys.readouterr()
    assert f"✗ shared row {one.key}: its signature does not match" in out.err
    assert "0 sound, 1 rejected (digests and signatures checked)" in out.out
