"""A stored run's rubric is found as its suite named it (by path), and only when the ids agree."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from judge.app.workspace.workspace import Workspace
from judge.core.formats.models import RunInfo
from judge.core.text.errors import RubricError

ROOT = Path(__file__).resolve().parents[2]


def _info(suite: str, rubric: str) -> RunInfo:
    return RunInfo.model_construct(id="r1", suite="support", suite_path=suite, rubric=rubric)


def test_a_rubric_named_by_path_in_the_suite_is_found_for_the_stored_run(tmp_path: Path) -> None:
    shutil.copytree(ROOT / "examples" / "conversation", tmp_path / "examples" / "conversation")
    ws = Workspace.open(tmp_path, env={})
    with pytest.raises(RubricError):
        ws.rubric("support-conversation")  # not a rubric of the workspace by id
    assert ws.run_rubric(_info("examples/conversation/suite.yaml", "support-conversation")).id == \
        "support-conversation"


def test_another_id_or_a_missing_suite_is_still_unknown(tmp_path: Path) -> None:
    shutil.copytree(ROOT / "examples" / "conversation", tmp_path / "examples" / "conversation")
    ws = Workspace.open(tmp_path, env={})
    with pytest.raises(RubricError, match="unknown rubric 'other'"):
        ws.run_rubric(_info("examples/conversation/suite.yaml", "other"))
    with pytest.raises(RubricError):
        ws.run_rubric(_info("gone/suite.yaml", "support-conversation"))
