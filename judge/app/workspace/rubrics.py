"""Rubrics without a model: validate files, list what a workspace sees, show one, score a file.

``score`` computes final and overall scores from a file of deterministic and AI scores with
the same core as ``judge run`` (:mod:`judge.core.formats.scorefile`), so a rubric can be
tried by hand.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ...core.formats.limits import MAX_RUBRIC_CHARS
from ...core.formats.models import CaseScore
from ...core.formats.rubric import Rubric, rubric_hash
from ...core.formats.scorefile import parse_score_input, score_input
from ...core.text.errors import ConfigError, RubricError
from ...system.input_files import read_input
from ...system.resources import list_rubrics, load_rubric
from .suites import DEFAULT_RUBRIC
from .workspace import Workspace

__all__ = ["RubricCheck", "ScoredFile", "list_workspace_rubrics", "score_file",
           "show_rubric", "validate_rubrics"]


@dataclass(frozen=True)
class RubricCheck:
    """One file's validation: its rubric, or the error that names the field and the fix."""

    path: Path
    rubric: Rubric | None = None
    error: RubricError | None = None


def validate_rubrics(workspace: Workspace, paths: list[Path]) -> tuple[RubricCheck, ...]:
    """Check every rubric file (and its calibration); one bad file does not stop the others."""
    out = []
    for path in paths:
        try:
            out.append(RubricCheck(path=path, rubric=load_rubric(str(path),
                                                                 sealer=workspace.sealer)))
        except RubricError as exc:
            out.append(RubricCheck(path=path, error=exc))
    return tuple(out)


def list_workspace_rubrics(workspace: Workspace) -> dict[str, Path]:
    """Rubric id → file, the workspace's own over the shipped ones."""
    return list_rubrics(workspace.root)


def show_rubric(workspace: Workspace, name: str) -> tuple[Rubric, str]:
    """The rubric by id or path, and its hash."""
    rubric = workspace.rubric(name)
    return rubric, rubric_hash(rubric)


@dataclass(frozen=True)
class ScoredFile:
    """The rubric used and the case's scores."""

    rubric: Rubric
    score: CaseScore


def score_file(workspace: Workspace, path: Path, rubric: str | None = None) -> ScoredFile:
    """Score a JSON file of per-category scores (rubric: ``rubric``, the file's, the default)."""
    # A score file is configuration-sized: a few scores (read as a rubric is, bounded).
    text = read_input(workspace.path(path), ConfigError, 4 * MAX_RUBRIC_CHARS)
    data = parse_score_input(text, str(path))
    rub = workspace.rubric(rubric or data.rubric, default=DEFAULT_RUBRIC)
    return ScoredFile(rubric=rub, score=score_input(data, rub, str(path)))
