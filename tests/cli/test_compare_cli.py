"""`judge compare` end to end: the example suite judged through LiteLLM by the loopback fake
judge and by its +15 twin, as two runs and as one panel run, then compared."""

from __future__ import annotations

import copy
import json
import shutil
from collections.abc import Iterator
from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest
from conftest import EXAMPLE_SUITE, load_fake_server, run_judge

from judge.app.judges.comparing import compare_runs_op, judge_names
from judge.app.runs.stored import show_run
from judge.app.workspace.workspace import Workspace as JudgeWorkspace
from judge.core.formats.models import RunInfo
from judge.report.review_page import review_link

PLAIN = "hosted_vllm/fake-judge"
PLUS = "hosted_vllm/fake-judge+15"
# +15 on every AI score, less what clamping at 100 takes away.
AI_BIAS_RANGE = (8.0, 15.0)
# Finals blend the AI score at 0.3; each final is rounded, so its mean drifts a little.
FINAL_SHARE = Fraction(3, 10)
FINAL_TOLERANCE = 0.6
HUMAN_LABELLED = 14  # cases with human labels in the example suite (all its LLM cases)


class Workspace:
    """A workspace with the example suite, judged by both fake judges."""

    def __init__(self, root: Path, base_url: str) -> None:
        self.root = root
        self.base_url = base_url
        shutil.copy(EXAMPLE_SUITE, root / "suite.yaml")
        self._compared: dict[tuple[str, ...], dict[str, Any]] = {}

    def run(self, *models: str) -> str:
        args = ["run", "suite.yaml", "--api-base", f"{self.base_url}/v1", "--no-check",
                "--json"]
        for model in models:
            args += ["--model", model]
        proc = run_judge(args, self.root)
        assert proc.returncode == 0, proc.stderr
        run_id: str = json.loads(proc.stdout)["run"]["id"]
        return run_id

    def judge(self, *args: str) -> tuple[int, str, str]:
        proc = run_judge(list(args), self.root)
        return proc.returncode, proc.stdout, proc.stderr

    def compare(self, *runs: str) -> dict[str, Any]:
        """The operation's comparison as ``judge compare --json`` prints it.

        Computed once per set of runs (stored runs do not change; the bootstrap intervals
        make each comparison seconds of CPU), a copy handed to each caller.
        """
        if runs not in self._compared:
            comparison = compare_runs_op(JudgeWorkspace.open(self.root, env={}), runs)
            self._compared[runs] = comparison.model_dump(mode="json")
        return copy.deepcopy(self._compared[runs])

    def stored(self, run_id: str) -> list[dict[str, Any]]:
        view = show_run(JudgeWorkspace.open(self.root, env={}), run_id)
        return [c.model_dump(mode="json") for c in view.cases]


@pytest.fixture(scope="module")
def ws(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Workspace]:
    server = load_fake_server().start_in_thread(latency_ms=0, seed=7)
    try:
        yield Workspace(tmp_path_factory.mktemp("compare"), server.base_url)
    finally:
        server.stop()


@pytest.fixture(scope="module")
def two_runs(ws: Workspace) -> tuple[str, str]:
    return ws.run(PLAIN), ws.run(PLUS)


def _ai_diffs(plain: list[dict[str, Any]], plus: list[dict[str, Any]],
              part: str) -> dict[str, list[int]]:
    """Per category, B − A of ``part`` over the cases both judges scored."""
    by_id = {c["id"]: c for c in plus if c["judgedBy"] == "llm"}
    diffs: dict[str, list[int]] = {}
    for case in plain:
        other = by_id.get(case["id"])
        if case["judgedBy"] != "llm" or other is None or "scored" != case["status"] \
                or other["status"] != "scored":
            continue
        theirs = {c["category"]: c for c in other["categoryScores"]}
        for cat in case["categoryScores"]:
            diffs.setdefault(cat["category"], []).append(
                theirs[cat["category"]][part] - cat[part])
    return diffs


def test_two_runs_show_the_bias_on_ai_scores_and_a_third_of_it_on_finals(
        ws: Workspace, two_runs: tuple[str, str]) -> None:
    run_a, run_b = two_runs
    data = ws.compare(run_a, run_b)
    assert [j["name"] for j in data["judges"]] == [PLAIN, PLUS]
    assert [(j["runId"], j["model"]) for j in data["judges"]] == [(run_a, PLAIN), (run_b, PLUS)]
    (pair,) = data["pairs"]
    assert (pair["judgeA"], pair["judgeB"]) == (PLAIN, PLUS)

    # The exact mean of per-case differences, recomputed from what the store kept.
    plain, plus = ws.stored(run_a), ws.stored(run_b)
    ai = _ai_diffs(plain, plus, "aiScore")
    pooled = [d for values in ai.values() for d in values]
    expected = Fraction(sum(pooled), len(pooled))
    assert pair["aiAll"]["n"] == len(pooled)
    assert pair["aiAll"]["meanDiff"] == pytest.approx(float(expected), abs=1e-9)
    assert AI_BIAS_RANGE[0] <= pair["aiAll"]["meanDiff"] <= AI_BIAS_RANGE[1]
    finals = _ai_diffs(plain, plus, "finalScore")
    for cat in pair["categories"]:
        values = ai[cat["category"]]
        ai_mean = Fraction(sum(values), len(values))
        assert cat["ai"]["meanDiff"] == pytest.approx(float(ai_mean), abs=1e-9)
        assert AI_BIAS_RANGE[0] <= cat["ai"]["meanDiff"] <= AI_BIAS_RANGE[1]
        assert cat["ai"]["spearmanRho"] >= 0.9  # same judge, shifted: same ranking
        final_values = finals[cat["category"]]
        assert cat["final"]["meanDiff"] == pytest.approx(
            sum(final_values) / len(final_values), abs=1e-9)
        assert abs(cat["final"]["meanDiff"] - float(FINAL_SHARE) * cat["ai"]["meanDiff"]) \
            <= FINAL_TOLERANCE
    assert abs(pair["overall"]["meanDiff"] - float(FINAL_SHARE) * pair["aiAll"]["meanDiff"]) \
        <= FINAL_TOLERANCE
    assert "points higher" in pair["verdict"]
    assert pair["skipped"] == {"missing": 0, "cache_miss": 0, "unscored": 0}
    # The band flips are the cases whose stored overall bands differ.
    bands_b = {c["id"]: c["band"] for c in plus}
    assert [f["caseId"] for f in pair["bandFlips"]] == sorted(
        c["id"] for c in plain if c["judgedBy"] == "llm" and c["band"] != bands_b[c["id"]])

    # The example suite's human labels, each judge against them.
    assert data["humanLabelled"] == HUMAN_LABELLED
    assert [h["judge"] for h in data["human"]] == [PLAIN, PLUS]
    assert all(h["labelled"] == HUMAN_LABELLED for h in data["human"])
    assert data["alpha"] is None  # two judges


def test_panel_run_gives_the_same_ai_statistics(ws: Workspace,
                                                two_runs: tuple[str, str]) -> None:
    panel = ws.run(PLAIN, PLUS)
    from_panel = ws.compare(panel)
    from_runs = ws.compare(*two_runs)
    (a,), (b,) = from_panel["pairs"], from_runs["pairs"]
    assert (a["judgeA"], a["judgeB"]) == (PLAIN, PLUS)
    assert a["aiAll"] == b["aiAll"]
    assert [c["ai"] for c in a["categories"]] == [c["ai"] for c in b["categories"]]
    assert a["bandFlips"] == b["bandFlips"]
    assert from_panel["human"] == from_runs["human"]


def test_human_output_has_tables_flips_and_a_verdict(ws: Workspace,
                                                     two_runs: tuple[str, str]) -> None:
    code, as_json, err = ws.judge("compare", *two_runs, "--json")
    assert code == 0, err
    assert "NaN" not in as_json and "Infinity" not in as_json
    assert json.loads(as_json) == ws.compare(*two_runs)
    code, out, err = ws.judge("compare", *two_runs)
    assert code == 0, err
    data = json.loads(as_json)
    lines = out.splitlines()
    # The verdict first, then a screen's summary; the tables of every category behind --detail.
    assert lines[0] == data["pairs"][0]["verdict"] and "points higher" in lines[0]
    assert lines[1:3] == [h["verdict"] for h in data["human"]]
    assert len(lines) <= 25 and "mean diff" in out and "band flips A → B: " in out
    assert "agentPerformance" not in out and "--detail" in lines[-1]
    code, out, err = ws.judge("compare", *two_runs, "--detail")
    assert code == 0, err
    assert out.splitlines()[0] == data["pairs"][0]["verdict"]
    assert "band flips (overall)" in out and "agentPerformance (AI)" in out
    assert "against human labels" in out
    assert "nan" not in out.lower()
    # each judge's largest disagreements with the people link to its run's review page
    runs = {j["name"]: j["runId"] for j in data["judges"]}
    assert any(h["disagreements"] for h in data["human"])
    for h in data["human"]:
        for d in h["disagreements"][:3]:
            link = review_link(runs[h["judge"]], d["caseId"], d["category"])
            assert f"{d['caseId']}  {d['category']}  {d['human']}→{d['judge']}  {link}" in out


def test_same_judge_rerun_is_named_by_run_and_agrees_perfectly(
        ws: Workspace, two_runs: tuple[str, str]) -> None:
    again = ws.run(PLAIN)  # all from the cache
    data = ws.compare(two_runs[0], again)
    names = [j["name"] for j in data["judges"]]
    assert names[0] != names[1]
    assert names[0].startswith(two_runs[0][:8]) and names[0].endswith(f":{PLAIN}")
    (pair,) = data["pairs"]
    assert pair["aiAll"]["weightedKappa"] == 1.0 and pair["aiAll"]["meanDiff"] == 0
    assert pair["bandFlips"] == [] and "agree closely" in pair["verdict"]


def test_unknown_run_different_suites_and_an_unlabelled_lone_judge_exit_2(
        ws: Workspace, two_runs: tuple[str, str]) -> None:
    code, out, err = ws.judge("compare", two_runs[0], "no-such-run", "--json")
    assert code == 2 and out == "" and "no-such-run" in err

    other = ws.root / "other.yaml"
    other.write_text((ws.root / "suite.yaml").read_text().replace(
        "id: task-evaluation-example", "id: another-suite", 1))
    proc = run_judge(["run", "other.yaml", "--no-llm", "--no-check", "--json"], ws.root)
    assert proc.returncode == 0, proc.stderr
    other_run = json.loads(proc.stdout)["run"]["id"]
    code, out, err = ws.judge("compare", two_runs[0], other_run)
    assert code == 2 and "different suites" in err and "another-suite" in err

    lone = ws.root / "lone"
    lone.mkdir()
    (lone / "suite.jsonl").write_text('{"id": "c1", "input": "q", "output": "a"}\n')
    proc = run_judge(["run", "lone/suite.jsonl", "--api-base", f"{ws.base_url}/v1",
                      "--model", PLAIN, "--no-check", "--json"], ws.root)
    assert proc.returncode == 0, proc.stderr
    lone_run = json.loads(proc.stdout)["run"]["id"]
    code, _out, err = ws.judge("compare", lone_run)
    assert code == 2 and "one judge" in err and f"judge judges agreement {lone_run}" in err


def test_one_labelled_run_is_its_judge_against_the_people(
        ws: Workspace, two_runs: tuple[str, str]) -> None:
    """`judge compare RUN` answers what `judge judges agreement RUN` does, with the same numbers."""
    code, out, err = ws.judge("compare", two_runs[0], "--json")
    assert code == 0, err
    compared = json.loads(out)
    assert compared["pairs"] == [] and len(compared["human"]) == 1
    code, out, err = ws.judge("judges", "agreement", two_runs[0], "--json")
    assert code == 0, err
    (row,) = json.loads(out)["rows"]
    assert compared["human"][0] == {**row["agreement"], "judge": compared["human"][0]["judge"]}
    code, out, err = ws.judge("compare", two_runs[0])
    assert code == 0 and out.splitlines()[0] == compared["human"][0]["verdict"]
    assert "people → A  overall" in out


def test_explicit_suite_of_another_id_is_refused(ws: Workspace,
                                                 two_runs: tuple[str, str]) -> None:
    other = ws.root / "relabelled.yaml"
    other.write_text((ws.root / "suite.yaml").read_text().replace(
        "id: task-evaluation-example", "id: relabelled", 1))
    code, _out, err = ws.judge("compare", *two_runs, "--suite", str(other))
    assert code == 2 and "relabelled" in err


def _info(run_id: str, model: str, *, rubric: str = "task-evaluation",
          template: str = "judge", template_hash: str = "t1") -> tuple[RunInfo, str]:
    info = RunInfo(id=run_id, suite="s", rubric=rubric, rubric_hash=f"h-{rubric}",
                   models=(model,), seed=42, temperature=0, template_id=template,
                   template_hash=template_hash, created_at="2026-01-01T00:00:00Z")
    return info, model


def test_judge_names_tell_judges_apart() -> None:
    assert judge_names([_info("20260101T000000-aaaaaa", "m1"),
                        _info("20260101T000001-bbbbbb", "m2")]) == ["m1", "m2"]
    # One judge under two templates: run prefix + template.
    assert judge_names([_info("20260101T000000-aaaaaa", "m", template="judge"),
                        _info("20260101T000100-bbbbbb", "m", template="terse")]) == [
        "20260101T0000:judge", "20260101T0001:terse"]
    # The same template id edited in place: its hash tells them apart.
    assert judge_names([_info("20260101T000000-aaaaaa", "m", template_hash="abcdef0123"),
                        _info("20260101T000000-bbbbbb", "m", template_hash="9876543210")]) \
        == ["20260101T000000-a:judge@abcdef01", "20260101T000000-b:judge@98765432"]
    # Two rubrics.
    assert judge_names([_info("r1-000000", "m", rubric="strict"),
                        _info("r2-000000", "m", rubric="lenient")]) == [
        "r1-00000:strict", "r2-00000:lenient"]
