"""The README's CI example, run as the script it is, in fresh clone-like folders.

Where a person works (in this process), the loopback fake judge judges the example suite:
the first run records the baseline, and the judgments are exported as the README says.
Each scenario then copies what would be committed into a fresh folder (no store, no cache)
and runs the ``bash`` block under ``## CI`` with ``CI`` set: no baseline fails (exit 5,
naming the file to commit); a committed baseline and the same judge pass; a swapped judge
fails unless the change is allowed; a real drop fails. A process per scenario: the script
and the ``judge`` it calls are the door under test (offline: no LiteLLM import).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from xml.etree import ElementTree

import pytest
from conftest import EXAMPLE_SUITE, ROOT, judge_env, load_fake_server, run_judge

MODEL = "hosted_vllm/fake-judge"
SWAPPED = MODEL + "+0"  # another name for the same answers: only the judge's name changed
BASELINE = "baselines/task-evaluation-example.json"
EXPORT = "judge-cache.jsonl"


def ci_block() -> str:
    """The first ``bash`` block after the README's ``## CI`` heading."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    section = text.split("\n## CI\n", 1)[1].split("\n## ", 1)[0]
    found = re.search(r"```bash\n(.*?)```", section, re.S)
    assert found, "README's ## CI has no bash block"
    return found.group(1)


def _workspace(folder: Path, model: str, api_base: str) -> Path:
    (folder / "suites").mkdir(parents=True)
    shutil.copy(EXAMPLE_SUITE, folder / "suites" / "agent.yaml")
    (folder / "judge.toml").write_text(f'model = "{model}"\napi_base = "{api_base}"\n',
                                       encoding="utf-8")
    return folder


def _work(folder: Path, model: str, server: Any, *, bias: int = 0) -> Path:
    """Judge where a person works (no CI), record or keep the baseline, export the cache."""
    _workspace(folder, model, server.openai_base_url)
    server.set_options(bias=bias)
    try:
        judged = run_judge(["run", "suites/agent.yaml", "--no-check"], folder)
    finally:
        server.set_options(bias=0)
    assert judged.returncode == 0, judged.stdout + judged.stderr
    exported = run_judge(["cache", "export", EXPORT], folder)
    assert exported.returncode == 0, exported.stderr
    return folder


@pytest.fixture(scope="module")
def work(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Path]]:
    """What a person commits: the baseline, and the exports of each scenario's judgments."""
    server = load_fake_server().start_in_thread(latency_ms=0, seed=11)
    try:
        first = _workspace(tmp_path_factory.mktemp("first"), MODEL, server.openai_base_url)
        recorded = run_judge(["run", "suites/agent.yaml"], first)
        assert recorded.returncode == 0, recorded.stdout + recorded.stderr
        assert "first baseline recorded, nothing compared" in recorded.stdout
        assert run_judge(["cache", "export", EXPORT], first).returncode == 0
        yield {"same": first,
               "swapped": _work(tmp_path_factory.mktemp("swapped"), SWAPPED, server),
               "drop": _work(tmp_path_factory.mktemp("drop"), MODEL, server, bias=-40)}
    finally:
        server.stop()


def _clone(tmp_path: Path, judged: Path, *, baseline: Path | None, model: str = MODEL) -> Path:
    """A fresh checkout: the suite, judge.toml, the exported judgments, the baseline if any."""
    folder = _workspace(tmp_path / "clone", model, "http://127.0.0.1:9/v1")
    shutil.copy(judged / EXPORT, folder / EXPORT)
    if baseline is not None:
        (folder / "baselines").mkdir()
        shutil.copy(baseline / BASELINE, folder / BASELINE)
    return folder


def _script(folder: Path, **env: str) -> subprocess.CompletedProcess[str]:
    bin_dir = str(Path(sys.executable).parent)
    environment = judge_env(CI="true", PATH=bin_dir + os.pathsep + os.environ["PATH"], **env)
    environment.pop("GITHUB_STEP_SUMMARY", None)
    return subprocess.run(["bash", "-euo", "pipefail", "-c", ci_block()], cwd=folder,
                          env=environment, text=True, capture_output=True, timeout=180,
                          check=False)


def _reports(folder: Path) -> tuple[ElementTree.Element, str]:
    junit = ElementTree.parse(folder / "reports" / "judge-junit.xml").getroot()
    return junit, (folder / "reports" / "judge-summary.md").read_text(encoding="utf-8")


def test_no_committed_baseline_fails_naming_the_file(tmp_path: Path,
                                                     work: dict[str, Path]) -> None:
    folder = _clone(tmp_path, work["same"], baseline=None)
    proc = _script(folder)
    assert proc.returncode == 5, proc.stdout + proc.stderr
    assert BASELINE in proc.stdout and "commit that file" in proc.stdout
    assert not (folder / "baselines").exists()  # nothing recorded in a CI checkout
    junit, summary = _reports(folder)
    assert (junit.get("errors"), junit.get("failures")) == ("1", "0")
    gate = junit.find(".//testcase[@name='@baseline']/error")
    assert gate is not None and "no baseline" in (gate.get("message") or "")
    assert len(junit.findall(".//testcase/skipped")) == 16  # every case: nothing checked
    assert "not compared" in summary and "nothing was checked" in summary


def test_committed_baseline_and_the_same_judge_pass(tmp_path: Path,
                                                    work: dict[str, Path]) -> None:
    folder = _clone(tmp_path, work["same"], baseline=work["same"])
    proc = _script(folder)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "✓ no regression" in proc.stdout and "compared 16 case(s)" in proc.stdout
    junit, summary = _reports(folder)
    assert (junit.get("tests"), junit.get("failures"), junit.get("errors")) == ("17", "0", "0")
    assert "✅ no regression" in summary and "judge hosted\\_vllm/fake-judge" in summary


def test_a_swapped_judge_fails_unless_allowed(tmp_path: Path, work: dict[str, Path]) -> None:
    folder = _clone(tmp_path, work["swapped"], baseline=work["same"], model=SWAPPED)
    refused = _script(folder)
    assert refused.returncode == 5, refused.stdout + refused.stderr
    assert f"judge {MODEL} → {SWAPPED}" in refused.stdout
    allowed = _script(folder, JUDGE_ACROSS_JUDGES="1")
    assert allowed.returncode == 0, allowed.stdout + allowed.stderr
    assert "across judges" in allowed.stdout


def test_a_real_drop_fails(tmp_path: Path, work: dict[str, Path]) -> None:
    folder = _clone(tmp_path, work["drop"], baseline=work["same"])
    proc = _script(folder)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "⚠ regression" in proc.stdout and "mean score fell by" in proc.stdout
    junit, summary = _reports(folder)
    failure = junit.find(".//testcase[@name='@baseline']/failure")
    assert failure is not None and "mean score fell by" in (failure.get("message") or "")
    assert junit.findall(".//testcase/failure[@type='regression']")
    assert "❌ regression" in summary
