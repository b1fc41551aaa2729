"""Sharded runs as one: a group's shards make one summary, one baseline, one gate verdict.

``judge run SUITE --shard I/N --group NAME`` stores each shard as a run of its own, tagged
with the group and the shard (in the run's settings and the store's ``run_group`` columns).
The group is *complete* when, for every index 1..N, the latest run of that shard is
complete, and all shards agree on the suite, rubric, judges and N. Only a complete group
is summarised as one, compared with the baseline or recorded as one; an incomplete group
(a shard missing, running, interrupted, or disagreeing) gives no baseline and no pass.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from ...core.formats.models import CaseResult, RunInfo, RunSettings
from ...core.formats.shards import Shard
from ...core.outcomes.summary import Summary, SummaryBuilder
from ...core.text.errors import UsageError
from ...store.runs import RunStore
from ..workspace.workspace import Workspace
from .baselines import check_baseline_file, suite_id_of
from .gate import GateVerdict, gate, headline_results

__all__ = [
    "EXIT_INCOMPLETE",
    "GroupCheck",
    "GroupStatus",
    "check_group",
    "gate_group",
    "group_settings",
    "group_status",
]

EXIT_INCOMPLETE = 1
"""``judge check --group`` on an incomplete group: no pass verdict."""


def group_settings(shard: Shard | None, group: str | None) -> RunSettings:
    """The run settings that tag a shard's run; UsageError when only one of the two is given."""
    if shard is None and group is None:
        return RunSettings()
    if shard is None or group is None:
        raise UsageError("--shard and --group go together: the group is what the shards "
                         "make one run of",
                         fix="pass both, e.g. --shard 1/3 --group ci-$GITHUB_RUN_ID")
    if not group.strip() or len(group) > 200:
        raise UsageError(f"group name {group!r} must be 1..200 characters",
                         fix="use e.g. the CI run id")
    return RunSettings(group=group, shard=str(shard))


@dataclass(frozen=True)
class GroupStatus:
    """The runs of a group, one per shard index (the latest), and why it is not complete."""

    group: str
    suite: str | None
    count: int
    runs: tuple[RunInfo, ...]
    """The latest run of each shard present, by shard index."""
    problems: tuple[str, ...]

    @property
    def complete(self) -> bool:
        """Every shard present, complete, and in agreement."""
        return not self.problems and bool(self.runs)

    def as_run(self) -> RunInfo:
        """The group as one run for the gate: the shards' identity, ``group:NAME`` as its id."""
        first = self.runs[0]
        return first.model_copy(update={
            "id": f"group:{self.group}", "suite_path": first.suite_path,
            "created_at": max(r.created_at for r in self.runs),
            "status": "complete" if self.complete else "interrupted",
            "settings": RunSettings(group=self.group, shards=self.count,
                                    runs=tuple(r.id for r in self.runs)),
        })


def _shard_of(run: RunInfo) -> Shard | None:
    try:
        return Shard.parse(run.settings.shard or "")
    except ValueError:
        return None


def group_status(store: RunStore, group: str, suite: str | None = None) -> GroupStatus:
    """Read a group's runs from the store and judge whether it is complete."""
    runs = store.group_runs(group, suite)
    if not runs:
        what = f" of suite {suite!r}" if suite else ""
        return GroupStatus(group=group, suite=suite, count=0, runs=(),
                           problems=(f"no run of group {group!r}{what} in {store.url}",))
    problems: list[str] = []
    suites = sorted({r.suite for r in runs})
    if len(suites) > 1:
        problems.append(f"group {group!r} has runs of several suites ({', '.join(suites)}): "
                        f"name one with --suite")
    counts = sorted({s.count for r in runs if (s := _shard_of(r)) is not None})
    if len(counts) != 1:
        problems.append(f"group {group!r}'s runs disagree on the shard count "
                        f"({', '.join(map(str, counts)) or 'none'})")
    count = counts[-1] if counts else 0
    latest: dict[int, RunInfo] = {}
    for run in runs:  # oldest first: a later run of a shard (a retry) replaces the earlier
        shard = _shard_of(run)
        if shard is not None and shard.count == count:
            latest[shard.index] = run
    chosen = tuple(latest[i] for i in sorted(latest))
    missing = [f"{i}/{count}" for i in range(1, count + 1) if i not in latest]
    if missing:
        problems.append(f"shard {', '.join(missing)} of group {group!r} has not been run")
    for index, run in sorted(latest.items()):
        if run.status != "complete":
            problems.append(f"shard {index}/{count} (run {run.id}) is {run.status}")
    identities = {(r.rubric_hash, r.models, r.samples, r.panel, r.template_hash)
                  for r in chosen}
    if len(identities) > 1:
        problems.append(f"the shards of group {group!r} were judged under different rubrics, "
                        f"judges or templates: they are not one run")
    return GroupStatus(group=group, suite=suites[0] if len(suites) == 1 else suite,
                       count=count, runs=chosen, problems=tuple(problems))


def _results(store: RunStore, status: GroupStatus) -> list[CaseResult]:
    """One headline result per case over every shard, by case id."""
    out: list[CaseResult] = []
    for run in status.runs:
        out.extend(headline_results(store, run))
    return sorted(out, key=lambda r: r.id)


def _summary(results: Sequence[CaseResult]) -> Summary:
    builder = SummaryBuilder()
    for result in results:
        builder.add(result)
    return builder.build()


@dataclass(frozen=True)
class GroupCheck:
    """A group's status, its summary as one run (when complete) and the gate's verdict."""

    status: GroupStatus
    verdict: GateVerdict
    summary: Summary | None
    results: tuple[CaseResult, ...] = ()
    """One headline result per case over every shard (empty while incomplete)."""

    @property
    def exit_code(self) -> int:
        """1 while incomplete; else the verdict's (0, 1 for a regression, 5 not compared)."""
        if not self.status.complete:
            return EXIT_INCOMPLETE
        return self.verdict.exit_code


def gate_group(workspace: Workspace, store: RunStore, group: str, suite: str | None = None,
               *, baseline_file: Path | None = None, record: bool = True) -> GroupCheck:
    """The gate for a whole group, in an open store (``judge run``'s last shard uses it)."""
    status = group_status(store, group, suite)
    if not status.complete:
        suite_id = status.suite or suite or ""
        path = baseline_file if baseline_file is not None else (
            workspace.baseline_path(suite_id) if suite_id else workspace.baselines_dir)
        verdict = GateVerdict(
            run=f"group:{group}", suite=suite_id, baseline_path=str(path), comparison=None,
            outcome="skipped", not_compared="group-incomplete",
            skipped=f"group {group!r} is incomplete: " + "; ".join(status.problems),
            blocking=workspace.settings.block_on_regression)
        return GroupCheck(status=status, verdict=verdict, summary=None)
    results = _results(store, status)
    verdict = gate(workspace, status.as_run(), results, baseline_file=baseline_file,
                   record=record)
    return GroupCheck(status=status, verdict=verdict, summary=_summary(results),
                      results=tuple(results))


def check_group(workspace: Workspace, group: str, *, suite: str | None = None,
                baseline_file: Path | None = None) -> GroupCheck:
    """``judge check --group NAME``: the group's shards as one run against the baseline."""
    suite_id = suite_id_of(suite) if suite else None
    check_baseline_file(workspace, baseline_file)
    with workspace.open_store() as store:
        return gate_group(workspace, store, group, suite_id, baseline_file=baseline_file)
