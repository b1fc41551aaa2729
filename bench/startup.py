"""How long `judge --help` takes, whole process, against `python -c pass` measured in the same run.

Run: .venv/bin/python bench/startup.py [--runs 15]
Prints medians; writes bench/out/startup.json. Target: `judge --help` <= 0.3 s.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _time(cmd: list[str], runs: int) -> list[float]:
    samples = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run(cmd, check=True, capture_output=True, cwd=ROOT)
        samples.append(time.perf_counter() - start)
    return samples


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=15)
    args = parser.parse_args()
    judge = str(Path(sys.executable).with_name("judge"))
    cases = {
        "python -c pass": [sys.executable, "-c", "pass"],
        "judge --help": [judge, "--help"],
        "judge run --help": [judge, "run", "--help"],
        "import litellm (for scale)": [sys.executable, "-c", "import litellm"],
    }
    results = {}
    for name, cmd in cases.items():
        _time(cmd, 2)  # warm the file cache
        samples = _time(cmd, args.runs if "litellm" not in name else max(3, args.runs // 5))
        results[name] = {"median_s": round(statistics.median(samples), 4),
                         "min_s": round(min(samples), 4), "runs": len(samples)}
        print(f"{name:30} median {results[name]['median_s']:.3f} s  "
              f"(min {results[name]['min_s']:.3f} s, {len(samples)} runs)")
    base = results["python -c pass"]["median_s"]
    help_s = results["judge --help"]["median_s"]
    print(f"judge --help over bare interpreter: +{help_s - base:.3f} s; "
          f"target 0.3 s: {'met' if help_s <= 0.3 else 'MISSED'}")
    out = ROOT / "bench" / "out"
    out.mkdir(exist_ok=True)
    (out / "startup.json").write_text(json.dumps(results, indent=2) + "\n")


if __name__ == "__main__":
    main()
