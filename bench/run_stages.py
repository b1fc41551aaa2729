"""`judge run` in this process, with the CPU seconds of each stage of the judge's own work.

Each stage is a synchronous function of the run's path (validation passes, ``prepare``, the
cache's writes and lookups, the replay records, results, masking of replies, LiteLLM's
import at the first call), wrapped where its callers look it up; a stage called inside
another is counted in the outer one only. What no stage covers is LiteLLM's calls, asyncio
and the command's own set-up. Each stage counts the CPU of the thread it ran in
(``time.thread_time``): the process's CPU would add whatever LiteLLM's executor threads and
the cache's writer thread did meanwhile. The cache's write (``JudgmentCache._write``) runs
in that writer thread, off the event loop's. Prints the table on stderr at exit, then the
process's CPU and the main thread's.

Run (in a workspace, fake judge started by hand: ``bench/fake_server.py --latency-ms 200``):
       PYTHONPATH=TREE .venv/bin/python bench/run_stages.py run suite.jsonl \
           --model hosted_vllm/fake-judge --api-base URL/v1 --concurrency 64 --no-check
"""

from __future__ import annotations

import atexit
import functools
import importlib
import inspect
import runpy
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

STAGES = [
    ("judge.app.runs.running", "_select"),
    ("judge.core.formats.suite", "SuiteLine.case"),
    ("judge.engine.runner", "prepare"),
    ("judge.engine.judging", "build_request"),
    ("judge.engine.judging", "key_request"),
    ("judge.engine.judging", "seal_entry"),
    ("judge.engine.judging", "parse_verdict"),
    ("judge.engine.judging", "scored_result"),
    ("judge.engine.judging", "judge_meta"),
    ("judge.cache.disk", "JudgmentCache.put"),
    ("judge.cache.disk", "JudgmentCache._checked"),
    ("judge.cache.disk", "JudgmentCache._write"),
    ("judge.cache.disk", "JudgmentCache.turns"),
    ("judge.engine.replay", "ReplayIndex.replay_many"),
    ("judge.engine.replay", "ReplayIndex.remember"),
    ("judge.engine.runner", "_Run._deliver"),
    ("judge.llm.client", "LiteLLMClient._turn"),
    ("judge.llm.client", "load_litellm"),
    ("judge.core.text.secrets", "Redactor.__call__"),
]
_spent: dict[str, list[float]] = {}
_local = threading.local()


def _timed(name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(fn)
    def timed(*args: Any, **kwargs: Any) -> Any:
        if getattr(_local, "inside", False):
            return fn(*args, **kwargs)
        _local.inside = True
        started = time.thread_time()
        try:
            return fn(*args, **kwargs)
        finally:
            _local.inside = False
            entry = _spent.setdefault(name, [0, 0.0])
            entry[0] += 1
            entry[1] += time.thread_time() - started
    return timed


def _wrap(module: str, qualname: str) -> None:
    owner: Any = importlib.import_module(module)
    *path, attr = qualname.split(".")
    for part in path:
        owner = getattr(owner, part)
    if not hasattr(owner, attr):  # a stage another tree does not have (an older main)
        return
    wrapped: Any = _timed(f"{module.rsplit('.', 1)[-1]}.{qualname}", getattr(owner, attr))
    if isinstance(inspect.getattr_static(owner, attr), staticmethod):
        wrapped = staticmethod(wrapped)
    setattr(owner, attr, wrapped)


def _report() -> None:
    for name, (calls, seconds) in sorted(_spent.items(), key=lambda x: -x[1][1]):
        print(f"{name:36s} {int(calls):6d} {seconds:7.3f} s", file=sys.stderr)
    print(f"process CPU {time.process_time():.2f} s, main thread {time.thread_time():.2f} s",
          file=sys.stderr)


def main() -> None:
    """Wrap the stages, then run the judge CLI with this script's arguments."""
    for module, qualname in STAGES:
        _wrap(module, qualname)
    atexit.register(_report)
    sys.argv = ["judge", *sys.argv[1:]]
    runpy.run_module("judge", run_name="__main__")


if __name__ == "__main__":
    main()
