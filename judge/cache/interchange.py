"""A judgment cache's interchange: export to JSONL and import from it, signed with a team secret.

:class:`CacheInterchange` works over a :class:`judge.cache.disk.JudgmentCache` (the storage
core) and acts on its local folder only, a :class:`judge.cache.tiers.TieredCache` included
(its shared tier is copied by ``judge cache push``/``pull``, :mod:`judge.app.admin.cache_ops`).

Decisions:

- An export is read in one SQLite read transaction (:meth:`JudgmentCache.snapshot`): a
  consistent snapshot next to a running writer, and only entries that fail their check in
  it (and still fail once it ends) are reported corrupt. The same entries always give the
  same bytes (canonical JSON, sorted by key), so an export diffs well in git.
- With a team secret each line is signed (:mod:`judge.cache.signing`); an import checks
  every line's digest and signature (:func:`import_line`) and then the full entry check.
- An import adds, never replaces: a key already stored is kept (``skipped``).
- An entry written before digests existed is given one by an import (after the full
  check): importing is the explicit act of trusting a file.
"""

from __future__ import annotations

from typing import Any, TextIO

from ..core.text.canonical import canonical_json
from ..core.text.frozen import Frozen
from ..core.text.strict_json import loads_strict
from .disk import JudgmentCache
from .entry import CacheEntry, with_digest
from .signing import SECRET_ENV, SIG_FIELD, sign, signature_ok

__all__ = ["CacheInterchange", "ExportReport", "ImportReport", "import_line"]


class ImportReport(Frozen):
    """Entries added, skipped (the key was there) and rejected (with ``line N: why``)."""

    added: int
    skipped: int
    rejected: int
    errors: tuple[str, ...]
    signatures_checked: bool = False
    """The team secret was set: every signed line's signature was checked."""
    unsigned: int = 0
    """Lines taken without a signature although the secret was set (``--allow-unsigned``)."""


class ExportReport(Frozen):
    """How many entries were written, and how many corrupt ones were left out (and why)."""

    exported: int
    left_out: int
    corrupt: dict[str, str] = {}
    """The entries left out because they fail their check: key, why."""
    changed: int = 0
    """Entries a writer replaced while the snapshot was read: sound now, in the next export."""
    signed: bool = False
    """Each line carries an HMAC under the team secret (JUDGE_CACHE_SECRET)."""


class _LineRefused(ValueError):
    """An import line refused; ``where`` is ``: key <first 16 hex>…`` when it has a key."""

    def __init__(self, message: str, where: str) -> None:
        super().__init__(message)
        self.where = where


def _key_of(line: str) -> str:
    try:
        key = loads_strict(line).get("key")
    except (ValueError, AttributeError, RecursionError):
        return ""
    return f": key {key[:16]}…" if isinstance(key, str) else ""


def import_line(line: str, *, secret: bytes | None,
                allow_unsigned: bool = False) -> tuple[CacheEntry, bool]:
    """An export line's entry as it would be imported, and whether it came unsigned.

    The decisions: a line's ``sig`` is checked when ``secret`` is given (a mismatch is
    refused). With a secret, a line *without* ``sig`` is refused too unless
    ``allow_unsigned``: an edited line whose signature was stripped and whose digest was
    recomputed used to import as "added" and replay a forged score. Without a secret
    nothing can be checked but the digest. A line without a digest (an export from before
    digests) is given one, then passes the entry check like any other (by the caller).
    """
    try:
        entry = loads_strict(line)  # a file handed over: the one strict grammar
    except (ValueError, RecursionError) as exc:
        raise _LineRefused(f"not a JSON object: {exc}", "") from None
    if not isinstance(entry, dict):
        raise _LineRefused("not a JSON object", "")
    key = entry.get("key")
    where = f": key {key[:16]}…" if isinstance(key, str) else ""
    sig = entry.pop(SIG_FIELD, None)
    if sig is None and secret is not None and not allow_unsigned:
        raise _LineRefused(f"not signed, and {SECRET_ENV} is set: an unsigned line may have "
                           "been edited and its signature stripped (--allow-unsigned takes "
                           "it anyway)", where)
    if sig is not None and secret is not None and not signature_ok(
            secret, canonical_json(entry).encode("utf-8"), sig):
        raise _LineRefused("signature does not match: edited after it was signed, or "
                           "signed with another secret", where)
    unsigned = sig is None and secret is not None
    if "digest" not in entry and sig is None:
        return with_digest(entry), unsigned
    return CacheEntry(entry), unsigned


class CacheInterchange:
    """Export and import for the local folder of ``cache``."""

    def __init__(self, cache: JudgmentCache) -> None:
        self.cache = cache

    def export_jsonl(self, fp: TextIO, *, secret: bytes | None = None) -> int:
        """Write one canonical entry per line, sorted by key; returns the count.

        The same entries always give the same bytes, so an export diffs well in git.
        """
        return self.export_entries(fp, secret=secret).exported

    def export_entries(self, fp: TextIO, *, secret: bytes | None = None) -> ExportReport:
        """Write every sound entry of one snapshot, sorted by key, signed when ``secret``.

        An entry that fails its check in the snapshot is read again once the snapshot ends:
        still failing, it is reported corrupt; sound by then, a writer was replacing it
        (``changed``), never a false alarm.
        """
        exported = changed = 0
        corrupt: dict[str, str] = {}
        suspects: dict[Any, str] = {}
        with self.cache.snapshot():
            for key, entry, problem in self.cache.scan():
                if entry is None:
                    suspects[key] = problem or "unreadable"
                    continue
                line = canonical_json(entry.data)
                if secret is not None:
                    line = canonical_json({**entry.data, SIG_FIELD: sign(secret, line.encode())})
                fp.write(line + "\n")
                exported += 1
        for key, problem in suspects.items():
            again, still = self.cache.checked(key) if isinstance(key, str) else (None, problem)
            if again is not None:
                changed += 1
            elif still is not None:
                corrupt[key if isinstance(key, str) else repr(key)] = still
        return ExportReport(exported=exported, left_out=len(corrupt), corrupt=corrupt,
                            changed=changed, signed=secret is not None)

    def import_jsonl(self, fp: TextIO, *, secret: bytes | None = None,
                     require_signed: bool = False,
                     allow_unsigned: bool = False) -> ImportReport:
        """Add the valid entries of a JSONL export; existing keys are kept, not replaced.

        Each line is checked by :func:`import_line`, then in full as it is written
        (:meth:`JudgmentCache.write_local`); each rejection names the line and the entry's
        key.
        """
        if require_signed and secret is None:
            raise ValueError("require_signed needs the team secret")
        self.cache.require_writable("import")
        counts = {"added": 0, "skipped": 0, "unsigned": 0}
        errors: list[str] = []
        for number, line in enumerate(fp, start=1):
            if not line.strip():
                continue
            try:
                entry, unsigned = import_line(line, secret=secret,
                                              allow_unsigned=allow_unsigned and
                                              not require_signed)
                added = self.cache.write_local(entry, replace=False)
            except _LineRefused as exc:
                errors.append(f"line {number}{exc.where}: {exc}")
                continue
            except (ValueError, RecursionError) as exc:
                errors.append(f"line {number}{_key_of(line)}: {exc}")
                continue
            counts["unsigned"] += unsigned
            counts["added" if added else "skipped"] += 1
        return ImportReport(**counts, rejected=len(errors), errors=tuple(errors),
                            signatures_checked=secret is not None)
