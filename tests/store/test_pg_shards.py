"""Sharded runs into one PostgreSQL store: the partition, the group as one run, incomplete
groups (no baseline, no pass)."""

from __future__ import annotations

import hashlib
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml
from conftest import EXAMPLE_SUITE

from judge.app.runs.baselines import check_run
from judge.app.runs.running import RunReport, RunRequest, run_suite
from judge.app.runs.sharding import check_group
from judge.app.workspace.workspace import Workspace
from judge.core.formats.shards import Shard, shard_of
from judge.core.text.errors import UsageError

MODEL = "hosted_vllm/fake-judge"
CASE_IDS = [c["id"] for c in yaml.safe_load(EXAMPLE_SUITE.read_text())["cases"]]


def test_the_partition_is_stable_and_covers_every_case_once() -> None:
    for count in (1, 2, 3, 7):
        owners = {case: [i for i in range(1, count + 1) if Shard(i, count).holds(case)]
                  for case in CASE_IDS}
        assert all(len(v) == 1 for v in owners.values()), owners
    # Pinned: the same on every machine and release (SHA-256 of the id, not hash()).
    assert [shard_of(c, 3) for c in CASE_IDS] == [2, 3, 1, 3, 3, 3, 2, 3, 3, 1, 2, 3, 3, 3, 1, 3]
    assert [shard_of(c, 5) for c in ("a", "ä/ü", "")] == [
        int.from_bytes(hashlib.sha256(c.encode()).digest()[:8], "big") % 5 + 1
        for c in ("a", "ä/ü", "")]
    assert str(Shard.parse(" 2/3 ")) == "2/3"
    for bad in ("0/3", "4/3", "3", "a/b", "1/0", "-1/2"):
        with pytest.raises(ValueError):
            Shard.parse(bad)


def open_ws(root: Path, fake_server: Any, store_url: str) -> Workspace:
    root.mkdir(exist_ok=True)
    return Workspace.open(root, {"model": MODEL, "api_base": fake_server.base_url + "/v1",
                                 "store_url": store_url}, env={})


def shard_run(ws: Workspace, index: int, count: int, group: str) -> RunReport:
    return run_suite(ws, RunRequest(suite=EXAMPLE_SUITE, shard=Shard(index, count), group=group))


@pytest.mark.postgres
def test_three_shards_give_the_summary_and_gate_of_one_run(
        fake_server: Any, pg_url: str, tmp_path: Path) -> None:
    whole = open_ws(tmp_path / "whole", fake_server, pg_url)
    first = run_suite(whole, RunRequest(suite=EXAMPLE_SUITE))
    assert first.exit_code == 0 and first.verdict and first.verdict.baseline_recorded
    unsharded = check_run(whole, first.run.id)
    assert unsharded.comparison is not None

    sharded = open_ws(tmp_path / "sharded", fake_server, pg_url)  # another machine, same store
    (sharded.root / "baselines").mkdir()
    shutil.copy(whole.baseline_path(first.run.suite), sharded.baseline_path(first.run.suite))
    reports = [shard_run(sharded, i, 3, "ci-1") for i in (2, 1, 3)]
    assert sum(r.summary.cases for r in reports) == first.summary.cases == len(CASE_IDS)
    for early in reports[:2]:  # not the last in: the group is not gated yet, the shard passes
        assert early.exit_code == 0 and early.group is not None
        assert not early.group.status.complete and early.verdict is not None
        assert early.verdict.comparison is None and "incomplete" in (early.verdict.skipped or "")
    last = reports[-1].group
    assert last is not None and last.status.complete and last.summary is not None
    assert last.summary == first.summary
    assert last.verdict.comparison == unsharded.comparison
    assert reports[-1].exit_code == 0

    again = check_group(sharded, "ci-1", suite=str(EXAMPLE_SUITE))
    assert again.exit_code == 0 and again.summary == first.summary
    assert again.verdict.comparison == unsharded.comparison
    assert [r.settings.shard for r in again.status.runs] == ["1/3", "2/3", "3/3"]


@pytest.mark.postgres
def test_a_missing_or_failed_shard_makes_the_group_incomplete(
        fake_server: Any, pg_url: str, tmp_path: Path) -> None:
    ws = open_ws(tmp_path / "ws", fake_server, pg_url)
    one = shard_run(ws, 1, 3, "ci-2")
    shard_run(ws, 2, 3, "ci-2")
    found = check_group(ws, "ci-2")
    assert found.exit_code == 1 and found.summary is None and found.verdict.comparison is None
    assert found.status.problems == ("shard 3/3 of group 'ci-2' has not been run",)
    assert not ws.baseline_path(one.run.suite).exists()  # no baseline from part of a suite

    three = shard_run(ws, 3, 3, "ci-2")
    assert three.group is not None and three.group.status.complete
    assert three.verdict is not None and three.verdict.baseline_recorded
    ws.baseline_path(one.run.suite).unlink()
    with ws.open_store() as store:  # a shard that stopped half-way
        store.finish_run(three.run.id, totals=three.run.totals, status="interrupted")
    found = check_group(ws, "ci-2")
    assert found.exit_code == 1 and not ws.baseline_path(one.run.suite).exists()
    assert any("3/3" in p and "interrupted" in p for p in found.status.problems)

    retry = shard_run(ws, 3, 3, "ci-2")  # the retried shard replaces the interrupted one
    assert retry.group is not None and retry.group.status.complete
    assert check_group(ws, "ci-2").exit_code == 0
    assert check_group(ws, "no-such-group").exit_code == 1


def test_shard_and_group_go_together(fake_server: Any, tmp_path: Path) -> None:
    ws = open_ws(tmp_path / "ws", fake_server, f"sqlite:///{tmp_path / 'j.db'}")
    with pytest.raises(UsageError, match="--shard and --group go together"):
        run_suite(ws, RunRequest(suite=EXAMPLE_SUITE, shard=Shard(1, 2)))
    with pytest.raises(UsageError, match="--shard and --group go together"):
        run_suite(ws, RunRequest(suite=EXAMPLE_SUITE, group="g"))
