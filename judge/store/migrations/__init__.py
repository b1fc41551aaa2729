"""The run store's schema, versioned with Alembic: find a store's revision, upgrade it.

The revisions live in ``versions/`` (package data of the wheel); Alembic's public commands
run them through ``env.py`` on the store's own connection. A store made before
migrations existed (the tables, no ``alembic_version``) is at the first revision and is
stamped so. Opening a store upgrades it automatically when every pending revision is
*additive* (new tables, columns, indexes: an older judgeflow still reads it); anything else
waits for ``judge runs upgrade``. A store at a revision this code does not know was made by
a newer judgeflow and is refused, never guessed at.

Alembic (~0.3 s to import) is loaded only when an existing schema must change: opening a
store at the head revision reads one row with plain SQLAlchemy, and an empty SQLite store is
made at the head from the store's own table definitions and stamped (:func:`create_head`;
a test holds it to the schema the revisions build).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Final

from sqlalchemy import Connection, MetaData, inspect, text

__all__ = [
    "HEAD",
    "LEGACY",
    "REVISIONS",
    "STORE_FORMAT_VERSION",
    "SchemaState",
    "create_head",
    "pending",
    "schema_state",
    "upgrade",
]

REVISIONS: Final[tuple[tuple[str, bool], ...]] = (
    ("0001", True),  # the schema of the releases before migrations (runs, case_results)
    ("0002", True),  # runs.run_group, shard_index, shard_count: sharded runs
    ("0003", True),  # runs.seal, case_results.seal: sealed rows (judge.store.seal)
    ("0004", True),  # labels: people's labels from the review page
    ("0005", True),  # labels.seal: sealed labels (judge.store.seal)
)
"""Every revision in order, with whether it is additive (safe to apply on open)."""

STORE_FORMAT_VERSION: Final = 1
"""Written in every row of the store; a row from a newer format is refused, not misread."""

HEAD: Final = REVISIONS[-1][0]
LEGACY: Final = REVISIONS[0][0]
"""The revision of a store written before migrations: the tables and no version table."""

_SCRIPTS: Final = Path(__file__).resolve().parent


@dataclass(frozen=True)
class SchemaState:
    """Where a store's schema is: its revision (None: empty database), whether it is known."""

    revision: str | None
    stamped: bool
    """False for an empty database or a store from before migrations."""

    @property
    def known(self) -> bool:
        """The revision is one this judgeflow knows (None too: an empty store is created)."""
        return self.revision is None or any(r == self.revision for r, _ in REVISIONS)

    @property
    def current(self) -> bool:
        """At the head revision: nothing to do."""
        return self.revision == HEAD and self.stamped


def schema_state(conn: Connection) -> SchemaState:
    """Read the store's revision (one query when it is stamped)."""
    names = set(inspect(conn).get_table_names())
    if "alembic_version" in names:
        rows = [str(r[0]) for r in conn.execute(text("SELECT version_num FROM alembic_version"))]
        if len(rows) == 1:
            return SchemaState(revision=rows[0], stamped=True)
        if len(rows) > 1:
            # Branches are never made here: several heads mean someone else's migrations.
            return SchemaState(revision=",".join(sorted(rows)), stamped=True)
    if "runs" in names:
        return SchemaState(revision=LEGACY, stamped=False)
    return SchemaState(revision=None, stamped=False)


def pending(state: SchemaState) -> list[tuple[str, bool]]:
    """The revisions still to apply, in order, each with whether it is additive."""
    if state.revision is None:
        return list(REVISIONS)
    names = [r for r, _ in REVISIONS]
    at = names.index(state.revision)
    return list(REVISIONS[at + 1:])


def create_head(conn: Connection, metadata: MetaData) -> None:
    """Make an empty database's tables at the head revision and stamp it, without Alembic.

    ``metadata``: the tables as the store defines them at the head; the version table is
    Alembic's own, so a later revision applies to this store as to a migrated one.
    """
    metadata.create_all(conn)
    # IF NOT EXISTS: an empty version table (no revision yet) is stamped, not made twice.
    conn.execute(text("CREATE TABLE IF NOT EXISTS alembic_version (version_num VARCHAR(32) "
                      "NOT NULL, CONSTRAINT alembic_version_pkc PRIMARY KEY (version_num))"))
    conn.execute(text("INSERT INTO alembic_version (version_num) VALUES (:v)"), {"v": HEAD})


def upgrade(conn: Connection, state: SchemaState, target: str = HEAD) -> None:
    """Apply the pending revisions up to ``target`` inside the caller's transaction.

    A legacy store is stamped at :data:`LEGACY` first. The caller holds the write lock
    (SQLite ``BEGIN IMMEDIATE``, a PostgreSQL advisory lock) and has re-read ``state``
    under it, so two processes opening one new store never both migrate it.
    """
    # Alembic is imported here, not at the top: see the module docstring.
    from alembic import command
    from alembic.config import Config

    config = Config()
    config.set_main_option("script_location", str(_SCRIPTS))
    config.attributes["connection"] = conn  # what env.py migrates (its own transaction: none)
    if state.revision == LEGACY and not state.stamped:
        command.stamp(config, LEGACY)
    command.upgrade(config, target)
