"""The shared cache tier: a content-addressed table of cache entries on a team's database.

One row per cache key: the entry's bytes exactly as the local cache holds them (its
canonical JSON) and the entry's own digest (:func:`judge.cache.entry.entry_digest`, the
``digest`` field the entry carries), so both tiers hold the same bytes under the same
digests. Writers never conflict: a key already present with a sound row is left as it is,
so two workspaces writing the same entries at once make one row each and no error; a row
that fails its checks is replaced by the next write of its key (an upsert), so a stale or
tampered row is paid for once, not by every runner forever. A row is returned only when
its bytes are a sealed entry of its own key whose digest matches its content and the row's
digest column (:func:`sealed_digest`), and, with the team secret, when its ``sig`` (the
HMAC of its bytes, as in signed exports: :mod:`judge.cache.signing`) matches; otherwise
``get`` treats it as a miss and records the key and why in :attr:`SharedCache.reasons`
for the caller to report.

What the tier promises. Without a secret: integrity against accidents (a flipped bit, a
truncated write, a row under the wrong key), not against someone who can write to the
database — the digest is public arithmetic, so an edited score with its digest recomputed
passes (a run says so: :meth:`judge.cache.tiers.TieredCache.trust`). With
``JUDGE_CACHE_SECRET`` every row written carries its HMAC, and a row is used only when its
HMAC matches: one edited, resealed without the secret (its digest recomputed, its ``sig``
gone) or stripped of its ``sig`` is refused like a tampered one. Unsigned rows (written
before the secret, or by a writer without it) are taken only under ``allow_unsigned``, a
waiver a command asks for with ``--allow-unsigned-shared``.

This module only stores and fetches bytes; :mod:`judge.cache.tiers` puts it behind the
local cache. PostgreSQL by URL (``cache_url``); SQLite works too (tests, one machine).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
from collections.abc import Iterator
from pathlib import Path
from types import TracebackType
from typing import Any, Final

from sqlalchemy import (
    Column,
    LargeBinary,
    MetaData,
    String,
    Table,
    create_engine,
    func,
    inspect,
    select,
    text,
)
from sqlalchemy.dialects import sqlite
from sqlalchemy.engine import Connection
from sqlalchemy.exc import SQLAlchemyError

from ..core.text.errors import StoreError
from ..core.text.secrets import mask_url
from ..system.sql_urls import SqlUrl, resolve_sql_url
from .entry import CACHE_FORMAT, digest_ok
from .signing import SECRET_ENV, sign, signature_ok

__all__ = ["CONNECT_TIMEOUT", "MAX_KEY", "SharedCache", "row_problem", "sealed_digest"]

CONNECT_TIMEOUT: Final = 5
"""Seconds to wait for the server: an unreachable tier must not hold a run up for long."""

MAX_KEY: Final = 255
_CREATE_LOCK: Final = 0x6A756468  # the advisory lock the table's creation takes on PostgreSQL

_metadata = MetaData()
_entries = Table(
    "judge_cache_entries",
    _metadata,
    Column("key", String(MAX_KEY).with_variant(String(MAX_KEY, collation="C"), "postgresql"),
           primary_key=True),
    Column("digest", String(64), nullable=False),
    Column("body", LargeBinary, nullable=False),
    Column("sig", String(80), nullable=True),
)


_HEAD: Final = b'{"digest":"'
_BODY: Final = len(_HEAD) + 64 + 2  # the digest's hex and its closing '",'


def sealed_digest(key: str, body: bytes) -> str | None:
    """The digest the entry in ``body`` carries, when it is sound and stored under ``key``.

    Sound: the entry's own digest matches its content and its ``key`` field is ``key`` (a
    row holding another key's entry is as wrong as a flipped bit). Bytes laid out as the
    local cache writes them (canonical JSON, ``digest`` first: see :mod:`judge.cache.entry_bytes`)
    are checked by hashing them, without a parse; anything else is parsed and checked with
    :func:`judge.cache.entry.digest_ok`. None when not sound.
    """
    head = b'"format":%d,"key":"%s",' % (CACHE_FORMAT, key.encode("ascii", "replace"))
    if body.startswith(_HEAD) and body[_BODY - 2:_BODY] == b'",' \
            and body.startswith(head, _BODY):
        digest = hashlib.sha256(b"{")
        digest.update(memoryview(body)[_BODY:])
        stated = body[len(_HEAD):_BODY - 2]
        if digest.hexdigest().encode("ascii") == stated:
            return stated.decode("ascii")
    try:
        entry = json.loads(body.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        return None
    if not isinstance(entry, dict) or entry.get("key") != key or not digest_ok(entry):
        return None
    return str(entry["digest"])


def row_problem(key: str, digest: str, body: bytes, sig: str | None, secret: bytes | None,
                *, allow_unsigned: bool = False) -> str | None:
    """Why a stored row must not be used, or None when it is sound.

    Sound: its digest matches its content and, with ``secret``, its HMAC is that secret's
    (an unsigned row passes only under ``allow_unsigned``).
    """
    if sealed_digest(key, body) != digest:
        return "its digest does not match its content"
    if secret is None or (sig is None and allow_unsigned):
        return None
    if sig is None:
        return (f"unsigned, and {SECRET_ENV} is set: a row resealed without the secret or "
                "stripped of its signature looks like this")
    if not signature_ok(secret, body, sig):
        return f"its signature does not match ({SECRET_ENV}): edited, or another secret"
    return None


def _add_sig_column(conn: Connection) -> None:
    """Give a table made before rows were signed its ``sig`` column (once, in place)."""
    if conn.dialect.name == "postgresql":
        conn.execute(text("ALTER TABLE judge_cache_entries ADD COLUMN IF NOT EXISTS sig "
                          "VARCHAR(80)"))
        return
    columns = {c["name"] for c in inspect(conn).get_columns("judge_cache_entries")}
    if "sig" not in columns:
        conn.execute(text("ALTER TABLE judge_cache_entries ADD COLUMN sig VARCHAR(80)"))


class SharedCache:
    """Cache entries (bytes by key) in a shared database; safe for many writers at once."""

    def __init__(self, url: str, *, batch: int = 500, workspace: Path | None = None,
                 secret: bytes | None = None, allow_unsigned: bool = False) -> None:
        """Open the tier at ``url``, creating its table if needed.

        ``workspace``: what a relative SQLite path is relative to (else the current folder).
        ``secret`` signs every row written and refuses every row read that it did not sign;
        ``allow_unsigned`` (a command's waiver) takes unsigned rows all the same.
        """
        self.url = mask_url(url)
        self.rejected: list[str] = []
        """Keys whose stored row failed its checks (ignored, never used), in order."""
        self.reasons: dict[str, str] = {}
        """Why each rejected row failed."""
        self._secret = secret
        self._allow_unsigned = allow_unsigned
        self._batch = batch
        self._sql: SqlUrl | None = None
        self._kept: Connection | None = None
        try:
            self._sql = resolve_sql_url(url, workspace if workspace is not None else Path.cwd())
            self.url = self._sql.shown
            self._sql.make_folder()
            server = self._sql.server
            options: dict[str, Any] = {"pool_pre_ping": True} if server else {}
            if self._sql.backend == "postgresql":
                options["connect_args"] = {"connect_timeout": CONNECT_TIMEOUT}
            self._engine = create_engine(self._sql.url, **options)
            self._dialect = self._sql.backend
        except ImportError as exc:
            raise StoreError(f"cannot open shared cache {self.url!r}: its database driver is "
                             f"not installed (pip install 'judgeflow[postgres]'): {exc}") \
                from None
        except (SQLAlchemyError, ValueError) as exc:
            raise StoreError(f"cannot open shared cache {self.url!r}: "
                             f"{mask_url(str(exc))}") from None
        except OSError as exc:
            raise StoreError(f"cannot create the folder of shared cache {self.url!r}: {exc}") \
                from exc
        for attempt in (1, 2):
            try:
                with self._engine.begin() as conn:
                    if server:  # two workspaces creating the table at once: one waits
                        conn.execute(text("SELECT pg_advisory_xact_lock(:k)"),
                                     {"k": _CREATE_LOCK})
                    _metadata.create_all(conn)
                    _add_sig_column(conn)
                break
            except SQLAlchemyError as exc:
                # SQLite has no advisory lock: a second creator that lost the race sees
                # "already exists"; the table is there now, so look again once.
                if attempt == 1 and "already exists" in str(exc):
                    continue
                self._engine.dispose()
                raise self._failed(exc) from None

    def get(self, key: str) -> bytes | None:
        """The entry's bytes, or None when absent or when they fail their digest.

        Reads go through one connection kept open in autocommit (a hit is then one round
        trip, not a checkout, a ping, the query and a rollback: ~5x fewer on PostgreSQL);
        a connection the server dropped (a restart) is replaced once before giving up. One
        instance is for one thread at a time.
        """
        query = select(_entries.c.digest, _entries.c.body, _entries.c.sig).where(
            _entries.c.key == key)
        row = None
        for attempt in (1, 2):
            try:
                row = self._reader().execute(query).first()
                break
            except SQLAlchemyError as exc:
                self._drop_reader()
                if attempt == 2:
                    raise self._failed(exc) from None
        if row is None:
            return None
        body = bytes(row[1])
        return None if self._refused(key, row[0], body, row[2]) else body

    def _refused(self, key: str, digest: str, body: bytes, sig: str | None) -> bool:
        problem = row_problem(key, digest, body, sig, self._secret,
                              allow_unsigned=self._allow_unsigned)
        if problem is not None:
            self.rejected.append(key)
            self.reasons[key] = problem
        return problem is not None

    def put(self, key: str, body: bytes) -> bool:
        """Store an entry; False when a sound row of the key was already there (kept)."""
        return self.put_many([(key, body)]) == 1

    def put_many(self, entries: list[tuple[str, bytes]]) -> int:
        """Store entries in batches; returns how many were new (or replaced a failing row).

        Raises ``ValueError`` (before writing anything of its batch) for a key out of
        1..MAX_KEY characters or bytes that are not a sealed entry of their key.
        """
        added = 0
        for start in range(0, len(entries), self._batch):
            rows: list[dict[str, Any]] = []
            for k, b in entries[start:start + self._batch]:
                if not k or len(k) > MAX_KEY:
                    raise ValueError(f"a cache key is 1..{MAX_KEY} characters")
                digest = sealed_digest(k, b)
                if digest is None:
                    raise ValueError(f"not a sound cache entry of key {k[:16]}…: its digest "
                                     "does not match, or it is another key's")
                rows.append({"key": k, "digest": digest, "body": b,
                             "sig": sign(self._secret, b) if self._secret else None})
            try:
                with self._engine.begin() as conn:
                    added += self._write(conn, rows)
            except SQLAlchemyError as exc:
                raise self._failed(exc) from None
        return added

    def _write(self, conn: Connection, rows: list[dict[str, Any]]) -> int:
        """Insert ``rows``; a present row is replaced only when it fails its checks."""
        keys = [r["key"] for r in rows]
        present = conn.execute(select(_entries.c.key, _entries.c.digest, _entries.c.body,
                                      _entries.c.sig).where(_entries.c.key.in_(keys))).all()
        stale = [str(k) for k, d, b, s in present
                 if row_problem(str(k), d, bytes(b), s, self._secret,
                                allow_unsigned=self._allow_unsigned) is not None]
        # RETURNING names the rows inserted or replaced: a sound row already there is kept.
        statement = self._upsert(stale).values(rows).returning(_entries.c.key)
        return len(conn.execute(statement).all())

    def iter(self, *, batch: int = 1000) -> Iterator[tuple[str, bytes]]:
        """Every entry that passes its digest, by key; failures go to :attr:`rejected`."""
        query = select(_entries.c.key, _entries.c.digest, _entries.c.body,
                       _entries.c.sig).order_by(_entries.c.key)
        try:
            with self._engine.connect() as conn:
                rows = conn.execution_options(yield_per=batch).execute(query)
                for key, digest, body, sig in rows:
                    data = bytes(body)
                    if not self._refused(str(key), digest, data, sig):
                        yield str(key), data
        except SQLAlchemyError as exc:
            raise self._failed(exc) from None

    def count(self) -> int:
        """How many entries are stored (digests not checked)."""
        try:
            with self._engine.connect() as conn:
                return int(conn.execute(select(func.count()).select_from(_entries)).scalar_one())
        except SQLAlchemyError as exc:
            raise self._failed(exc) from None

    def _reader(self) -> Connection:
        if self._kept is None:
            self._kept = self._engine.connect().execution_options(isolation_level="AUTOCOMMIT")
        return self._kept

    def _drop_reader(self) -> None:
        kept, self._kept = self._kept, None
        if kept is not None:
            with contextlib.suppress(SQLAlchemyError):
                kept.invalidate()
                kept.close()

    def close(self) -> None:
        """Release the connections."""
        self._drop_reader()
        self._engine.dispose()

    def __enter__(self) -> SharedCache:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()

    def _upsert(self, stale: list[str]) -> Any:
        """INSERT ... ON CONFLICT: replace the ``stale`` keys' rows, keep every other."""
        if self._dialect == "postgresql":
            # SQLAlchemy's PostgreSQL dialect (~0.1 s to import) only for a PostgreSQL tier.
            from sqlalchemy.dialects import postgresql

            insert: Any = postgresql.insert(_entries)
        elif self._dialect == "sqlite":
            insert = sqlite.insert(_entries)
        else:
            raise StoreError(f"shared cache {self.url}: only PostgreSQL and SQLite are "
                             "supported")
        if not stale:
            return insert.on_conflict_do_nothing(index_elements=["key"])
        return insert.on_conflict_do_update(
            index_elements=["key"], where=_entries.c.key.in_(stale),
            set_={"digest": insert.excluded.digest, "body": insert.excluded.body,
                  "sig": insert.excluded.sig})

    def _failed(self, exc: SQLAlchemyError) -> StoreError:
        cause = getattr(exc, "orig", None) or exc
        message = str(cause).strip()
        message = self._sql.scrub(message) if self._sql is not None else mask_url(message)
        return StoreError(f"shared cache {self.url}: {message}")
