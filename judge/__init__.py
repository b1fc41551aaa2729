"""judgeflow: orchestrate LLM judges; a deterministic core has the last word.

The public surface is imported lazily, so ``import judge`` (and the ``judge`` CLI's
start-up) never pays for what it does not use, and never imports litellm.
"""

from __future__ import annotations

from importlib import import_module

TYPE_CHECKING = False
"""``typing.TYPE_CHECKING`` without importing typing: ``python -m judge`` through the warm
worker imports nothing it does not use."""

__version__ = "0.1.0"

__all__ = [
    "AdvisoryScore",
    "CaseResult",
    "CaseScore",
    "CategoryScore",
    "ConfigError",
    "GateVerdict",
    "JudgeError",
    "JudgmentCache",
    "RegressionBlocked",
    "Rubric",
    "RubricError",
    "RunReport",
    "RunRequest",
    "SuiteError",
    "Workspace",
    "band_for",
    "build_bundle",
    "check",
    "check_run",
    "compute_final_score",
    "compute_overall_score",
    "evaluate",
    "evaluate_async",
    "load_rubric",
    "load_suite",
    "parse_rubric",
    "record_baseline",
    "run_suite",
    "score_case",
]

_WHERE = {
    "AdvisoryScore": "core.formats.models",
    "CaseResult": "core.formats.models",
    "CaseScore": "core.formats.models",
    "CategoryScore": "core.formats.models",
    "ConfigError": "core.text.errors",
    "GateVerdict": "app.runs.gate",
    "JudgeError": "core.text.errors",
    "JudgmentCache": "cache.disk",
    "RegressionBlocked": "core.text.errors",
    "Rubric": "core.formats.rubric",
    "RubricError": "core.text.errors",
    "RunReport": "app.runs.running",
    "RunRequest": "app.runs.running",
    "SuiteError": "core.text.errors",
    "Workspace": "app.workspace.workspace",
    "band_for": "core.scoring.scoring",
    "build_bundle": "core.formats.evidence",
    "check": "core.outcomes.baseline",
    "check_run": "app.runs.baselines",
    "compute_final_score": "core.scoring.scoring",
    "compute_overall_score": "core.scoring.scoring",
    "evaluate": "api",
    "evaluate_async": "api",
    "load_rubric": "system.resources",
    "load_suite": "system.resources",
    "parse_rubric": "core.formats.rubric",
    "record_baseline": "app.runs.baselines",
    "run_suite": "app.runs.running",
    "score_case": "core.scoring.scoring",
}

if TYPE_CHECKING:  # pragma: no cover
    from typing import Any

    from .api import evaluate, evaluate_async
    from .app.runs.baselines import check_run, record_baseline
    from .app.runs.gate import GateVerdict
    from .app.runs.running import RunReport, RunRequest, run_suite
    from .app.workspace.workspace import Workspace
    from .cache.disk import JudgmentCache
    from .core.formats.evidence import build_bundle
    from .core.formats.models import AdvisoryScore, CaseResult, CaseScore, CategoryScore
    from .core.formats.rubric import Rubric, parse_rubric
    from .core.outcomes.baseline import check
    from .core.scoring.scoring import (
        band_for,
        compute_final_score,
        compute_overall_score,
        score_case,
    )
    from .core.text.errors import (
        ConfigError,
        JudgeError,
        RegressionBlocked,
        RubricError,
        SuiteError,
    )
    from .system.resources import load_rubric, load_suite


def __getattr__(name: str) -> Any:
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module 'judge' has no attribute {name!r}")
    value = getattr(import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*__all__, "__version__"])
