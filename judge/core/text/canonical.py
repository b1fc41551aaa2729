"""Canonical JSON and hashing: the one way anything hashed or compared byte-for-byte is written."""

from __future__ import annotations

import hashlib
import json
from typing import Any

__all__ = ["canonical_json", "sha256_hex", "stable_json"]


# One encoder, made once: ``json.dumps`` with these options builds a new JSONEncoder on
# every call (a few microseconds, tens of calls a judgment); ``encode`` keeps no state.
_CANONICAL = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False,
                              allow_nan=False)


def canonical_json(value: Any) -> str:
    """Sorted keys, compact separators, UTF-8 kept as is: equal data gives equal text."""
    return _CANONICAL.encode(value)


def stable_json(value: Any) -> str:
    """Sorted keys and two-space indent, for files people read in a diff (baselines, exports)."""
    return json.dumps(value, sort_keys=True, indent=2, ensure_ascii=False, allow_nan=False) + "\n"


def sha256_hex(value: Any) -> str:
    """sha256 of the canonical JSON of ``value``."""
    return hashlib.sha256(canonical_json(value).encode("utf-8")).hexdigest()
