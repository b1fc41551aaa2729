"""`judge judges agreement` end to end: the example suite (its LLM cases carry people's labels)
judged by the loopback fake judge twice, the second time under an edited template (another
digest), then set against the labels; and the statistics checked against sklearn and scipy."""

from __future__ import annotations

import html
import json
import shutil
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import numpy as np
import pytest
import yaml
from conftest import EXAMPLE_SUITE, ROOT, load_fake_server, run_judge
from scipy.stats import spearmanr
from sklearn.metrics import cohen_kappa_score
from sklearn.metrics import confusion_matrix as sk_confusion

from judge.app.judges.agreement_history import agreement_op
from judge.app.runs.reporting import ReportRequest, build_report
from judge.app.workspace.workspace import Workspace
from judge.cli.compare_cmd import FLIPS_SHOWN
from judge.core.formats.labels import Label, dump_labels, human_labels, parse_labels
from judge.core.formats.rubric import DEFAULT_BANDS
from judge.core.scoring.scoring import band_for
from judge.core.stats.agreement import band_index
from judge.core.stats.intervals import AGREEMENT_RESAMPLES, DEFAULT_SEED
from judge.core.stats.seeded import SplitMix64
from judge.report.charts import figures
from judge.report.html import render_report
from judge.report.review_page import review_link
from judge.system.resources import open_suite

MODEL = "hosted_vllm/fake-judge"
SCALE = sorted(DEFAULT_BANDS, key=lambda b: b.min)


def _run(root: Path, base_url: str) -> str:
    proc = run_judge(["run", "suite.yaml", "--api-base", f"{base_url}/v1", "--no-check",
                      "--json", "--model", MODEL], root)
    assert proc.returncode == 0, proc.stderr
    run_id: str = json.loads(proc.stdout)["run"]["id"]
    return run_id


@pytest.fixture(scope="module")
def ws(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, str, str]]:
    server = load_fake_server().start_in_thread(latency_ms=0, seed=7)
    try:
        root = tmp_path_factory.mktemp("agreement")
        shutil.copy(EXAMPLE_SUITE, root / "suite.yaml")
        first = _run(root, server.base_url)
        shutil.copytree(ROOT / "prompts", root / "prompts")
        template = root / "prompts" / "judge.md.j2"
        template.write_text(template.read_text(encoding="utf-8") + "{# edited #}\n",
                            encoding="utf-8")
        second = _run(root, server.base_url)
        yield root, first, second
    finally:
        server.stop()


def _json(root: Path, *args: str) -> dict[str, Any]:
    proc = run_judge(["judges", "agreement", *args, "--json"], root)
    assert proc.returncode == 0, proc.stderr
    data: dict[str, Any] = json.loads(proc.stdout)
    return data


def test_two_runs_two_rows_keyed_by_template_digest(ws: tuple[Path, str, str]) -> None:
    root, first, second = ws
    data = _json(root)
    assert [r["runId"] for r in data["rows"]] == [first, second]  # newest last
    a, b = data["rows"]
    assert a["model"] == b["model"] == MODEL
    assert a["templateId"] == b["templateId"] == "judge"
    assert a["templateHash"] != b["templateHash"]
    assert a["rubricHash"] == b["rubricHash"]
    for row in data["rows"]:
        overall = row["agreement"]["overall"]
        for stat in ("weightedKappa", "meanAbsDiff", "spearmanRho", "exactBandAgreement"):
            ci = overall["intervals"][stat]
            assert ci is not None and ci["low"] <= ci["estimate"] <= ci["high"]
        matrix = row["agreement"]["confusion"]
        assert sum(map(sum, matrix["counts"])) == overall["n"]
    moves = {m["statistic"]: m for m in data["movements"]}
    assert set(moves) == {"weightedKappa", "meanAbsDiff", "spearmanRho", "exactBandAgreement"}
    assert all(m["changed"] == ["template"] for m in moves.values())
    # Same judge, same seed, a comment-only template edit: agreement does not move.
    assert moves["meanAbsDiff"]["beyondInterval"] is False
    proc = run_judge(["judges", "agreement", first, second], root)
    assert proc.returncode == 0, proc.stderr
    assert a["templateHash"][:8] in proc.stdout and b["templateHash"][:8] in proc.stdout
    # The newest run's verdict first, whether agreement moved second; the tables: --detail.
    lines = proc.stdout.splitlines()
    assert lines[0] == f"newest run {second}: {b['agreement']['verdict']}"
    beyond = any(m["beyondInterval"] for m in data["movements"]
                 if m["statistic"] in ("weightedKappa", "meanAbsDiff"))
    assert ("beyond the earlier run's interval" if beyond else "stayed within") in lines[1]
    assert len(lines) <= 10 and "--detail" in lines[-1]
    assert "largest disagreements (" not in proc.stdout
    detail = run_judge(["judges", "agreement", first, second, "--detail"], root)
    assert detail.stdout.splitlines()[0] == lines[0]
    assert "largest disagreements (" in detail.stdout and "taskOutcomeQuality" in detail.stdout


def test_values_match_sklearn_and_scipy(ws: tuple[Path, str, str]) -> None:
    root, first, _ = ws
    history = agreement_op(Workspace.open(root, env={}), [first])
    (row,) = history.rows
    labels = {c.id: c.human for c in open_suite(root / "suite.yaml").cases()
              if c.human is not None}
    with Workspace.open(root, env={}).open_store() as store:
        cases = {r.id: r for r in store.iter_results(first)
                 if r.judge is not None and r.judge.sample == 0}
    human, judge = [], []
    for case_id, label in sorted(labels.items()):
        case = cases.get(case_id)
        if label.overall is None or case is None or case.status != "scored":
            continue
        assert case.overall_score is not None
        human.append(label.overall)
        judge.append(case.overall_score)
    overall = row.agreement.overall
    assert overall.n == len(human) > 5
    hb = [band_for(s, SCALE) for s in human]
    jb = [band_for(s, SCALE) for s in judge]
    hi = [band_index(b) for b in hb]
    ji = [band_index(b) for b in jb]
    assert overall.weighted_kappa == pytest.approx(
        cohen_kappa_score(hi, ji, weights="quadratic", labels=list(range(len(SCALE)))))
    assert overall.spearman_rho == pytest.approx(spearmanr(human, judge).statistic)
    assert overall.mean_abs_diff == pytest.approx(
        sum(abs(h - j) for h, j in zip(human, judge, strict=True)) / len(human))
    assert overall.exact_band_agreement == pytest.approx(
        sum(x == y for x, y in zip(hb, jb, strict=True)) / len(hb))
    assert row.agreement.confusion is not None
    names = [b.name for b in SCALE]
    assert [list(r) for r in row.agreement.confusion.counts] == \
        sk_confusion(hb, jb, labels=names).tolist()


def test_without_labels_exit_2_and_nothing_written(ws: tuple[Path, str, str],
                                                   tmp_path: Path) -> None:
    root, first, _ = ws
    empty = tmp_path / "none.labels.jsonl"
    empty.write_text("", encoding="utf-8")
    before = sorted((p, p.stat().st_mtime_ns) for p in root.rglob("*") if p.is_file())
    proc = run_judge(["judges", "agreement", first, "--labels", str(empty)], root)
    assert proc.returncode == 2, proc.stderr
    assert "no people's labels" in proc.stderr and "judge review" in proc.stderr
    assert proc.stdout == ""
    after = sorted((p, p.stat().st_mtime_ns) for p in root.rglob("*") if p.is_file())
    assert after == before


def test_report_plots_agreement_with_people_over_the_runs(ws: tuple[Path, str, str]) -> None:
    root, first, second = ws
    data = build_report(Workspace.open(root, env={}), ReportRequest(run=second))
    assert [p.run_id for p in data.people] == [first, second]
    assert data.people[0].template_hash != data.people[1].template_hash
    history = agreement_op(Workspace.open(root, env={}), [first, second])
    assert [p.kappa for p in data.people] == [r.agreement.overall.weighted_kappa
                                              for r in history.rows]
    (chart,) = [f for f in figures(data) if f["id"] == "chart-people"]
    assert chart["data"][0]["y"] == [p.kappa for p in data.people]
    page = render_report(data)
    assert '<section id="people">' in page and 'id="chart-people"' in page
    assert data.people[1].template_hash[:8] in page
    # The first run's report plots only the runs up to it.
    assert [p.run_id for p in build_report(Workspace.open(root, env={}),
                                          ReportRequest(run=first)).people] == [first]


def test_disagreements_link_to_their_case_on_the_review_page(
        ws: tuple[Path, str, str]) -> None:
    root, first, second = ws
    history = agreement_op(Workspace.open(root, env={}), [first, second])
    row = history.rows[1]
    assert row.review_page == f"http://127.0.0.1:8765/review/{second}"
    found = row.agreement.disagreements
    assert found, "the fake judge parts from the people somewhere"
    proc = run_judge(["judges", "agreement", second, "--detail"], root)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    head = next(i for i, line in enumerate(lines) if line.startswith("largest disagreements"))
    assert f"`judge review {second}` runs" in lines[head]
    for d, line in zip(found[:FLIPS_SHOWN], lines[head + 1:], strict=False):
        link = review_link(second, d.case_id, d.category)
        assert line.split() == [d.case_id, d.category, f"{d.human}→{d.judge}", link]
        assert link == (f"http://127.0.0.1:8765/review/{second}#case="
                        f"{quote(d.case_id, safe='')}&category={d.category}")
    data = build_report(Workspace.open(root, env={}), ReportRequest(run=second))
    shown = data.people_disagreements
    assert [(x.case_id, x.category, x.size) for x in shown] == \
        [(d.case_id, d.category, d.size) for d in found[:len(shown)]] and shown
    assert {x.run_id for x in shown} == {second}
    page = render_report(data)
    for x in shown:
        assert f'<a href="{html.escape(x.link)}" class="u">' in page
    assert "works while that command runs" in page


def test_review_links_are_plain_ascii_whatever_the_ids() -> None:
    link = review_link("run-1", "a b\x1b[31m<x>&\"é", "cat/1")
    assert link == ("http://127.0.0.1:8765/review/run-1#case=a%20b%1B%5B31m%3Cx%3E%26%22%C3%A9"
                    "&category=cat%2F1")
    assert review_link("r", port=9000) == "http://127.0.0.1:9000/review/r"


def _people_file(root: Path, run: str, tmp_path: Path) -> tuple[Path, list[Label]]:
    """The suite's labels per category as a labels file (reviewer ``ana``), not yet imported."""
    source = open_suite(root / "suite.yaml")
    labels = [Label(suite=source.id, case=c.id, category=cat, reviewer="ana",
                    at="2026-12-02T19:00:00Z", score=score, run=run)
              for c in source.cases() if c.human is not None
              for cat, score in sorted(c.human.categories.items())]
    assert len(labels) > 10
    path = tmp_path / "people.labels.jsonl"
    path.write_text(dump_labels(labels), encoding="utf-8")
    return path, labels


def test_history_shows_agreement_with_the_stored_labels(ws: tuple[Path, str, str],
                                                        tmp_path: Path) -> None:
    root, first, second = ws
    path, labels = _people_file(root, first, tmp_path)
    plain = run_judge(["runs", "list", "--json"], root)
    assert plain.returncode == 0, plain.stderr
    assert all("agreement" not in r for r in json.loads(plain.stdout))  # unchanged shape
    none_yet = run_judge(["history", "--agreement", "--json"], root)
    assert [r["agreement"] for r in json.loads(none_yet.stdout)] == [None, None]
    proc = run_judge(["review", first, "--import", str(path)], root)
    assert proc.returncode == 0, proc.stderr
    proc = run_judge(["history", "--agreement", "--json"], root)
    assert proc.returncode == 0, proc.stderr
    rows = {r["id"]: r["agreement"] for r in json.loads(proc.stdout)}
    expected = agreement_op(Workspace.open(root, env={}), [first, second], labels_file=path)
    assert set(rows) == {first, second}
    for row in expected.rows:
        got, s = rows[row.run_id], row.agreement.overall
        assert got["judge"] == MODEL and got["n"] == s.n > 5
        assert got["labelled"] == len({lb.case for lb in labels})
        assert got["weightedKappa"] == pytest.approx(s.weighted_kappa)
        assert got["meanAbsDiff"] == pytest.approx(s.mean_abs_diff)
        assert got["exactBandAgreement"] == pytest.approx(s.exact_band_agreement)
    human = run_judge(["history", "--agreement"], root)
    assert human.returncode == 0, human.stderr
    for row in expected.rows:
        line = next(x for x in human.stdout.splitlines() if x.startswith(row.run_id))
        s = row.agreement.overall
        assert f"{s.weighted_kappa:.2f}" in line and f"{s.mean_abs_diff:.1f}" in line
        assert f"{s.n} of {len({lb.case for lb in labels})}" in line


def test_history_intervals_are_judge_agreements_and_scipys(ws: tuple[Path, str, str],
                                                           tmp_path: Path) -> None:
    """`judge history --agreement` carries the intervals `judge judges agreement` shows for the run,
    and they are the percentiles of scipy's ρ and numpy's MAD over the same resamples."""
    root, first, _ = ws
    path, _ = _people_file(root, first, tmp_path)
    proc = run_judge(["review", first, "--import", str(path)], root)  # idempotent
    assert proc.returncode == 0, proc.stderr
    proc = run_judge(["history", "--agreement", "--json"], root)
    assert proc.returncode == 0, proc.stderr
    got = next(r["agreement"] for r in json.loads(proc.stdout) if r["id"] == first)
    (row,) = _json(root, first, "--labels", str(path))["rows"]  # through `judge judges agreement`
    overall = row["agreement"]["overall"]
    assert got["intervals"] == overall["intervals"]  # the same floats, every statistic
    for stat in ("weightedKappa", "meanAbsDiff", "spearmanRho", "exactBandAgreement"):
        ci = got["intervals"][stat]
        assert ci["seed"] == DEFAULT_SEED and ci["resamples"] == AGREEMENT_RESAMPLES
        assert ci["low"] < ci["high"] and ci["estimate"] == got[stat] == overall[stat]
    # The same resamples drawn here (SplitMix64 with the seed), the statistics by scipy and
    # numpy, the 2.5 % and 97.5 % percentiles by numpy's linear rule.
    ws_ = Workspace.open(root, env={})
    people = human_labels(parse_labels(path.read_text(encoding="utf-8"), str(path)),
                          ws_.rubric("task-evaluation"))
    with ws_.open_store() as store:
        judged = {r.id: r for r in store.iter_results(first)
                  if r.judge is not None and r.judge.sample == 0 and r.status == "scored"}
    pairs = [(people[i].overall, judged[i].overall_score) for i in sorted(judged)
             if i in people and people[i].overall is not None]
    assert len(pairs) == got["n"] > 5
    h = np.array([p[0] for p in pairs], dtype=float)
    j = np.array([p[1] for p in pairs], dtype=float)
    rng, n = SplitMix64(DEFAULT_SEED), len(pairs)
    rhos, mads = [], []
    for _ in range(AGREEMENT_RESAMPLES):
        pick = [rng.below(n) for _ in range(n)]
        mads.append(float(np.mean(np.abs(j[pick] - h[pick]))))
        with np.errstate(all="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            rho = float(spearmanr(h[pick], j[pick]).statistic)
        if not np.isnan(rho):
            rhos.append(rho)
    for stat, values in (("spearmanRho", rhos), ("meanAbsDiff", mads)):
        low, high = np.percentile(values, [2.5, 97.5])
        ci = got["intervals"][stat]
        assert (ci["low"], ci["high"]) == (pytest.approx(low), pytest.approx(high))
        assert ci["undefined"] == AGREEMENT_RESAMPLES - len(values)
    # The table shows them with `judge judges agreement`'s formatting.
    human = run_judge(["history", "--agreement"], root)
    assert human.returncode == 0, human.stderr
    line = next(x for x in human.stdout.splitlines() if x.startswith(first))
    kappa, mad = got["intervals"]["weightedKappa"], got["intervals"]["meanAbsDiff"]
    assert (f"{got['weightedKappa']:.2f} [{kappa['low']:.2f}, {kappa['high']:.2f}]"
            in line)
    assert f"{got['meanAbsDiff']:.1f} [{mad['low']:.1f}, {mad['high']:.1f}]" in line


def test_judges_agreement_reads_the_labels_the_review_page_stored(
        ws: tuple[Path, str, str], tmp_path: Path) -> None:
    """What `judge history --agreement` read (the store's labels) `judge judges agreement`
    reads too: a suite with no `human:` field and no labels file is set against them."""
    root, first, _ = ws
    path, _ = _people_file(root, first, tmp_path)
    suite = yaml.safe_load((root / "suite.yaml").read_text(encoding="utf-8"))
    for case in suite["cases"]:
        case.pop("human", None)
    bare = tmp_path / "bare" / "suite.yaml"
    bare.parent.mkdir()
    bare.write_text(yaml.safe_dump(suite), encoding="utf-8")
    proc = run_judge(["review", first, "--import", str(path)], root)  # idempotent
    assert proc.returncode == 0, proc.stderr
    (row,) = _json(root, first, "--suite", str(bare))["rows"]
    (expected,) = _json(root, first, "--labels", str(path))["rows"]
    assert row["agreement"] == expected["agreement"] and row["agreement"]["labelled"] > 10
    deprecated = run_judge(["history", "--agreement", "--json"], root)
    assert deprecated.stderr.startswith("`judge history --agreement` is now `judge judges "
                                        "agreement`")
    got = next(r["agreement"] for r in json.loads(deprecated.stdout) if r["id"] == first)
    assert got["weightedKappa"] == row["agreement"]["overall"]["weightedKappa"]
