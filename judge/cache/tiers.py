"""The local judgment cache with a team's shared tier behind it (``cache_url``).

:class:`TieredCache` *is* the local :class:`judge.cache.disk.JudgmentCache` (so everything typed
for one takes it, and :mod:`judge.cache.maintenance` and :mod:`judge.cache.interchange` —
stats, verify, prune, export, import — act on the local folder) with
:class:`judge.cache.shared.SharedCache` consulted behind it:

- a read that misses locally (absent or corrupt) asks the shared tier before the model; a
  shared hit is checked in full (the digest by :func:`judge.cache.shared.sealed_digest`, then
  :func:`judge.cache.entry.entry_problems`: key re-hashed, credential scan) and, when the
  mode writes, copied into the local cache (a corrupt local entry is so replaced);
- a new verdict is written to both tiers, the shared one at once (a verdict is rare next to
  the model call it cost, and nothing then waits in a buffer to be lost);
- the replay index stays local (:attr:`replay_store` is the folder's): a shared hit takes
  the plain path and is then remembered locally like any other hit;
- the modes mean what they mean locally: ``read-only`` and ``offline`` read both tiers and
  write neither, ``refresh`` writes both and reads neither.

Faults: an entry failing its check in the shared tier (its digest, or with the team secret
its HMAC, or its missing HMAC) is ignored (a miss), counted and reported through
``notice``, never used; the fresh verdict then replaces its row. What a user of the tier
is told about its rows (signed, unsigned taken by a waiver, or not authenticated at all) is
:meth:`TieredCache.trust`. The shared tier unreachable (at the first use or
mid-run) is said once and the cache goes on with the local tier alone for the rest of its
life, never an error. Every message carries the URL with its password masked.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Collection
from pathlib import Path
from typing import Final, Literal

from ..core.formats.turns import CachedTurn
from ..core.text.canonical import canonical_json
from ..core.text.errors import StoreError
from ..core.text.frozen import Frozen
from ..core.text.secrets import mask_url
from .disk import CacheMode, JudgmentCache
from .entry import CacheEntry, entry_problems
from .shared import SharedCache
from .signing import SECRET_ENV

__all__ = ["REPORTED_REJECTIONS", "TierTrust", "TieredCache"]

REPORTED_REJECTIONS: Final = 5
"""Rejected shared entries named one by one in notices; the rest are only counted."""


class TierTrust(Frozen):
    """What the shared tier's rows are checked for, as a run states it (text and JSON)."""

    url: str
    """The tier's URL, password masked."""
    rows: Literal["signed", "unsigned-accepted", "unauthenticated"]
    """``signed``: only rows carrying the team secret's HMAC are used; ``unsigned-accepted``:
    so, but unsigned rows too (``--allow-unsigned-shared``); ``unauthenticated``: no secret,
    digests only — anyone who can write to the database decides the verdicts reused."""
    notice: str | None = None
    """The sentence a run says once about it; None for ``signed``."""


class TieredCache(JudgmentCache):
    """The local cache at ``directory``, then the shared tier at ``shared_url``."""

    def __init__(self, directory: str | Path, mode: CacheMode = "read-write", *,
                 shared_url: str, workspace: Path | None = None,
                 notice: Callable[[str], None] | None = None, secret: bytes | None = None,
                 allow_unsigned: bool = False) -> None:
        """``notice`` is told, once each, that the tier is down or that an entry was rejected.

        The shared tier is connected to on first need, never by opening: maintenance of the
        local folder does not touch the network. ``secret`` and ``allow_unsigned``: see
        :class:`judge.cache.shared.SharedCache` (rows signed; a row without the secret's
        HMAC unused unless the command waived it).
        """
        super().__init__(directory, mode)
        self.shared_url = mask_url(shared_url)
        """The shared tier's URL, password masked."""
        self.notices: list[str] = []
        """Everything said through ``notice`` (kept for callers that pass none)."""
        self.rejected: dict[str, str] = {}
        """Shared entries ignored this session, by key, with why (each asked once)."""
        self.down: str | None = None
        """Why the shared tier is no longer used, once it failed; None while it works."""
        self._url = shared_url
        self._workspace = workspace
        self._notice = notice
        self._tier: SharedCache | None = None
        self._secret = secret
        self._allow_unsigned = allow_unsigned
        self._shared = {"sharedHits": 0, "sharedMisses": 0, "sharedWrites": 0,
                        "sharedRejected": 0, "copiedLocal": 0}

    def __repr__(self) -> str:
        return (f"TieredCache({str(self.directory)!r}, mode={self.mode!r}, "
                f"shared={self.shared_url!r})")

    # --- the shared tier ---------------------------------------------------------------

    def shared(self) -> SharedCache | None:
        """The shared tier, connected on first need; None once it has failed."""
        if self._tier is None and self.down is None:
            try:
                self._tier = SharedCache(self._url, workspace=self._workspace,
                                         secret=self._secret,
                                         allow_unsigned=self._allow_unsigned)
            except StoreError as exc:
                self._fail(exc)
        return self._tier

    def trust(self) -> TierTrust:
        """What the shared tier's rows are checked for, and the sentence a run says of it."""
        url = self.shared_url
        if self._secret is None:
            return TierTrust(url=url, rows="unauthenticated", notice=(
                f"shared cache {url}: its rows are not authenticated ({SECRET_ENV} is not "
                "set): anyone who can write to that database can change the verdicts this "
                f"command reuses; set {SECRET_ENV} (the same secret on every writer) to sign "
                "and check them"))
        if self._allow_unsigned:
            return TierTrust(url=url, rows="unsigned-accepted", notice=(
                f"shared cache {url}: unsigned rows are used too (--allow-unsigned-shared): "
                "their digests are checked, not who wrote them"))
        return TierTrust(url=url, rows="signed")

    def _say(self, text: str) -> None:
        self.notices.append(text)
        if self._notice is not None:
            self._notice(text)

    def _fail(self, exc: StoreError) -> None:
        """Stop using the shared tier, saying so once."""
        self.down = mask_url(str(exc))
        if self._tier is not None:
            self._tier.close()
            self._tier = None
        self._say(f"shared cache unreachable, going on with the local cache only: {self.down}")

    def _reject(self, key: str, reason: str) -> None:
        self._shared["sharedRejected"] += 1
        self.rejected[key] = reason
        if len(self.rejected) <= REPORTED_REJECTIONS:
            self._say(f"shared cache {self.shared_url}: entry {key[:16]}… ignored, never "
                      f"used ({reason}); `judge cache stats` counts them")
        elif len(self.rejected) == REPORTED_REJECTIONS + 1:
            self._say("shared cache: more entries ignored; `judge cache stats` counts them")

    def _from_shared(self, key: str) -> CacheEntry | None:
        """The sound shared entry of ``key`` (copied locally when the mode writes), or None."""
        tier = self.shared() if key not in self.rejected else None  # rejected: not asked again
        if tier is None:
            return None
        before = len(tier.rejected)
        try:
            body = tier.get(key)
        except StoreError as exc:
            self._fail(exc)
            return None
        if len(tier.rejected) > before:
            self._reject(key, tier.reasons.get(key, "its digest does not match its content"))
            return None
        if body is None:
            self._shared["sharedMisses"] += 1
            return None
        try:
            entry = json.loads(body.decode("utf-8"))
        except (UnicodeDecodeError, ValueError, RecursionError) as exc:
            self._reject(key, f"not JSON: {exc}")
            return None
        problems = entry_problems(entry)
        if problems:
            self._reject(key, "; ".join(problems))
            return None
        self._shared["sharedHits"] += 1
        found = CacheEntry(entry)
        if self.writable and super().put(found):  # checked in full by put, as by us above
            self._shared["copiedLocal"] += 1
        return found

    def _share(self, key: str, body: bytes) -> None:
        tier = self.shared()
        if tier is None:
            return
        try:
            self._shared["sharedWrites"] += tier.put(key, body)
        except StoreError as exc:
            self._fail(exc)

    # --- JudgmentCache, tiered ---------------------------------------------------------

    def _read(self, key: str) -> tuple[CacheEntry | None, str | None]:
        entry, problem = super()._read(key)
        if entry is not None or not self.readable:
            return entry, problem
        # A local entry that is corrupt is still counted as corrupt by the caller (the
        # problem is passed on) and, found sound in the shared tier, is replaced locally.
        return self._from_shared(key), problem

    def _read_turns(self, key: str) -> tuple[tuple[CachedTurn, ...] | None, str | None]:
        turns, problem = super()._read_turns(key)
        if turns is not None or not self.readable:
            return turns, problem
        shared = self._from_shared(key)  # as _read: the local problem is passed on
        return (None if shared is None else shared.turns), problem

    def put(self, entry: CacheEntry, *, built: bool = False,
            data: bytes | None = None, vouched: Collection[str] = ()) -> bool:
        """Store ``entry`` locally, then in the shared tier (see :meth:`JudgmentCache.put`)."""
        written = super().put(entry, built=built, data=data, vouched=vouched)
        if written:
            self._share(entry.key,
                        data if data is not None else canonical_json(entry.data).encode("utf-8"))
        return written

    async def put_soon(self, entry: CacheEntry, *, data: bytes,
                       vouched: Collection[str] = ()) -> bool:
        """Store ``entry`` locally (in the writer thread), then in the shared tier (here)."""
        written = await super().put_soon(entry, data=data, vouched=vouched)
        if written:
            self._share(entry.key, data)
        return written

    def counters(self) -> dict[str, int]:
        """The local counters and the shared tier's: hits, misses, writes, rejected, copied."""
        return {**super().counters(), **self._shared}

    def close(self) -> None:
        """Release the local connections and the shared tier's."""
        super().close()
        if self._tier is not None:
            self._tier.close()
            self._tier = None
