"""The gate's verdict as a typed model on the wire, and as JUnit XML and Markdown for CI."""

from __future__ import annotations

import json
import re
from pathlib import Path
from xml.etree import ElementTree

from judge.app.runs.gate import BaselineRef, GateVerdict
from judge.cli.gate_reports import junit_xml, markdown_summary
from judge.core.formats.models import CaseResult, JudgeMeta
from judge.core.outcomes.baseline import build_baseline
from judge.core.stats.significance import statistical_compare

HOSTILE = "c-\x07<script>]]>[x](https://e.example)![i](https://e.example/p.png)|*_~`"


def _result(cid: str, score: int, key: str, cached: bool = True) -> CaseResult:
    meta = JudgeMeta(model="m", temperature=0.0, seed=42, sample=0, template_id="t",
                     template_hash="th" * 32, rubric_hash="rh" * 32, cache_key=key,
                     cached=cached)
    return CaseResult(id=cid, status="scored", overall_score=score, band="b",
                      passed=score >= 60, judge=meta)


def _compared(drop: int = 0, ids: tuple[str, ...] = ("a", "b", "c")) -> tuple[GateVerdict,
                                                                              list[CaseResult]]:
    before = [_result(cid, 80, f"k{cid}") for cid in ids]
    baseline = build_baseline("s", "r", "rh" * 32, ("m",), before, run_id="r1",
                              template=("t", "th" * 32))
    after = [_result(ids[0], 80 - drop, f"k{ids[0]}"), *before[1:]]
    comparison = statistical_compare(baseline, after)
    verdict = GateVerdict(run="r2", suite="s", baseline_path="baselines/s.json",
                          comparison=comparison, baseline_id=baseline.baseline_id,
                          against=BaselineRef.of(baseline, Path("baselines/s.json")),
                          notices=("a notice",))
    return verdict, after


def _not_compared() -> GateVerdict:
    return GateVerdict(run="r2", suite="s", baseline_path="baselines/s.json", comparison=None,
                       outcome="not-compared", not_compared="another-judge",
                       skipped="not compared: the baseline was recorded under another judge")


def test_the_wire_form_is_the_models_and_reads_back_through_it() -> None:
    for verdict in (_compared(drop=30)[0], _compared()[0], _not_compared()):
        wire = verdict.model_dump(mode="json")
        assert list(wire)[:7] == ["hasRegression", "scoreDelta", "previousScore",
                                  "currentScore", "baselineId", "blockedReasons",
                                  "comparedCases"]
        assert wire["blocked"] == verdict.blocked and wire["outcome"] == verdict.outcome
        assert GateVerdict.model_validate(wire) == verdict
        assert GateVerdict.model_validate(json.loads(verdict.model_dump_json())) == verdict
    wire = _not_compared().model_dump(mode="json")
    assert (wire["hasRegression"], wire["scoreDelta"], wire["comparedCases"]) == (False, None, 0)
    assert "threshold" not in wire and wire["notCompared"] == "another-judge"


def test_exit_codes_follow_the_outcome() -> None:
    assert _compared()[0].exit_code == 0
    assert _compared(drop=30)[0].exit_code == 1
    assert _compared(drop=30)[0].model_copy(update={"blocking": False}).exit_code == 0
    assert _not_compared().exit_code == 5
    skipped = _not_compared().model_copy(update={"outcome": "skipped"})
    assert skipped.exit_code == 0


def test_junit_has_a_case_per_suite_case_and_the_gate() -> None:
    verdict, results = _compared(drop=30)
    root = ElementTree.fromstring(junit_xml(verdict, results))
    cases = {c.get("name"): c for c in root.iter("testcase")}
    assert set(cases) == {"@baseline", "a", "b", "c"}
    assert cases["a"].find("failure") is not None  # a replayed 30-point drop: listed
    assert cases["b"].find("failure") is None and cases["b"].find("skipped") is None
    assert cases["@baseline"].find("failure") is not None
    assert (root.get("tests"), root.get("failures"), root.get("errors")) == ("4", "2", "0")
    root = ElementTree.fromstring(junit_xml(_not_compared(), results))
    assert root.find(".//testcase[@name='@baseline']/error") is not None
    assert len(root.findall(".//testcase/skipped")) == 3
    assert (root.get("failures"), root.get("errors"), root.get("skipped")) == ("0", "1", "3")


def test_hostile_case_text_stays_text_in_junit_and_markdown() -> None:
    verdict, results = _compared(drop=30, ids=(HOSTILE, "b", "c"))
    xml = junit_xml(verdict, results)
    root = ElementTree.fromstring(xml.encode("utf-8"))  # well-formed, whatever the id held
    names = [c.get("name") for c in root.iter("testcase")]
    assert "c-\ufffd<script>]]>[x](https://e.example)![i](https://e.example/p.png)|*_~`" in names
    text = markdown_summary(verdict, quality="ρ −0.21 [link](https://e.example)")
    body = [line.removeprefix("### ").removeprefix("- ").removeprefix("> ")
            for line in text.splitlines()]
    unescaped = [line for line in body if re.search(r"(?<!\\)[\[\]<>|*_~`]", line)]
    assert not unescaped, unescaped
    assert "c-\ufffd\\<script\\>" in text
