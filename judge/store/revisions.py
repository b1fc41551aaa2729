"""The run store's schema revisions: names only, so a reader can check a store cheaply.

:mod:`judge.store.migrations` applies them (with SQLAlchemy and Alembic); this module holds no
code, so :mod:`judge.store.reader` can tell a store at the head revision without either.
"""

from __future__ import annotations

from typing import Final

__all__ = ["HEAD", "LEGACY", "REVISIONS", "STORE_FORMAT_VERSION"]

REVISIONS: Final[tuple[tuple[str, bool], ...]] = (
    ("0001", True),  # the schema of the releases before migrations (runs, case_results)
    ("0002", True),  # runs.run_group, shard_index, shard_count: sharded runs
    ("0003", True),  # runs.seal, case_results.seal: sealed rows (judge.store.seal)
    ("0004", True),  # labels: people's labels from the review page
)
"""Every revision in order, with whether it is additive (safe to apply on open)."""

STORE_FORMAT_VERSION: Final = 1
"""Written in every row of the store; a row from a newer format is refused, not misread."""

HEAD: Final = REVISIONS[-1][0]
LEGACY: Final = REVISIONS[0][0]
"""The revision of a store written before migrations: the tables and no version table."""
