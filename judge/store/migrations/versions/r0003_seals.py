"""Sealed rows: a ``seal`` column on runs and case results (see :mod:`judge.store.seal`).

Revision ID: 0003
Revises: 0002

Additive (two nullable columns): rows written before it have no seal and are read as
unsealed; an older judgeflow still reads the store, so it is applied on open.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

__all__ = ["branch_labels", "depends_on", "down_revision", "downgrade", "revision", "upgrade"]

revision = "0003"
down_revision: str | None = "0002"
branch_labels: str | None = None
depends_on: str | None = None


def upgrade() -> None:
    """Add ``runs.seal`` and ``case_results.seal``."""
    op.add_column("runs", sa.Column("seal", sa.String(128), nullable=True))
    op.add_column("case_results", sa.Column("seal", sa.String(128), nullable=True))


def downgrade() -> None:
    """Drop the two columns."""
    with op.batch_alter_table("case_results") as batch:
        batch.drop_column("seal")
    with op.batch_alter_table("runs") as batch:
        batch.drop_column("seal")
