"""A pair suite given to `judge run` names `judge judges pairwise`; the suite index lists it."""

from __future__ import annotations

import shutil
from pathlib import Path

from conftest import ROOT, run_judge

from judge.app.workspace.suites_index import SuiteIndex
from judge.app.workspace.workspace import Workspace

PAIRS = ROOT / "examples" / "pairwise" / "suite.yaml"


def test_judge_run_on_a_pair_suite_names_judge_pairwise(tmp_path: Path) -> None:
    shutil.copy(PAIRS, tmp_path / "pairs.yaml")
    proc = run_judge(["run", "pairs.yaml", "--offline"], tmp_path)
    assert proc.returncode == 2, proc.stderr
    assert "it is judged by `judge judges pairwise`, not `judge run`" in proc.stderr
    assert "fix: run `judge judges pairwise " in proc.stderr
    assert "pairs.yaml --model MODEL`" in proc.stderr
    assert "allowed top-level keys" not in proc.stderr
    assert not (tmp_path / "baselines").exists()


def test_the_suite_index_lists_a_pair_suite_without_an_error(tmp_path: Path) -> None:
    (tmp_path / "suites").mkdir()
    shutil.copy(PAIRS, tmp_path / "suites" / "pairs.yaml")
    shutil.copy(ROOT / "examples" / "task-evaluation" / "suite.yaml",
                tmp_path / "suites" / "task.yaml")
    entries = {e.path.name: e for e in SuiteIndex(Workspace.open(tmp_path, env={})).entries()}
    pairs = entries["pairs.yaml"]
    assert (pairs.id, pairs.kind, pairs.error, pairs.cases) == ("pairwise-example", "pairwise",
                                                                None, 6)
    assert entries["task.yaml"].kind == "rubric" and entries["task.yaml"].error is None
