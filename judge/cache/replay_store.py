"""The replay index's own store: a plain SQLite table of (fingerprint, record) in the cache folder.

The index (:mod:`judge.engine.replay`) is derived data, kept apart from diskcache: a lookup is one
indexed SELECT, measured about three times cheaper than diskcache's get, and it is on the path
of every replayed judgment. A folder that cannot hold it (read-only, say) just goes without;
the judgments are never at stake.

Decisions:

- Each stored record is its sha256 followed by its bytes, and a read checks it: a record
  holds a case's signals and cited evidence, and a flipped bit there must send the case
  down the plain path (which rebuilds them from the suite), never change a score. A record
  that fails the check is counted (:attr:`ReplayStore.corrupt`) and read as absent; the
  plain path then writes a sound one over it. No schema change was needed for this: rows
  of an older layout simply fail the check once.
- Writes go in one transaction per batch; a failure to write only loses the shortcut, and
  the store then stops trying for the rest of the process. A run never fails on a damaged
  index file (it goes without, at plain-path speed); ``judge cache verify`` and ``stats``
  name the file as damaged (:func:`damaged_index`), and ``verify --repair`` removes it.
"""

from __future__ import annotations

import contextlib
import hashlib
import sqlite3
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path

from ..core.text.errors import UsageError

__all__ = ["ReplayStore", "damaged_index", "is_damage"]

_DIGEST = 32  # sha256 bytes in front of every record
_BATCH = 500  # fingerprints per SELECT ... IN (...)


def _sealed(record: bytes) -> bytes:
    return hashlib.sha256(record).digest() + record


def is_damage(exc: sqlite3.Error) -> bool:
    """Whether ``exc`` says the file itself is damaged (not locked, busy or read-only)."""
    text = str(exc).lower()
    return "malformed" in text or "not a database" in text or (
        isinstance(exc, sqlite3.DatabaseError) and not isinstance(exc, sqlite3.OperationalError))


def damaged_index(path: Path, exc: BaseException) -> UsageError:
    """The error for a replay index file SQLite cannot read."""
    return UsageError(f"the replay index is damaged ({exc})", file=str(path),
                      fix="remove it (derived data: the next run rebuilds it), or run "
                          "`judge cache verify --repair`")


def _unsealed(stored: object) -> str | None:
    """Why a stored record fails its seal; None when it checks out."""
    if type(stored) is not bytes or len(stored) < _DIGEST:
        return "not a sealed record"
    if hashlib.sha256(memoryview(stored)[_DIGEST:]).digest() != stored[:_DIGEST]:
        return "its sha256 does not match its bytes"
    return None


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
        if _unsealed(stored) is not None:
            self.corrupt += 1
            return None
        return stored[_DIGEST:]  # type: ignore[no-any-return]

    def get_many(self, fingerprints: Iterable[bytes]) -> dict[bytes, bytes]:
        """:meth:`get` for many fingerprints in a few SELECTs; absent and corrupt ones left out."""
        db = self._db() if self.readable else None
        found: dict[bytes, bytes] = {}
        if db is None:
            return found
        wanted = list(dict.fromkeys(fingerprints))
        for start in range(0, len(wanted), _BATCH):
            chunk = wanted[start:start + _BATCH]
            try:
                rows = db.execute("SELECT fingerprint, record FROM records WHERE fingerprint IN "
                                  f"({','.join('?' * len(chunk))})", chunk).fetchall()
            except sqlite3.Error:
                return found
            for fingerprint, stored in rows:
                if _unsealed(stored) is not None:
                    self.corrupt += 1
                    continue
                found[bytes(fingerprint)] = stored[_DIGEST:]
        return found

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
        """How many records the file holds, read-only (0 when there is no file).

        UsageError naming the file when it is damaged.
        """
        if not self.path.is_file():
            return 0
        try:
            with contextlib.closing(self._readonly()) as conn:
                return int(conn.execute("SELECT count(*) FROM records").fetchone()[0])
        except sqlite3.Error as exc:
            if is_damage(exc):
                raise damaged_index(self.path, exc) from None
            return 0

    def _readonly(self) -> sqlite3.Connection:
        return sqlite3.connect(f"{self.path.resolve().as_uri()}?mode=ro", uri=True)

    def bad_records(self, check: Callable[[bytes], str | None] | None = None,
                    ) -> Iterator[tuple[bytes, str]]:
        """(fingerprint, why) of every record that fails its seal or ``check``, read-only.

        ``check`` returns why a sound record cannot be used (None when it can). One
        consistent snapshot (a single SELECT); UsageError naming the file when it is damaged.
        """
        if not self.path.is_file():
            return
        try:
            with contextlib.closing(self._readonly()) as conn:
                for fingerprint, stored in conn.execute(
                        "SELECT fingerprint, record FROM records ORDER BY fingerprint"):
                    why = _unsealed(stored)
                    if why is None and check is not None:
                        why = check(stored[_DIGEST:])
                    if why is not None:
                        yield bytes(fingerprint), why
        except sqlite3.Error as exc:
            if is_damage(exc):
                raise damaged_index(self.path, exc) from None
            raise UsageError(f"cannot read the replay index: {exc}", file=str(self.path),
                             fix="retry once no other judge process holds it") from None

    def delete(self, fingerprints: Iterable[bytes]) -> int:
        """Remove these records (one transaction); returns how many were there."""
        db = self._db()
        if db is None:
            return 0
        removed = 0
        try:
            db.execute("BEGIN IMMEDIATE")
            for fingerprint in fingerprints:
                removed += db.execute("DELETE FROM records WHERE fingerprint = ?",
                                      (fingerprint,)).rowcount
            db.execute("COMMIT")
        except sqlite3.Error as exc:
            with contextlib.suppress(sqlite3.Error):
                db.execute("ROLLBACK")
            raise damaged_index(self.path, exc) from None
        return removed

    def remove_file(self) -> None:
        """Delete the index file and its WAL (derived data: runs rebuild it)."""
        self.close()
        for suffix in ("", "-wal", "-shm", "-journal"):
            Path(f"{self.path}{suffix}").unlink(missing_ok=True)

    def close(self) -> None:
        """Release the connection (opened again on next use)."""
        if self._conn is not None:
            self._conn.close()
            self._conn = None
