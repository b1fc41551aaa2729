"""Values that are not text from the command line and the environment: exit 2, never 70.

A byte that is not UTF-8 in an argument or a variable reads as a lone surrogate (Python's
``surrogateescape``), which broke the first UTF-8 write of it (a cache key, a run row). The
arguments of every command are checked at the door (``tests/bad_inputs.py`` rows); the
settings check every value whatever its source. A file whose name is not UTF-8 is still read.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from bad_inputs import MODEL, OK_CASE, snapshot
from conftest import ROOT, judge_env, run_judge


@pytest.mark.parametrize("variable", ["JUDGE_MODEL", "JUDGE_TEMPLATE", "JUDGE_API_BASE",
                                      "JUDGE_SERVER_HOSTS"])
def test_a_setting_from_the_environment_that_is_not_text(tmp_path: Path, variable: str) -> None:
    (tmp_path / "s.jsonl").write_text(OK_CASE, encoding="utf-8")
    before = snapshot(tmp_path)
    env = judge_env(**{variable: "x\udcff"})
    if variable != "JUDGE_MODEL":
        env["JUDGE_MODEL"] = MODEL
    proc = run_judge(["run", "s.jsonl", "--offline"], tmp_path, env=env)
    assert proc.returncode == 2, proc.stderr
    assert f"(from env {variable})" in proc.stderr and "not text" in proc.stderr
    assert "fix:" in proc.stderr and snapshot(tmp_path) == before


def test_a_folder_setting_may_name_any_bytes(tmp_path: Path) -> None:
    (tmp_path / "s.jsonl").write_text(OK_CASE, encoding="utf-8")
    env = judge_env(JUDGE_CACHE_DIR=os.fsdecode(b"cache-\xff"), JUDGE_MODEL=MODEL)
    proc = run_judge(["run", "s.jsonl", "--offline"], tmp_path, env=env)
    assert proc.returncode == 3, proc.stderr  # a miss, as with any empty cache folder


def test_a_file_whose_name_is_not_utf8_is_still_read(tmp_path: Path) -> None:
    name = os.fsdecode(b"scores-\xff.json")  # '\udcff' in the name, as argv gives it
    shutil.copy(ROOT / "examples" / "score.json", tmp_path / name)
    proc = run_judge(["score", name], tmp_path)
    assert proc.returncode == 0, proc.stderr
    missing = run_judge(["score", os.fsdecode(b"nope-\xff.json")], tmp_path)
    assert missing.returncode == 2 and "argument 2" in missing.stderr, missing.stderr
