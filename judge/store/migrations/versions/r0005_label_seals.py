"""Sealed labels: a ``seal`` column on ``labels`` (see :mod:`judge.store.seal`).

Revision ID: 0005
Revises: 0004

Additive (a nullable column): labels written before it have no seal and are read as
unsealed (refused under the team secret); an older judgeflow still reads the store, so it
is applied on open.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

__all__ = ["branch_labels", "depends_on", "down_revision", "downgrade", "revision", "upgrade"]

revision = "0005"
down_revision: str | None = "0004"
branch_labels: str | None = None
depends_on: str | None = None


def upgrade() -> None:
    """Add ``labels.seal``."""
    op.add_column("labels", sa.Column("seal", sa.String(128), nullable=True))


def downgrade() -> None:
    """Drop it."""
    with op.batch_alter_table("labels") as batch:
        batch.drop_column("seal")
