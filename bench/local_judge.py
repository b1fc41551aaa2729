"""Seconds per judgment of the local judge (llama.cpp + SmolLM2) on the example suite, before/after.

Each run is the quickstart's own command in a fresh workspace with the cache off (so every
judgment reaches the model and the server starts cold): ``judge run suite.yaml --model
local/smollm2 --cache-mode off --json --no-check``. "before" is the judge package of a git
ref (default: the commit before its server settings and F16 weights), exported with
``git archive``; "after" is this checkout. Runs alternate before/after so a shared machine's
load falls on both. Wall and CPU are whole-process (CPU includes the llama.cpp server, a
reaped grandchild); the load average at each start is recorded beside them.

Run (one server at a time; about 14 judgments x 2 versions x rounds):

    PYTHONPATH=$PWD .venv/bin/python bench/local_judge.py                # whole suite
    PYTHONPATH=$PWD .venv/bin/python bench/local_judge.py --cases 2      # quick

Writes its table into bench/RESULTS.md between the ``local_judge`` markers (``--no-write``
only prints it) and the raw rows to bench/out/local_judge.json.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
SUITE = ROOT / "examples" / "task-evaluation" / "suite.yaml"
RESULTS = ROOT / "bench" / "RESULTS.md"
BEGIN, END = "<!-- local_judge: start -->", "<!-- local_judge: end -->"
BEFORE_REF = "0272ae1"
"""main before the server settings and F16 weights: 16 calls allowed at once above a
one-at-a-time limit, 60 s timeout retried 4 times, 2 threads whatever the load, logits kept
for every prompt token."""


def _export(ref: str, into: Path) -> Path:
    """The ``judge`` package of ``ref`` with its rubrics and prompts, unpacked under ``into``."""
    data = subprocess.run(["git", "-C", str(ROOT), "archive", ref, "judge", "rubrics",
                           "prompts"], check=True, capture_output=True).stdout
    with tarfile.open(fileobj=io.BytesIO(data)) as tar:
        tar.extractall(into, filter="data")
    return into


def _case_ids(limit: int | None) -> list[str]:
    import yaml

    ids = [c["id"] for c in yaml.safe_load(SUITE.read_text())["cases"]]
    return ids if limit is None else ids[:limit]


VERSIONS = ("before", "after", "after-packaged")
"""``after-packaged`` is this checkout serving the packaged Q4_1 file as it is
(``JUDGE_LOCAL_WEIGHTS=packaged``): what the derived F16 weights add on their own."""


def _one(version: str, path: Path, cases: list[str] | None) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="local-judge-") as tmp:
        ws = Path(tmp)
        shutil.copy(SUITE, ws / "suite.yaml")
        cmd = [sys.executable, "-m", "judge", "run", "suite.yaml", "--model", "local/smollm2",
               "--cache-mode", "off", "--json", "--no-check"]
        for case in cases or []:
            cmd += ["--case", case]
        env = {k: v for k, v in os.environ.items()
               if not k.startswith(("JUDGE_", "OPENAI_", "ANTHROPIC_", "LITELLM_"))}
        env["PYTHONPATH"] = str(path)
        if version == "after-packaged":
            env["JUDGE_LOCAL_WEIGHTS"] = "packaged"
        load = os.getloadavg()[0]
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        proc = subprocess.run(cmd, cwd=ws, env=env, capture_output=True, text=True, check=False)
        wall = time.perf_counter() - start
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
        try:
            payload = json.loads(proc.stdout)
        except json.JSONDecodeError:
            raise SystemExit(f"{version}: judge run exited {proc.returncode}:\n"
                             f"{proc.stderr[-2000:]}") from None
        llm = [c for c in payload["cases"] if c.get("judgedBy") == "llm"]
        log = ws / ".judge" / "local" / "smollm2.log"
        first = log.read_text(errors="replace").split("\n", 1)[0] if log.is_file() else ""
        argv = first.split()
        # The "before" server did not log its command: it took os.cpu_count() threads.
        threads = argv[argv.index("--n_threads") + 1] if "--n_threads" in argv \
            else str(os.cpu_count())
        return {"version": version, "judgments": len(llm),
                "scored": sum(c["status"] == "scored" for c in llm),
                "calls": payload["run"]["totals"]["calls"], "wall": round(wall, 2),
                "cpu": round(cpu, 2), "load": round(load, 2), "threads": threads,
                "exit": proc.returncode}


def _table(rows: list[dict[str, Any]], note: str) -> str:
    lines = ["| version | runs | judgments | scored | calls | s/judgment wall | "
             "s/judgment CPU | load avg at start | threads |",
             "|---|---|---|---|---|---|---|---|---|"]
    per: dict[str, float] = {}
    for version in VERSIONS:
        mine = [r for r in rows if r["version"] == version]
        if not mine:
            continue
        n = mine[0]["judgments"] or 1
        wall = statistics.median(r["wall"] / n for r in mine)
        cpu = statistics.median(r["cpu"] / n for r in mine)
        per[version] = wall
        lines.append(
            f"| {version} | {len(mine)} | {n} | {'/'.join(str(r['scored']) for r in mine)} | "
            f"{'/'.join(str(r['calls']) for r in mine)} | {wall:.1f} | {cpu:.1f} | "
            f"{'/'.join(str(r['load']) for r in mine)} | "
            f"{'/'.join(str(r['threads']) for r in mine)} |")
    if "before" in per and "after" in per:
        ratio = per["after"] / per["before"]
        verdict = "met" if ratio <= 0.5 else "missed"
        lines.append("")
        lines.append(f"after / before = {ratio:.2f} s per judgment (wall, medians): "
                     f"target <= 0.50 **{verdict}**.")
    if "after-packaged" in per and "after" in per:
        lines.append(f"after / after-packaged = {per['after'] / per['after-packaged']:.2f} "
                     "(the derived F16 weights against the packaged Q4_1 file, same code).")
    lines.append("")
    lines.append(note)
    return "\n".join(lines)


def _write(table: str) -> None:
    text = RESULTS.read_text()
    block = f"{BEGIN}\n{table}\n{END}"
    if BEGIN in text and END in text:
        head, _, rest = text.partition(BEGIN)
        _, _, tail = rest.partition(END)
        text = head + block + tail
    else:
        title = "## Local judge: seconds per judgment (bench/local_judge.py)"
        text = f"{text.rstrip()}\n\n{title}\n\n{block}\n"
    RESULTS.write_text(text)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else "")
    parser.add_argument("--before", default=BEFORE_REF, help="git ref of the 'before' judge")
    parser.add_argument("--cases", type=int, default=None, help="first N cases (default all)")
    parser.add_argument("--rounds", type=int, default=1, help="before/after pairs")
    parser.add_argument("--only", choices=VERSIONS, default=None)
    parser.add_argument("--with-packaged", action="store_true",
                        help="also run after-packaged (this checkout, the packaged Q4_1 file)")
    parser.add_argument("--no-write", action="store_true")
    args = parser.parse_args()
    cases = _case_ids(args.cases) if args.cases else None
    started = time.perf_counter()
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="judge-before-") as tmp:
        versions = {"before": _export(args.before, Path(tmp)), "after": ROOT,
                    "after-packaged": ROOT}
        wanted = VERSIONS if args.with_packaged else VERSIONS[:2]
        order = [v for v in wanted if args.only in (None, v)]
        for _ in range(args.rounds):
            for version in order:
                row = _one(version, versions[version], cases)
                rows.append(row)
                print(json.dumps(row), flush=True)
    took = time.perf_counter() - started
    note = (f"{len(cases) if cases else 'all'} cases of examples/task-evaluation/suite.yaml, "
            f"cache off, fresh workspace and server per run, before = `{args.before}`, "
            f"runs alternating; {time.strftime('%Y-%m-%d %H:%M', time.gmtime())} UTC, "
            f"{os.cpu_count()} CPUs; the bench took {took:.0f} s. Load average >= the core "
            f"count means a shared machine: read the ratio, not the seconds.")
    table = _table(rows, note)
    print(table)
    out = ROOT / "bench" / "out"
    out.mkdir(exist_ok=True)
    when = time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())
    per = [{**r, "s_per_judgment_wall": round(r["wall"] / max(1, r["judgments"]), 3)}
           for r in rows]
    (out / "local_judge.json").write_text(json.dumps(
        {"measured": when, "before": args.before, "rows": per}, indent=2))
    if not args.no_write:
        _write(table)


if __name__ == "__main__":
    main()
