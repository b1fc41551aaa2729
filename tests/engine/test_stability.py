"""``--samples K``: the mean or median aggregate, the spread, ``judge judges noise``, the gate."""

from __future__ import annotations

import json
import shutil
from collections import defaultdict
from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest
import yaml
from conftest import EXAMPLE_SUITE, run_judge

from judge.app.judges.comparing import judge_results
from judge.app.runs.diffing import run_stability
from judge.app.runs.gate import headline_results
from judge.app.workspace.workspace import Workspace
from judge.core.formats.models import AdvisoryScore
from judge.core.scoring.exact import round_half_up
from judge.core.scoring.scoring import score_case
from judge.core.stats.agreement import judged_cases
from judge.core.text.errors import UsageError
from judge.system.resources import load_rubric

RANDOM = "hosted_vllm/fake-random"
FIXED = "hosted_vllm/fake-judge"


def _run(workspace: Path, url: str, model: str, *extra: str) -> tuple[int, dict[str, Any], str]:
    if not (workspace / "suite.yaml").exists():
        shutil.copy(EXAMPLE_SUITE, workspace / "suite.yaml")
    proc = run_judge(["run", "suite.yaml", "--model", model, "--api-base", f"{url}/v1",
                      "--samples", "3", "--json", *extra], workspace)
    payload = json.loads(proc.stdout) if proc.stdout.strip() else {}
    return proc.returncode, payload, proc.stderr


def _grouped(payload: dict[str, Any]) -> dict[str, dict[int, dict[str, Any]]]:
    """case id -> sample -> result (judged cases only; -1 is the aggregate)."""
    out: dict[str, dict[int, dict[str, Any]]] = defaultdict(dict)
    for case in payload["cases"]:
        if case["judge"]:
            out[case["id"]][case["judge"]["sample"]] = case
    return out


def _median(values: list[int]) -> int:
    ordered = sorted(values)
    return ordered[1] if len(ordered) == 3 else round_half_up(
        Fraction(ordered[len(ordered) // 2 - 1] + ordered[len(ordered) // 2], 2))


def test_samples_aggregate_is_the_median_and_keeps_the_spread(fake_server: Any,
                                                              workspace: Path) -> None:
    code, payload, err = _run(workspace, fake_server.base_url, RANDOM, "--aggregate", "median")
    assert code == 0, err
    assert payload["run"]["settings"]["sampleAggregate"] == "median"
    grouped = _grouped(payload)
    assert grouped and fake_server.stats()["requests"] == 3 * len(grouped)
    unstable = set()
    for case_id, samples in grouped.items():
        assert set(samples) == {-1, 0, 1, 2}, case_id
        agg = samples[-1]
        assert agg["judge"]["aggregate"] == "median"
        assert agg["judge"]["members"] == [f"{RANDOM}#0", f"{RANDOM}#1", f"{RANDOM}#2"]
        assert [samples[s]["judge"]["seed"] for s in range(3)] == [42, 43, 44]
        per_sample = [{c["category"]: c for c in samples[s]["categoryScores"]} for s in range(3)]
        for cat in agg["categoryScores"]:
            ai = [p[cat["category"]]["aiScore"] for p in per_sample]
            final = [p[cat["category"]]["finalScore"] for p in per_sample]
            assert cat["aiScore"] == _median(ai), (case_id, cat["category"], ai)
            assert cat["spread"] == max(ai) - min(ai)
            assert cat["finalSpread"] == max(final) - min(final)
        overall = [samples[s]["overallScore"] for s in range(3)]
        assert agg["spread"] == max(overall) - min(overall)
        if len({samples[s]["band"] for s in range(3)}) > 1:
            unstable.add(case_id)
    # The headline is the aggregate: one result per case.
    assert payload["summary"]["cases"] == len({c["id"] for c in payload["cases"]})
    # The random judge really varies, so some case must change band across samples.
    assert unstable

    report = run_stability(Workspace.open(workspace, env={}),
                           payload["run"]["id"]).public().model_dump(mode="json")
    assert {r["id"] for r in report["unstable"]} == unstable
    assert report["cases"] == len(grouped)
    assert report["stable"] == len(grouped) - len(unstable)
    for row in report["unstable"]:
        samples = grouped[row["id"]]
        assert row["bands"] == [samples[s]["band"] for s in range(3)]
        assert row["overall"] == [samples[s]["overallScore"] for s in range(3)]
    spreads = sorted(grouped[c][-1]["spread"] for c in grouped)
    assert report["medianSpread"] == float(_median_fraction(spreads))

    shown = run_judge(["judges", "noise", payload["run"]["id"], "--json"], workspace)
    assert shown.returncode == 0, shown.stderr
    assert json.loads(shown.stdout)["stability"] == report
    median = f"{report['medianSpread']:g}"
    stable = (f"{len(grouped) - len(unstable)} of {len(grouped)} cases stable; "
              f"median spread {median} points")
    human = run_judge(["judges", "noise", payload["run"]["id"]], workspace)
    assert human.returncode == 0, human.stderr
    text = " ".join(human.stdout.split())
    assert stable in text and f"`--detail` lists the {len(unstable)} other" in text
    assert not any(case in text for case in unstable)  # the detail is behind --detail
    detail = run_judge(["judges", "noise", payload["run"]["id"], "--detail"], workspace)
    assert stable in " ".join(detail.stdout.split())
    assert all(case in detail.stdout for case in unstable)


def test_samples_aggregate_is_the_mean_by_default(fake_server: Any, workspace: Path) -> None:
    """As the published meta-evaluations average n samples; recorded in the run."""
    code, payload, err = _run(workspace, fake_server.base_url, RANDOM)
    assert code == 0, err
    assert payload["run"]["settings"]["sampleAggregate"] == "mean"
    differs = 0
    for case_id, samples in _grouped(payload).items():
        agg = samples[-1]
        assert agg["judge"]["aggregate"] == "mean"
        per_sample = [{c["category"]: c for c in samples[s]["categoryScores"]} for s in range(3)]
        for cat in agg["categoryScores"]:
            ai = [p[cat["category"]]["aiScore"] for p in per_sample]
            assert cat["aiScore"] == round_half_up(Fraction(sum(ai), 3)), (case_id, ai)
            differs += cat["aiScore"] != _median(ai)
    assert differs  # the random judge's samples tell the mean from the median
    # The gate and agreement read the same aggregate of each case.
    workspace_ = Workspace.open(workspace, env={})
    with workspace_.open_store() as store:
        run = store.get_run(payload["run"]["id"])
        gated = {r.id: r.overall_score for r in headline_results(store, run)
                 if r.judged_by == "llm"}
        results = list(store.iter_results(run.id))
    agreed = judged_cases(judge_results(results, RANDOM))
    assert gated == {cid: r.overall_score for cid, r in agreed.items()}
    assert {r.judge.aggregate for r in agreed.values() if r.judge} == {"mean"}


def _median_fraction(values: list[int]) -> Fraction:
    mid = len(values) // 2
    if len(values) % 2:
        return Fraction(values[mid])
    return Fraction(round_half_up(Fraction(values[mid - 1] + values[mid], 2) * 100), 100)


def test_fixed_judge_answers_alike_across_seeds(fake_server: Any, workspace: Path) -> None:
    # The fake judge's answer depends on the model, messages and schema, not on the request
    # seed: its three samples are three distinct (paid, separately cached) requests with
    # identical answers, so every case is stable with a spread of 0.
    code, payload, err = _run(workspace, fake_server.base_url, FIXED)
    assert code == 0, err
    grouped = _grouped(payload)
    assert fake_server.stats()["requests"] == 3 * len(grouped)
    for samples in grouped.values():
        assert samples[-1]["spread"] == 0
        assert all(c["spread"] == 0 for c in samples[-1]["categoryScores"])
        assert samples[-1]["overallScore"] == samples[0]["overallScore"]
    report = run_stability(Workspace.open(workspace, env={}), payload["run"]["id"],
                           keep_all=True).public().model_dump(mode="json")
    assert len(report["judged"]) == len(grouped)
    assert report["unstable"] == [] and report["stable"] == report["cases"] == len(grouped)
    assert report["medianSpread"] == 0.0


def test_stability_needs_samples(fake_server: Any, workspace: Path) -> None:
    shutil.copy(EXAMPLE_SUITE, workspace / "suite.yaml")
    proc = run_judge(["run", "suite.yaml", "--model", FIXED, "--api-base",
                      f"{fake_server.base_url}/v1", "--json"], workspace)
    run_id = json.loads(proc.stdout)["run"]["id"]
    with pytest.raises(UsageError, match="--samples"):
        run_stability(Workspace.open(workspace, env={}), run_id)
    proc = run_judge(["judges", "noise", run_id], workspace)
    assert proc.returncode == 2 and "--samples" in proc.stderr


def _overall_after(case: dict[str, Any], drop: int) -> int:
    """The aggregate's overall once every deterministic signal falls by ``drop``."""
    rubric = load_rubric("task-evaluation")
    det = {c["category"]: max(0, c["deterministicScore"] - drop) for c in case["categoryScores"]}
    advisory = {c["category"]: AdvisoryScore(score=c["aiScore"]) for c in case["categoryScores"]}
    score = score_case(rubric, det, advisory)
    assert score.overall_score is not None
    return score.overall_score


def test_gate_reports_a_drop_within_the_measured_spread_as_noise(fake_server: Any,
                                                                 workspace: Path) -> None:
    code, first, err = _run(workspace, fake_server.base_url, RANDOM)
    assert code == 0, err
    assert first["baseline"]["baselineRecorded"] is True
    baseline = json.loads((workspace / "baselines" /
                           f"{first['run']['suite']}.json").read_text())
    grouped = _grouped(first)
    for case_id, samples in grouped.items():
        assert baseline["cases"][case_id]["spread"] == samples[-1]["spread"]
        assert baseline["cases"][case_id]["overallScore"] == samples[-1]["overallScore"]
    # The noisiest case whose deterministic signals leave room to fall beyond its noise.
    limit = 5

    def room(case_id: str) -> bool:
        agg = grouped[case_id][-1]
        return agg["spread"] >= 1 and all(
            c["deterministicScore"] is not None for c in agg["categoryScores"]) and \
            agg["overallScore"] - _overall_after(agg, 100) > limit + agg["spread"]

    candidates = [c for c in grouped if room(c)]
    assert candidates, "the random judge should spread some case by a few points"
    victim = max(candidates, key=lambda c: grouped[c][-1]["spread"])
    agg = grouped[victim][-1]
    spread, before = agg["spread"], agg["overallScore"]
    drops = {k: before - _overall_after(agg, k) for k in range(0, 101)}
    within = next(k for k, d in drops.items() if limit < d <= limit + spread)
    beyond = next(k for k, d in drops.items() if d > limit + spread)

    suite_file = workspace / "suite.yaml"
    original = yaml.safe_load(suite_file.read_text())

    def lower(k: int) -> None:
        data = json.loads(json.dumps(original))
        case = next(c for c in data["cases"] if c["id"] == victim)
        case["deterministic"] = {n: max(0, v - k) for n, v in case["deterministic"].items()}
        suite_file.write_text(yaml.safe_dump(data, sort_keys=False))

    # The signals are not in the prompt: the re-runs replay the same samples from the cache.
    lower(within)
    requests = fake_server.stats()["requests"]
    code, second, err = _run(workspace, fake_server.base_url, RANDOM, "--no-check")
    assert code == 0, err
    assert fake_server.stats()["requests"] == requests
    proc = run_judge(["check", second["run"]["id"], "--json"], workspace)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    verdict = json.loads(proc.stdout)
    assert verdict["hasRegression"] is False
    assert verdict["noise"] == [victim]
    assert f"within the judge's measured noise of ±{spread} points" in \
        verdict["noiseReasons"][0]
    human = run_judge(["check", second["run"]["id"], "--detail"], workspace)
    assert human.returncode == 0
    assert "measured noise" in " ".join(human.stdout.split())

    lower(beyond)
    code, third, err = _run(workspace, fake_server.base_url, RANDOM, "--no-check")
    assert code == 0, err
    proc = run_judge(["check", third["run"]["id"], "--json"], workspace)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    verdict = json.loads(proc.stdout)
    assert verdict["regressedCases"] == [victim] and verdict["noise"] == []
    # And `judge run` itself gates the same way.
    code, _fourth, err = _run(workspace, fake_server.base_url, RANDOM)
    assert code == 1, err
