"""What `judge history --agreement` costs: 20 stored runs of a 40-case suite, labels in the store.

The runs alternate two loopback judges (``fake-judge`` and ``fake-judge~40-70``, its scores
squeezed into 40..70) so agreement differs run to run; the people's labels (40 cases x 3
categories, reviewer ``ana``) are loaded into the store with ``judge review RUN --import``.
Each command runs as its own process (``python -m judge``), ``--repeats`` times; the table
has the median wall seconds and the median CPU seconds of the child (user + system), and
the ratio to plain ``judge history`` in the same run. ``judge agreement`` (the same 20 runs,
with 1000-resample bootstrap intervals) is the row to compare with.

Run: ``PYTHONPATH=$PWD .venv/bin/python bench/history_agreement.py [--runs 20] [--cases 40]``
"""

from __future__ import annotations

import argparse
import hashlib
import importlib.util
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

from judge.app.runs.running import RunRequest, run_suite
from judge.app.workspace.workspace import Workspace
from judge.core.formats.labels import Label, dump_labels

ROOT = Path(__file__).resolve().parents[1]
CATEGORIES = ("agentPerformance", "taskOutcomeQuality", "processCompliance")
MODELS = ("hosted_vllm/fake-judge", "hosted_vllm/fake-judge~40-70")


def _fake() -> object:
    spec = importlib.util.spec_from_file_location("fake_server", ROOT / "bench" / "fake_server.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["fake_server"] = module
    spec.loader.exec_module(module)
    return module


def _timed(args: list[str], cwd: Path) -> tuple[float, float]:
    """Wall and CPU seconds (user + system) of one ``python -m judge ARGS`` process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "judge", *args], cwd=cwd, timeout=600,
                          capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": str(ROOT), "NO_COLOR": "1"})
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        raise SystemExit(f"judge {' '.join(args)} failed: {proc.stderr}")
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def _fill(root: Path, runs: int, count: int) -> str:
    cases = [{"id": f"case-{i:02d}", "input": f"task {i}", "output": f"report {i}",
              "deterministic": {c: (i * 37 + k * 11) % 101 for k, c in enumerate(CATEGORIES)}}
             for i in range(count)]
    (root / "hist.yaml").write_text(yaml.safe_dump(
        {"id": "hist", "rubric": "task-evaluation", "cases": cases}))
    server = _fake().start_in_thread(latency_ms=0, seed=3)  # type: ignore[attr-defined]
    ids = []
    try:
        for n in range(runs):
            ws = Workspace.open(root, {"model": [MODELS[n % 2]],
                                       "api_base": f"{server.base_url}/v1"}, env={})
            ids.append(run_suite(ws, RunRequest(suite=root / "hist.yaml", check=False)).run.id)
    finally:
        server.stop()
    with Workspace.open(root, env={}).open_store() as store:
        people = list(store.iter_results(ids[0]))
    labels = []
    for r in people:
        for c in r.category_scores:
            assert c.ai_score is not None
            noise = hashlib.sha256(f"{r.id}/{c.category}".encode()).digest()[0] % 7 - 3
            labels.append(Label(suite="hist", case=r.id, category=c.category, reviewer="ana",
                                at="2026-12-02T06:00:00Z",
                                score=min(100, max(0, c.ai_score + noise))))
    path = root / "people.labels.jsonl"  # not beside the suite: the store's labels only
    path.write_text(dump_labels(labels))
    _timed(["review", ids[0], "--import", str(path)], root)
    return ids[-1]


def main() -> int:
    """Print the markdown rows of the measurement."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--cases", type=int, default=40)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="judge-hist-"))
    try:
        _fill(root, args.runs, args.cases)
        n = str(args.runs)
        commands = {"judge history": ["history", "-n", n],
                    "judge history --agreement": ["history", "-n", n, "--agreement"],
                    "judge history --agreement --json": ["history", "-n", n, "--agreement",
                                                         "--json"],
                    "judge agreement --labels FILE (bootstrap intervals)": [
                        "agreement", "--json", "--labels", "people.labels.jsonl"]}
        walls: dict[str, list[float]] = {name: [] for name in commands}
        cpus: dict[str, list[float]] = {name: [] for name in commands}
        for _ in range(args.repeats):  # interleaved, so drift hits every row alike
            for name, argv in commands.items():
                wall, cpu = _timed(argv, root)
                walls[name].append(wall)
                cpus[name].append(cpu)
        base = statistics.median(walls["judge history"])
        print(f"{args.runs} runs x {args.cases} cases, labels of {args.cases} cases x "
              f"{len(CATEGORIES)} categories in the store; medians of {args.repeats}")
        print("| command | wall s | CPU s | wall ÷ plain history |")
        print("|---|---|---|---|")
        for name in commands:
            wall = statistics.median(walls[name])
            print(f"| `{name}` | {wall:.2f} | {statistics.median(cpus[name]):.2f} | "
                  f"{wall / base:.2f} |")
    finally:
        shutil.rmtree(root, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
