"""People's labels in the run store: one row per (suite, case, category, reviewer).

A table of its own (``labels``, revision 0004) beside the runs; the label's canonical JSON
is the source of truth, the other columns are copies for finding it. Saving a label
replaces the reviewer's earlier label of that category (the last word wins), so importing
a labels file twice leaves the table as once.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Final

from sqlalchemy import Column, Integer, MetaData, String, Table, Text, delete, insert, select
from sqlalchemy.exc import SQLAlchemyError

from ..core.canonical import canonical_json
from ..core.errors import StoreError
from ..core.labels import Label

if TYPE_CHECKING:  # runs.py defines this table on its metadata: no import at run time
    from .runs import RunStore

__all__ = ["LABELS_TABLE", "LabelStore", "define_labels"]

LABELS_TABLE: Final = "labels"


def define_labels(metadata: MetaData) -> Table:
    """The labels table on ``metadata`` (as revision 0004 makes it)."""
    return Table(
        LABELS_TABLE,
        metadata,
        Column("suite", String(255), primary_key=True),
        Column("case_id", String(255), primary_key=True),
        Column("category", String(255), primary_key=True),
        Column("reviewer", String(255), primary_key=True),
        Column("run_id", String(255), nullable=True),
        Column("labelled_at", String(64), nullable=False),
        Column("label_json", Text, nullable=False),
        Column("format_version", Integer, nullable=False),
    )


_table = define_labels(MetaData())


class LabelStore:
    """The labels of a run store (which must be at revision 0004 or later)."""

    def __init__(self, store: RunStore) -> None:
        self._engine = store.engine
        self._url = store.url

    def save(self, labels: Iterable[Label]) -> int:
        """Write ``labels``, each replacing that reviewer's label; returns how many changed."""
        changed = 0
        try:
            with self._engine.begin() as conn:
                for lb in labels:
                    doc = canonical_json(lb.model_dump(mode="json"))
                    where = ((_table.c.suite == lb.suite) & (_table.c.case_id == lb.case)
                             & (_table.c.category == lb.category)
                             & (_table.c.reviewer == lb.reviewer))
                    old = conn.execute(select(_table.c.label_json).where(where)).scalar()
                    if old == doc:
                        continue
                    conn.execute(delete(_table).where(where))
                    conn.execute(insert(_table).values(
                        suite=lb.suite, case_id=lb.case, category=lb.category,
                        reviewer=lb.reviewer, run_id=lb.run, labelled_at=lb.at,
                        label_json=doc, format_version=lb.version))
                    changed += 1
        except SQLAlchemyError as exc:
            raise StoreError(f"run store {self._url}: cannot save labels: "
                             f"{type(exc).__name__}") from None
        return changed

    def of_suite(self, suite: str) -> list[Label]:
        """Every label of ``suite``, sorted by case, category and reviewer."""
        query = (select(_table.c.label_json).where(_table.c.suite == suite)
                 .order_by(_table.c.case_id, _table.c.category, _table.c.reviewer))
        try:
            with self._engine.connect() as conn:
                return [Label.model_validate_json(t) for (t,) in conn.execute(query)]
        except SQLAlchemyError as exc:
            raise StoreError(f"run store {self._url}: cannot read labels: "
                             f"{type(exc).__name__}") from None
