"""``judge diff RUN_A RUN_B``: what moved, case by case, and what differs between the runs."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

from conftest import EXAMPLE_SUITE, run_judge

from judge.resources import shipped_dir

MODEL = "hosted_vllm/fake-judge"


def _run(workspace: Path, url: str, *extra: str) -> dict[str, Any]:
    proc = run_judge(["run", "suite.yaml", "--model", MODEL, "--api-base", f"{url}/v1",
                      "--no-check", "--json", *extra], workspace)
    assert proc.returncode == 0, proc.stderr
    payload: dict[str, Any] = json.loads(proc.stdout)
    return payload


def _diff(workspace: Path, a: str, b: str, *extra: str) -> dict[str, Any]:
    proc = run_judge(["diff", a, b, "--json", *extra], workspace)
    assert proc.returncode == 0, proc.stderr
    payload: dict[str, Any] = json.loads(proc.stdout)
    return payload


def _ai(payload: dict[str, Any]) -> dict[str, dict[str, int]]:
    return {c["id"]: {s["category"]: s["aiScore"] for s in c["categoryScores"]}
            for c in payload["cases"] if c["judgedBy"] == "llm"}


def test_diff_after_a_template_edit_lists_what_moved(fake_server: Any, workspace: Path) -> None:
    shutil.copy(EXAMPLE_SUITE, workspace / "suite.yaml")
    before = _run(workspace, fake_server.base_url)
    prompts = workspace / "prompts"
    prompts.mkdir()
    for name in ("judge.md.j2", "evidence.md.j2"):
        shutil.copy(shipped_dir("prompts") / name, prompts / name)
    template = prompts / "judge.md.j2"
    template.write_text(template.read_text().replace("evaluation pipeline",
                                                     "evaluation workflow"))
    after = _run(workspace, fake_server.base_url)
    a_id, b_id = before["run"]["id"], after["run"]["id"]

    report = _diff(workspace, a_id, b_id)
    assert report["a"]["id"] == a_id and report["b"]["id"] == b_id
    assert set(report["differs"]) == {"templateHash"}
    assert report["differs"]["templateHash"] == [before["run"]["templateHash"],
                                                 after["run"]["templateHash"]]
    ai_a, ai_b = _ai(before), _ai(after)
    moved = {case_id for case_id in ai_a if ai_a[case_id] != ai_b[case_id]}
    assert moved  # the fake judge answers differently to a different prompt
    listed = {c["id"] for c in report["cases"]}
    assert moved <= listed
    by_a = {c["id"]: c for c in before["cases"]}
    by_b = {c["id"]: c for c in after["cases"]}
    for case in report["cases"]:
        assert case["changed"] is True
        assert case["overall"] == [by_a[case["id"]]["overallScore"],
                                   by_b[case["id"]]["overallScore"]]
        assert case["band"] == [by_a[case["id"]]["band"], by_b[case["id"]]["band"]]
        for cat in case["categories"]:
            name = cat["category"]
            assert cat["ai"] == [ai_a.get(case["id"], {}).get(name),
                                 ai_b.get(case["id"], {}).get(name)]
    # Deterministic cases never reach the judge, so they cannot move.
    assert not listed & {c["id"] for c in before["cases"] if c["judgedBy"] == "deterministic"}
    assert report["compared"] == len(before["cases"])
    assert report["changed"] == len(report["cases"])

    everything = _diff(workspace, a_id, b_id, "--all")
    assert len(everything["cases"]) == report["compared"]

    human = run_judge(["diff", a_id, b_id], workspace)
    assert human.returncode == 0, human.stderr
    text = " ".join(human.stdout.split())
    assert "templateHash" in text
    assert f"{report['changed']} of {report['compared']} cases changed" in text


def test_identical_runs_have_no_changed_cases(fake_server: Any, workspace: Path) -> None:
    shutil.copy(EXAMPLE_SUITE, workspace / "suite.yaml")
    first = _run(workspace, fake_server.base_url)
    second = _run(workspace, fake_server.base_url)
    report = _diff(workspace, first["run"]["id"], second["run"]["id"])
    assert report["differs"] == {}
    assert report["changed"] == 0 and report["cases"] == []
    assert report["compared"] == len(first["cases"])
    human = run_judge(["diff", first["run"]["id"], second["run"]["id"]], workspace)
    assert human.returncode == 0
    assert "same suite, rubric, template, judges and seed" in human.stdout


def test_diff_of_different_judges_names_the_models(fake_server: Any, workspace: Path) -> None:
    shutil.copy(EXAMPLE_SUITE, workspace / "suite.yaml")
    first = _run(workspace, fake_server.base_url)
    plus = run_judge(["run", "suite.yaml", "--model", "hosted_vllm/fake-judge+15", "--api-base",
                      f"{fake_server.base_url}/v1", "--no-check", "--json"], workspace)
    second = json.loads(plus.stdout)
    report = _diff(workspace, first["run"]["id"], second["run"]["id"])
    assert report["differs"]["models"] == [[MODEL], ["hosted_vllm/fake-judge+15"]]
    assert report["changed"] > 0
