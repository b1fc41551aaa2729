"""The embedded judge against the example suites' labels: rho, band agreement, MAD.

Reads ``judge run --json`` outputs and the suite they judged, and prints, over the
LLM-judged cases that carry a ``human:`` label:

- **AI vs labels**: every (case, category) AI score against the label of that category,
  pooled: Spearman's rho (scipy), mean absolute difference, distinct AI values;
- **overall vs labels**: the case's overall score (the core's blend) against the label's
  overall: rho, MAD, and band agreement (same band);
- rationales that repeat a placeholder (``<...>``), and the run's judge-health problems.

``--held-out ID,...`` leaves cases out (the ones seen while the prompt was written).
``--same-cases`` keeps the cases every run scored. Nothing is called: it reads files.
Runs that produced the inputs (bounded; the local
judge at ~1.5-3 min a judgment on this shared machine at load 12-15):

    judge cache import examples/task-evaluation/local-smollm2.cache.jsonl   # before
    judge run examples/task-evaluation/suite.yaml --model local/smollm2 --offline --json
    JUDGE_TEMPLATE=judge-small JUDGE_SCORE_MODE=expected \\
      judge run examples/task-evaluation/suite.yaml --model local/smollm2 --json   # after
    PYTHONPATH=$PWD python bench/judge_agreement.py SUITE before.json after.json
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import sys
from pathlib import Path
from typing import Any

from scipy.stats import spearmanr

from judge.core.scoring.scoring import band_for
from judge.system.resources import load_rubric, load_suite

_PLACEHOLDER = re.compile(r"<[^<>\n]{1,80}>")


def _rho(a: list[float], b: list[float]) -> float | None:
    if len(a) < 3 or len(set(a)) < 2 or len(set(b)) < 2:
        return None
    value = spearmanr(a, b).statistic
    return round(float(value), 3)


def measure(suite_path: Path, run: dict[str, Any], left_out: set[str],
            only: set[str] | None = None) -> dict[str, Any]:
    """The agreement of one run with the suite's labels (``only``: just these cases)."""
    suite = load_suite(suite_path)
    rubric = load_rubric(suite.rubric or "task-evaluation")
    labels = {c.id: c.human for c in suite.cases
              if c.human is not None and c.judged_by == "llm" and c.id not in left_out
              and (only is None or c.id in only)}
    ai, human, overall, human_overall, same_band = [], [], [], [], []
    placeholders = rationales = 0
    for case in run["cases"]:
        label = labels.get(case["id"])
        if label is None or case["status"] != "scored":
            continue
        for cat in case["categoryScores"]:
            rationales += 1
            placeholders += bool(_PLACEHOLDER.search(cat.get("rationale") or ""))
            if cat.get("aiScore") is not None and cat["category"] in label.categories:
                ai.append(cat["aiScore"])
                human.append(label.categories[cat["category"]])
        if label.overall is not None and case.get("overallScore") is not None:
            overall.append(case["overallScore"])
            human_overall.append(label.overall)
            band = label.band or band_for(label.overall, rubric.bands)
            same_band.append(case["band"] == band)
    health = (run.get("summary") or {}).get("judgeHealth") or {}
    return {
        "cases": len(overall), "aiScores": len(ai), "distinctAi": len(set(ai)),
        "aiRho": _rho(ai, human),
        "aiMad": round(statistics.fmean(abs(a - h) for a, h in zip(ai, human, strict=True)),
                       1) if ai else None,
        "overallRho": _rho(overall, human_overall),
        "overallMad": round(statistics.fmean(abs(a - h) for a, h in zip(
            overall, human_overall, strict=True)), 1) if overall else None,
        "bandAgreement": round(sum(same_band) / len(same_band), 3) if same_band else None,
        "placeholders": f"{placeholders}/{rationales}",
        "health": health.get("problems", []),
    }


def main(argv: list[str] | None = None) -> int:
    """Print one row per run."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("suite", type=Path)
    parser.add_argument("runs", type=Path, nargs="+", help="judge run --json outputs")
    parser.add_argument("--held-out", default="", help="case ids to leave out, comma-separated")
    parser.add_argument("--same-cases", action="store_true",
                        help="only the cases every run scored (a like-for-like comparison)")
    args = parser.parse_args(argv)
    left = {x for x in args.held_out.split(",") if x}
    runs = [json.loads(p.read_text(encoding="utf-8")) for p in args.runs]
    only = set.intersection(*({c["id"] for c in r["cases"] if c["status"] == "scored"}
                              for r in runs)) if args.same_cases else None
    for path, run in zip(args.runs, runs, strict=True):
        row = measure(args.suite, run, left, only)
        print(json.dumps({"run": path.name, **row}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
