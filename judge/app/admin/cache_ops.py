"""The judgment cache's maintenance operations: stats, export, import, verify and prune.

Thin wrappers over :mod:`judge.cache.maintenance` (stats, verify, prune) and
:mod:`judge.cache.interchange` (export, import): each opens the workspace's cache folder
(``cache_dir``) in the mode it needs, never creating it to read, and returns a frozen
result. Removing entries asks the door's ``confirm`` callback first, inside the
same open cache, so what is confirmed is what is removed. These act on the local folder;
with ``cache_url`` set, ``stats`` also shows the shared tier and ``push``/``pull`` copy
between the tiers (:mod:`judge.cache.shared`, at the end of this module).
"""

from __future__ import annotations

import io
import json
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Literal, TextIO

from ...cache.disk import JudgmentCache
from ...cache.entry import CacheEntry, entry_problems
from ...cache.interchange import (
    CacheInterchange,
    ExportReport,
    ImportReport,
    import_line,
)
from ...cache.maintenance import (
    CacheMaintenance,
    CacheStats,
    PruneEntry,
    SharedTierStats,
    VerifyReport,
)
from ...cache.replay_store import ReplayStore
from ...cache.shared import SharedCache
from ...cache.signing import SECRET_ENV
from ...core.formats.limits import MAX_JSONL_SUITE_BYTES
from ...core.text.canonical import canonical_json
from ...core.text.errors import StoreError, UsageError
from ...core.text.frozen import Frozen
from ...core.text.secrets import mask_url
from ...engine.replay import record_problem
from ...system.atomic_files import atomic_writer
from ...system.input_files import read_input
from ..workspace.settings import CacheModeName
from ..workspace.workspace import Workspace

__all__ = [
    "CacheStats",
    "ExportReport",
    "ImportReport",
    "PruneEntry",
    "PruneReport",
    "PruneRequest",
    "SharedTierStats",
    "TierCopyReport",
    "VerifyReport",
    "cache_stats",
    "export_cache",
    "export_cache_file",
    "import_cache",
    "import_cache_file",
    "prune_cache",
    "pull_cache",
    "push_cache",
    "shared_tier_stats",
    "verify_cache",
]


class PruneRequest(Frozen):
    """Which entries go: sound ones matching every filter given, corrupt ones with ``corrupt``."""

    model: str | None = None
    before: str | None = None
    """ISO 8601 date or time: entries created before it."""
    corrupt: bool = False
    all_entries: bool = False
    """Every entry (needed when no filter is given)."""
    dry_run: bool = False


class PruneReport(Frozen):
    """What matched and how many were removed (none on a dry run)."""

    dry_run: bool
    entries: tuple[PruneEntry, ...]
    removed: int


def _open(workspace: Workspace, mode: CacheModeName) -> JudgmentCache:
    directory = workspace.path(workspace.settings.cache_dir)
    if directory.exists() and not directory.is_dir():
        raise UsageError("not a directory", file=workspace.settings.cache_dir)
    cache = workspace.open_cache(mode)
    assert cache is not None  # only the mode "off" opens none
    return cache


def cache_stats(workspace: Workspace) -> CacheStats:
    """Count entries per model, their age and the bytes on disk (read-only: creates nothing)."""
    with _open(workspace, "read-only") as cache:
        stats = CacheMaintenance(cache).stats()
        # The instance's count says nothing yet: count the records that fail their check.
        bad = sum(1 for _ in ReplayStore(cache.index_path).bad_records(record_problem))
    shared = shared_tier_stats(workspace) if workspace.settings.cache_url else None
    return stats.model_copy(update={"index_corrupt": bad, "shared": shared})


def _secret(workspace: Workspace) -> bytes | None:
    """The team secret that signs exports (never shown, logged or written)."""
    value = workspace.env.get(SECRET_ENV)
    return value.encode("utf-8") if value else None


def export_cache(workspace: Workspace, out: TextIO) -> ExportReport:
    """Write every entry of one snapshot as a canonical JSON line to ``out``, sorted by key.

    Signed (a ``sig`` per line) when ``JUDGE_CACHE_SECRET`` is set.
    """
    secret = _secret(workspace)
    with _open(workspace, "read-only") as cache:
        return CacheInterchange(cache).export_entries(out, secret=secret)


def export_cache_file(workspace: Workspace, target: Path) -> ExportReport:
    """:func:`export_cache` into ``target``, written beside it and renamed (never half a file)."""
    secret = _secret(workspace)
    with _open(workspace, "read-only") as cache:
        try:
            with atomic_writer(target) as out:
                return CacheInterchange(cache).export_entries(out, secret=secret)
        except OSError as exc:
            raise UsageError(f"cannot write: {exc}", file=str(target)) from None


def import_cache(workspace: Workspace, fp: TextIO, *, require_signed: bool = False,
                 allow_unsigned: bool = False) -> ImportReport:
    """Add the valid entries of an export; existing keys are kept, not replaced.

    Every line's digest is checked, and its signature when ``JUDGE_CACHE_SECRET`` is set;
    with the secret set an unsigned line is refused unless ``allow_unsigned`` (the report
    counts those taken). ``require_signed`` refuses every line not signed with that secret
    (UsageError without it, before anything is read or created). An import whose every
    line is refused opens (and creates) no cache: a failure writes nothing.
    """
    secret = _secret(workspace)
    if require_signed and secret is None:
        raise UsageError(f"--require-signed needs the team secret in {SECRET_ENV}",
                         fix=f"set {SECRET_ENV} to the secret the export was signed with")
    if require_signed and allow_unsigned:
        raise UsageError("--require-signed and --allow-unsigned contradict each other",
                         fix="give one of them")
    lines = fp.read().splitlines(keepends=True)
    allow = allow_unsigned and not require_signed
    if not any(_importable(line, secret, allow) for line in lines):
        refused = _refused_only(lines, secret, allow)
        return ImportReport(added=0, skipped=0, rejected=len(refused), errors=tuple(refused),
                            signatures_checked=secret is not None)
    with _open(workspace, "read-write") as cache:
        return CacheInterchange(cache).import_jsonl(
            io.StringIO("".join(lines)), secret=secret, require_signed=require_signed,
            allow_unsigned=allow)


def _importable(line: str, secret: bytes | None, allow_unsigned: bool) -> bool:
    if not line.strip():
        return False
    try:
        entry, _ = import_line(line, secret=secret, allow_unsigned=allow_unsigned)
    except (ValueError, RecursionError):
        return False
    return not entry_problems(entry.data)


def _refused_only(lines: list[str], secret: bytes | None, allow_unsigned: bool) -> list[str]:
    """Why each line is refused, as the cache's import would say (no cache opened)."""
    errors = []
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            entry, _ = import_line(line, secret=secret, allow_unsigned=allow_unsigned)
        except (ValueError, RecursionError) as exc:
            where = getattr(exc, "where", "")
            errors.append(f"line {number}{where}: {exc}")
            continue
        errors.append(f"line {number}: invalid cache entry: "
                      + "; ".join(entry_problems(entry.data)))
    return errors


def import_cache_file(workspace: Workspace, source: Path, *, require_signed: bool = False,
                      allow_unsigned: bool = False) -> ImportReport:
    """:func:`import_cache` from a file; UsageError naming it when it cannot be read."""
    # Bounded as a JSONL suite is; a FIFO or a device is refused by type, never read.
    text = read_input(source, UsageError, MAX_JSONL_SUITE_BYTES)
    return import_cache(workspace, io.StringIO(text), require_signed=require_signed,
                        allow_unsigned=allow_unsigned)


def verify_cache(workspace: Workspace, *, repair: bool = False,
                 require_signed: bool = False) -> VerifyReport:
    """Re-read and re-hash every entry and index record; name the bad ones and why.

    With ``cache_url`` set, every shared row too: its digest, and with ``JUDGE_CACHE_SECRET``
    its HMAC (an unsigned row counts as bad unless ``--allow-unsigned-shared``;
    ``require_signed`` makes the secret itself required: :meth:`Workspace.shared_signing`).

    ``repair`` removes them: corrupt entries (which clears the index, derived data), bad
    index records, and an index file SQLite cannot read. A damaged ``cache.db`` is a
    UsageError naming it and the fix (an entry's table cannot be repaired in place).
    """
    with _open(workspace, "read-write" if repair else "read-only") as cache:
        report = CacheMaintenance(cache).verify()
        index = ReplayStore(cache.index_path)
        damaged: str | None = None
        bad: dict[str, str] = {}
        checked = 0
        try:
            checked = index.count()
            bad = {fp.hex(): why for fp, why in index.bad_records(record_problem)}
        except UsageError as exc:
            if not repair:
                raise
            damaged = exc.message
        removed = index_removed = 0
        if repair:
            if damaged is not None:
                cache.close()
                index.remove_file()
            elif bad:
                index_removed = index.delete(bytes.fromhex(fp) for fp in bad)
            index.close()
            if report.corrupt:
                left = ReplayStore(cache.index_path).count()
                # By the stored keys, pickled ones too.
                removed = CacheMaintenance(cache).prune(corrupt=True)
                index_removed += left if removed else 0  # removing entries clears the index
    shared = None
    if workspace.settings.cache_url:
        shared = shared_tier_stats(workspace, require_signed=require_signed)
    return report.model_copy(update={
        "index_checked": checked, "index_bad": tuple(bad), "index_reasons": bad,
        "index_damaged": damaged, "removed": removed, "index_removed": index_removed,
        "shared": shared})


def prune_cache(workspace: Workspace, request: PruneRequest,
                confirm: Callable[[int], bool] | None = None) -> PruneReport:
    """Remove the entries ``request`` selects; ``confirm(count)`` False removes nothing.

    UsageError without any filter (and no ``all_entries``) or with a ``before`` that is not
    an ISO 8601 date.
    """
    r = request
    if r.model is None and r.before is None and not r.corrupt and not r.all_entries:
        raise UsageError("refusing to prune every entry without a filter",
                         fix="pass --model, --before or --corrupt, or --all to empty the cache")
    if r.before is not None:
        try:
            datetime.fromisoformat(r.before)
        except ValueError:
            raise UsageError(f"--before {r.before!r} is not an ISO 8601 date",
                             fix="e.g. --before 2025-01-31") from None
    with _open(workspace, "read-only" if r.dry_run else "read-write") as cache:
        chosen = CacheMaintenance(cache).prunable(model=r.model, before=r.before,
                                                  corrupt=r.corrupt, all_entries=r.all_entries)
        removed = 0
        if chosen and not r.dry_run and (confirm is None or confirm(len(chosen))):
            removed = cache.remove(key for key, _ in chosen)
    return PruneReport(dry_run=r.dry_run, entries=tuple(e for _, e in chosen), removed=removed)


# --- the shared tier (cache_url): stats, push, pull ---------------------------------------

COPY_BATCH = 500
"""Entries per transaction when pushing to the shared tier."""


class TierCopyReport(Frozen):
    """What ``push`` (local → shared) or ``pull`` (shared → local) did with each entry."""

    direction: Literal["push", "pull"]
    url: str
    added: int
    kept: int
    """Already in the target (left as it is)."""
    rejected: int
    """Corrupt in the source (a local entry failing its check, a shared row its digest)."""
    rejected_keys: tuple[str, ...] = ()


def _open_shared(workspace: Workspace, require_signed: bool = False) -> SharedCache:
    url = workspace.settings.cache_url
    if not url:
        raise UsageError("no shared cache configured",
                         fix='set cache_url = "postgresql+psycopg://user@host/db" in '
                             "judge.toml, or JUDGE_CACHE_URL")
    secret, waived = workspace.shared_signing(require=require_signed)
    return SharedCache(url, workspace=workspace.root, batch=COPY_BATCH, secret=secret,
                       allow_unsigned=waived)


def shared_tier_stats(workspace: Workspace, *, listed: int = 20,
                      require_signed: bool = False) -> SharedTierStats:
    """Scan the shared tier (every digest, and signature with the secret, checked).

    An unreachable tier is said, not raised.
    """
    try:
        with _open_shared(workspace, require_signed) as tier:
            entries = size = 0
            for _, body in tier.iter():
                entries += 1
                size += len(body)
            shown = tuple(tier.rejected[:listed])
            return SharedTierStats(url=tier.url, reachable=True, entries=entries, bytes=size,
                                   rejected=len(tier.rejected), rejected_keys=shown,
                                   rejected_reasons={k: tier.reasons[k] for k in shown},
                                   signed=_secret(workspace) is not None)
    except StoreError as exc:
        return SharedTierStats(url=_masked_url(workspace), reachable=False, error=str(exc))


def _masked_url(workspace: Workspace) -> str:
    return mask_url(workspace.settings.cache_url or "")


def _open_local(workspace: Workspace, mode: CacheModeName) -> JudgmentCache:
    """The local folder alone (never tiered: a copy must not go back where it came from)."""
    directory = workspace.path(workspace.settings.cache_dir)
    if directory.exists() and not directory.is_dir():
        raise UsageError("not a directory", file=workspace.settings.cache_dir)
    return JudgmentCache(directory, mode)


def push_cache(workspace: Workspace, *, listed: int = 20) -> TierCopyReport:
    """Copy every sound local entry missing from the shared tier, in batches (idempotent).

    StoreError when the shared tier cannot be reached (nothing half-written: each batch is
    one transaction, and a batch already there is kept on the next push).
    """
    with _open_local(workspace, "read-only") as cache, _open_shared(workspace) as tier:
        added = sent = 0
        batch: list[tuple[str, bytes]] = []
        for entry in cache.iter_entries():
            batch.append((entry.key, canonical_json(entry.data).encode("utf-8")))
            if len(batch) >= COPY_BATCH:
                added, sent, batch = added + tier.put_many(batch), sent + len(batch), []
        added, sent = added + tier.put_many(batch), sent + len(batch)
        corrupt = () if sent == len(cache) else CacheMaintenance(cache).verify().corrupt
        return TierCopyReport(direction="push", url=tier.url, added=added, kept=sent - added,
                              rejected=len(corrupt), rejected_keys=tuple(corrupt[:listed]))


def pull_cache(workspace: Workspace, *, listed: int = 20) -> TierCopyReport:
    """Copy every sound shared entry missing from the local cache (idempotent).

    Each is checked in full before it is stored (digest, key re-hashed, credential scan);
    a local entry already under the key is kept.
    """
    with _open_local(workspace, "read-write") as cache, _open_shared(workspace) as tier:
        added = kept = 0
        rejected: list[str] = []
        for key, body in tier.iter(batch=COPY_BATCH):
            if key in cache and cache.turns(key, count=False) is not None:
                kept += 1  # a sound local entry; a corrupt one is replaced below
                continue
            try:
                cache.put(CacheEntry(json.loads(body.decode("utf-8"))))
            except (UnicodeDecodeError, ValueError, RecursionError):
                rejected.append(key)
                continue
            added += 1
        rejected = sorted([*rejected, *tier.rejected])
        return TierCopyReport(direction="pull", url=tier.url, added=added, kept=kept,
                              rejected=len(rejected), rejected_keys=tuple(rejected[:listed]))


