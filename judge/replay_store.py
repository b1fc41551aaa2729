"""The replay index's own store: a plain SQLite table of (fingerprint, record) in the cache folder.

The index (:mod:`judge.replay`) is derived data, kept apart from diskcache: a lookup is one
indexed SELECT (~6 us against ~19 us through diskcache's get), and it is on the path of
every replayed judgment. A folder that cannot hold it (read-only, say) just goes without;
the judgments are never at stake.

Decisions:

- Each stored record is its sha256 followed by its bytes, and a read checks it: a record
  holds a case's signals and cited evidence, and a flipped bit there must send the case
  down the plain path (which rebuilds them from the suite), never change a score. A record
  that fails the check is counted (:attr:`ReplayStore.corrupt`) and read as absent; the
  plain path then writes a sound one over it. No schema change was needed for this: rows
  of an older layout simply fail the check once.
- Writes go in one transaction per batch; a failure to write only loses the shortcut, and
  the store then stops trying for the rest of the process.
"""

from __future__ import annotations

import contextlib
import hashlib
import sqlite3
from collections.abc import Iterable
from pathlib import Path

__all__ = ["ReplayStore"]

_DIGEST = 32  # sha256 bytes in front of every record


def _sealed(record: bytes) -> bytes:
    return hashlib.sha256(record).digest() + record


class ReplayStore:
    """Replay records in ``path``, opened on first use; ``readable=False`` only writes."""

    def __init__(self, path: Path, *, readable: bool = True) -> None:
        self.path = path
        self.readable = readable
        self.corrupt = 0
        """Records read whose digest did not match (each then read as absent)."""
        self._conn: sqlite3.Connection | None = None
        self._ok = True

    def _db(self) -> sqlite3.Connection | None:
        if self._conn is None and self._ok:
            try:
                conn = sqlite3.connect(self.path, timeout=30, isolation_level=None,
                                       check_same_thread=False)
                conn.execute("PRAGMA journal_mode = WAL")
                conn.execute("PRAGMA synchronous = NORMAL")
                # A rowid table: records are ~1.3 KB, too large for WITHOUT ROWID's B-tree.
                conn.execute("CREATE TABLE IF NOT EXISTS records (fingerprint BLOB UNIQUE "
                             "NOT NULL, record BLOB NOT NULL)")
                self._conn = conn
            except (OSError, sqlite3.Error):
                self._ok = False
        return self._conn

    def get(self, fingerprint: bytes) -> bytes | None:
        """The record stored under ``fingerprint``; None when absent, unreadable or corrupt."""
        db = self._db() if self.readable else None
        if db is None:
            return None
        try:
            row = db.execute("SELECT record FROM records WHERE fingerprint = ?",
                             (fingerprint,)).fetchone()
        except sqlite3.Error:
            return None
        if row is None:
            return None
        stored = row[0]
        if type(stored) is not bytes or len(stored) < _DIGEST \
                or hashlib.sha256(memoryview(stored)[_DIGEST:]).digest() != stored[:_DIGEST]:
            self.corrupt += 1
            return None
        return stored[_DIGEST:]

    def put(self, records: Iterable[tuple[bytes, bytes]]) -> None:
        """Store (fingerprint, record) pairs in one transaction, replacing any there."""
        db = self._db()
        if db is None:
            return
        try:
            db.execute("BEGIN IMMEDIATE")
            try:
                db.executemany("INSERT OR REPLACE INTO records VALUES (?, ?)",
                               ((fp, _sealed(rec)) for fp, rec in records))
            except BaseException:
                db.execute("ROLLBACK")
                raise
            db.execute("COMMIT")
        except (OSError, sqlite3.Error):
            self._ok = False

    def clear(self) -> None:
        """Drop every record."""
        db = self._db()
        if db is not None:
            try:
                db.execute("DELETE FROM records")
            except sqlite3.Error:
                self._ok = False

    def count(self) -> int:
        """How many records the file holds, read-only (0 when there is no file)."""
        if not self.path.is_file():
            return 0
        try:
            with contextlib.closing(sqlite3.connect(f"{self.path.resolve().as_uri()}?mode=ro",
                                                    uri=True)) as conn:
                return int(conn.execute("SELECT count(*) FROM records").fetchone()[0])
        except sqlite3.Error:
            return 0

    def close(self) -> None:
        """Release the connection (opened again on next use)."""
        if self._conn is not None:
            self._conn.close()
            self._conn = None
