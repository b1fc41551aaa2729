"""A judgment cache's maintenance: stats, verify, prune and upgrade of its local folder.

:class:`CacheMaintenance` works over a :class:`judge.cache.disk.JudgmentCache` (the storage
core) and reads every entry through its full check (:meth:`JudgmentCache.scan`); with a
:class:`judge.cache.tiers.TieredCache` it acts on the local folder, and its counters are the
tiered ones.

Decisions:

- Pruning needs a filter (a model, a date, the corrupt entries) or says ``all_entries``:
  a bare prune removes nothing. Dates without a zone are UTC.
- Removing anything also clears the replay index (:meth:`JudgmentCache.remove`).
- An entry written before digests existed is given one only by an explicit act: an import
  (:mod:`judge.cache.interchange`) or :meth:`CacheMaintenance.upgrade`, each after the
  full check.
"""

from __future__ import annotations

import json
import os
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pydantic import Field

from ..core.text.frozen import Frozen
from .disk import JudgmentCache
from .entry import with_digest
from .replay_store import ReplayStore

__all__ = ["CacheMaintenance", "CacheStats", "PruneEntry", "SharedTierStats", "VerifyReport"]


class SharedTierStats(Frozen):
    """The shared tier: reachable or why not, sound entries, their bytes, rejected rows."""

    url: str
    """Its URL, password masked."""
    reachable: bool
    error: str | None = None
    entries: int = 0
    """Sound entries (their digests checked)."""
    bytes: int = 0
    rejected: int = 0
    """Rows that fail their digest (ignored by every read, never used)."""
    rejected_keys: tuple[str, ...] = ()
    """The first of them, by key."""
    rejected_reasons: dict[str, str] = {}
    """Why each of those failed (digest, signature, unsigned)."""
    signed: bool = False
    """The team secret was set: every signed row's HMAC was checked."""


class CacheStats(Frozen):
    """Entries per model, their age and the bytes on disk (field names: the ``--json``'s)."""

    directory: str
    mode: str
    exists: bool
    entries: int
    corrupt: int
    bytes: int
    models: dict[str, int]
    oldest: str | None
    newest: str | None
    index_records: int = Field(alias="indexRecords")
    index_corrupt: int = Field(0, alias="indexCorrupt")
    """Replay index records that fail their seal or cannot be used (verify names them)."""
    shared: SharedTierStats | None = None
    """The shared tier (``cache_url``), when one is configured."""


class VerifyReport(Frozen):
    """Entries re-read and re-hashed, and replay index records re-checked.

    The corrupt entries by key and the bad records by fingerprint (hex), each with why;
    with ``repair``, how many of each were removed. :meth:`CacheMaintenance.verify` fills in
    the entries; the workspace's operation (:func:`judge.app.admin.cache_ops.verify_cache`) the
    index and the shared tier.
    """

    checked: int
    ok: int
    corrupt: tuple[str, ...]
    reasons: dict[str, str]
    index_checked: int = 0
    index_bad: tuple[str, ...] = ()
    index_reasons: dict[str, str] = {}
    index_damaged: str | None = None
    """Why the index file itself could not be read (repair removes the file)."""
    removed: int = 0
    """Corrupt entries removed by ``repair``."""
    index_removed: int = 0
    """Index records removed by ``repair`` (every record, when entries were removed)."""
    shared: SharedTierStats | None = None
    """The shared tier's rows, each digest (and with the team secret, each HMAC) checked."""

    @property
    def bad(self) -> bool:
        """Anything corrupt found (whether or not it was then removed)."""
        shared_bad = self.shared is not None and (self.shared.rejected or not self.shared.reachable)
        return bool(self.corrupt or self.index_bad or self.index_damaged or shared_bad)

    @property
    def clean_now(self) -> bool:
        """Nothing bad is left: nothing was found, or a repair removed all of it."""
        if self.shared is not None and (self.shared.rejected or not self.shared.reachable):
            return False  # repair is local: a bad shared row is replaced by its next verdict
        return not self.bad or (self.removed == len(self.corrupt)
                                and (self.index_damaged is not None
                                     or self.index_removed >= len(self.index_bad)))


class PruneEntry(Frozen):
    """One entry chosen for removal."""

    key: str
    model: str | None
    created_at: str | None = Field(alias="createdAt")
    reason: str


def _parse_time(text: str) -> datetime:
    """Parse an ISO 8601 date or time; a naive one is taken as UTC."""
    moment = datetime.fromisoformat(text)
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def _name(key: object) -> str:
    """A stored key as text: itself, or (a key another program pickled) its repr."""
    return key if isinstance(key, str) else repr(key)


def _folder_bytes(directory: Path) -> int:
    size = 0
    if directory.is_dir():
        for root, _, files in os.walk(directory):
            for name in files:
                try:
                    size += (Path(root) / name).stat().st_size
                except OSError:  # a WAL or value file removed meanwhile
                    pass
    return size


class CacheMaintenance:
    """Stats, verify, prune and upgrade for the local folder of ``cache``."""

    def __init__(self, cache: JudgmentCache) -> None:
        self.cache = cache

    def stats(self) -> CacheStats:
        """Summarise: entries, bytes on disk, per model, oldest/newest."""
        cache = self.cache
        models: dict[str, int] = {}
        entries = corrupt = 0
        oldest: tuple[datetime, str] | None = None
        newest: tuple[datetime, str] | None = None
        for _, entry, _ in cache.scan():
            entries += 1
            if entry is None:
                corrupt += 1
                continue
            model = entry.model
            models[model] = models.get(model, 0) + 1
            created = entry.created_at
            moment = (_parse_time(created), created)
            oldest = moment if oldest is None or moment < oldest else oldest
            newest = moment if newest is None or moment > newest else newest
        return CacheStats(
            directory=str(cache.directory), mode=cache.mode,
            exists=cache.database_path.is_file(), entries=entries, corrupt=corrupt,
            bytes=_folder_bytes(cache.directory), models=dict(sorted(models.items())),
            oldest=oldest[1] if oldest else None, newest=newest[1] if newest else None,
            index_records=ReplayStore(cache.index_path).count(),
            index_corrupt=cache.index_corrupt)

    def verify(self) -> VerifyReport:
        """Re-read and re-hash every entry; name the corrupt ones and why."""
        checked = ok = 0
        reasons: dict[str, str] = {}
        for key, entry, problem in self.cache.scan():
            checked += 1
            if entry is not None:
                ok += 1
            else:
                reasons[_name(key)] = problem or "unreadable"
        return VerifyReport(checked=checked, ok=ok, corrupt=tuple(reasons), reasons=reasons)

    def prunable(self, *, model: str | None = None, before: str | None = None,
                 corrupt: bool = False, all_entries: bool = False) -> list[tuple[Any, PruneEntry]]:
        """What :meth:`prune` would remove: each stored key (see ``Scanned``) and its entry.

        Sound entries go when they match every filter given (``model``, created ``before``);
        corrupt ones go when ``corrupt`` is set. Without any filter, ``all_entries`` is needed.
        """
        if model is None and before is None and not corrupt and not all_entries:
            raise ValueError("prune needs a filter (model, before, corrupt) or all_entries")
        cutoff = _parse_time(before) if before is not None else None
        by_filter = all_entries or model is not None or before is not None
        chosen: list[tuple[Any, PruneEntry]] = []
        for key, entry, problem in self.cache.scan():
            if entry is None:
                if corrupt or all_entries:
                    chosen.append((key, PruneEntry(key=_name(key), model=None, created_at=None,
                                                   reason=f"corrupt: {problem}")))
                continue
            created = entry.created_at
            if by_filter and (model is None or entry.model == model) and (
                    cutoff is None or _parse_time(created) < cutoff):
                chosen.append((key, PruneEntry(key=key, model=entry.model, created_at=created,
                                               reason="matched")))
        return chosen

    def prune(self, *, model: str | None = None, before: str | None = None,
              corrupt: bool = False, all_entries: bool = False, dry_run: bool = False) -> int:
        """Remove the entries :meth:`prunable` selects; returns the count (to be) removed."""
        if not dry_run:
            self.cache.require_writable("prune")
        chosen = self.prunable(model=model, before=before, corrupt=corrupt,
                               all_entries=all_entries)
        if dry_run:
            return len(chosen)
        return self.cache.remove(key for key, _ in chosen)

    def upgrade(self) -> int:
        """Give a digest to each entry written before digests; returns how many were.

        Each is fully checked first (its key re-hashed from its request, the credential
        scan), as an import checks a line; one that fails stays as it is, corrupt.
        """
        cache = self.cache
        cache.require_writable("upgrade entries")
        upgraded = 0
        for key in list(cache.keys()):  # listed first: the loop writes to the same table
            raw, _ = cache.stored_bytes(key)
            try:
                entry = json.loads(raw.decode("utf-8")) if raw is not None else None
            except (UnicodeDecodeError, ValueError, RecursionError):
                continue
            if not isinstance(entry, dict) or "digest" in entry:
                continue
            sealed = with_digest(entry)
            if sealed.data.get("key") != key:
                continue
            try:
                cache.write_local(sealed, replace=True)  # the full check, then the write
            except ValueError:
                continue
            upgraded += 1
        return upgraded
