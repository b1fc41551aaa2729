"""Measuring a judge's noise (``judge judges noise``): from a ``--samples K`` run, or by a probe.

The probe re-asks a seeded sample of N cases K times (seeds ``seed..seed+K-1``; the first
is the seed a plain run uses, so on a warm cache it costs N * (K - 1) calls). The defaults,
N = 10 and K = 3, give 20 degrees of freedom: the per-ask spread is known to within
−23 %/+44 %
(95 %), and the gate's t tests carry that uncertainty (docs/statistics.md). On the bench
(``bench/noise.py``) that probe meets every target at 60 cases.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any, Final

from ...core.scoring.panel import headline_of
from ...core.stats.noise import NoiseModel, measure_noise
from ...core.stats.seeded import SplitMix64
from ...core.text.errors import UsageError
from ...system.noise_files import save_noise
from ...system.resources import open_suite
from ..runs.running import RunReport, RunRequest, run_suite
from ..workspace.workspace import Workspace

__all__ = ["PROBE_CASES", "PROBE_SAMPLES", "measure_run_noise", "probe_cases", "probe_noise"]

PROBE_CASES: Final = 10
PROBE_SAMPLES: Final = 3
PROBE_SEED: Final = 28
"""Seed of the probe's choice of cases (not the judge's seed)."""


def measure_run_noise(workspace: Workspace, run_id: str, *,
                      source: str | None = None) -> NoiseModel:
    """Measure and store the noise of a stored ``--samples K`` run's headline judge."""
    with workspace.open_store() as store:
        run = store.get_run(run_id)
        model = headline_of(run)[0]
        if run.samples < 2 or model is None or model.startswith("panel:"):
            raise UsageError(f"run {run.id} asked each case once ({', '.join(run.models)}): "
                             f"noise needs samples of one judge",
                             fix="judge with --samples K (K >= 2), or "
                                 "`judge judges noise --probe SUITE`")
        measured = measure_noise(store.iter_results(run.id), model=model,
                                 rubric_hash=run.rubric_hash, template_id=run.template_id,
                                 template_hash=run.template_hash, suite=run.suite,
                                 source=source or f"samples of run {run.id}", runs=(run.id,))
    if measured is None:
        raise UsageError(f"run {run.id} has no case scored twice: nothing to measure",
                         fix="judge until cases are scored, then measure again")
    save_noise(workspace.baselines_dir, measured, workspace.sealer)
    return measured


def probe_cases(ids: list[str], count: int, seed: int = PROBE_SEED) -> list[str]:
    """A seeded choice of ``count`` of ``ids`` (all when there are fewer), sorted."""
    return sorted(SplitMix64(seed).sample(sorted(ids), count))


def probe_noise(suite: Path, *, cases: int = PROBE_CASES, samples: int = PROBE_SAMPLES,
                overrides: Mapping[str, Any] | None = None,
                root: Path | None = None) -> tuple[NoiseModel, RunReport]:
    """Judge a seeded sample of ``cases`` cases ``samples`` times each, measure, store."""
    if cases < 1 or samples < 2:
        raise UsageError(f"a probe needs at least 1 case and 2 samples (got {cases} and "
                         f"{samples})", fix="e.g. --cases 10 --samples 3")
    settings = dict(overrides or {})
    settings["samples"] = samples
    workspace = Workspace.open(root, overrides=settings)
    if workspace.settings.seed is None:
        workspace = Workspace.open(root, overrides={**settings, "seed": 0})
    source = open_suite(suite)
    llm = [c.id for c in source.cases() if c.judged_by == "llm"]
    if not llm:
        raise UsageError(f"suite {suite} has no LLM-judged case: no judge noise to measure",
                         fix="probe a suite whose cases are judged by a model")
    chosen = probe_cases(llm, cases)
    report = run_suite(workspace, RunRequest(suite=suite, ids=tuple(chosen), check=False))
    model = measure_run_noise(workspace, report.run.id,
                              source=f"probe run {report.run.id} ({len(chosen)} cases x "
                                     f"{samples} asks)")
    return model, report
