"""Offline misses that say what changed, and a judge's measured quality beside its scores.

Both on the shipped example: its cache export (the embedded judge's judgments) replayed
offline, with no model and no llama.cpp.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from typing import Any

import pytest
from conftest import EXAMPLE_SUITE, ROOT, run_judge

EXPORT = ROOT / "examples" / "task-evaluation" / "local-smollm2.cache.jsonl"
LOCAL = "local/smollm2"


def _json(proc: Any) -> Any:
    assert proc.stdout.strip(), proc.stderr
    return json.loads(proc.stdout)


@pytest.fixture
def replayed(workspace: Path) -> Path:
    shutil.copy(EXAMPLE_SUITE, workspace / "suite.yaml")
    imported = run_judge(["cache", "import", str(EXPORT)], workspace)
    assert imported.returncode == 0, imported.stderr
    return workspace


def _edit_template(ws: Path) -> None:
    (ws / "prompts").mkdir()
    text = (ROOT / "prompts" / "judge-small.md.j2").read_text(encoding="utf-8")
    edited = text.replace("You grade the work", "You grade the whole work")
    assert edited != text
    (ws / "prompts" / "judge-small.md.j2").write_text(edited, encoding="utf-8")


@pytest.mark.parametrize("store_kept", [True, False])
def test_an_offline_replay_after_a_template_edit_names_the_template_change(
        replayed: Path, store_kept: bool) -> None:
    first = run_judge(["run", "suite.yaml", "--offline", "--model", LOCAL], replayed)
    assert first.returncode == 0, first.stderr
    # The digest the cached judgments were made with (the template's at judging time).
    old_hash = json.loads(EXPORT.read_text(encoding="utf-8").splitlines()[0])["meta"][
        "templateHash"]
    _edit_template(replayed)
    if not store_kept:  # a CI checkout: the cache export, no store of earlier runs
        shutil.rmtree(replayed / ".judge")
    proc = run_judge(["run", "suite.yaml", "--offline", "--model", LOCAL], replayed)
    assert proc.returncode == 3, proc.stdout + proc.stderr
    assert re.search(rf"14 cases \(.*\): changed against the nearest cached judgment: "
                     rf"template judge-small {old_hash[:12]} → judge-small [0-9a-f]{{12}}",
                     proc.stderr), proc.stderr
    # An unjudged case is never counted as passed.
    assert "pass rate 12% (2 of 16 passed, 14 not judged" in proc.stdout
    body = _json(run_judge(["run", "suite.yaml", "--offline", "--model", LOCAL, "--json"],
                           replayed))
    assert len(body["misses"]) == 14 and body["summary"]["passRate"] == 0.125
    miss = body["misses"][0]
    assert miss["foundBy"] == ("same-case" if store_kept else "nearest-prompt")
    assert miss["changes"][0].startswith(f"template judge-small {old_hash[:12]} → ")
    assert miss["nearest"] and miss["nearest"] != miss["key"]
    assert body["baseline"]["notCompared"] in ("cache-misses", "no-baseline")


def test_the_embedded_judge_shows_its_measured_agreement(replayed: Path) -> None:
    proc = run_judge(["run", "suite.yaml", "--offline", "--model", LOCAL], replayed)
    assert proc.returncode == 0, proc.stderr
    assert ("judge quality: local/smollm2, template judge-small: Spearman ρ −0.21 over 42 "
            "category AI scores") in proc.stdout
    assert "its scores do not track quality" in proc.stdout
    body = _json(run_judge(["run", "suite.yaml", "--offline", "--model", LOCAL, "--json"],
                           replayed))
    quality = body["judgeQuality"]
    assert (round(quality["rho"], 2), quality["n"], quality["statistic"], quality["level"]) == (
        -0.21, 42, "spearman", "item")
    assert quality["source"] == "this run's 14 labelled cases"
    report = run_judge(["report", body["run"]["id"], "-o", "r.html"], replayed)
    assert report.returncode == 0, report.stderr
    page = (replayed / "r.html").read_text(encoding="utf-8")
    assert 'id="judge-quality-banner"' in page and "Spearman ρ −0.21 over 42" in page


def test_without_labels_the_shipped_figure_travels_with_the_embedded_judge(
        replayed: Path) -> None:
    text = (replayed / "suite.yaml").read_text(encoding="utf-8")
    unlabelled = re.sub(r"\n    human:\n(?:      .*\n)+", "\n", text)
    assert "human:" not in unlabelled.replace("# Human labels (`human:`)", "")
    (replayed / "suite.yaml").write_text(unlabelled, encoding="utf-8")
    body = _json(run_judge(["run", "suite.yaml", "--offline", "--model", LOCAL, "--json"],
                           replayed))
    quality = body["judgeQuality"]
    assert quality["source"].startswith("shipped measurement of the embedded judge")
    assert (quality["rho"], quality["n"], quality["measuredAt"]) == (-0.21, 42, "2026-12-03")
