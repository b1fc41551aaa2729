"""``judge judges import``: recorded judgments become runs that agreement, compare, calibrate and
report read offline; the levels' values are scipy's on a fixture of our own; bad lines exit 2
naming the line and the field, with nothing stored."""

from __future__ import annotations

import json
import random
import shutil
from fractions import Fraction
from pathlib import Path
from statistics import fmean
from typing import Any

import pytest
from conftest import run_judge
from scipy import stats

from judge.app.judges.reviewing import review_page_data
from judge.app.workspace.workspace import Workspace
from judge.core.formats.labels import Label, dump_labels
from judge.core.scoring.exact import round_half_up

RUBRIC = """version: 1
id: summary
title: Summary quality
description: Two dimensions of a summary, each the judge's alone.
categories:
  - id: coherence
    weight: 0.5
    definition: The sentences build a coherent body.
    blend: {deterministic: 0.0, ai: 1.0}
  - id: relevance
    weight: 0.5
    definition: The summary keeps what matters.
    blend: {deterministic: 0.0, ai: 1.0}
missing: {deterministic: ai_only}
"""
DOCS, SYSTEMS, SAMPLES = 8, 5, 4
TOLERANCE = 1e-12


def _points(likert: float) -> int:
    """A 1-5 rating on 0..100, as --scale 1:5 maps it."""
    return round_half_up((Fraction(repr(likert)) - 1) * 25)


@pytest.fixture(scope="module")
def ws(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """A suite of summaries (doc x system) rated by people, and two judges' recorded scores."""
    root = tmp_path_factory.mktemp("import") / "summaries"
    (root / "rubrics").mkdir(parents=True)
    (root / "rubrics" / "summary.yaml").write_text(RUBRIC)
    (root / "judge.toml").write_text('rubric = "summary"\n')
    rng = random.Random(11)
    cases, judged, people, sampled = [], [], {}, {}
    for d in range(DOCS):
        for s in range(SYSTEMS):
            cid = f"d{d}-s{s}"
            coh, rel = rng.randint(1, 5), rng.randint(1, 5)
            people[cid] = (coh, rel)
            cases.append({"id": cid, "input": f"document {d}", "output": f"summary {s}",
                          "metadata": {"doc": f"d{d}", "system": f"sys{s}"},
                          "human": {"categories": {"coherence": (coh - 1) * 25,
                                                   "relevance": (rel - 1) * 25}}})
            samples = [{"coherence": min(5, max(1, coh + rng.randint(-1, 1))),
                        "relevance": min(5, max(1, rel + rng.randint(-2, 1)))}
                       for _ in range(SAMPLES)]
            sampled[cid] = samples
            judged.append({"case": cid, "judge": "judge-x", "samples": samples})
            judged.append({"case": cid, "judge": "judge-y", "scores": {
                "coherence": min(5, max(1, coh + rng.randint(-2, 2))),
                "relevance": 2.5 + rng.randint(0, 4) / 2}})
    (root / "suite.jsonl").write_text("".join(json.dumps(c) + "\n" for c in cases))
    (root / "judged.jsonl").write_text("".join(json.dumps(j) + "\n" for j in judged))
    proc = run_judge(["judges", "import", "judged.jsonl", "--suite", "suite.jsonl", "--scale",
                      "1:5", "--json"], root)
    assert proc.returncode == 0, proc.stderr
    runs = {r["run"]["models"][0]: r["run"] for r in json.loads(proc.stdout)["runs"]}
    return {"root": root, "runs": runs, "people": people, "sampled": sampled}


def _judge_x(ws: dict[str, Any], category: int) -> dict[str, int]:
    """judge-x's headline AI score per case: the mean of its samples, on 0..100, half up."""
    name = ("coherence", "relevance")[category]
    return {cid: round_half_up(Fraction(sum(_points(s[name]) for s in samples), SAMPLES))
            for cid, samples in ws["sampled"].items()}


def test_an_imported_run_is_marked_and_its_samples_are_averaged(ws: dict[str, Any]) -> None:
    run = ws["runs"]["judge-x"]
    assert run["status"] == "complete" and run["templateId"] == "imported"
    assert run["settings"]["imported"] is True and run["settings"]["scale"] == "1:5"
    assert run["samples"] == SAMPLES and run["settings"]["sampleAggregate"] == "mean"
    with Workspace.open(ws["root"], env={}).open_store() as store:
        heads = [r for r in store.iter_results(run["id"]) if r.judge and r.judge.sample == -1]
    assert {r.judge.aggregate for r in heads if r.judge} == {"mean"}
    assert {r.id: r.category_scores[0].ai_score for r in heads} == _judge_x(ws, 0)
    assert not list((ws["root"] / "cache").glob("**/*.db"))  # nothing entered the cache


def test_agreement_gives_every_level_as_scipy_computes_it(ws: dict[str, Any]) -> None:
    run = ws["runs"]["judge-x"]
    proc = run_judge(["judges", "agreement", run["id"], "--group-by", "metadata.doc", "--system-by",
                      "metadata.system", "--json"], ws["root"])
    assert proc.returncode == 0, proc.stderr
    (row,) = json.loads(proc.stdout)["rows"]
    coherence = next(c["ai"] for c in row["agreement"]["categories"]
                     if c["category"] == "coherence")
    ids = sorted(ws["people"])
    judge = [_judge_x(ws, 0)[i] for i in ids]
    human = [(ws["people"][i][0] - 1) * 25 for i in ids]
    assert coherence["pearsonR"] == pytest.approx(stats.pearsonr(human, judge).statistic,
                                                  abs=TOLERANCE)
    assert coherence["kendallTau"] == pytest.approx(stats.kendalltau(human, judge).statistic,
                                                    abs=TOLERANCE)
    group = coherence["levels"]["group"]
    taus = []
    for d in range(DOCS):
        mine = [k for k, i in enumerate(ids) if i.startswith(f"d{d}-")]
        x, y = [human[k] for k in mine], [judge[k] for k in mine]
        if len(set(x)) > 1 and len(set(y)) > 1:
            taus.append(stats.kendalltau(x, y).statistic)
    assert group["n"] == len(taus) and group["skipped"] == DOCS - len(taus)
    assert group["kendallTau"] == pytest.approx(fmean(taus), abs=TOLERANCE)
    system = coherence["levels"]["system"]
    means = [(fmean(human[k] for k, i in enumerate(ids) if i.endswith(f"-s{s}")),
              fmean(judge[k] for k, i in enumerate(ids) if i.endswith(f"-s{s}")))
             for s in range(SYSTEMS)]
    assert system["n"] == SYSTEMS
    assert system["spearmanRho"] == pytest.approx(
        stats.spearmanr(*zip(*means, strict=True)).statistic, abs=TOLERANCE)
    assert group["intervals"]["kendallTau"]["n"] == len(taus)  # groups resampled


def test_compare_calibrate_and_report_read_imported_runs(ws: dict[str, Any],
                                                         tmp_path: Path) -> None:
    x, y = ws["runs"]["judge-x"]["id"], ws["runs"]["judge-y"]["id"]
    proc = run_judge(["compare", x, y, "--json"], ws["root"])
    assert proc.returncode == 0, proc.stderr
    compared = json.loads(proc.stdout)
    assert [j["name"] for j in compared["judges"]] == ["judge-x", "judge-y"]
    assert compared["pairs"][0]["aligned"] == DOCS * SYSTEMS
    proc = run_judge(["judges", "calibrate", y, "--out", str(tmp_path / "cal.json"), "--json"],
                     ws["root"])
    assert proc.returncode == 0, proc.stderr
    proc = run_judge(["report", x, "--output", str(tmp_path / "report.html")], ws["root"])
    assert proc.returncode == 0, proc.stderr
    assert "judge-x" in (tmp_path / "report.html").read_text(encoding="utf-8")


def test_a_recorded_judge_is_never_served_to_a_live_run(ws: dict[str, Any]) -> None:
    proc = run_judge(["run", "suite.jsonl", "--model", "judge-x", "--offline", "--no-check"],
                     ws["root"])
    assert proc.returncode == 3 and "not in the cache" in proc.stderr


LINE = {"case": "d0-s0", "judge": "j", "scores": {"coherence": 3, "relevance": 4}}


@pytest.mark.parametrize(("text", "where", "what"), [
    ("{not json}\n", "line 1", "invalid JSON"),
    ('{"case": "d0-s0", "case": "d0-s1", "judge": "j", "scores": {}}\n', "line 1",
     "duplicate"),
    (json.dumps({**LINE, "score": 3}) + "\n", "line 1: score", "unknown field"),
    (json.dumps({**LINE, "scores": {"coherence": 3}}) + "\n", "line 1: scores",
     "no score for relevance"),
    (json.dumps({**LINE, "scores": {"coherence": 3, "relevance": 9}}) + "\n",
     "line 1: scores.relevance", "off the scale"),
    (json.dumps(LINE) + "\n" + json.dumps(LINE) + "\n", "line 2: case", "given again"),
    (json.dumps({**LINE, "case": "nope"}) + "\n", "line 1: case", "not in suite"),
    (json.dumps({**LINE, "samples": []}) + "\n", "line 1: scores", "either scores or samples"),
    (json.dumps({**LINE, "scores": {"coherence": True, "relevance": 4}}) + "\n",
     "line 1: scores.coherence", "not a number"),
])
def test_a_bad_line_exits_2_naming_it_and_stores_nothing(ws: dict[str, Any], tmp_path: Path,
                                                         text: str, where: str,
                                                         what: str) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text(text)
    before = run_judge(["runs", "list", "--json"], ws["root"]).stdout
    proc = run_judge(["judges", "import", str(bad), "--suite", "suite.jsonl", "--scale", "1:5"],
                     ws["root"])
    assert proc.returncode == 2, proc.stderr
    assert str(bad) in proc.stderr and where in proc.stderr and what in proc.stderr, \
        proc.stderr
    assert run_judge(["runs", "list", "--json"], ws["root"]).stdout == before


def test_a_bad_scale_is_refused(ws: dict[str, Any]) -> None:
    for scale in ("5:1", "1-5", "a:b"):
        proc = run_judge(["judges", "import", "judged.jsonl", "--suite", "suite.jsonl", "--scale",
                          scale], ws["root"])
        assert proc.returncode == 2 and "--scale" in proc.stderr, proc.stderr


def test_several_reviewers_stand_beside_the_judge_in_agreement_report_and_review_page(
        ws: dict[str, Any], tmp_path: Path) -> None:
    """A labels file beside the suite with two reviewers: α, leave-one-out rows, everywhere."""
    root = tmp_path / "summaries"
    shutil.copytree(ws["root"], root)
    rng = random.Random(2)
    labels = [Label(suite="summaries", case=cid, category=cat, reviewer=who,
                    at="2026-12-06T00:00:00Z",
                    score=min(100, max(0, (rating - 1) * 25 + rng.randint(-10, 10))))
              for cid, ratings in ws["people"].items()
              for cat, rating in zip(("coherence", "relevance"), ratings, strict=True)
              for who in ("ana", "bo")]
    (root / "suite.labels.jsonl").write_text(dump_labels(labels))
    run = ws["runs"]["judge-x"]["id"]
    proc = run_judge(["judges", "agreement", run, "--json"], root)
    assert proc.returncode == 0, proc.stderr
    (row,) = json.loads(proc.stdout)["rows"]
    people = {p["category"]: p for p in row["people"]}
    assert set(people) == {"coherence", "relevance"}
    assert people["coherence"]["reviewers"] == ["ana", "bo"]
    assert people["coherence"]["alpha"] is not None and people["coherence"]["pairwise"]["n"] == 1
    assert [r["withOthers"]["n"] for r in people["coherence"]["byReviewer"]] == [DOCS * SYSTEMS] * 2
    text = run_judge(["judges", "agreement", run, "--detail"], root).stdout
    assert "people beside judge-x, coherence: 2 reviewers" in " ".join(text.split())
    proc = run_judge(["report", run, "--output", str(tmp_path / "r.html")], root)
    assert proc.returncode == 0, proc.stderr
    page = (tmp_path / "r.html").read_text(encoding="utf-8")
    assert 'class="reviewers"' in page and 'id="quality"' in page
    proc = run_judge(["review", run, "--import", "suite.labels.jsonl"], root)
    assert proc.returncode == 0, proc.stderr
    shown = review_page_data(Workspace.open(root, env={}), run)
    assert [p["category"] for p in shown["people"]] == ["coherence", "relevance"]
