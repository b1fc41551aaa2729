"""What Student's t from scipy costs: its import in a fresh process, and a call.

The gate and ``judge diff`` ask Student's t (``judge.core.stats.intervals.t_sf``/``t_ppf``) only for
re-asked cases with a noise model; scipy is imported inside those functions. This measures:

- the import a process pays the first time it asks: ``python -c 'import
  judge.core.stats.significance'`` against the same plus ``scipy.special`` (``--runs`` fresh
  processes each, in turn; median wall seconds and the difference);
- that a process that asks no t (an import of the gate's statistics) loads no scipy;
- a call's cost once imported: ``t_sf`` and ``t_ppf`` over a grid of df and x, median of
  ``--repeats`` timings of the grid, in microseconds a call.

Run: ``PYTHONPATH=$PWD .venv/bin/python bench/t_quantile.py [--runs 15] [--repeats 7]``
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PLAIN = "import judge.core.stats.significance"
WITH_SCIPY = "import judge.core.stats.significance, scipy.special"
GRID_DF = (2, 5, 9, 19, 59, 199)
GRID_X = tuple(x / 4 for x in range(-16, 17))


def _wall(code: str) -> float:
    start = time.perf_counter()
    subprocess.run([sys.executable, "-c", code], check=True, cwd=ROOT)
    return time.perf_counter() - start


def imports(runs: int) -> tuple[float, float]:
    """Median wall seconds of a fresh process without and with scipy.special, in turn."""
    plain: list[float] = []
    heavy: list[float] = []
    for _ in range(runs):
        plain.append(_wall(PLAIN))
        heavy.append(_wall(WITH_SCIPY))
    return statistics.median(plain), statistics.median(heavy)


def loads_no_scipy() -> bool:
    """Whether importing the gate's statistics leaves scipy unloaded."""
    code = f"{PLAIN}; import sys; print('scipy' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], check=True, cwd=ROOT,
                         capture_output=True, text=True).stdout.strip()
    return out == "False"


def per_call(repeats: int) -> tuple[float, float]:
    """Median microseconds a call of t_sf and of t_ppf (scipy already imported)."""
    from judge.core.stats.intervals import t_ppf, t_sf

    t_sf(1.0, 5)  # the import, outside the timing
    sf: list[float] = []
    ppf: list[float] = []
    calls = len(GRID_DF) * len(GRID_X)
    for _ in range(repeats):
        start = time.perf_counter()
        for df in GRID_DF:
            for x in GRID_X:
                t_sf(x, df)
        sf.append((time.perf_counter() - start) / calls * 1e6)
        start = time.perf_counter()
        for df in GRID_DF:
            for q in (0.9, 0.95, 0.975, 0.99, 0.995):
                t_ppf(q, df)
        ppf.append((time.perf_counter() - start) / (len(GRID_DF) * 5) * 1e6)
    return statistics.median(sf), statistics.median(ppf)


def main() -> None:
    """Print the three measurements."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--repeats", type=int, default=7)
    args = parser.parse_args()
    plain, heavy = imports(args.runs)
    print(f"fresh process, median of {args.runs}: without scipy {plain:.3f} s, with "
          f"scipy.special {heavy:.3f} s, difference {heavy - plain:+.3f} s")
    print(f"importing the gate's statistics loads no scipy: {loads_no_scipy()}")
    sf, ppf = per_call(args.repeats)
    print(f"per call (median of {args.repeats}): t_sf {sf:.1f} µs, t_ppf {ppf:.1f} µs")


if __name__ == "__main__":
    main()
