"""Where tuning_loop's row (b) spends its time, per stage, in a child forked as the worker does.

Row (b) of ``bench/tuning_loop.py``: a 200-case suite judged once, then the workspace
template edited so that exactly 5 prompts change, and ``judge run`` again. Here the warm
parent is this process (``judge.cli.warm()`` in the workspace, as the worker does), and
each measured command is a child forked from it that runs ``judge.cli.main`` with the
stages below wrapped: CPU seconds (``time.thread_time``, the main thread's) inclusive of
what they call, so a stage's row holds its inner stages' rows too (indented). The fake
judge runs in this process's thread on 127.0.0.1 at 0 ms; each child must make exactly 5
calls. With ``--keep-output DIR`` each child's stdout is kept there (the run's id and
timings masked): two trees' folders then compare byte for byte (``diff -r``), since the
fake judge's reply is a function of the request.

Run:   PYTHONPATH=TREE .venv/bin/python bench/hit_path.py [--repeats 7] [--no-stages]
                                                          [--keep-output DIR]
Prints the medians (ms) per stage and the child's wall and CPU; writes
bench/out/hit_path.json. ``--no-stages`` forks the same children unwrapped (the wrappers
cost ~5 % of the child's CPU).
"""

from __future__ import annotations

import argparse
import functools
import gc
import importlib
import inspect
import json
import os
import re
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
BENCH = ROOT / "bench"
sys.path.insert(0, str(BENCH))

from fake_server import start_in_thread  # noqa: E402
from run import write_suite  # noqa: E402
from tuning_loop import (  # noqa: E402
    NO_TASK_LINE,
    TOUCHED,
    copy_templates,
    suite_without_tasks,
    workspace,
)

# (depth, module, qualified name): depth only indents the printed row under its caller.
STAGES = [
    (0, "judge.app.runs.running", "_Run.__init__"),
    (1, "judge.app.runs.running", "_select"),
    (1, "judge.app.workspace.workspace", "Workspace.renderer"),
    (0, "judge.app.workspace.workspace", "Workspace.open_cache"),
    (0, "judge.app.workspace.workspace", "Workspace.open_store"),
    (0, "judge.engine.runner", "_Run._look_up"),
    (0, "judge.core.formats.suite", "SuiteLine.case"),
    (0, "judge.engine.runner", "prepare"),
    (1, "judge.engine.judging", "build_bundle"),
    (1, "judge.engine.judging", "deterministic_signals"),
    (1, "judge.render.prompts", "PromptRenderer.render"),
    (2, "judge.render.prompts", "_groups_view"),
    (2, "judge.render.prompts", "PromptRenderer._render_context"),
    (1, "judge.engine.judging", "output_schema"),
    (1, "judge.engine.judging", "output_schema_json"),
    (0, "judge.engine.runner", "judge_prepared"),
    (1, "judge.engine.judging", "exchange"),
    (2, "judge.llm.client", "LiteLLMClient.complete"),
    (1, "judge.engine.judging", "build_request"),
    (1, "judge.engine.judging", "key_request"),
    (1, "judge.cache.disk", "JudgmentCache.turns"),
    (1, "judge.engine.judging", "parse_verdict"),
    (1, "judge.engine.judging", "scored_result"),
    (1, "judge.engine.judging", "judge_meta"),
    (1, "judge.engine.replay", "ReplayIndex.remember"),
    (0, "judge.engine.runner", "_Run._deliver"),
    (1, "judge.store.runs", "RunStore.add_results"),
    (0, "judge.engine.replay", "ReplayIndex.flush"),
    (0, "judge.store.runs", "RunStore.finish_run"),
    (0, "judge.cache.disk", "JudgmentCache.close"),
    (0, "judge.cli.run_cmd", "_report"),
]
_spent: dict[str, list[float]] = {}


def _timed(name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
    # A coroutine function is timed as the coroutine it returns runs (each step's CPU).
    if inspect.iscoroutinefunction(fn):
        @functools.wraps(fn)
        async def timed_async(*args: Any, **kwargs: Any) -> Any:
            coro = fn(*args, **kwargs)
            entry = _spent.setdefault(name, [0, 0.0])
            entry[0] += 1
            value: Any = None
            error: BaseException | None = None
            while True:
                started = time.thread_time()
                try:
                    step = coro.throw(error) if error is not None else coro.send(value)
                except StopIteration as done:
                    entry[1] += time.thread_time() - started
                    return done.value
                entry[1] += time.thread_time() - started
                try:
                    value, error = await _Yield(step), None
                except BaseException as exc:  # handed back to the coroutine
                    value, error = None, exc
        return timed_async

    @functools.wraps(fn)
    def timed(*args: Any, **kwargs: Any) -> Any:
        started = time.thread_time()
        try:
            return fn(*args, **kwargs)
        finally:
            entry = _spent.setdefault(name, [0, 0.0])
            entry[0] += 1
            entry[1] += time.thread_time() - started
    return timed


class _Yield:
    """Hands one yielded value of a wrapped coroutine to the event loop, and back."""

    def __init__(self, step: Any) -> None:
        self.step = step

    def __await__(self) -> Any:
        return (yield self.step)


def _wrap(module: str, qualname: str) -> None:
    owner: Any = importlib.import_module(module)
    *path, attr = qualname.split(".")
    for part in path:
        owner = getattr(owner, part)
    wrapped: Any = _timed(qualname, getattr(owner, attr))
    if isinstance(inspect.getattr_static(owner, attr), staticmethod):
        wrapped = staticmethod(wrapped)
    setattr(owner, attr, wrapped)


_VOLATILE = re.compile(r"\b(?:run-)?[0-9]{8}T?[0-9]{6}[-0-9a-zA-Z]*|\d+\.\d+ ?s\b|\d+ ms\b")


def _masked(text: str) -> str:
    """What a child prints, with the run's id and its timings masked."""
    return _VOLATILE.sub("…", text)


def child(stages: bool, out: Path) -> dict[str, Any]:
    """In the forked child: run the command (stdout to ``out``), return the figures."""
    import judge.cli as cli

    if stages:
        for _, module, qualname in STAGES:
            _wrap(module, qualname)
    fd = os.open(out, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    os.dup2(fd, 1)
    os.close(fd)
    sys.stdout = open(1, "w", encoding="utf-8", closefd=False)
    sys.argv = ["judge", "run", "suite.jsonl", "--no-check"]
    collecting = [0.0, 0.0, 0]  # start, seconds, collections

    def on_gc(phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            collecting[0] = time.thread_time()
        else:
            collecting[1] += time.thread_time() - collecting[0]
            collecting[2] += 1

    gc.callbacks.append(on_gc)
    wall, cpu = time.perf_counter(), time.process_time()
    code = 0
    try:
        cli.main()
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 1
    sys.stdout.flush()
    return {"exit": code, "wall_s": time.perf_counter() - wall,
            "cpu_s": time.process_time() - cpu, "gc_s": collecting[1], "gcs": collecting[2],
            "stages": {k: [int(v[0]), v[1]] for k, v in _spent.items()}}


def forked(stages: bool, out: Path) -> dict[str, Any]:
    """Fork, run :func:`child` there, and read its figures back through a pipe."""
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read)
        try:
            data = json.dumps(child(stages, out)).encode()
        except BaseException as exc:  # reported to the parent
            data = json.dumps({"error": repr(exc)}).encode()
        os.write(write, data)
        os._exit(0)
    os.close(write)
    chunks = []
    while chunk := os.read(read, 65536):
        chunks.append(chunk)
    os.close(read)
    os.waitpid(pid, 0)
    found = json.loads(b"".join(chunks))
    if "error" in found or found["exit"] != 0:
        raise RuntimeError(f"the child failed: {found}")
    return dict(found)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else "")
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--no-stages", action="store_true", help="fork the children unwrapped")
    parser.add_argument("--keep-output", type=Path, default=None, metavar="DIR",
                        help="keep each child's stdout (masked) in DIR/round-N.txt")
    args = parser.parse_args()
    keep = args.keep_output.resolve() if args.keep_output is not None else None
    for name in [k for k in os.environ if k.startswith(("JUDGE_", "LITELLM_")) or k == "CI"]:
        del os.environ[name]
    os.environ["JUDGE_NO_WORKER"] = "1"
    work = Path(tempfile.mkdtemp(prefix="judge-hitpath-"))
    server = start_in_thread(latency_ms=0.0, seed=3)
    load = os.getloadavg()
    try:
        big = work / "suite-big.jsonl"
        write_suite(big, 200)
        suite = work / "suite-200.jsonl"
        suite_without_tasks(big, suite, 200, TOUCHED)
        ws = workspace(work / "loop", server.base_url, suite)
        template = copy_templates(ws)
        os.chdir(ws)
        import judge.cli as cli

        cli.warm()
        forked(False, work / "first.txt")  # all 200 judged once
        runs = []
        if keep is not None:
            keep.mkdir(parents=True, exist_ok=True)
        for n in range(1, args.repeats + 2):
            text = template.read_text(encoding="utf-8")
            template.write_text(text.replace(f"(no task, edit {n - 1})", NO_TASK_LINE)
                                .replace(NO_TASK_LINE, f"(no task, edit {n})"), encoding="utf-8")
            before = server.stats()["requests"]
            found = forked(not args.no_stages, work / "out.txt")
            if server.stats()["requests"] != before + TOUCHED:
                raise RuntimeError("a template edit did not re-judge exactly 5 cases")
            if keep is not None:
                (keep / f"round-{n}.txt").write_text(
                    _masked((work / "out.txt").read_text(encoding="utf-8")), encoding="utf-8")
            runs.append(found)
        runs = runs[1:]  # the first edit's child is a warm-up
    finally:
        server.stop()
        shutil.rmtree(work, ignore_errors=True)

    def ms(values: list[float]) -> float:
        return round(statistics.median(values) * 1000, 1)

    rows = {}
    for depth, _, qualname in STAGES:
        calls = [r["stages"].get(qualname, [0, 0.0]) for r in runs]
        rows[qualname] = {"depth": depth, "calls": int(statistics.median(c[0] for c in calls)),
                          "cpu_ms": ms([c[1] for c in calls])}
    result = {"repeats": args.repeats, "stages": not args.no_stages,
              "wall_ms": ms([r["wall_s"] for r in runs]), "cpu_ms": ms([r["cpu_s"] for r in runs]),
              "gc_ms": ms([r["gc_s"] for r in runs]), "gcs": [r["gcs"] for r in runs],
              "walls_ms": [round(r["wall_s"] * 1000, 1) for r in runs],
              "rows": rows if not args.no_stages else {},
              "loadavg_before": [round(x, 2) for x in load],
              "loadavg_after": [round(x, 2) for x in os.getloadavg()],
              "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())}
    out = BENCH / "out"
    out.mkdir(exist_ok=True)
    (out / "hit_path.json").write_text(json.dumps(result, indent=2) + "\n")
    for name, row in result["rows"].items():
        print(f"{'  ' * row['depth']}{name:{44 - 2 * row['depth']}} {row['calls']:6d} "
              f"{row['cpu_ms']:8.1f} ms")
    print(f"collector: {result['gc_ms']} ms in {result['gcs']} passes")
    print(f"child main: wall {result['wall_ms']} ms, CPU {result['cpu_ms']} ms "
          f"(walls {result['walls_ms']}); load {result['loadavg_before']} -> "
          f"{result['loadavg_after']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
