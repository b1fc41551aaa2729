"""Does the statistical gate tell a noisy judge from a real drop?

Independent trials, each its own suite of N cases (latent overall scores 20..95), its own
baseline (one ask of every case) and its own noise probe (10 seeded cases asked with 2
extra seeds: 20 extra calls, the default of ``judge judges noise --probe``). The current run asks
every case again with another seed; in the drop scenarios the judge is the shifted twin of
``tests/fakes/fake_server.py`` (the same latent verdicts lower by the drop). Every score is drawn
by :func:`fake_server.noisy_integer`, the function the loopback server answers with, and
the gate's statistics run in-process (:func:`judge.core.stats.significance.statistical_compare`,
what :func:`judge.app.runs.gate.gate` calls), so a few thousand trials take minutes.

Per row: trials blocked (false alarms with no change; caught with a drop), cases listed,
the share of listed cases that did not truly drop by more than the threshold (falsely
listed), the default path with no noise model (no probe: the suite's paired test alone,
no case listed), and for comparison the exact rule (``judge.core.outcomes.baseline.compare``) and
the stricter alternative "the whole 95 % interval beyond the threshold". A pure-replay check
confirms the exact rule is unchanged when both sides are the same cached judgments.

Run:   .venv/bin/python bench/noise.py [--trials 300] [--sizes 20,60,200] [--spread 8]
       [--no-markdown]    (9-20 min on 2 shared cores at the defaults)
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests" / "fakes"))  # the loopback fake judge
sys.path.insert(0, str(ROOT))

from fake_server import noisy_integer  # noqa: E402

from judge.app.runs.gate import side_noise  # noqa: E402
from judge.core.formats.models import CaseResult, JudgeMeta  # noqa: E402
from judge.core.outcomes.baseline import build_baseline, compare  # noqa: E402
from judge.core.stats.noise import measure_noise  # noqa: E402
from judge.core.stats.significance import statistical_compare  # noqa: E402

__all__ = ["main"]

THRESHOLD = 0.05
PROBE_CASES = 10
PROBE_ASKS = 3
SCENARIOS = ("none", "drop 6", "drop 10", "a third drop 30")


@dataclass
class Row:
    """Tallies of one (size, scenario) row."""

    size: int
    scenario: str
    trials: int = 0
    blocked: int = 0
    default_blocked: int = 0
    exact_blocked: int = 0
    strict_blocked: int = 0
    listed: int = 0
    false_listed: int = 0
    exact_listed: int = 0
    mean_drops: list[float] = field(default_factory=list)


def _result(case_id: str, score: int, key: str, *, cached: bool = False,
            sample: int = 0) -> CaseResult:
    meta = JudgeMeta(model="fake-judge~8", temperature=0.0, seed=sample, sample=sample,
                     template_id="t", template_hash="th", rubric_hash="rh", cache_key=key,
                     cached=cached)
    return CaseResult(id=case_id, status="scored", overall_score=score, band="b",
                      passed=score >= 50, judge=meta)


def _shifts(scenario: str, n: int) -> list[int]:
    if scenario == "none":
        return [0] * n
    if scenario == "a third drop 30":
        third = round(n / 3)
        return [30] * third + [0] * (n - third)
    return [int(scenario.split()[1])] * n


def _trial(row: Row, index: int, spread: float, replay_mismatches: list[str]) -> None:
    n = row.size
    rng = random.Random(f"trial:{n}:{row.scenario}:{index}")
    latent = [rng.randint(20, 95) for _ in range(n)]
    shifts = _shifts(row.scenario, n)
    ids = [f"c{i:03d}" for i in range(n)]

    def ask(i: int, seed: int, shift: int = 0) -> int:
        noise = random.Random(f"noise:{n}:{row.scenario}:{index}:{i}:{seed}")
        return noisy_integer(latent[i] - shift, 0, 100, noise, spread)

    before = [_result(ids[i], ask(i, 1), f"b{i}") for i in range(n)]
    baseline = build_baseline("s", "r", "rh", ("fake-judge~8",), before, run_id="base",
                              threshold=THRESHOLD)
    probed = rng.sample(range(n), min(PROBE_CASES, n))
    probe = [_result(ids[i], ask(i, 1 + k), f"p{i}.{k}", sample=k)
             for i in probed for k in range(PROBE_ASKS)]
    model = measure_noise(probe, model="fake-judge~8", rubric_hash="rh", template_id="t",
                          template_hash="th", suite="s", source="probe", runs=("probe",))
    noise = side_noise(model)
    after = [_result(ids[i], ask(i, 2, shifts[i]), f"c{i}") for i in range(n)]
    verdict = statistical_compare(baseline, after, before=noise, after=noise)
    exact = compare(baseline, after)
    row.trials += 1
    row.blocked += verdict.has_regression
    row.default_blocked += statistical_compare(baseline, after).has_regression
    row.exact_blocked += exact.has_regression
    test = verdict.test
    assert test is not None and test.lower_bound is not None
    row.strict_blocked += test.lower_bound > THRESHOLD * 100
    row.mean_drops.append(test.mean_drop)
    row.listed += len(verdict.regressed_cases)
    row.exact_listed += len(exact.regressed_cases)
    row.false_listed += sum(shifts[ids.index(c)] <= THRESHOLD * 100
                            for c in verdict.regressed_cases)
    if index < 20:
        replay = [_result(r.id, max((r.overall_score or 0) - shifts[i], 0), f"b{i}", cached=True)
                  for i, r in enumerate(before)]
        same = statistical_compare(baseline, replay, before=noise, after=noise)
        if same.model_copy(update={"test": None}) != compare(baseline, replay):
            replay_mismatches.append(f"{n}/{row.scenario}/{index}")


def _pct(part: int, whole: int) -> str:
    return f"{100 * part / whole:.1f} %" if whole else "—"


def _table(rows: Sequence[Row], spread: float, trials: int, seconds: float,
           mismatches: Sequence[str]) -> str:
    lines = [
        f"Loopback judge of known noise (latent verdict + Gaussian noise, sd {spread:g} "
        f"points an ask), threshold 5 points, {trials} independent trials a row (each its own "
        f"suite, baseline and 10-case x 3-ask probe); {seconds:.0f} s.",
        "",
        "| cases | real change | blocked (statistical gate) | blocked, no noise model "
        "(default) | exact rule blocked | interval wholly beyond 5 | listed / trial | "
        "falsely listed | exact rule listed / trial |",
        "|---:|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        lines.append(
            f"| {r.size} | {r.scenario} | {_pct(r.blocked, r.trials)} | "
            f"{_pct(r.default_blocked, r.trials)} | {_pct(r.exact_blocked, r.trials)} | "
            f"{_pct(r.strict_blocked, r.trials)} | "
            f"{r.listed / r.trials:.2f} | {_pct(r.false_listed, r.listed)} | "
            f"{r.exact_listed / r.trials:.2f} |")
    for size in sorted({r.size for r in rows}):
        same = [r for r in rows if r.size == size]
        false, listed = sum(r.false_listed for r in same), sum(r.listed for r in same)
        lines.append(f"\nFalsely listed over every row of {size} cases: {false} of {listed} "
                     f"listed ({_pct(false, listed)}).")
    lines += ["", f"Pure replays (the same cached judgments both sides, 20 a row, drops exact): "
              f"the statistical gate's verdict differs from the exact rule's in "
              f"{len(mismatches)} of {20 * len(rows)}."]
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the trials and print (or append) the table."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--trials", type=int, default=300)
    parser.add_argument("--sizes", default="20,60,200")
    parser.add_argument("--spread", type=float, default=8.0)
    parser.add_argument("--no-markdown", action="store_true")
    args = parser.parse_args(argv)
    started = time.monotonic()
    rows = [Row(size=int(s), scenario=sc) for s in args.sizes.split(",") for sc in SCENARIOS]
    mismatches: list[str] = []
    for row in rows:
        for index in range(args.trials):
            _trial(row, index, args.spread, mismatches)
        print(f"{row.size} {row.scenario}: blocked {_pct(row.blocked, row.trials)}, "
              f"falsely listed {row.false_listed}/{row.listed}", file=sys.stderr)
    table = _table(rows, args.spread, args.trials, time.monotonic() - started, mismatches)
    print(table)
    return 0 if not mismatches else 1


if __name__ == "__main__":
    raise SystemExit(main())
