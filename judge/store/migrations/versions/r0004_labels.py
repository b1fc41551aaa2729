"""People's labels (the review page): a table of their own.

Revision ID: 0004
Revises: 0003

Additive (a new table): an older judgeflow still reads the store, so it is applied
automatically when a store is opened.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

__all__ = ["branch_labels", "depends_on", "down_revision", "downgrade", "revision", "upgrade"]

revision = "0004"
down_revision: str | None = "0003"
branch_labels: str | None = None
depends_on: str | None = None


def upgrade() -> None:
    """Create ``labels``: one row per (suite, case, category, reviewer)."""
    op.create_table(
        "labels",
        sa.Column("suite", sa.String(255), primary_key=True),
        sa.Column("case_id", sa.String(255), primary_key=True),
        sa.Column("category", sa.String(255), primary_key=True),
        sa.Column("reviewer", sa.String(255), primary_key=True),
        sa.Column("run_id", sa.String(255), nullable=True),
        sa.Column("labelled_at", sa.String(64), nullable=False),
        sa.Column("label_json", sa.Text, nullable=False),
        sa.Column("format_version", sa.Integer, nullable=False),
    )


def downgrade() -> None:
    """Drop ``labels``."""
    op.drop_table("labels")
