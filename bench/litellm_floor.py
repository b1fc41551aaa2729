"""The bare-LiteLLM floor: the model calls of a `judge run`, and nothing else, as a process.

Reads a JSON file of prepared requests (``bench/run.py`` writes it from our real renders:
``judge.engine.judging.prepare`` + ``build_request`` on the generated suite, with the
``response_format`` our client sends), then sends them through ``litellm.acompletion`` at a
given concurrency, exactly as the judge's client does: same model string, messages,
``response_format``, temperature, seed, max_tokens, ``num_retries=0``, ``max_retries=0``,
an explicit timeout, the same ``api_base``. No rendering, no cache, no parsing, no store.

The same LiteLLM set-up as ``judge.llm.client`` (no price-map fetch, no ``.env``, no banners),
so the floor pays what any careful caller pays: the bare loop the run's targets are judged
against.
``--tuned`` adds the process-level tricks ``judge run`` plays, so that what remains between
the two is our own per-case work: the garbage collector is off during ``import litellm``
and the imported objects are frozen (``gc.freeze()``) afterwards, and LiteLLM's exit-time
flush of its logging queue is unregistered.

Run: .venv/bin/python bench/litellm_floor.py REQUESTS.json --api-base URL/v1
         [--concurrency 32] [--timeout 60] [--limit N] [--tuned]
Prints one JSON line on stdout: ok, failed, loop seconds. Exit 1 when a call failed.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import time
from pathlib import Path
from typing import Any


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else "")
    parser.add_argument("requests", type=Path, help="JSON list of prepared request kwargs")
    parser.add_argument("--api-base", required=True)
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--timeout", type=float, default=60.0)
    parser.add_argument("--limit", type=int, default=None, help="only the first N requests")
    parser.add_argument("--tuned", action="store_true",
                        help="GC off during the import then frozen, and no exit-time logging "
                             "flush (as judge run does)")
    return parser


async def _run_all(lit: Any, requests: list[dict[str, Any]], args: argparse.Namespace
                   ) -> tuple[int, list[str]]:
    limit = asyncio.Semaphore(args.concurrency)
    errors: list[str] = []

    async def one(kwargs: dict[str, Any]) -> bool:
        async with limit:
            try:
                response = await lit.acompletion(
                    **kwargs, api_base=args.api_base, timeout=args.timeout,
                    num_retries=0, max_retries=0)
            except Exception as exc:  # counted and reported; the floor never retries
                errors.append(f"{type(exc).__name__}: {str(exc)[:200]}")
                return False
            return bool(response.choices[0].message.content)

    results = await asyncio.gather(*(one(r) for r in requests))
    return sum(results), errors


def main(argv: list[str] | None = None) -> int:
    """Send every request once; print a JSON line of counts."""
    args = _parser().parse_args(argv)
    requests: list[dict[str, Any]] = json.loads(args.requests.read_text(encoding="utf-8"))
    if args.limit is not None:
        requests = requests[: args.limit]
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    os.environ.setdefault("LITELLM_MODE", "PRODUCTION")
    if args.tuned:
        import gc

        gc.disable()
        import litellm

        gc.enable()
        gc.freeze()
    else:
        import litellm

    litellm.suppress_debug_info = True
    litellm.telemetry = False
    if args.tuned:
        import atexit

        from litellm.litellm_core_utils.logging_worker import GLOBAL_LOGGING_WORKER

        atexit.unregister(GLOBAL_LOGGING_WORKER._flush_on_exit)
    started = time.perf_counter()
    ok, errors = asyncio.run(_run_all(litellm, requests, args))
    loop_s = time.perf_counter() - started
    print(json.dumps({"requests": len(requests), "ok": ok, "failed": len(errors),
                      "loop_s": round(loop_s, 4), "errors": errors[:5]}), flush=True)
    return 0 if ok == len(requests) else 1


if __name__ == "__main__":
    sys.exit(main())
