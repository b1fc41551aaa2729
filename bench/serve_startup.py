"""How long `judge workspace serve` takes from exec to `/healthz` answering 200, and to `/readyz`.

Run: .venv/bin/python bench/serve_startup.py [--runs 7]   (about 1.5 s a run on a quiet machine)
Starts `python -m judge workspace serve --port 0` in an empty workspace, reads the port from
its first stderr line, polls `/healthz` every 2 ms with the standard library's HTTP client
(nothing to import or set up between polls, so the client does not pad the figure), then `/readyz`
(the workspace open, every endpoint answering), and stops it with SIGINT. Reports medians:
exec to listening, to the first `/healthz` 200, to `/readyz` 200; the server's CPU until
`/healthz` (steadier than the wall on a shared machine); `python -c pass` for scale; and
whether litellm was imported before `/healthz` answered (it must not be: the server
imports it in a thread once it is ready). Target: `/healthz` in <= 1 s.
Writes bench/out/serve_startup.json and its table into bench/RESULTS.md between markers.
"""

from __future__ import annotations

import argparse
import datetime
import http.client
import json
import os
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
RESULTS_MD = ROOT / "bench" / "RESULTS.md"
TARGET_S = 1.0
# The server as `python -m judge workspace serve` runs it, plus an audit hook that tells the wall
# time at which litellm's import began (compared with when /healthz answered).
SERVE = (
    "import sys, time\n"
    "def _hook(event, args):\n"
    "    if event == 'import' and args[0] == 'litellm':\n"
    "        print(f'LITELLM_AT={time.time()}', file=sys.stderr, flush=True)\n"
    "sys.addaudithook(_hook)\n"
    "from judge.cli import main\n"
    "sys.argv = ['judge', 'workspace', 'serve', '--port', '0']\n"
    "main()\n"
)


def cpu_seconds(pid: int) -> float:
    """User + system CPU the process has used (Linux ``/proc``), to read beside the wall."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def status(port: int, path: str) -> int | None:
    """The status of ``GET path`` (None: no answer yet)."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
    try:
        conn.request("GET", path)
        answer = conn.getresponse()
        answer.read()
        return answer.status
    except OSError:
        return None
    finally:
        conn.close()


def poll(port: int, path: str, start: float, seconds: float = 120) -> float:
    """Seconds since ``start`` at which ``path`` first answered 200."""
    deadline = time.perf_counter() + seconds
    while time.perf_counter() < deadline:
        if status(port, path) == 200:
            return time.perf_counter() - start
        time.sleep(0.002)
    raise SystemExit(f"{path} never answered 200 within {seconds} s")


def once(workspace: Path) -> dict[str, Any]:
    """One start: the seconds to listening, /healthz, /readyz; CPU; litellm before /healthz."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("JUDGE_")}
    env["PYTHONPATH"] = str(ROOT)
    start = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-c", SERVE], cwd=workspace, env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    assert proc.stderr is not None
    try:
        line = proc.stderr.readline()  # "judge workspace serve: http://127.0.0.1:PORT (...)"
        listening = time.perf_counter() - start
        found = re.search(r"http://127\.0\.0\.1:(\d+)", line)
        if found is None:
            raise SystemExit(f"judge workspace serve did not start: {line}{proc.stderr.read()}")
        port = int(found.group(1))
        healthz = poll(port, "/healthz", start)
        healthz_at = time.time()
        cpu = cpu_seconds(proc.pid)
        readyz = poll(port, "/readyz", start)
    finally:
        proc.send_signal(signal.SIGINT)
        _, rest = proc.communicate(timeout=60)
    at = re.search(r"LITELLM_AT=([\d.]+)", rest)
    return {"listening_s": listening, "healthz_s": healthz, "readyz_s": readyz, "cpu_s": cpu,
            "litellm_before_healthz": bool(at and float(at.group(1)) <= healthz_at)}


def python_floor(runs: int) -> float:
    walls = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run([sys.executable, "-c", "pass"], check=True)
        walls.append(time.perf_counter() - start)
    return statistics.median(walls)


def table(r: dict[str, Any]) -> str:
    met = "met" if r["healthz_median_s"] <= TARGET_S else "MISSED"
    return "\n".join([
        "| `judge workspace serve`, exec to ... (median of "
        f"{r['runs']}) | seconds |",
        "|---|---|",
        f"| socket listening (first stderr line) | {r['listening_median_s']:.3f} |",
        f"| `/healthz` 200 (target <= {TARGET_S:g} s: **{met}**) | "
        f"{r['healthz_median_s']:.3f} |",
        f"| `/readyz` 200 (workspace and store open, every endpoint answers) | "
        f"{r['readyz_median_s']:.3f} |",
        f"| server CPU (user+sys) until `/healthz` | {r['cpu_to_healthz_median_s']:.3f} |",
        f"| `python -c pass`, for scale | {r['python_c_pass_median_s']:.3f} |",
        "",
        f"Each run's `/healthz` seconds: {r['healthz_runs_s']}; litellm imported before "
        f"`/healthz` answered: {r['litellm_before_healthz']}.",
    ])


def write_section(name: str, heading: str, body: str) -> None:
    """``body`` between ``name``'s markers in bench/RESULTS.md; appended under ``heading``
    the first time."""
    start = f"<!-- generated by bench/{name}: start -->"
    end = f"<!-- generated by bench/{name}: end -->"
    generated = f"{start}\n{body}\n{end}"
    text = RESULTS_MD.read_text(encoding="utf-8") if RESULTS_MD.exists() else ""
    if start in text and end in text:
        head, rest = text.split(start, 1)
        RESULTS_MD.write_text(head + generated + rest.split(end, 1)[1], encoding="utf-8")
        return
    RESULTS_MD.write_text(f"{text.rstrip()}\n\n## {heading}\n\n{generated}\n",
                          encoding="utf-8")


def write_markdown(r: dict[str, Any]) -> None:
    """This script's table into bench/RESULTS.md."""
    write_section("serve_startup.py", "Issue 14: `judge workspace serve` start-up "
                  "(`bench/serve_startup.py`)", "\n".join([
                      f"Measured {r['date']} on {r['cpus']} CPUs; 1-minute load average "
                      f"{r['load_before']} before, {r['load_after']} after (other work on the "
                      "machine stretches wall times; the CPU row is steadier). Rerun: "
                      "`.venv/bin/python bench/serve_startup.py`.", "", table(r)]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else "")
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--no-write", action="store_true", help="print only, no RESULTS.md")
    args = parser.parse_args()
    load_before = round(os.getloadavg()[0], 2)
    with tempfile.TemporaryDirectory() as tmp:
        samples = []
        for n in range(args.runs):
            workspace = Path(tmp) / f"ws{n}"  # a fresh one each time: its store is created
            workspace.mkdir()
            samples.append(once(workspace))

    def med(key: str) -> float:
        return round(statistics.median(s[key] for s in samples), 3)

    result = {
        "date": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "runs": args.runs,
        "listening_median_s": med("listening_s"),
        "healthz_median_s": med("healthz_s"),
        "readyz_median_s": med("readyz_s"),
        "cpu_to_healthz_median_s": med("cpu_s"),
        "healthz_runs_s": [round(s["healthz_s"], 3) for s in samples],
        "python_c_pass_median_s": round(python_floor(args.runs), 3),
        "litellm_before_healthz": any(s["litellm_before_healthz"] for s in samples),
        "target_s": TARGET_S,
        "met": med("healthz_s") <= TARGET_S,
        "load_before": load_before,
        "load_after": round(os.getloadavg()[0], 2),
        "cpus": os.cpu_count(),
    }
    out = ROOT / "bench" / "out"
    out.mkdir(parents=True, exist_ok=True)
    (out / "serve_startup.json").write_text(json.dumps(result, indent=2) + "\n",
                                            encoding="utf-8")
    print(table(result))
    print(f"(load {load_before} before, {result['load_after']} after, {result['cpus']} CPUs)")
    if not args.no_write:
        write_markdown(result)


if __name__ == "__main__":
    main()
