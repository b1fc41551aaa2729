"""The review page's data of a ``--samples`` run and of a panel: the judge's scores are there.

A case of a run judged K times is headed by the judge's sample aggregate (the run's
``sample_aggregate``), the very result the gate compares, with the samples' spread beside it;
a panel's case by the panel, with each judge's own aggregate as the other judge.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from fractions import Fraction

import pytest
from conftest import EXAMPLE_SUITE, load_fake_server

from judge.app.judges.reviewing import next_cases, review_page_data
from judge.app.runs.gate import run_headline
from judge.app.runs.reporting import ReportRequest, build_report
from judge.app.runs.running import RunRequest, run_suite
from judge.app.workspace.workspace import Workspace
from judge.core.formats.models import CaseResult
from judge.core.scoring.exact import round_half_up

NOISY = "hosted_vllm/fake-judge~8"
"""A fake judge whose answers vary with the request's seed: its samples differ."""
SHIFTED = "hosted_vllm/fake-judge~8+15"


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Workspace, str, str]]:
    """The example suite judged 3 times by one judge, and twice by a panel of two."""
    root = tmp_path_factory.mktemp("review-samples")
    shutil.copy(EXAMPLE_SUITE, root / "suite.yaml")
    fake = load_fake_server().start_in_thread(latency_ms=0, seed=7)
    made = []
    try:
        for models, samples in (([NOISY], 3), ([NOISY, SHIFTED], 2)):
            ws = Workspace.open(root, {"model": models, "samples": samples,
                                       "api_base": f"{fake.base_url}/v1"}, env={})
            report = run_suite(ws, RunRequest(suite=root / "suite.yaml", check=False))
            assert report.run.status == "complete"
            made.append(report.run.id)
    finally:
        fake.stop()
    yield Workspace.open(root, env={}), made[0], made[1]


def _by_sample(ws: Workspace, run_id: str, model: str) -> dict[tuple[str, int], CaseResult]:
    with ws.open_store() as store:
        return {(r.id, r.judge.sample): r for r in store.iter_results(run_id)
                if r.judge is not None and r.judge.model == model}


def test_a_samples_run_shows_the_judges_aggregate_and_its_spread(
        runs: tuple[Workspace, str, str]) -> None:
    ws, run_id, _ = runs
    data = review_page_data(ws, run_id)
    gated = run_headline(ws, run_id)
    assert [c["id"] for c in data["cases"]] == [r.id for r in gated] and len(gated) == 16
    samples = _by_sample(ws, run_id, NOISY)
    judged = [c for c in data["cases"] if (c["id"], 0) in samples]
    assert len(judged) == 14
    for case, result in zip(data["cases"], gated, strict=True):
        assert case["overallScore"] == result.overall_score and case["spread"] == result.spread
        assert case["categories"] == [c.model_dump(mode="json") for c in result.category_scores]
    for case in judged:
        assert case["combined"] == {"method": "mean", "count": 3, "of": "samples"}
        for at, cat in enumerate(case["categories"]):
            ai = [samples[case["id"], k].category_scores[at].ai_score for k in range(3)]
            assert cat["aiScore"] == round_half_up(Fraction(sum(ai), 3)), (case["id"], cat)
            assert cat["spread"] == max(ai) - min(ai)
    assert any(cat["spread"] > 0 for case in judged for cat in case["categories"])
    assert len(next_cases(ws, run_id, 20)) == 16


def test_a_panel_of_sampled_judges_sets_each_judges_aggregate_beside_the_panel(
        runs: tuple[Workspace, str, str]) -> None:
    ws, _, run_id = runs
    data = review_page_data(ws, run_id)
    judges = {model: _by_sample(ws, run_id, model) for model in (NOISY, SHIFTED)}
    judged = [c for c in data["cases"] if (c["id"], -1) in judges[SHIFTED]]
    assert len(data["cases"]) == 16 and len(judged) == 14
    for case in judged:
        assert case["combined"] == {"method": "median", "count": 2, "of": "judges"}
        assert all(cat["aiScore"] is not None for cat in case["categories"])
        other = case["other"]
        assert other is not None
        aggregate = judges[other["model"]][case["id"], -1]
        assert other["overallScore"] == aggregate.overall_score
        assert other["categories"] == {c.category: c.ai_score for c in aggregate.category_scores}


def test_the_reports_scatter_of_a_samples_run_plots_its_aggregate(
        runs: tuple[Workspace, str, str]) -> None:
    """The report's agreement points are the scores its agreement figures are computed on:
    the judge's sample aggregate (sample -1), not its first sample."""
    ws, samples_run, panel_run = runs
    data = build_report(ws, ReportRequest(run=samples_run, compare=(panel_run,)))
    assert data.agreement is not None
    aggregate = {case: r.overall_score for (case, sample), r in
                 _by_sample(ws, samples_run, NOISY).items() if sample == -1}
    first = {case: r.overall_score for (case, sample), r in
             _by_sample(ws, samples_run, NOISY).items() if sample == 0}
    assert aggregate != first  # the noisy judge's samples differ: the test can tell
    def of_samples_run(name: str) -> bool:  # "<short run id>:<model>", ids kept apart
        return samples_run.startswith(name.split(":")[0]) and name.endswith(NOISY)

    plotted = [(pair, "a" if of_samples_run(pair.judge_a) else "b")
               for pair in data.agreement.pairs
               if of_samples_run(pair.judge_a) or of_samples_run(pair.judge_b)]
    assert len(plotted) == 2  # against each judge of the panel run
    for pair, side in plotted:
        points = {p.case_id: getattr(p, side) for p in pair.points}
        assert len(points) == 14 and points == {c: aggregate[c] for c in points}
