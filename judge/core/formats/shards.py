"""Shards of a suite: a deterministic partition of its cases by a stable hash of the case id.

``--shard I/N`` keeps the cases whose id hashes to shard I of N (1-based). The hash is
SHA-256 of the id's UTF-8 bytes, so the partition is the same on every machine, Python
version and run, whatever the order of the cases in the file, and adding a case never
moves another one to a different shard.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

__all__ = ["MAX_SHARDS", "Shard", "shard_of"]

MAX_SHARDS = 1024


def shard_of(case_id: str, count: int) -> int:
    """The shard (1..``count``) that case ``case_id`` belongs to."""
    if count < 1:
        raise ValueError("a suite has at least one shard")
    digest = hashlib.sha256(case_id.encode("utf-8")).digest()
    return int.from_bytes(digest[:8], "big") % count + 1


@dataclass(frozen=True)
class Shard:
    """Shard ``index`` of ``count`` (1-based, as CI matrices count)."""

    index: int
    count: int

    def __post_init__(self) -> None:
        if not 1 <= self.count <= MAX_SHARDS:
            raise ValueError(f"the shard count must be 1..{MAX_SHARDS}, not {self.count}")
        if not 1 <= self.index <= self.count:
            raise ValueError(f"shard {self.index} of {self.count}: the index counts from 1 "
                             f"to {self.count}")

    @classmethod
    def parse(cls, text: str) -> Shard:
        """``"2/3"`` → shard 2 of 3; ValueError naming the expected form otherwise."""
        head, sep, tail = text.strip().partition("/")
        if not sep or not head.strip().isdigit() or not tail.strip().isdigit():
            raise ValueError(f"shard {text!r} is not of the form I/N (e.g. 2/3)")
        return cls(int(head), int(tail))

    def holds(self, case_id: str) -> bool:
        """Whether case ``case_id`` is judged in this shard."""
        return shard_of(case_id, self.count) == self.index

    def __str__(self) -> str:
        return f"{self.index}/{self.count}"
