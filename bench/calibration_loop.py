"""Held-out agreement of a calibrated judge: the loopback judge squeezed into 40..70.

``fake-judge~40-70`` (bench/fake_server.py) answers ``fake-judge``'s scores compressed into
40..70; the people's labels are ``fake-judge``'s scores (0..100) with a deterministic noise
of -3..3 per label. ``judge calibrate`` fits the isotonic map per category and reports
k-fold cross-validated agreement (each case predicted by a map fitted without it). The
same setup as tests/app/test_calibrate.py, printed as a table.

Run: ``PYTHONPATH=$PWD .venv/bin/python bench/calibration_loop.py [--cases 40] [--folds 5]``
"""

from __future__ import annotations

import argparse
import hashlib
import importlib.util
import shutil
import sys
import tempfile
from pathlib import Path

import yaml

from judge.app.judges.calibrating import calibrate
from judge.app.runs.running import RunRequest, run_suite
from judge.app.workspace.workspace import Workspace
from judge.core.formats.labels import Label, dump_labels

ROOT = Path(__file__).resolve().parents[1]
CATEGORIES = ("agentPerformance", "taskOutcomeQuality", "processCompliance")


def _fake() -> object:
    spec = importlib.util.spec_from_file_location("fake_server", ROOT / "bench" / "fake_server.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["fake_server"] = module
    spec.loader.exec_module(module)
    return module


def main() -> int:
    """Print per category the held-out MAD and band agreement before/after calibration."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--cases", type=int, default=40)
    parser.add_argument("--folds", type=int, default=5)
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="judge-calib-"))
    try:
        return _measure(root, args.cases, args.folds)
    finally:
        shutil.rmtree(root, ignore_errors=True)


def _measure(root: Path, count: int, folds: int) -> int:
    cases = [{"id": f"case-{i:02d}", "input": f"task {i}", "output": f"report {i}",
              "deterministic": {c: (i * 37 + k * 11) % 101 for k, c in enumerate(CATEGORIES)}}
             for i in range(count)]
    (root / "calib.yaml").write_text(yaml.safe_dump(
        {"id": "calib", "rubric": "task-evaluation", "cases": cases}))
    server = _fake().start_in_thread(latency_ms=0, seed=3)  # type: ignore[attr-defined]
    try:
        runs = {}
        for model in ("hosted_vllm/fake-judge", "hosted_vllm/fake-judge~40-70"):
            ws = Workspace.open(root, {"model": [model], "api_base": f"{server.base_url}/v1"},
                                env={})
            runs[model] = run_suite(ws, RunRequest(suite=root / "calib.yaml", check=False)).run
    finally:
        server.stop()
    ws = Workspace.open(root, env={})
    with ws.open_store() as store:
        people = list(store.iter_results(runs["hosted_vllm/fake-judge"].id))
    labels = []
    for r in people:
        for c in r.category_scores:
            assert c.ai_score is not None
            noise = hashlib.sha256(f"{r.id}/{c.category}".encode()).digest()[0] % 7 - 3
            labels.append(Label(suite="calib", case=r.id, category=c.category, reviewer="ana",
                                at="2026-12-02T06:00:00Z",
                                score=min(100, max(0, c.ai_score + noise))))
    (root / "calib.labels.jsonl").write_text(dump_labels(labels))
    report = calibrate(ws, [runs["hosted_vllm/fake-judge~40-70"].id],
                       root / "calib.labels.jsonl", folds=folds)
    print("| category | held-out cases | MAD before | MAD after | band agreement before |"
          " after | weighted κ before | after |")
    print("|---|---|---|---|---|---|---|---|")
    for cat, f in report.calibration.cross_validation.items():
        b, a = f.before, f.after
        print(f"| {cat} | {f.cases} | {b.mean_abs_diff:.1f} | {a.mean_abs_diff:.1f} | "
              f"{b.exact_band_agreement:.0%} | {a.exact_band_agreement:.0%} | "
              f"{b.weighted_kappa:.2f} | {a.weighted_kappa:.2f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
