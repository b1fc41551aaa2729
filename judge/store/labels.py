"""People's labels in the run store: one row per (suite, case, category, reviewer).

A table of its own (``labels``, revision 0004) beside the runs; the label's canonical JSON
is the source of truth, the other columns are copies for finding it. Saving a label
replaces the reviewer's earlier label of that category (the last word wins), so importing
a labels file twice leaves the table as once.

Labels decide calibrations and agreement, so each row is sealed as the run store's rows are
(``seal``, revision 0005; :mod:`judge.store.seal`) over its key and its value: a read refuses
a label whose seal does not verify, or that has none under the team secret.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, Final

from sqlalchemy import Column, Integer, MetaData, String, Table, Text, delete, insert, select
from sqlalchemy.exc import SQLAlchemyError

from ..core.formats.labels import Label
from ..core.text.canonical import canonical_json
from ..core.text.errors import StoreError
from .seal import Damage

if TYPE_CHECKING:  # runs.py defines this table on its metadata: no import at run time
    from .runs import RunStore

__all__ = ["LABELS_TABLE", "DamagedLabelError", "LabelStore", "define_labels"]

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
        Column("seal", String(128), nullable=True),
    )


_table = define_labels(MetaData())
_READ = (_table.c.suite, _table.c.case_id, _table.c.category, _table.c.reviewer,
         _table.c.label_json, _table.c.format_version, _table.c.seal)
"""What a read of a label row takes: its key, its value and format, its seal."""
_FIX = ("import the suite's labels file again (`judge review RUN --import FILE`), or label "
        "the case again on the review page")


class DamagedLabelError(StoreError):
    """A stored label whose seal or copies do not verify: it is not used (exit code 2)."""

    def __init__(self, url: str, damage: Damage) -> None:
        self.damage = damage
        super().__init__(f"run store {url}: {damage.sentence()}; it is not used\n"
                         f"  fix: {_FIX}")


def _damage(row: tuple[Any, ...], why: str) -> Damage:
    suite, case, category, reviewer = (str(v) for v in row[:4])
    return Damage("", case, "", 0, why,
                  label=f"suite {suite!r}, case {case!r}, {category}, reviewer {reviewer!r}")


class LabelStore:
    """The labels of a run store (which must be at revision 0004 or later)."""

    def __init__(self, store: RunStore) -> None:
        self._engine = store.engine
        self._url = store.url
        self._sealer = store.sealer

    def save(self, labels: Iterable[Label]) -> int:
        """Write ``labels``, each replacing that reviewer's label; returns how many changed."""
        changed = 0
        try:
            with self._engine.begin() as conn:
                for lb in labels:
                    doc = canonical_json(lb.model_dump(mode="json"))
                    seal = self._sealer.seal((*lb.key(), doc, lb.version))  # key, value, format
                    where = ((_table.c.suite == lb.suite) & (_table.c.case_id == lb.case)
                             & (_table.c.category == lb.category)
                             & (_table.c.reviewer == lb.reviewer))
                    old = conn.execute(select(_table.c.label_json, _table.c.seal)
                                       .where(where)).first()
                    if old is not None and tuple(old) == (doc, seal):
                        continue
                    conn.execute(delete(_table).where(where))
                    conn.execute(insert(_table).values(
                        suite=lb.suite, case_id=lb.case, category=lb.category,
                        reviewer=lb.reviewer, run_id=lb.run, labelled_at=lb.at,
                        label_json=doc, format_version=lb.version, seal=seal))
                    if old is None or old[0] != doc:  # a new seal alone is no new label
                        changed += 1
        except SQLAlchemyError as exc:
            raise StoreError(f"run store {self._url}: cannot save labels: "
                             f"{type(exc).__name__}") from None
        return changed

    def of_suite(self, suite: str) -> list[Label]:
        """Every label of ``suite``, sorted by case, category and reviewer.

        DamagedLabelError (exit 2) for the first that does not verify: none is used.
        """
        query = (select(*_READ).where(_table.c.suite == suite)
                 .order_by(_table.c.case_id, _table.c.category, _table.c.reviewer))
        labels = []
        for row in self._rows(query):
            label, why = self._checked(row)
            if label is None:
                raise DamagedLabelError(self._url, _damage(row, why or ""))
            labels.append(label)
        return labels

    def verify(self) -> tuple[list[Damage], int, int]:
        """Check every label row: (damaged rows, rows checked, unsealed rows)."""
        rows = self._rows(select(*_READ).order_by(*_READ[:4]))
        damaged = [_damage(row, why) for row in rows
                   if (why := self._checked(row)[1]) is not None]
        return damaged, len(rows), sum(row[-1] is None for row in rows)

    def _rows(self, query: Any) -> list[tuple[Any, ...]]:
        try:
            with self._engine.connect() as conn:
                return [tuple(row) for row in conn.execute(query)]
        except SQLAlchemyError as exc:
            raise StoreError(f"run store {self._url}: cannot read labels: "
                             f"{type(exc).__name__}") from None

    def _checked(self, row: tuple[Any, ...]) -> tuple[Label | None, str | None]:
        """The row's label once its seal and copies verify, else None and why."""
        suite, case, category, reviewer, doc, version, seal = row
        why = self._sealer.problem((suite, case, category, reviewer, doc, int(version)), seal)
        if why is not None:
            return None, why
        try:
            label = Label.model_validate_json(doc)
        except ValueError:  # pydantic's ValidationError: a value that no longer parses
            return None, "its stored value does not parse"
        if label.key() != (suite, case, category, reviewer):
            return None, "its suite, case, category or reviewer columns disagree with its value"
        return label, None
