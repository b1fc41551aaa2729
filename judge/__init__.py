"""judgeflow: orchestrate LLM judges; a deterministic core has the last word.

The public surface is imported lazily, so ``import judge`` (and the ``judge`` CLI's
start-up) never pays for what it does not use, and never imports litellm.
"""

from __future__ import annotations

from importlib import import_module

TYPE_CHECKING = False
"""``typing.TYPE_CHECKING`` without importing typing: ``python -m judge`` through the warm
worker imports nothing it does not use (bench/RESULTS.md, "The warm worker's fixed costs")."""

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
    "AdvisoryScore": "core.models",
    "CaseResult": "core.models",
    "CaseScore": "core.models",
    "CategoryScore": "core.models",
    "ConfigError": "core.errors",
    "GateVerdict": "app.gate",
    "JudgeError": "core.errors",
    "JudgmentCache": "cache.disk",
    "RegressionBlocked": "core.errors",
    "Rubric": "core.rubric",
    "RubricError": "core.errors",
    "RunReport": "app.running",
    "RunRequest": "app.running",
    "SuiteError": "core.errors",
    "Workspace": "app.workspace",
    "band_for": "core.scoring",
    "build_bundle": "core.evidence",
    "check": "core.baseline",
    "check_run": "app.baselines",
    "compute_final_score": "core.scoring",
    "compute_overall_score": "core.scoring",
    "evaluate": "api",
    "evaluate_async": "api",
    "load_rubric": "system.resources",
    "load_suite": "system.resources",
    "parse_rubric": "core.rubric",
    "record_baseline": "app.baselines",
    "run_suite": "app.running",
    "score_case": "core.scoring",
}

if TYPE_CHECKING:  # pragma: no cover
    from typing import Any

    from .api import evaluate, evaluate_async
    from .app.baselines import check_run, record_baseline
    from .app.gate import GateVerdict
    from .app.running import RunReport, RunRequest, run_suite
    from .app.workspace import Workspace
    from .cache.disk import JudgmentCache
    from .core.baseline import check
    from .core.errors import ConfigError, JudgeError, RegressionBlocked, RubricError, SuiteError
    from .core.evidence import build_bundle
    from .core.models import AdvisoryScore, CaseResult, CaseScore, CategoryScore
    from .core.rubric import Rubric, parse_rubric
    from .core.scoring import band_for, compute_final_score, compute_overall_score, score_case
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
