"""The shared cache tier: a content-addressed table of cache entries on a team's database.

One row per cache key: the entry's bytes exactly as the local cache holds them and their
SHA-256. Writers never conflict: a key already present is left as it is (``INSERT ... ON
CONFLICT DO NOTHING``), so two workspaces writing the same entries at once make one row
each and no error. A row whose bytes do not match its digest is never returned: ``get``
treats it as a miss and records it in :attr:`SharedCache.rejected` for the caller to report.

Not yet wired behind :class:`judge.cache.JudgmentCache` (that is the caller's job): this
module only stores and fetches bytes. PostgreSQL by URL (``cache_url``); SQLite works too
(for tests and a single machine).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
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
    select,
    text,
)
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.engine import make_url
from sqlalchemy.exc import SQLAlchemyError

from .errors import StoreError
from .redact import mask_url

__all__ = ["MAX_KEY", "SharedCache", "entry_digest"]

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
)


def entry_digest(body: bytes) -> str:
    """The SHA-256 of an entry's bytes, hex: what the shared tier checks on every read."""
    return hashlib.sha256(body).hexdigest()


class SharedCache:
    """Cache entries (bytes by key) in a shared database; safe for many writers at once."""

    def __init__(self, url: str, *, batch: int = 500) -> None:
        """Open the tier at ``url``, creating its table if needed."""
        self.url = mask_url(url)
        self.rejected: list[str] = []
        """Keys whose stored bytes failed their digest (ignored, never used)."""
        self._batch = batch
        try:
            parsed = make_url(url)
            self.url = parsed.render_as_string(hide_password=True)
            self._password = None if parsed.password is None else str(parsed.password)
            server = parsed.get_backend_name() != "sqlite"
            self._engine = create_engine(parsed, **({"pool_pre_ping": True} if server else {}))
            self._dialect = parsed.get_backend_name()
        except ImportError as exc:
            raise StoreError(f"cannot open shared cache {self.url!r}: its database driver is "
                             f"not installed (pip install 'judgeflow[postgres]'): {exc}") \
                from None
        except (SQLAlchemyError, ValueError) as exc:
            raise StoreError(f"cannot open shared cache {self.url!r}: "
                             f"{mask_url(str(exc))}") from None
        try:
            with self._engine.begin() as conn:
                if server:  # two workspaces creating the table at once: one waits
                    conn.execute(text("SELECT pg_advisory_xact_lock(:k)"), {"k": _CREATE_LOCK})
                _metadata.create_all(conn)
        except SQLAlchemyError as exc:
            self._engine.dispose()
            raise self._failed(exc) from None

    def get(self, key: str) -> bytes | None:
        """The entry's bytes, or None when absent or when they fail their digest."""
        query = select(_entries.c.digest, _entries.c.body).where(_entries.c.key == key)
        try:
            with self._engine.connect() as conn:
                row = conn.execute(query).first()
        except SQLAlchemyError as exc:
            raise self._failed(exc) from None
        if row is None:
            return None
        body = bytes(row[1])
        if entry_digest(body) != row[0]:
            self.rejected.append(key)
            return None
        return body

    def put(self, key: str, body: bytes) -> bool:
        """Store an entry; False when the key was already there (its row is kept)."""
        return self.put_many([(key, body)]) == 1

    def put_many(self, entries: list[tuple[str, bytes]]) -> int:
        """Store entries in batches; returns how many were new."""
        added = 0
        for start in range(0, len(entries), self._batch):
            rows = [{"key": k, "digest": entry_digest(b), "body": b}
                    for k, b in entries[start:start + self._batch]]
            for row in rows:
                if not row["key"] or len(row["key"]) > MAX_KEY:
                    raise ValueError(f"a cache key is 1..{MAX_KEY} characters")
            # RETURNING names only the rows inserted: a key already present returns nothing.
            statement = self._insert_ignoring().values(rows).returning(_entries.c.key)
            try:
                with self._engine.begin() as conn:
                    added += len(conn.execute(statement).all())
            except SQLAlchemyError as exc:
                raise self._failed(exc) from None
        return added

    def iter(self, *, batch: int = 1000) -> Iterator[tuple[str, bytes]]:
        """Every entry that passes its digest, by key; failures go to :attr:`rejected`."""
        query = select(_entries.c.key, _entries.c.digest, _entries.c.body).order_by(
            _entries.c.key)
        try:
            with self._engine.connect() as conn:
                for key, digest, body in conn.execution_options(yield_per=batch).execute(query):
                    data = bytes(body)
                    if entry_digest(data) != digest:
                        self.rejected.append(str(key))
                        continue
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

    def close(self) -> None:
        """Release the connections."""
        self._engine.dispose()

    def __enter__(self) -> SharedCache:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()

    def _insert_ignoring(self) -> Any:
        if self._dialect == "postgresql":
            return postgresql.insert(_entries).on_conflict_do_nothing(index_elements=["key"])
        if self._dialect == "sqlite":
            return sqlite.insert(_entries).on_conflict_do_nothing(index_elements=["key"])
        raise StoreError(f"shared cache {self.url}: only PostgreSQL and SQLite are supported")

    def _failed(self, exc: SQLAlchemyError) -> StoreError:
        cause = getattr(exc, "orig", None) or exc
        message = mask_url(str(cause).strip())
        if self._password:
            message = message.replace(self._password, "***")
        return StoreError(f"shared cache {self.url}: {message}")
