"""`judge runs show` and `judge runs list` print a batch run's stored totals.

Before, a run whose judgments a provider batch answered (14 batch calls, $0.0018 stored)
was shown as "0 model calls ... no paid calls": the lines counted only direct calls.
"""

from __future__ import annotations

from pathlib import Path

from conftest import run_judge

from judge.app.workspace.workspace import Workspace
from judge.core.formats.models import RunInfo, RunTotals

RUN = "20261202T070000-batch1"


def _batch_run(root: Path) -> None:
    root.mkdir(parents=True, exist_ok=True)
    totals = RunTotals(cases=16, scored=16, judgments=14, judged_anew=14, calls=0,
                       prompt_tokens=14_000, completion_tokens=1_400, cost_usd=0.0018,
                       batch_calls=14, batch_cost_usd=0.0018)
    with Workspace.open(root, env={}).open_store(create=True) as store:
        store.create_run(RunInfo(id=RUN, suite="task-evaluation-example",
                                 rubric="task-evaluation", rubric_hash="h",
                                 models=("openai/gpt-4o-mini",), seed=42, temperature=0,
                                 template_id="judge", template_hash="h",
                                 created_at="2026-12-02T07:00:00Z"))
        store.finish_run(RUN, totals=totals, status="complete")


def test_show_and_history_print_the_batch_calls_and_their_cost(tmp_path: Path) -> None:
    _batch_run(tmp_path)
    shown = run_judge(["runs", "show", RUN], tmp_path)
    assert shown.returncode == 0, shown.stderr
    calls = next(line for line in shown.stdout.splitlines() if line.startswith("calls"))
    assert "0 model calls + 14 batch calls ($0.0018)" in calls, calls
    assert "$0.0018" in calls.rsplit(";", 2)[-2] and "no paid calls" not in calls, calls
    history = run_judge(["runs", "list"], tmp_path)
    assert history.returncode == 0, history.stderr
    assert "$0.0018" in history.stdout and "no paid calls" not in history.stdout, \
        history.stdout
