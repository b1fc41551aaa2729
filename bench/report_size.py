"""How much a `judge report` weighs: a generated suite of N cases judged by the loopback fake
judge and by its +15 twin, reported against the first run with the judge swap compared.

    python bench/report_size.py --cases 200 [--out bench/out/report-200.html]

Prints the size of the page and of its parts (plotly.js, the chart JSON, the rest).
"""

from __future__ import annotations

import argparse
import re
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests" / "fakes")]

from fake_server import start_in_thread  # noqa: E402

from judge.app.runs.reporting import ReportRequest, build_report  # noqa: E402
from judge.app.runs.running import RunRequest, run_suite  # noqa: E402
from judge.app.workspace.fixtures import generate_cases, suite_to_yaml  # noqa: E402
from judge.app.workspace.workspace import Workspace  # noqa: E402
from judge.report.html import render_report, write_report  # noqa: E402
from judge.system.resources import load_rubric  # noqa: E402


def main() -> None:
    """Measure one report."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=200)
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "out" / "report.html")
    args = parser.parse_args()
    rubric = load_rubric("task-evaluation")
    suite = generate_cases(f"generated-{args.cases}", args.cases, rubric=rubric)
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        (root / "suite.yaml").write_text(suite_to_yaml(suite), encoding="utf-8")
        server = start_in_thread(latency_ms=0, seed=7)
        ids = []
        try:
            for model in ("hosted_vllm/fake-judge", "hosted_vllm/fake-judge+15"):
                ws = Workspace.open(root, {"model": [model],
                                           "api_base": f"{server.base_url}/v1"}, env={})
                ids.append(run_suite(ws, RunRequest(suite=root / "suite.yaml",
                                                    check=False)).run.id)
        finally:
            server.stop()
        data = build_report(Workspace.open(root, env={}),
                            ReportRequest(run=ids[1], against=ids[0], compare=(ids[0],)))
        html = render_report(data)
    size = write_report(args.out, html)
    scripts = re.findall(r"<script\b[^>]*>(.*?)</script>", html, flags=re.S)
    charts, plotly = len(scripts[0].encode()), len(scripts[1].encode())
    print(f"{len(data.cases)} cases: {size:,} bytes ({size / 1e6:.2f} MB) -> {args.out}")
    print(f"  plotly.js {plotly:,} · chart JSON {charts:,} · page {size - plotly - charts:,}")


if __name__ == "__main__":
    main()
