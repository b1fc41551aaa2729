"""The run store as released before migrations: ``runs`` and ``case_results``.

Revision ID: 0001
Revises: (none)

On PostgreSQL the key columns sort bytewise (collation "C"), as SQLite's do, so every
listing comes out in the same order on both engines.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

__all__ = ["branch_labels", "depends_on", "down_revision", "downgrade", "revision", "upgrade"]

revision = "0001"
down_revision: str | None = None
branch_labels: str | None = None
depends_on: str | None = None


def _key(length: int) -> sa.types.TypeEngine[str]:
    return sa.String(length).with_variant(sa.String(length, collation="C"), "postgresql")


def upgrade() -> None:
    """Create the two tables and their indexes."""
    op.create_table(
        "runs",
        sa.Column("id", _key(255), primary_key=True),
        sa.Column("suite", _key(255), nullable=False),
        sa.Column("rubric", sa.String(255), nullable=False),
        sa.Column("rubric_hash", sa.String(128), nullable=False),
        sa.Column("models", sa.Text, nullable=False),
        sa.Column("seed", sa.Integer, nullable=True),
        sa.Column("template_id", sa.String(255), nullable=False),
        sa.Column("template_hash", sa.String(128), nullable=False),
        sa.Column("created_at", _key(64), nullable=False),
        sa.Column("status", sa.String(32), nullable=False),
        sa.Column("info_json", sa.Text, nullable=False),
        sa.Column("format_version", sa.Integer, nullable=False),
    )
    op.create_index("ix_runs_suite_created_at", "runs", ["suite", "created_at"])
    op.create_index("ix_runs_created_at", "runs", ["created_at"])
    op.create_table(
        "case_results",
        sa.Column("run_id", _key(255), sa.ForeignKey("runs.id"), primary_key=True),
        sa.Column("case_id", _key(255), primary_key=True),
        sa.Column("model", _key(255), primary_key=True),
        sa.Column("sample", sa.Integer, primary_key=True),
        sa.Column("status", sa.String(32), nullable=False),
        sa.Column("overall_score", sa.Integer, nullable=True),
        sa.Column("band", sa.String(64), nullable=True),
        sa.Column("passed", sa.Boolean, nullable=True),
        sa.Column("result_json", sa.Text, nullable=False),
        sa.Column("format_version", sa.Integer, nullable=False),
    )


def downgrade() -> None:
    """Drop both tables."""
    op.drop_table("case_results")
    op.drop_table("runs")
