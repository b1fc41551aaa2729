"""The replay fast path: a stored entry's turns, checked and parsed without the rest. Pure.

A judgment needs only the turns, but an entry is mostly its prompt (~10 KB). Canonical JSON
sorts keys, so an entry stored by :mod:`judge.cache.disk` reads::

    {"digest":"<64 hex>","format":1,"key":"<key>",…,"turns":[…]}

``digest`` sorts first, so the bytes after it, behind a ``{``, are exactly the canonical
JSON the digest was computed over (:func:`judge.cache.entry.entry_digest`): the digest is
checked by hashing those bytes, without parsing or re-serialising the entry. The turns are
the last member, and ``,"turns":`` cannot occur inside a string (a quote there is escaped).
The slice must parse as exactly one list, so a nested "turns" member fails to parse rather
than being mistaken for it. Anything not laid out so returns None and the caller parses and
checks the whole entry: this module is a shortcut, never a second definition of sound.
"""

from __future__ import annotations

import hashlib
import json

from ..core.formats.turns import CachedTurn
from .entry import CACHE_FORMAT, DIGEST_MISMATCH, turns_ok

__all__ = ["sound_digest", "turns_alone"]
_DIGEST = b'{"digest":"'
_BODY = len(_DIGEST) + 64 + 2  # the digest's hex and its closing '",'
_TURNS = b',"turns":'


def _laid_out(raw: bytes, key: str) -> bool:
    """Whether ``raw`` is laid out as an entry stored under ``key`` is written here."""
    head = b'"format":%d,"key":"%s",' % (CACHE_FORMAT, key.encode("ascii", "replace"))
    return raw.startswith(_DIGEST) and raw[_BODY - 2:_BODY] == b'",' \
        and raw.startswith(head, _BODY) and raw.endswith(b"}")


def _digest_matches(raw: bytes) -> bool:
    digest = hashlib.sha256(b"{")
    digest.update(memoryview(raw)[_BODY:])
    return digest.hexdigest().encode("ascii") == raw[len(_DIGEST):_BODY - 2]


def sound_digest(raw: bytes, key: str) -> str | None:
    """The digest of the entry ``raw`` stored under ``key``, once its bytes check out against it.

    None when the layout is not the canonical one or the digest does not match. The replay
    index binds each record to this digest: a record then answers only for the very entry
    (verdict, turns, meta) it was made from.
    """
    if not _laid_out(raw, key) or not _digest_matches(raw):
        return None
    return raw[len(_DIGEST):_BODY - 2].decode("ascii")


def turns_alone(raw: bytes, key: str) -> tuple[CachedTurn, ...] | str | None:
    """The turns of the entry ``raw`` stored under ``key``, read from the bytes alone.

    A list when the layout is canonical and the digest matches;
    :data:`judge.cache.entry.DIGEST_MISMATCH` when it is laid out so but the digest does not
    match (a miss, never a score); None when the layout is not this one (the caller parses
    the whole entry).
    """
    if not _laid_out(raw, key):
        return None
    at = raw.rfind(_TURNS)
    if at < _BODY + len(b'"format":%d,"key":"",' % CACHE_FORMAT) + len(key):
        return None
    if not _digest_matches(raw):
        return DIGEST_MISMATCH
    try:
        turns = json.loads(raw[at + len(_TURNS):-1].decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        return None
    return tuple([CachedTurn(t) for t in turns]) if turns_ok(turns) else None
