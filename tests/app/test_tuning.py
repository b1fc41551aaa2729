"""The tuning loop on a 50-case suite: a one-word template edit re-judges exactly the 50
cases, an unchanged re-run judges none, and a weight change costs no call at all."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from typing import Any

import yaml
from conftest import run_judge

from judge.app.runs.rescoring import rescore_run
from judge.app.runs.stored import show_run
from judge.app.workspace.fixtures import generate_cases, suite_to_yaml
from judge.app.workspace.workspace import Workspace
from judge.system.resources import load_rubric, shipped_dir

MODEL = "hosted_vllm/fake-judge"
COUNT = 50


def _suite(workspace: Path) -> Path:
    suite = generate_cases("tuning-loop", COUNT, rubric=load_rubric("task-evaluation"))
    assert len(suite.cases) == COUNT
    assert all(c.judged_by == "llm" for c in suite.cases)  # every case reaches the judge
    path = workspace / "suite.yaml"
    path.write_text(suite_to_yaml(suite), encoding="utf-8")
    return path


def _run(workspace: Path, url: str, *extra: str) -> dict[str, Any]:
    proc = run_judge(["run", "suite.yaml", "--model", MODEL, "--api-base", f"{url}/v1",
                      "--no-check", "--json", *extra], workspace)
    assert proc.returncode == 0, proc.stderr
    payload: dict[str, Any] = json.loads(proc.stdout)
    return payload


def _copy_templates(workspace: Path) -> Path:
    """The shipped template and every template it includes, into the workspace's prompts/."""
    shipped = shipped_dir("prompts")
    target = workspace / "prompts"
    target.mkdir()
    root = shipped / "judge.md.j2"
    shutil.copy(root, target / root.name)
    for name in re.findall(r'{%-?\s*include\s+"([^"]+)"', root.read_text(encoding="utf-8")):
        shutil.copy(shipped / name, target / name)
    return target / root.name


def test_one_word_edit_rejudges_all_50_and_a_weight_change_costs_nothing(
        fake_server: Any, workspace: Path) -> None:
    _suite(workspace)
    cold = _run(workspace, fake_server.base_url)
    assert fake_server.stats()["requests"] == COUNT
    totals = cold["run"]["totals"]
    assert (totals["judgments"], totals["judgedAnew"], totals["savedCalls"]) == (COUNT, COUNT, 0)

    # Edit one word of the shipped template, as a workspace override.
    template = _copy_templates(workspace)
    text = template.read_text(encoding="utf-8")
    assert text.count("evaluation pipeline") == 1
    template.write_text(text.replace("evaluation pipeline", "evaluation workflow"),
                        encoding="utf-8")
    edited = _run(workspace, fake_server.base_url)
    assert fake_server.stats()["requests"] == 2 * COUNT          # exactly 50 new calls
    assert edited["run"]["templateHash"] != cold["run"]["templateHash"]
    totals = edited["run"]["totals"]
    assert (totals["judgments"], totals["judgedAnew"], totals["cacheHits"]) == (COUNT, COUNT, 0)

    # Unchanged: every judgment comes from the cache, and the run says what that saved.
    proc = run_judge(["run", "suite.yaml", "--model", MODEL, "--api-base",
                      f"{fake_server.base_url}/v1", "--no-check"], workspace)
    assert proc.returncode == 0, proc.stderr
    assert fake_server.stats()["requests"] == 2 * COUNT          # 0 new calls
    assert (f"cache: {COUNT} of {COUNT} judgments reused (saved {COUNT} calls), "
            f"0 judged anew") in proc.stdout
    warm = _run(workspace, fake_server.base_url)
    assert fake_server.stats()["requests"] == 2 * COUNT
    totals = warm["run"]["totals"]
    assert (totals["judgedAnew"], totals["savedCalls"], totals["calls"]) == (0, COUNT, 0)

    # A rubric that changes only a category weight: re-scoring the stored run makes no call.
    data = yaml.safe_load((shipped_dir("rubrics") / "task-evaluation.yaml").read_text())
    weights = {c["id"]: c["weight"] for c in data["categories"]}
    assert weights == {"agentPerformance": 0.30, "taskOutcomeQuality": 0.45,
                       "processCompliance": 0.25}
    for cat in data["categories"]:
        cat["weight"] = {"agentPerformance": 0.50, "taskOutcomeQuality": 0.25,
                         "processCompliance": 0.25}[cat["id"]]
    tuned = workspace / "tuned.yaml"
    tuned.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    judge_ws = Workspace.open(workspace, env={})
    rescored = rescore_run(judge_ws, warm["run"]["id"], str(tuned)).public()
    assert fake_server.stats()["requests"] == 2 * COUNT          # 0 calls
    assert rescored["modelCalls"] == 0
    assert rescored["casesMoved"] > 0
    assert rescored["summary"]["meanOverall"] != warm["summary"]["meanOverall"]

    # Weights are not in the prompt (the template prints categories' ids and definitions,
    # never weights), so judging the suite under the tuned rubric is all cache hits too.
    rerun = _run(workspace, fake_server.base_url, "--rubric", str(tuned))
    assert fake_server.stats()["requests"] == 2 * COUNT          # 0 calls
    totals = rerun["run"]["totals"]
    assert (totals["calls"], totals["judgedAnew"], totals["cacheHits"]) == (0, 0, COUNT)
    assert rerun["run"]["rubricHash"] != warm["run"]["rubricHash"]
    # And it gives exactly the re-scored run's scores.
    shown = {c.id: c.overall_score for c in show_run(judge_ws, rescored["run"]["id"]).cases}
    assert shown == {c["id"]: c["overallScore"] for c in rerun["cases"]}
    assert rerun["summary"]["meanOverall"] == rescored["summary"]["meanOverall"]
