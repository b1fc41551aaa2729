"""Replay from cache at scale: cases/s and peak memory of `judge run --offline`, whole process.

Generates a suite (the seeded generator, JSONL), warms the cache once through the loopback
fake judge, then replays offline at several sizes in fresh processes and reports wall time,
cases/s and peak RSS for each size. Flat memory means peak RSS barely moves from the
smallest size to the largest.

Run: .venv/bin/python bench/replay.py [--sizes 1000,10000] [--repeats 3]
Writes bench/out/replay.json.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))

from fake_server import start_in_thread  # noqa: E402


def write_suite(path: Path, count: int) -> None:
    """A JSONL suite of ``count`` generated task-evaluation cases."""
    from judge.canonical import canonical_json
    from judge.generate import generate_cases
    from judge.resources import load_rubric

    suite = generate_cases("bench-replay", count, rubric=load_rubric("task-evaluation"))
    with path.open("w") as fp:
        for case in suite.cases:
            fp.write(canonical_json(case.model_dump(mode="json", exclude_defaults=True)) + "\n")


def judge_cmd(*args: str) -> list[str]:
    return [sys.executable, "-m", "judge", *args]


def run_measured(cmd: list[str], cwd: Path, env: dict[str, str]) -> tuple[float, float, int]:
    """Wall seconds, CPU seconds and peak RSS (MB) of one child process (GNU time's %M)."""
    start = time.perf_counter()
    proc = subprocess.run(["/usr/bin/time", "-f", "TIME %U %S %M", *cmd], cwd=cwd, env=env,
                          capture_output=True, text=True, check=False)
    wall = time.perf_counter() - start
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed ({proc.returncode}):\n{proc.stderr[-2000:]}")
    line = [x for x in proc.stderr.splitlines() if x.startswith("TIME ")][-1].split()
    return wall, float(line[1]) + float(line[2]), int(line[3]) // 1024


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sizes", default="1000,10000")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--concurrency", type=int, default=64)
    args = parser.parse_args()
    sizes = sorted(int(s) for s in args.sizes.split(","))
    work = Path(tempfile.mkdtemp(prefix="judge-replay-"))
    env = {k: v for k, v in os.environ.items() if not k.startswith("JUDGE_")}
    results = []
    try:
        largest = sizes[-1]
        write_suite(work / "suite.jsonl", largest)
        server = start_in_thread(latency_ms=0, seed=3)
        try:
            t0 = time.perf_counter()
            run_measured(judge_cmd("run", "suite.jsonl", "--model", "hosted_vllm/fake-judge",
                                   "--api-base", f"{server.base_url}/v1", "--concurrency",
                                   str(args.concurrency), "--no-check", "--json"), work, env)
            print(f"warmed the cache with {largest} judgments in "
                  f"{time.perf_counter() - t0:.1f}s ({server.stats()['requests']} requests)")
        finally:
            server.stop()
        lines = (work / "suite.jsonl").read_text().splitlines()
        for size in sizes:
            (work / f"suite-{size}.jsonl").write_text("\n".join(lines[:size]) + "\n")
            walls, cpus, rss = [], [], 0
            for _ in range(args.repeats):
                shutil.rmtree(work / ".judge", ignore_errors=True)
                wall, cpu, peak = run_measured(judge_cmd(
                    "run", f"suite-{size}.jsonl", "--offline", "--no-check",
                    "--model", "hosted_vllm/fake-judge"), work, env)
                walls.append(wall)
                cpus.append(cpu)
                rss = max(rss, peak)
            wall = statistics.median(walls)
            row = {"cases": size, "wall_s": round(wall, 3),
                   "cpu_s": round(statistics.median(cpus), 3),
                   "cases_per_s": round(size / wall, 1), "peak_rss_mb": rss}
            results.append(row)
            print(f"offline replay {size:>7} cases: {wall:7.2f} s wall, "
                  f"{row['cases_per_s']:>8} cases/s, peak RSS {rss} MB (median of {args.repeats})")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    out = ROOT / "bench" / "out"
    out.mkdir(exist_ok=True)
    (out / "replay.json").write_text(json.dumps(results, indent=2) + "\n")


if __name__ == "__main__":
    main()
