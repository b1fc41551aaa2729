"""A sealed store takes no unsealed row, and a deleted row is damage (judge/store/seal.py).

A complete run's sealed totals count its cases and judgments, so a row deleted after it was
finished is found by the gate (``check_rows``) and ``judge runs verify``; under the team
secret a row whose seal was set to NULL is refused like an edited one; labels rows are
sealed too."""

from __future__ import annotations

import sqlite3
from contextlib import closing
from pathlib import Path

import pytest
from test_store import make_result, make_run

from judge.core.formats.labels import Label
from judge.core.formats.models import CaseResult, RunInfo, RunTotals
from judge.store.labels import DamagedLabelError, LabelStore
from judge.store.runs import RunStore
from judge.store.seal import DamagedRowError

SECRET = "team-secret"


def _sql(path: Path, statement: str, *args: object) -> None:
    with closing(sqlite3.connect(path, isolation_level=None)) as conn:
        conn.execute(statement, args)


def _finished(store: RunStore, results: list[CaseResult], *, cases: int, judgments: int,
              samples: int = 1) -> RunInfo:
    run = make_run().model_copy(update={"samples": samples})
    store.create_run(run)
    store.add_results(run.id, results)
    return store.finish_run(run.id, totals=RunTotals(cases=cases, judgments=judgments),
                            status="complete")


def test_a_deleted_result_row_is_damage_for_the_gate_and_verify(tmp_path: Path) -> None:
    db = tmp_path / "j.db"
    with RunStore(f"sqlite:///{db}") as store:
        run = _finished(store, [make_result(i) for i in range(3)], cases=3, judgments=3)
        store.check_rows(run)  # intact
        assert store.verify()[0] == []
        _sql(db, "DELETE FROM case_results WHERE case_id = 'case-00001'")
        with pytest.raises(DamagedRowError) as err:
            store.check_rows(run)
        assert err.value.damage.run == run.id
        assert "1 of its 3 cases" in str(err.value) and "deleted" in str(err.value)
        (damage,) = store.verify()[0]
        assert damage.rows and damage.run == run.id and "its stored results" in damage.sentence()


def test_a_deleted_sample_aggregate_is_found_by_the_gate(tmp_path: Path) -> None:
    """Without the median row the headline would fall back to one sample: refused."""
    db = tmp_path / "j.db"
    rows = [make_result(i, sample=s) for i in range(2) for s in (-1, 0, 1, 2)]
    with RunStore(f"sqlite:///{db}") as store:
        run = _finished(store, rows, cases=2, judgments=6, samples=3)
        store.check_rows(run)
        _sql(db, "DELETE FROM case_results WHERE case_id = 'case-00000' AND sample = -1")
        with pytest.raises(DamagedRowError, match="1 of its 2 cases' headline results"):
            store.check_rows(run)
        _sql(db, "DELETE FROM case_results WHERE case_id = 'case-00001' AND sample = 2")
        assert "1 of its 6 judgments" in store.verify()[0][0].reason


def test_a_run_that_is_not_complete_or_counted_nothing_is_not_checked(tmp_path: Path) -> None:
    with RunStore(f"sqlite:///{tmp_path / 'j.db'}") as store:
        run = make_run()
        store.create_run(run)
        store.add_results(run.id, [make_result(0)])
        store.check_rows(store.finish_run(run.id, totals=RunTotals(cases=5, judgments=5),
                                          status="interrupted"))
        store.check_rows(make_run().model_copy(update={"status": "complete"}))  # legacy: 0


def test_under_the_secret_an_unsealed_row_is_refused_not_read(tmp_path: Path) -> None:
    db = tmp_path / "j.db"
    with RunStore(f"sqlite:///{db}", secret=SECRET) as store:
        run = _finished(store, [make_result(i) for i in range(2)], cases=2, judgments=2)
    _sql(db, "UPDATE case_results SET seal = NULL WHERE case_id = 'case-00000'")
    with RunStore(f"sqlite:///{db}", secret=SECRET) as store:
        with pytest.raises(DamagedRowError, match="carries no seal"):
            list(store.iter_results(run.id))
        damaged, checked, unsealed = store.verify()
        assert [(d.run, d.case) for d in damaged] == [(run.id, "case-00000")]
        assert (checked, unsealed) == (3, 1)
    with RunStore(f"sqlite:///{db}", secret=SECRET) as store:  # the run row too
        _sql(db, "UPDATE runs SET seal = NULL")
        with pytest.raises(DamagedRowError, match="carries no seal"):
            store.get_run(run.id)


def _label(case: str, score: int) -> Label:
    return Label(suite="task-eval", case=case, category="agentPerformance", reviewer="ana",
                 at="2026-12-06T06:00:00Z", score=score)


@pytest.mark.parametrize("secret", [None, SECRET])
def test_a_label_row_edited_in_the_store_is_refused(tmp_path: Path, secret: str | None) -> None:
    db = tmp_path / "j.db"
    with RunStore(f"sqlite:///{db}", secret=secret) as store:
        assert LabelStore(store).save([_label("case-00000", 40), _label("case-00001", 60)]) == 2
        _sql(db, "UPDATE labels SET label_json = replace(label_json, '\"score\":40', "
                 "'\"score\":90') WHERE case_id = 'case-00000'")
        with pytest.raises(DamagedLabelError, match="case-00000") as err:
            LabelStore(store).of_suite("task-eval")
        assert "fix:" in str(err.value)
        damaged, checked, _ = LabelStore(store).verify()
        assert checked == 2 and [d.case for d in damaged] == ["case-00000"]
        assert damaged[0].label is not None and "does not match" in damaged[0].reason


def test_under_the_secret_an_unsealed_label_is_refused_until_saved_again(tmp_path: Path) -> None:
    db = tmp_path / "j.db"
    with RunStore(f"sqlite:///{db}") as store:  # written without the secret
        LabelStore(store).save([_label("case-00000", 40)])
    _sql(db, "UPDATE labels SET seal = NULL")
    with RunStore(f"sqlite:///{db}") as store:
        assert [lb.score for lb in LabelStore(store).of_suite("task-eval")] == [40]
    with RunStore(f"sqlite:///{db}", secret=SECRET) as store:
        with pytest.raises(DamagedLabelError, match="carries no seal"):
            LabelStore(store).of_suite("task-eval")
        assert LabelStore(store).save([_label("case-00000", 40)]) == 0  # resealed, unchanged
        assert [lb.score for lb in LabelStore(store).of_suite("task-eval")] == [40]
