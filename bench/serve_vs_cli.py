"""What `judge workspace serve` saves: one 200-case cold run through the API against the same
run through `judge run`.

Run: .venv/bin/python bench/serve_vs_cli.py [--repeats 3] [--cases 200]
     (about 30 s on a quiet 2-core machine; minutes under load)
Both doors judge the same generated JSONL suite against the loopback fake judge at 0 ms
latency (tests/fakes/fake_server.py, in a thread of this process), concurrency 32, no baseline
check, each in its own workspace. Every repeat uses a seed not used before, so each of the
200 judgments is a cache miss (the fake judge's request count proves it) — a cold cache.

- API: `judge workspace serve` is started once and waited for (`/readyz`), then warmed by a
  1-case run (the steady state of a long-running server: litellm imported, first-run paths loaded);
  each repeat is one `POST /api/suites/{id}/eval/harness?wait=true`, timed by the client,
  with the server's CPU (``/proc``) before and after.
- CLI: each repeat is a whole `judge run` process (GNU time: wall, user+sys CPU).

API and CLI repeats alternate, so load on the machine falls on both alike. Prints a markdown
table (medians) and writes it into bench/RESULTS.md between this script's markers, plus
bench/out/serve_vs_cli.json.
"""

from __future__ import annotations

import argparse
import datetime
import http.client
import json
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH))
sys.path.insert(0, str(BENCH.parent / "tests" / "fakes"))  # the loopback fake judge

from fake_server import FakeServerHandle, start_in_thread  # noqa: E402
from run import MODEL, clean_env, judge_cmd, measure, write_suite  # noqa: E402
from serve_startup import cpu_seconds, poll, write_section  # noqa: E402

SUITE = "bench"
CONCURRENCY = 32
TIMEOUT = 600


def workspace(root: Path, suite: Path, fake: FakeServerHandle) -> Path:
    """A workspace with the suite in ``suites/`` and the fake judge configured."""
    (root / "suites").mkdir(parents=True)
    shutil.copy(suite, root / "suites" / f"{SUITE}.jsonl")
    (root / "judge.toml").write_text(
        f'model = "{MODEL}"\napi_base = "{fake.openai_base_url}"\n'
        f"concurrency = {CONCURRENCY}\n", encoding="utf-8")
    return root


class Served:
    """`judge workspace serve --port 0` in a workspace: its port, its process."""

    def __init__(self, root: Path) -> None:
        self.log = root / "serve.log"
        self.start = time.perf_counter()
        with self.log.open("w", encoding="utf-8") as err:
            self.proc = subprocess.Popen(judge_cmd("workspace", "serve", "--port", "0"), cwd=root,
                                         env=clean_env(), stdout=subprocess.DEVNULL,
                                         stderr=err)
        self.port = self._port()
        self.ready_s = poll(self.port, "/readyz", self.start)

    def _port(self) -> int:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            found = re.search(r"http://127\.0\.0\.1:(\d+)", self.log.read_text("utf-8"))
            if found:
                return int(found.group(1))
            if self.proc.poll() is not None:
                break
            time.sleep(0.01)
        raise SystemExit(f"judge workspace serve did not start:\n{self.log.read_text('utf-8')}")

    def harness(self, body: dict[str, Any]) -> tuple[float, float, dict[str, Any]]:
        """One ``?wait=true`` harness call: client wall, server CPU, the run's view."""
        cpu = cpu_seconds(self.proc.pid)
        start = time.perf_counter()
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=TIMEOUT)
        try:
            conn.request("POST", f"/api/suites/{SUITE}/eval/harness?wait=true",
                         body=json.dumps(body), headers={"Content-Type": "application/json"})
            answer = conn.getresponse()
            text = answer.read().decode("utf-8")
        finally:
            conn.close()
        wall = time.perf_counter() - start
        if answer.status != 200:
            raise SystemExit(f"harness call answered {answer.status}: {text[:2000]}")
        return wall, cpu_seconds(self.proc.pid) - cpu, json.loads(text)

    def stop(self) -> None:
        self.proc.send_signal(signal.SIGINT)
        try:
            self.proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(timeout=30)


def first_case_id(suite: Path) -> str:
    with suite.open(encoding="utf-8") as lines:
        return str(json.loads(next(lines))["id"])


def med(values: list[float]) -> float:
    return round(statistics.median(values), 3)


def table(r: dict[str, Any]) -> str:
    api, cli = r["api"], r["cli"]
    saved = cli["wall_s"] - api["wall_s"]
    return "\n".join([
        f"| {r['cases']} cases, cold cache, fake judge at 0 ms, concurrency {CONCURRENCY} "
        f"(median of {r['repeats']}) | wall s | CPU s | model calls |",
        "|---|---|---|---|",
        f"| `judge run` (whole process) | {cli['wall_s']:.3f} | {cli['cpu_s']:.3f} | "
        f"{cli['calls']} |",
        f"| `POST .../eval/harness?wait=true` to a started `judge workspace serve` | "
        f"{api['wall_s']:.3f} | {api['cpu_s']:.3f} (server) | {api['calls']} |",
        f"| saved per run by the server | {saved:.3f} "
        f"({cli['wall_s'] / api['wall_s']:.2f}x faster) | "
        f"{cli['cpu_s'] - api['cpu_s']:.3f} | |",
        "",
        f"The server itself took {r['serve_ready_s']:.3f} s from exec to `/readyz`, once, and "
        f"its 1-case warm-up run {r['warmup_s']:.3f} s (litellm imported by then). Each "
        f"repeat's wall: API {api['walls']}, CLI {cli['walls']}.",
    ])


def write_markdown(r: dict[str, Any]) -> None:
    """This script's table into bench/RESULTS.md."""
    write_section("serve_vs_cli.py", "Issue 19: what `judge workspace serve` saves, API "
                  "against CLI (`bench/serve_vs_cli.py`)", "\n".join([
                      f"Measured {r['date']} on {r['cpus']} CPUs; the whole bench took "
                      f"{r['bench_s']:.0f} s; 1-minute load average {r['load_before']} before, "
                      f"{r['load_after']} after (other work on the machine stretches wall "
                      "times). Rerun: `.venv/bin/python bench/serve_vs_cli.py`.", "",
                      table(r)]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else "")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--cases", type=int, default=200)
    parser.add_argument("--no-write", action="store_true", help="print only, no RESULTS.md")
    args = parser.parse_args()
    started, load_before = time.perf_counter(), round(os.getloadavg()[0], 2)
    fake = start_in_thread(latency_ms=0, seed=7)
    with tempfile.TemporaryDirectory() as tmp:
        suite = Path(tmp) / "suite.jsonl"
        write_suite(suite, args.cases, suite_id=SUITE)
        api_ws = workspace(Path(tmp) / "api", suite, fake)
        cli_ws = workspace(Path(tmp) / "cli", suite, fake)
        server = Served(api_ws)
        try:
            warmup_s, _, _ = server.harness({"seed": 1, "cases": [first_case_id(suite)],
                                             "check": False})
            api: dict[str, list[float]] = {"wall": [], "cpu": [], "calls": []}
            cli: dict[str, list[float]] = {"wall": [], "cpu": [], "calls": []}
            for n in range(args.repeats):
                seed = 1000 + n  # never judged before: every judgment a cache miss
                fake.reset_stats()
                wall, cpu, view = server.harness({"seed": seed, "check": False})
                if view["status"] != "complete":
                    raise SystemExit(f"the API run ended {view['status']}: {view}")
                api["wall"].append(wall)
                api["cpu"].append(cpu)
                api["calls"].append(int(fake.stats()["requests"]))
                fake.reset_stats()
                run = measure(judge_cmd("run", f"suites/{SUITE}.jsonl", "--seed", str(seed),
                                        "--no-check"), cli_ws, timeout=TIMEOUT)
                cli["wall"].append(run.wall_s)
                cli["cpu"].append(run.cpu_s)
                cli["calls"].append(int(fake.stats()["requests"]))
        finally:
            server.stop()
            fake.stop()
    result = {
        "date": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "cases": args.cases, "repeats": args.repeats, "serve_ready_s": server.ready_s,
        "warmup_s": warmup_s,
        **{door: {"wall_s": med(d["wall"]), "cpu_s": med(d["cpu"]),
                  "calls": int(statistics.median(d["calls"])),
                  "walls": [round(w, 3) for w in d["wall"]]}
           for door, d in (("api", api), ("cli", cli))},
        "bench_s": time.perf_counter() - started, "load_before": load_before,
        "load_after": round(os.getloadavg()[0], 2), "cpus": os.cpu_count(),
    }
    out = BENCH / "out"
    out.mkdir(parents=True, exist_ok=True)
    (out / "serve_vs_cli.json").write_text(json.dumps(result, indent=2) + "\n",
                                           encoding="utf-8")
    print(table(result))
    print(f"(bench {result['bench_s']:.0f} s; load {load_before} before, "
          f"{result['load_after']} after, {result['cpus']} CPUs)")
    if not args.no_write:
        write_markdown(result)


if __name__ == "__main__":
    main()
