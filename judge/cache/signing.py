"""Signed cache exports: an HMAC-SHA256 per entry under a team secret. Pure: no disk, no env.

A shared export is only as trustworthy as whoever last wrote it: an entry's digest catches a
flipped bit, but anyone can recompute it after editing a score. With a team secret
(``JUDGE_CACHE_SECRET``) each exported line carries ``"sig": "hmac-sha256:<hex>"``, the HMAC
of the entry's canonical JSON without the ``sig`` field — the very bytes the cache stores,
so a signature checks the whole entry, its digest included. ``judge cache import
--require-signed`` refuses a line without one or with one that does not match.

Decisions: a field per line rather than a sidecar file, so a line copied, filtered or
merged on its own keeps its signature, and an export stays one file that diffs well; the
secret itself is never written, logged or shown (only the HMAC is).
"""

from __future__ import annotations

import hashlib
import hmac

from ..core.text.seals import SECRET_ENV

__all__ = ["SECRET_ENV", "SIG_FIELD", "SIG_PREFIX", "sign", "signature_ok"]

SIG_FIELD = "sig"
SIG_PREFIX = "hmac-sha256:"


def sign(secret: bytes, data: bytes) -> str:
    """The ``sig`` of an entry whose canonical JSON is ``data``."""
    return SIG_PREFIX + hmac.new(secret, data, hashlib.sha256).hexdigest()


def signature_ok(secret: bytes, data: bytes, sig: object) -> bool:
    """Whether ``sig`` is the signature of ``data`` under ``secret`` (constant time)."""
    return isinstance(sig, str) and hmac.compare_digest(sig, sign(secret, data))
