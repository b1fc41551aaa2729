"""Regenerate the bad-input table of docs/integrity-hostile.md (issue 34).

Each row of ``tests/bad_inputs.py`` runs as its own ``python -m judge`` process in a fresh
workspace; the table says its exit code, whether stderr names a fix, and what it wrote (a
snapshot of the workspace before and after). The last lines count crashes (exit 70 or any
traceback) and failures that wrote something: both must be 0.

    PYTHONPATH=$PWD python scripts/bad_input_table.py          (a few seconds a row)
    BAD_INPUT_CODE=/path/to/older/checkout python scripts/bad_input_table.py   (before)
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from bad_inputs import ROWS, snapshot, write_workspace  # noqa: E402

__all__ = ["main"]


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("JUDGE_", "OPENAI_", "ANTHROPIC_", "LITELLM_"))}
    # BAD_INPUT_CODE=<another checkout> runs the same table against that code (the "before").
    code = os.environ.get("BAD_INPUT_CODE", str(ROOT))
    env["PYTHONPATH"] = code + os.pathsep + env.get("PYTHONPATH", "")
    return env


def main() -> int:
    """Print the table; exit 1 if any row crashed, wrote on failure or did not exit 2."""
    crashes = writes = not_two = 0
    print("| bad input | exit | fix: given | files written |")
    print("|---|---|---|---|")
    for row in ROWS:
        with tempfile.TemporaryDirectory(prefix="judge-bad-") as folder:
            ws = Path(folder)
            write_workspace(ws, row)
            before = snapshot(ws)
            proc = subprocess.run([sys.executable, "-m", "judge", *row.args], cwd=ws,
                                  capture_output=True, text=True, env=_env(), timeout=300,
                                  check=False)
            after = snapshot(ws)
        written = sorted(set(after) - set(before)) + sorted(
            k for k in before if k in after and after[k] != before[k])
        crashed = proc.returncode == 70 or "Traceback" in proc.stderr
        crashes += crashed
        writes += bool(written) and proc.returncode != 0
        not_two += proc.returncode != 2
        shown = ", ".join(written) if written else "none"
        print(f"| {row.name} | {proc.returncode} | {'yes' if 'fix:' in proc.stderr else 'NO'} "
              f"| {shown} |")
    print()
    print(f"{len(ROWS)} bad inputs: {crashes} crashes, {writes} failures that wrote files, "
          f"{not_two} not exit 2")
    return 1 if crashes or writes or not_two else 0


if __name__ == "__main__":
    raise SystemExit(main())
