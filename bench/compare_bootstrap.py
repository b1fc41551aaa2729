"""What one ``judge compare`` of two 16-case runs costs in-process (its bootstrap intervals).

The runs are the ones tests/cli/test_compare_cli.py builds: the example suite judged by the
loopback fake judge and by its +15 twin (14 cases with human labels). Then
:func:`judge.app.judges.comparing.compare_runs_op` (what ``judge compare RUN_A RUN_B`` calls) is
timed with ``timeit``: ``--repeats`` times ``--number`` calls, the median and the min of a
call's wall and CPU (``time.process_time``) seconds; ``--json-out`` writes the comparison's
JSON, to check that two trees give the same bytes. ``--no-intervals`` times the same call
without the bootstrap (``compare_runs(..., intervals=False)``): the difference is its cost.

Run: ``PYTHONPATH=$PWD .venv/bin/python bench/compare_bootstrap.py [--repeats 7]``
(A B A B against another tree: ``--root DIR`` reuses one workspace for both.)
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import sys
import tempfile
import time
import timeit
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE_SUITE = ROOT / "examples" / "task-evaluation" / "suite.yaml"
MODELS = ("hosted_vllm/fake-judge", "hosted_vllm/fake-judge+15")
sys.path.insert(0, str(ROOT / "bench"))  # bench/fake_server.py; judge/ from PYTHONPATH or the venv


def build(root: Path) -> list[str]:
    """Two stored runs of the example suite in ``root`` (one per fake judge)."""
    from judge.app.runs.running import RunRequest, run_suite
    from judge.app.workspace.workspace import Workspace

    shutil.copy(EXAMPLE_SUITE, root / "suite.yaml")
    from fake_server import start_in_thread

    server = start_in_thread(latency_ms=0, seed=7)
    try:
        return [run_suite(Workspace.open(root, {"model": [m], "api_base":
                                                f"{server.base_url}/v1"}, env={}),
                          RunRequest(suite=root / "suite.yaml", check=False)).run.id
                for m in MODELS]
    finally:
        server.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--number", type=int, default=1)
    parser.add_argument("--root", type=Path, help="a workspace to build once and reuse")
    parser.add_argument("--json-out", type=Path)
    parser.add_argument("--no-intervals", action="store_true")
    args = parser.parse_args()
    from judge.app.judges import comparing
    from judge.app.judges.comparing import compare_runs_op
    from judge.app.workspace.workspace import Workspace
    from judge.store.runs import RunStore  # noqa: F401  (imported before the timing)

    root = args.root or Path(tempfile.mkdtemp(prefix="compare-bench-"))
    ids_file = root / "bench-runs.json"
    if ids_file.exists():
        runs = json.loads(ids_file.read_text())
    else:
        root.mkdir(parents=True, exist_ok=True)
        runs = build(root)
        ids_file.write_text(json.dumps(runs))
    ws = Workspace.open(root, env={})
    if args.no_intervals:
        core = comparing.compare_runs
        comparing.compare_runs = lambda *a, **k: core(*a, **{**k, "intervals": False})
    first = compare_runs_op(ws, runs)  # warm-up: imports (sklearn, scipy) and caches
    if args.json_out:
        args.json_out.write_text(json.dumps(first.model_dump(mode="json"), sort_keys=True))
    walls, cpus = [], []
    for _ in range(args.repeats):
        cpu = time.process_time()
        wall = timeit.timeit(lambda: compare_runs_op(ws, runs), number=args.number)
        cpus.append((time.process_time() - cpu) / args.number)
        walls.append(wall / args.number)
    print(json.dumps({"runs": runs, "intervals": not args.no_intervals,
                      "repeats": args.repeats, "number": args.number,
                      "wall_median": statistics.median(walls), "wall_min": min(walls),
                      "cpu_median": statistics.median(cpus), "cpu_min": min(cpus)}))


if __name__ == "__main__":
    main()
