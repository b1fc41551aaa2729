"""The throughput row alone: 2,000 cases at concurrency 64, judge against floor.

The same measurement as ``bench/run.py``'s section (c), without the rest of that bench:
``judge run`` of the generated suite (``write_suite``) against the loopback fake judge at
200 ms, and the bare LiteLLM loop (``bench/litellm_floor.py``, untuned) sending the same
requests (``write_requests``), in turn (judge, floor, judge, floor, ...), each under
``/usr/bin/time``; with ``--base-tree DIR`` (another commit's ``judge/``, ``rubrics/`` and
``prompts/``, e.g. ``git archive main judge rubrics prompts | tar -x -C DIR``) that tree's
``judge run`` too, in the same rounds. Every judge run starts with no cache and no store.
Ratios are taken round by round; the 1-minute load is read before each round.

Run:   .venv/bin/python bench/scale_pair.py [--repeats 3] [--cases 2000] [--base-tree DIR]
Prints one line per run and the medians; writes bench/out/scale_pair.json.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
BENCH = ROOT / "bench"
sys.path.insert(0, str(BENCH))
sys.path.insert(0, str(ROOT / "tests" / "fakes"))  # the loopback fake judge
sys.path.insert(0, str(ROOT))

from fake_server import start_in_thread  # noqa: E402
from run import MODEL, cached_keys, write_requests, write_suite  # noqa: E402

CHILD_TIMEOUT = 600.0


def child_env(tree: Path) -> dict[str, str]:
    """No judge settings, no CI, no provider keys: only ``tree`` on the path."""
    env = {k: v for k, v in os.environ.items() if k != "CI"
           and not k.startswith(("JUDGE_", "OPENAI_", "ANTHROPIC_", "LITELLM_"))}
    env["PYTHONPATH"] = str(tree)
    return env


def timed(cmd: Sequence[str], cwd: Path, env: dict[str, str]) -> dict[str, float]:
    """Wall and CPU (user + system) seconds of one whole process; raise when it fails."""
    started = time.perf_counter()
    done = subprocess.run(["/usr/bin/time", "-f", "GNUTIME %U %S %M", *cmd], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=CHILD_TIMEOUT, check=False)
    wall = time.perf_counter() - started
    lines = [x for x in done.stderr.splitlines() if x.startswith("GNUTIME ")]
    if done.returncode != 0 or not lines:
        raise RuntimeError(f"{' '.join(cmd)} exited {done.returncode}:\n{done.stderr[-2000:]}")
    _, user, system, peak_kb = lines[-1].split()
    return {"wall_s": round(wall, 3), "cpu_s": round(float(user) + float(system), 3),
            "rss_mb": round(int(peak_kb) / 1024, 1)}


def med(values: Sequence[float]) -> float:
    return round(float(statistics.median(values)), 3)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the rounds; print and write the medians."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else "")
    parser.add_argument("--repeats", type=int, default=3, help="rounds")
    parser.add_argument("--cases", type=int, default=2000)
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument("--latency-ms", type=float, default=200.0)
    parser.add_argument("--base-tree", type=Path, default=None,
                        help="a folder holding another commit's judge/, rubrics/, prompts/")
    args = parser.parse_args(argv)
    if args.base_tree is not None and not (args.base_tree / "judge" / "__main__.py").is_file():
        parser.error(f"{args.base_tree} holds no judge/__main__.py")
    work = Path(tempfile.mkdtemp(prefix="judge-scale-"))
    server = start_in_thread(latency_ms=args.latency_ms, seed=3)
    trees = {"judge": ROOT, **({"base": args.base_tree.resolve()} if args.base_tree else {})}
    runs: dict[str, list[dict[str, float]]] = {name: [] for name in (*trees, "floor")}
    loads: list[float] = []
    try:
        suite = work / "suite.jsonl"
        write_suite(suite, args.cases)
        requests = work / "requests.json"
        keys = set(write_requests(work, suite, requests))  # checked by key below
        judge_args = ["run", "suite.jsonl", "--model", MODEL, "--api-base",
                      f"{server.base_url}/v1", "--concurrency", str(args.concurrency),
                      "--no-check"]
        floor = [sys.executable, str(BENCH / "litellm_floor.py"), str(requests), "--api-base",
                 f"{server.base_url}/v1", "--concurrency", str(args.concurrency)]
        for round_ in range(args.repeats):
            loads.append(round(os.getloadavg()[0], 2))
            for name, tree in trees.items():
                ws = work / name
                shutil.rmtree(ws, ignore_errors=True)
                ws.mkdir()
                shutil.copy(suite, ws / "suite.jsonl")
                server.reset_stats()
                runs[name].append(timed([sys.executable, "-m", "judge", *judge_args], ws,
                                        child_env(tree)))
                seen = int(server.stats()["requests"])
                if seen != args.cases:
                    raise RuntimeError(f"{name} sent {seen} requests, not {args.cases}")
                if round_ == 0 and cached_keys(ws / "cache") != keys:
                    raise RuntimeError(f"{name}: the floor's requests are not the ones sent")
                print(f"round {round_ + 1} {name}: {runs[name][-1]}", flush=True)
            runs["floor"].append(timed(floor, work, child_env(ROOT)))
            print(f"round {round_ + 1} floor: {runs['floor'][-1]}  load {loads[-1]}", flush=True)
    finally:
        server.stop()
        shutil.rmtree(work, ignore_errors=True)
    out: dict[str, Any] = {
        "cases": args.cases, "concurrency": args.concurrency, "latency_ms": args.latency_ms,
        "date": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "nproc": os.cpu_count(), "load_1min_per_round": loads, "runs": runs,
        "medians": {name: {k: med([r[k] for r in rs]) for k in ("wall_s", "cpu_s")}
                    for name, rs in runs.items()}}
    for name in trees:
        out[f"{name}_over_floor_wall"] = med([j["wall_s"] / f["wall_s"]
                                              for j, f in zip(runs[name], runs["floor"],
                                                              strict=True)])
        out[f"{name}_over_floor_cpu"] = med([j["cpu_s"] / f["cpu_s"]
                                             for j, f in zip(runs[name], runs["floor"],
                                                             strict=True)])
    if "base" in trees:
        out["judge_over_base_wall"] = med([j["wall_s"] / b["wall_s"] for j, b in
                                           zip(runs["judge"], runs["base"], strict=True)])
    out["throughput_share_of_floor"] = round(1 / out["judge_over_floor_wall"], 3)
    print(json.dumps({k: v for k, v in out.items() if k != "runs"}, indent=1))
    (BENCH / "out").mkdir(exist_ok=True)
    (BENCH / "out" / "scale_pair.json").write_text(json.dumps(out, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
