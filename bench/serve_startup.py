"""How long `judge serve` takes from process start to `/healthz` answering 200.

Run: .venv/bin/python bench/serve_startup.py [--runs 5]
Starts `judge serve --port 0` in an empty workspace, polls `/healthz` every 5 ms from the
moment the process is spawned, and stops it with SIGINT. Prints the median (and each run),
the CPU the server process used until then (steadier than the wall on a shared machine),
`python -c pass` for scale, and whether litellm was imported (it must not be before the
first model call). Writes bench/out/serve_startup.json. Target: <= 1 s.
"""

from __future__ import annotations

import argparse
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

import httpx

ROOT = Path(__file__).resolve().parent.parent
# The server in-process, reporting at exit whether litellm was ever imported.
SERVE = (
    "import atexit, sys\n"
    "atexit.register(lambda: print('LITELLM=' + str('litellm' in sys.modules), "
    "file=sys.stderr, flush=True))\n"
    "from judge.cli import main\n"
    "main(['serve', '--port', '0'])\n"
)


def _cpu_seconds(pid: int) -> float:
    """User + system CPU the process has used (Linux ``/proc``), to read beside the wall."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _once(workspace: Path) -> tuple[float, float, bool]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("JUDGE_")}
    env["PYTHONPATH"] = str(ROOT)
    start = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-c", SERVE], cwd=workspace, env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    assert proc.stderr is not None
    try:
        line = proc.stderr.readline()  # "judge serve: http://127.0.0.1:PORT (...)"
        found = re.search(r"http://127\.0\.0\.1:(\d+)", line)
        if found is None:
            raise SystemExit(f"judge serve did not start: {line}{proc.stderr.read()}")
        url = f"http://127.0.0.1:{found.group(1)}/healthz"
        with httpx.Client(timeout=1) as client:
            for _ in range(4000):
                try:
                    if client.get(url).status_code == 200:
                        break
                except httpx.TransportError:
                    pass
                time.sleep(0.005)
        elapsed = time.perf_counter() - start
        cpu = _cpu_seconds(proc.pid)
    finally:
        proc.send_signal(signal.SIGINT)
        _, rest = proc.communicate(timeout=30)
    return elapsed, cpu, "LITELLM=True" in rest


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        samples, cpus, loaded = [], [], []
        for _ in range(args.runs):
            seconds, cpu, litellm = _once(Path(tmp))
            samples.append(seconds)
            cpus.append(cpu)
            loaded.append(litellm)
    floor = []
    for _ in range(args.runs):
        start = time.perf_counter()
        subprocess.run([sys.executable, "-c", "pass"], check=True)
        floor.append(time.perf_counter() - start)
    result = {
        "serve_to_healthz_median_s": round(statistics.median(samples), 3),
        "runs_s": [round(s, 3) for s in samples],
        "server_cpu_to_healthz_median_s": round(statistics.median(cpus), 3),
        "python_c_pass_median_s": round(statistics.median(floor), 3),
        "litellm_imported": any(loaded),
        "load_average_1m": round(os.getloadavg()[0], 2),
        "cpus": os.cpu_count(),
    }
    out = ROOT / "bench" / "out"
    out.mkdir(parents=True, exist_ok=True)
    (out / "serve_startup.json").write_text(json.dumps(result, indent=2) + "\n",
                                            encoding="utf-8")
    print(f"judge serve to /healthz: median {result['serve_to_healthz_median_s']} s over "
          f"{args.runs} runs {result['runs_s']}; server CPU to /healthz median "
          f"{result['server_cpu_to_healthz_median_s']} s (python -c pass "
          f"{result['python_c_pass_median_s']} s; litellm imported: "
          f"{result['litellm_imported']}; load {result['load_average_1m']} on "
          f"{result['cpus']} CPUs)")


if __name__ == "__main__":
    main()
