"""The wall clock and run ids: kept out of the pure core, which takes ``now`` as an argument."""

from __future__ import annotations

import secrets
from datetime import UTC, datetime

__all__ = ["new_run_id", "utc_now"]


def utc_now() -> str:
    """The current time as ISO 8601 UTC with microseconds (``2026-11-30T05:11:29.123456Z``)."""
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def new_run_id(now: str) -> str:
    """A run id that sorts by time and does not collide: ``20261130T051129-ea0feb``."""
    stamp = now.replace("-", "").replace(":", "")[:15]
    return f"{stamp}-{secrets.token_hex(3)}"
