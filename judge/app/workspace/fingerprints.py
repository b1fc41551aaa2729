"""Whether the judge's reported identity changed since the baseline: a notice for the gate.

Providers report the model that answered (``model``) and, some of them, the serving
configuration (``system_fingerprint``); both are kept with every judgment of a run
(``JudgeMeta.modelReported``, ``JudgeMeta.systemFingerprint``). A replayed judgment keeps
the identity of the call that made it, so a change shows once the judge answers anew. A change since
the baseline's run means the verdicts may no longer be comparable even under the same
model name: context for a reviewer, not a regression by itself.
"""

from __future__ import annotations

from collections.abc import Iterable

from ...core.formats.models import CaseResult, RunInfo
from ...core.outcomes.baseline import Baseline
from ...core.text.errors import JudgeError
from ...system.baseline_files import load_baseline
from .workspace import Workspace

__all__ = ["fingerprint_notice", "reported_identity"]


def reported_identity(results: Iterable[CaseResult]) -> tuple[set[str], set[str]]:
    """``(models reported, fingerprints)`` over a run's judgments (aggregates left out)."""
    models: set[str] = set()
    prints: set[str] = set()
    for r in results:
        if r.judge is None or r.judge.aggregate is not None:
            continue
        if r.judge.model_reported:
            models.add(r.judge.model_reported)
        if r.judge.system_fingerprint:
            prints.add(r.judge.system_fingerprint)
    return models, prints


def fingerprint_notice(workspace: Workspace, run: RunInfo,
                       baseline: Baseline | None = None) -> str | None:
    """A sentence when the judge's reported model or fingerprint differs from the baseline's.

    None when they agree, or when it cannot be told (no baseline, its run is not in the
    store, or the provider reports neither).
    """
    try:
        if baseline is None:
            path = workspace.baseline_path(run.suite)
            if not path.exists():
                return None
            baseline = load_baseline(path, sealer=workspace.sealer)
        if not baseline.recorded_from or baseline.recorded_from == run.id:
            return None
        with workspace.open_store() as store:
            then = reported_identity(store.iter_results(baseline.recorded_from))
            now = reported_identity(store.iter_results(run.id))
    except JudgeError:
        return None
    changes = []
    if then[0] and now[0] and then[0] != now[0]:
        changes.append(f"model {', '.join(sorted(then[0]))} → {', '.join(sorted(now[0]))}")
    if then[1] and now[1] and then[1] != now[1]:
        changes.append(f"system fingerprint {', '.join(sorted(then[1]))} → "
                       f"{', '.join(sorted(now[1]))}")
    if not changes:
        return None
    return (f"the judge reports another identity than when the baseline was recorded "
            f"(run {baseline.recorded_from}): {'; '.join(changes)} — `judge judges canary` tells "
            f"whether its verdicts drifted")
