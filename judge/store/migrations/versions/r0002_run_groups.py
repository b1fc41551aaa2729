"""Sharded runs: a run's group and its shard, as columns to find a group's runs by.

Revision ID: 0002
Revises: 0001

Additive (three nullable columns and an index): an older judgeflow still reads the store,
so it is applied automatically when a store is opened.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

__all__ = ["branch_labels", "depends_on", "down_revision", "downgrade", "revision", "upgrade"]

revision = "0002"
down_revision: str | None = "0001"
branch_labels: str | None = None
depends_on: str | None = None


def upgrade() -> None:
    """Add ``run_group``, ``shard_index``, ``shard_count`` and an index on the group."""
    group = sa.String(255).with_variant(sa.String(255, collation="C"), "postgresql")
    op.add_column("runs", sa.Column("run_group", group, nullable=True))
    op.add_column("runs", sa.Column("shard_index", sa.Integer, nullable=True))
    op.add_column("runs", sa.Column("shard_count", sa.Integer, nullable=True))
    op.create_index("ix_runs_group", "runs", ["run_group", "created_at"])


def downgrade() -> None:
    """Drop the index and the three columns."""
    op.drop_index("ix_runs_group", table_name="runs")
    with op.batch_alter_table("runs") as batch:
        batch.drop_column("shard_count")
        batch.drop_column("shard_index")
        batch.drop_column("run_group")
