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
from typing import Any, TypedDict

from .disk import JudgmentCache
from .entry import with_digest
from .replay_store import ReplayStore

__all__ = ["CacheMaintenance", "VerifyReport"]


class VerifyReport(TypedDict):
    """What :meth:`CacheMaintenance.verify` found."""

    checked: int
    ok: int
    corrupt: list[str]
    reasons: dict[str, str]


def _parse_time(text: str) -> datetime:
    """Parse an ISO 8601 date or time; a naive one is taken as UTC."""
    moment = datetime.fromisoformat(text)
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


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

    def stats(self) -> dict[str, Any]:
        """Summarise: entries, bytes on disk, per model, oldest/newest, the cache's counters."""
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
            model = entry["request"]["model"]
            models[model] = models.get(model, 0) + 1
            created = entry["meta"]["createdAt"]
            moment = (_parse_time(created), created)
            oldest = moment if oldest is None or moment < oldest else oldest
            newest = moment if newest is None or moment > newest else newest
        return {
            "directory": str(cache.directory),
            "mode": cache.mode,
            "exists": cache.database_path.is_file(),
            "entries": entries,
            "corrupt": corrupt,
            "bytes": _folder_bytes(cache.directory),
            "models": dict(sorted(models.items())),
            "oldest": oldest[1] if oldest else None,
            "newest": newest[1] if newest else None,
            "indexRecords": ReplayStore(cache.index_path).count(),
            "indexCorrupt": cache.index_corrupt,
            "counters": cache.counters(),
        }

    def verify(self) -> VerifyReport:
        """Re-read and re-hash every entry; name the corrupt ones and why."""
        report: VerifyReport = {"checked": 0, "ok": 0, "corrupt": [], "reasons": {}}
        for key, entry, problem in self.cache.scan():
            report["checked"] += 1
            if entry is not None:
                report["ok"] += 1
            else:
                name = key if isinstance(key, str) else repr(key)
                report["corrupt"].append(name)
                report["reasons"][name] = problem or "unreadable"
        return report

    def prunable(self, *, model: str | None = None, before: str | None = None,
                 corrupt: bool = False, all_entries: bool = False) -> list[dict[str, Any]]:
        """List what :meth:`prune` would remove: ``{"key", "model", "createdAt", "reason"}`` each.

        Sound entries go when they match every filter given (``model``, created ``before``);
        corrupt ones go when ``corrupt`` is set. Without any filter, ``all_entries`` is needed.
        """
        if model is None and before is None and not corrupt and not all_entries:
            raise ValueError("prune needs a filter (model, before, corrupt) or all_entries")
        cutoff = _parse_time(before) if before is not None else None
        by_filter = all_entries or model is not None or before is not None
        chosen: list[dict[str, Any]] = []
        for key, entry, problem in self.cache.scan():
            if entry is None:
                if corrupt or all_entries:
                    chosen.append({"key": key, "model": None, "createdAt": None,
                                   "reason": f"corrupt: {problem}"})
                continue
            created = entry["meta"]["createdAt"]
            if by_filter and (model is None or entry["request"]["model"] == model) and (
                    cutoff is None or _parse_time(created) < cutoff):
                chosen.append({"key": key, "model": entry["request"]["model"],
                               "createdAt": created, "reason": "matched"})
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
        return self.cache.remove(item["key"] for item in chosen)

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
            if sealed.get("key") != key:
                continue
            try:
                cache.write_local(sealed, replace=True)  # the full check, then the write
            except ValueError:
                continue
            upgraded += 1
        return upgraded
