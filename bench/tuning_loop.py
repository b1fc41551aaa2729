"""The tuning loop's commands with the warm worker, whole process, same run.

(a) one case, cold (no cache, no store): ``judge run`` through a warm worker against the
    loopback fake judge, and a raw httpx script that sends the same one request as a whole
    process; wall medians and their ratio taken pair by pair (targets: ≤ 0.5 s, ≤ 1.5x).
(b) a 200-case suite judged once; then, each round, the workspace template is edited so that
    exactly 5 cases' prompts change (the 5 written without a task: the template's
    "(none given)" line), and ``judge run`` through the warm worker re-judges them; wall
    median, the fake judge's requests each round must be 5 (target: ≤ 1 s + its latency).
(c) with ``--base-tree DIR`` (a checkout of another commit's ``judge/``, e.g.
    ``git archive main judge | tar -x -C DIR``): the same two commands *without* the worker,
    this tree against that one, in turn, ratios pair by pair (target: nothing slower).

The worker runs in a private runtime folder and is stopped (killed if it will not stop) at
the end. ``CI`` and every ``JUDGE_*`` setting are removed from the children's environment.
The wall figures of worker runs are the client's: the command's CPU is spent in the worker's
child and no process accounting of the client sees it.

Run:   .venv/bin/python bench/tuning_loop.py [--repeats 7] [--latency-ms 0]
                                             [--base-tree DIR]
Prints the medians; writes bench/out/tuning_loop.json. Every child has a timeout.
"""

from __future__ import annotations

import argparse
import datetime
import functools
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
BENCH = ROOT / "bench"
sys.path.insert(0, str(BENCH))
sys.path.insert(0, str(ROOT / "tests" / "fakes"))  # the loopback fake judge
sys.path.insert(0, str(ROOT))

from fake_server import FakeServerHandle, start_in_thread  # noqa: E402
from run import write_requests, write_suite  # noqa: E402

from judge.core.text.canonical import canonical_json  # noqa: E402
from judge.system.resources import shipped_dir  # noqa: E402

MODEL = "hosted_vllm/fake-judge"
CHILD_TIMEOUT = 300.0
TOUCHED = 5
NO_TASK_LINE = "(none given)"
RAW_HTTPX = '''"""One chat completion with httpx, as a whole process: the yardstick of (a)."""
import json, sys
import httpx
request = json.loads(open(sys.argv[1], encoding="utf-8").read())[0]
request["model"] = request["model"].split("/", 1)[1]
reply = httpx.post(sys.argv[2] + "/chat/completions", json=request, timeout=60)
reply.raise_for_status()
print(reply.json()["choices"][0]["message"]["content"])
'''


def child_env(tree: Path, **extra: str) -> dict[str, str]:
    """No judge settings, no CI, no provider keys: only ``tree`` on the path, and ``extra``."""
    env = {k: v for k, v in os.environ.items() if k != "CI"
           and not k.startswith(("JUDGE_", "OPENAI_", "ANTHROPIC_", "LITELLM_"))}
    env.update(PYTHONPATH=str(tree), **extra)
    return env


def timed(cmd: Sequence[str], cwd: Path, env: dict[str, str]) -> float:
    """Wall seconds of one whole process; raise when it fails."""
    started = time.perf_counter()
    done = subprocess.run(list(cmd), cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=CHILD_TIMEOUT, check=False)
    wall = time.perf_counter() - started
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} exited {done.returncode}:\n{done.stderr[-2000:]}")
    return wall


def judge(*args: str) -> list[str]:
    return [sys.executable, "-m", "judge", *args]


def med(values: Sequence[float]) -> float:
    return round(float(statistics.median(values)), 4)


def summary(values: Sequence[float]) -> dict[str, Any]:
    return {"median_s": med(values), "min_s": round(min(values), 4),
            "max_s": round(max(values), 4), "runs": len(values)}


def workspace(folder: Path, base_url: str, suite: Path) -> Path:
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    shutil.copy(suite, folder / "suite.jsonl")
    (folder / "judge.toml").write_text(f'model = "{MODEL}"\napi_base = "{base_url}/v1"\n',
                                       encoding="utf-8")
    return folder


def copy_templates(ws: Path) -> Path:
    """The shipped templates into ``ws/prompts``; the root template's path."""
    shutil.copytree(shipped_dir("prompts"), ws / "prompts")
    root = ws / "prompts" / "judge.md.j2"
    if root.read_text(encoding="utf-8").count(NO_TASK_LINE) != 1:
        raise RuntimeError(f"{root} no longer says {NO_TASK_LINE!r} once: adapt the bench")
    return root


def suite_without_tasks(source: Path, target: Path, count: int, untasked: int) -> None:
    """The first ``count`` cases of ``source``; ``untasked`` of them, spread out, with no task."""
    lines = source.read_text(encoding="utf-8").splitlines()[:count]
    step = count // untasked
    out = []
    for index, line in enumerate(lines):
        case = json.loads(line)
        if index % step == 0 and index // step < untasked:
            case.pop("input", None)
        out.append(canonical_json(case))
    target.write_text("\n".join(out) + "\n", encoding="utf-8")


class Worker:
    """The warm worker of one workspace, in a private runtime folder; stopped at the end."""

    def __init__(self, ws: Path, runtime: Path) -> None:
        self.ws, self.env = ws, child_env(ROOT, XDG_RUNTIME_DIR=str(runtime), JUDGE_WORKER="1")

    def status(self) -> dict[str, Any] | None:
        out = subprocess.run(judge("workspace", "worker", "status"), cwd=self.ws, env=self.env,
                             text=True, capture_output=True, timeout=60, check=False).stdout.strip()
        return None if not out or out == "no worker running" else dict(json.loads(out))

    def start(self) -> float:
        """Start the worker; seconds until it answers (polled every 0.1 s)."""
        started = time.perf_counter()
        timed(judge("--version"), self.ws, self.env)
        deadline = time.monotonic() + 180
        while time.monotonic() < deadline:
            if self.status() is not None:
                return time.perf_counter() - started
            time.sleep(0.1)
        raise RuntimeError("the worker did not start within 180 s")

    def stop(self) -> None:
        found = self.status()
        subprocess.run(judge("workspace", "worker", "stop"), cwd=self.ws, env=self.env,
                       capture_output=True, timeout=60, check=False)
        if found is None:
            return
        pid = int(found["pid"])
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline:
            try:
                os.kill(pid, 0)
            except ProcessLookupError:
                return
            time.sleep(0.2)
        os.kill(pid, signal.SIGKILL)


def pairs(a: Callable[[], float], b: Callable[[], float], repeats: int
          ) -> tuple[list[float], list[float], list[float]]:
    """A and B in turn, one warm-up pair not counted; both walls and the ratios A/B."""
    a(), b()
    walls_a, walls_b = [], []
    for _ in range(repeats):
        walls_a.append(a())
        walls_b.append(b())
    return walls_a, walls_b, [x / y for x, y in zip(walls_a, walls_b, strict=True)]


class Bench:
    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.work = Path(tempfile.mkdtemp(prefix="judge-tuning-"))
        self.runtime = Path(tempfile.mkdtemp(prefix="jw-", dir="/tmp"))
        self.server: FakeServerHandle = start_in_thread(latency_ms=args.latency_ms, seed=3)
        self.results: dict[str, Any] = {}

    def close(self) -> None:
        self.server.stop()
        shutil.rmtree(self.work, ignore_errors=True)
        shutil.rmtree(self.runtime, ignore_errors=True)

    def log(self, text: str) -> None:
        print(text, file=sys.stderr, flush=True)

    def requests(self) -> int:
        return int(self.server.stats()["requests"])

    def cold_one(self, ws: Path, env: dict[str, str]) -> float:
        shutil.rmtree(ws / "cache", ignore_errors=True)
        shutil.rmtree(ws / ".judge", ignore_errors=True)
        before = self.requests()
        wall = timed(judge("run", "suite.jsonl", "--no-check"), ws, env)
        if self.requests() != before + 1:
            raise RuntimeError("a cold one-case run did not make exactly one call")
        return wall

    def one_case(self, suite_big: Path) -> None:
        self.log("(a) one case, cold: worker against raw httpx")
        one = self.work / "one.jsonl"
        one.write_text(suite_big.read_text(encoding="utf-8").splitlines()[0] + "\n")
        ws = workspace(self.work / "one", self.server.base_url, one)
        requests = self.work / "one-request.json"
        write_requests(ws, ws / "suite.jsonl", requests)
        script = self.work / "raw_httpx.py"
        script.write_text(RAW_HTTPX, encoding="utf-8")
        raw_env = child_env(ROOT)
        worker = Worker(ws, self.runtime)
        self.results["worker_start_s"] = round(worker.start(), 2)
        try:
            a, b, ratios = pairs(
                lambda: self.cold_one(ws, worker.env),
                lambda: timed([sys.executable, str(script), str(requests),
                               f"{self.server.base_url}/v1"], self.work, raw_env),
                self.args.repeats)
        finally:
            worker.stop()
        self.results["one_case"] = {"worker": summary(a), "raw_httpx": summary(b),
                                    "ratio_median": med(ratios),
                                    "ratios": [round(r, 3) for r in ratios]}
        self.log(f"    worker {med(a):.3f} s, raw httpx {med(b):.3f} s, ratio {med(ratios):.2f}")

    def rejudge(self, ws: Path, env: dict[str, str], template: Path, round_: list[int]) -> float:
        """Edit the template so that the untasked cases' prompts change; re-judge them."""
        round_[0] += 1
        text = template.read_text(encoding="utf-8")
        template.write_text(text.replace(f"(no task, edit {round_[0] - 1})", NO_TASK_LINE)
                            .replace(NO_TASK_LINE, f"(no task, edit {round_[0]})"),
                            encoding="utf-8")
        before = self.requests()
        wall = timed(judge("run", "suite.jsonl", "--no-check"), ws, env)
        if self.requests() != before + TOUCHED:
            raise RuntimeError(f"a template edit re-judged {self.requests() - before} cases, "
                               f"not {TOUCHED}")
        return wall

    def five_of_200(self, suite_big: Path) -> None:
        self.log(f"(b) {TOUCHED} changed cases of 200 after a template edit, through the worker")
        suite = self.work / "suite-200.jsonl"
        suite_without_tasks(suite_big, suite, 200, TOUCHED)
        ws = workspace(self.work / "loop", self.server.base_url, suite)
        template = copy_templates(ws)
        worker = Worker(ws, self.runtime)
        worker.start()
        round_ = [0]
        try:
            timed(judge("run", "suite.jsonl", "--no-check"), ws, worker.env)  # all 200, once
            self.rejudge(ws, worker.env, template, round_)  # warm-up round, not counted
            walls = [self.rejudge(ws, worker.env, template, round_)
                     for _ in range(self.args.repeats)]
        finally:
            worker.stop()
        self.results["five_of_200"] = {**summary(walls), "latency_ms": self.args.latency_ms}
        self.log(f"    worker {med(walls):.3f} s")

    def without_worker(self, base: Path) -> None:
        self.log(f"(c) without the worker: this tree against {base}")
        rows = {name: self.direct_pairs(name, base) for name in ("one_case", "five_of_200")}
        self.results["without_worker"] = {"base_tree": str(base), **rows}

    def direct_pairs(self, name: str, base: Path) -> dict[str, Any]:
        """One of (a)'s or (b)'s commands run directly, this tree and ``base`` in turn."""
        commands: dict[str, Callable[[], float]] = {}
        for side, tree in (("this", ROOT), ("base", base)):
            suite = self.work / ("one.jsonl" if name == "one_case" else "suite-200.jsonl")
            ws = workspace(self.work / f"direct-{name}-{side}", self.server.base_url, suite)
            env = child_env(tree, JUDGE_NO_WORKER="1")
            if name == "one_case":
                commands[side] = functools.partial(self.cold_one, ws, env)
            else:
                template = copy_templates(ws)
                timed(judge("run", "suite.jsonl", "--no-check"), ws, env)
                commands[side] = functools.partial(self.rejudge, ws, env, template, [0])
        a, b, ratios = pairs(commands["this"], commands["base"], self.args.repeats)
        self.log(f"    {name}: this {med(a):.3f} s, base {med(b):.3f} s, ratio {med(ratios):.2f}")
        return {"this": summary(a), "base": summary(b), "ratio_median": med(ratios),
                "ratios": [round(r, 3) for r in ratios]}


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else "")
    parser.add_argument("--repeats", type=int, default=7, help="measured runs (pairs) each")
    parser.add_argument("--latency-ms", type=float, default=0.0, help="the fake judge's delay")
    parser.add_argument("--base-tree", type=Path, default=None,
                        help="a folder holding another commit's judge/ for (c)")
    args = parser.parse_args(argv)
    if args.base_tree is not None and not (args.base_tree / "judge" / "__main__.py").is_file():
        parser.error(f"{args.base_tree} holds no judge/__main__.py")
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(ROOT / "judge")],
                   check=False, timeout=300, capture_output=True)
    load_before = os.getloadavg()
    started = time.perf_counter()
    bench = Bench(args)
    try:
        suite_big = bench.work / "suite-big.jsonl"
        write_suite(suite_big, 200)
        bench.one_case(suite_big)
        bench.five_of_200(suite_big)
        if args.base_tree is not None:
            bench.without_worker(args.base_tree.resolve())
    finally:
        bench.close()
    results = {**bench.results, "repeats": args.repeats,
               "date": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC"),
               "nproc": os.cpu_count(), "bench_wall_s": round(time.perf_counter() - started, 1),
               "loadavg_before": [round(x, 2) for x in load_before],
               "loadavg_after": [round(x, 2) for x in os.getloadavg()]}
    out = BENCH / "out"
    out.mkdir(exist_ok=True)
    (out / "tuning_loop.json").write_text(json.dumps(results, indent=2) + "\n")
    print(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
