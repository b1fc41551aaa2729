"""A command that reads writes nothing: in a folder with no run store, each read-only command
says where it looked and leaves the folder exactly as it was; a command that judges makes it.

Before, every one of them left an empty ``.judge/judge.db`` behind, an unknown run's error too.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from bad_inputs import snapshot
from conftest import run_judge

STORE = ".judge/judge.db"
ELSEWHERE = "elsewhere/runs.db"
SUITE = """id: det
cases:
  - id: a
    output: done
    judged_by: deterministic
    deterministic: {agentPerformance: 70, taskOutcomeQuality: 70, processCompliance: 70}
"""

NEEDS_A_STORE = [
    ("runs", "show", "abc"),
    ("runs", "export", "abc"),
    ("runs", "export", "abc", "--output", "x.jsonl"),
    ("runs", "verify"),  # a check of nothing must not pass
    ("runs", "batch", "status"),
    ("diff", "last~1", "last"),
    ("report", "abc"),
    ("compare", "a", "b"),
    ("check",),
    ("judges", "agreement"),
    ("judges", "noise", "abc"),
    ("judges", "calibrate", "abc"),
    ("baseline", "record", "det"),
    ("rescore", "abc", "--rubric", "task-evaluation"),
    ("review", "abc", "--next", "3"),
    ("review", "abc", "--export"),
]


@pytest.mark.parametrize("args", NEEDS_A_STORE, ids=" ".join)
@pytest.mark.parametrize("store", [None, ELSEWHERE])
def test_a_command_that_needs_a_run_exits_2_naming_the_path(
        workspace: Path, args: tuple[str, ...], store: str | None) -> None:
    flag = () if store is None else ("--store", f"sqlite:///{store}")
    proc = run_judge([*args, *flag], workspace)
    assert proc.returncode == 2, (proc.stdout, proc.stderr)
    assert f"no run store at {workspace / (store or STORE)}: nothing judged in this folder yet" \
        in proc.stderr, proc.stderr
    assert "fix:" in proc.stderr and "--store URL" in proc.stderr
    assert snapshot(workspace) == {}


@pytest.mark.parametrize("args", [("runs", "list"), ("history",)], ids=" ".join)
def test_listing_no_store_says_where_it_looked(workspace: Path, args: tuple[str, ...]) -> None:
    proc = run_judge(list(args), workspace)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith(f"no run store at {workspace / STORE}: nothing judged in "
                                  f"this folder yet; judge a suite here first"), proc.stdout
    assert snapshot(workspace) == {}


def test_listing_no_store_as_json_is_an_empty_list(workspace: Path) -> None:
    proc = run_judge(["runs", "list", "--json"], workspace)
    assert proc.returncode == 0 and json.loads(proc.stdout) == []
    assert f"no run store at {workspace / STORE}" in proc.stderr
    assert snapshot(workspace) == {}


def test_the_empty_file_an_older_version_left_is_no_store_and_stays_as_it_was(
        workspace: Path) -> None:
    (workspace / ".judge").mkdir()
    (workspace / STORE).write_bytes(b"")
    before = snapshot(workspace)
    proc = run_judge(["runs", "show", "last"], workspace)
    assert proc.returncode == 2 and "no run store at" in proc.stderr
    assert snapshot(workspace) == before


def test_judging_a_suite_still_makes_the_store(workspace: Path) -> None:
    (workspace / "s.yaml").write_text(SUITE, encoding="utf-8")
    proc = run_judge(["run", "s.yaml", "--json"], workspace)
    assert proc.returncode == 0, proc.stderr
    run_id = json.loads(proc.stdout)["run"]["id"]
    assert (workspace / STORE).stat().st_size > 0
    listed = run_judge(["runs", "list", "--json"], workspace)
    assert [r["id"] for r in json.loads(listed.stdout)] == [run_id]
