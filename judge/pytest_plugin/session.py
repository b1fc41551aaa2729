"""One pytest process's judge: its workspace, its counters, and the suites it judged.

A suite is judged once per pytest session, however many items and xdist workers ask for
it: the first asker takes a file lock in the session's folder (``.judge/pytest/<token>/``),
judges and stores the run through :func:`judge.app.runs.running.run_suite` (its one gate
included) and writes the run id and the gate's verdict there; every other asker, in this
process or another, reads them and loads the results from the store. The cache and the
store are safe to share between processes (both are SQLite in WAL mode).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import hashlib
import json
import os
import time
from collections.abc import Coroutine, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypedDict, TypeVar

import yaml

from ..app.admin.cache_ops import ImportReport, import_cache_file
from ..app.runs.evaluating import evaluate_case
from ..app.runs.gate import GateVerdict, headline_results
from ..app.runs.running import RunReport, RunRequest, run_suite
from ..app.workspace.settings import CacheModeName
from ..app.workspace.suites import load_checked
from ..app.workspace.workspace import Workspace
from ..core.formats.models import CaseResult, RunTotals
from ..core.formats.rubric import Rubric
from ..core.formats.suite import Case
from ..core.outcomes.usage import ZERO, Usage
from ..core.text.canonical import canonical_json
from ..system.atomic_files import write_atomic
from .places import quoted_command, session_folder

try:  # POSIX; elsewhere each process judges the suite itself (the cache still shares)
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None  # type: ignore[assignment]

__all__ = ["JudgeSession", "Stats", "StatsJson", "SuiteOutcome"]

T = TypeVar("T")


def _run(coro: Coroutine[Any, Any, T]) -> T:
    """Run ``coro`` to its end, in a thread of its own when a loop already runs here."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coro)
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, coro).result()



class StatsJson(TypedDict):
    """A session's counters as JSON (an xdist worker's ``workeroutput``)."""

    judgments: int
    cache_hits: int
    cache_misses: int
    model_calls: int
    prompt_tokens: int
    completion_tokens: int
    cost_usd: float | None
    seconds: float
    runs: list[str]

@dataclass
class Stats:
    """What this process's judgments did and cost (summed over xdist workers at the end)."""

    judgments: int = 0
    cache_hits: int = 0
    cache_misses: int = 0
    model_calls: int = 0
    spent: Usage = ZERO
    """What the calls this process made used (cost None when any paid call's is unknown)."""
    seconds: float = 0.0
    runs: list[str] = field(default_factory=list)
    """One line per suite run this process judged and stored."""

    def add_result(self, result: CaseResult, seconds: float) -> None:
        """Count one judgment of ``judge_eval``."""
        self.seconds += seconds
        meta = result.judge
        if result.judged_by != "llm" or meta is None:
            return
        self.judgments += 1
        if result.status == "cache_miss":
            self.cache_misses += 1
        elif meta.cached:
            self.cache_hits += 1
        else:
            self.model_calls += 1 + meta.repair_turns
            self.spent += Usage.of(meta)

    def add_run(self, totals: RunTotals, line: str) -> None:
        """Count one suite run."""
        self.judgments += totals.judgments
        self.cache_hits += totals.cache_hits
        self.cache_misses += totals.cache_misses
        self.model_calls += totals.calls
        self.seconds += totals.wall_seconds
        self.spent += Usage(prompt_tokens=totals.prompt_tokens,
                            completion_tokens=totals.completion_tokens,
                            cost=Usage.from_cost(totals.cost_usd if totals.calls else 0.0).cost)
        self.runs.append(line)

    def merge(self, data: StatsJson) -> None:
        """Add another process's counters (an xdist worker's ``workeroutput``)."""
        for name in ("judgments", "cache_hits", "cache_misses", "model_calls", "seconds"):
            setattr(self, name, getattr(self, name) + data[name])
        self.spent += Usage(prompt_tokens=data["prompt_tokens"],
                            completion_tokens=data["completion_tokens"],
                            cost=Usage.from_cost(data["cost_usd"]).cost)
        self.runs += list(data["runs"])

    def as_dict(self) -> StatsJson:
        """Plain JSON-able counters (what an xdist worker hands its controller)."""
        return {"judgments": self.judgments, "cache_hits": self.cache_hits,
                "cache_misses": self.cache_misses, "model_calls": self.model_calls,
                "prompt_tokens": self.spent.prompt_tokens,
                "completion_tokens": self.spent.completion_tokens,
                "cost_usd": self.spent.cost_usd(digits=None),
                "seconds": self.seconds, "runs": list(self.runs)}


@dataclass(frozen=True)
class SuiteOutcome:
    """A suite's stored run: its id, headline results by case id, and the gate's verdict."""

    path: str
    suite_id: str
    run_id: str
    results: Mapping[str, CaseResult]
    verdict: GateVerdict | None
    rubric: Rubric


class JudgeSession:
    """The judge of one pytest process (the controller, or one xdist worker)."""

    def __init__(self, root: Path, mode: CacheModeName, token: str,
                 env: Mapping[str, str] | None = None) -> None:
        self.root, self.mode, self.token = root, mode, token
        self.env = dict(os.environ if env is None else env)
        self.stats = Stats()
        self._workspace: Workspace | None = None
        self._suites: dict[str, SuiteOutcome] = {}
        self.imported: list[tuple[Path, ImportReport]] = []

    @property
    def shared(self) -> Path:
        """The session's folder, shared by its xdist workers."""
        return session_folder(self.root, self.token)

    def workspace(self) -> Workspace:
        """The pytest root's workspace, with the plugin's cache mode over its settings."""
        if self._workspace is None:
            self._workspace = Workspace.open(self.root, {"cache_mode": self.mode},
                                             env=self.env)
        return self._workspace

    def import_exports(self, files: list[Path]) -> None:
        """Import shipped cache exports (``judge cache export`` JSONL) into the cache."""
        ws = self.workspace()
        for file in files:
            self.imported.append((file, import_cache_file(ws, file)))

    # -- single judgments -------------------------------------------------------------------

    def rubric(self, rubric: Rubric | str | None) -> Rubric:
        """The rubric object of a ``judge_eval`` call."""
        return rubric if isinstance(rubric, Rubric) else self.workspace().rubric(rubric)

    def evaluate(self, case: Case, rubric: Rubric, model: str | None) -> CaseResult:
        """Judge one case through :func:`judge.app.runs.evaluating.evaluate_case` and count it."""
        start = time.perf_counter()
        result = _run(evaluate_case(self.workspace(), case, rubric=rubric, model=model))
        self.stats.add_result(result, time.perf_counter() - start)
        return result

    def render_command(self, case: Case, rubric: Rubric, suite: str | None = None) -> str:
        """The ``judge render`` line for ``case``; a loose case is written to a suite file."""
        template = self.workspace().settings.template
        if suite is None:
            folder = self.root / ".judge" / "pytest" / "cases"
            folder.mkdir(parents=True, exist_ok=True)
            target = folder / f"{case.id.replace('/', '_').replace(':', '_')}.yaml"
            body = {"id": "pytest-case", "rubric": rubric.id,
                    "cases": [case.model_dump(mode="json", exclude_defaults=True)]}
            write_atomic(target, yaml.safe_dump(body, sort_keys=False, allow_unicode=True))
            suite = str(target.relative_to(self.root))
        argv = ["judge", "render", suite, "--case", case.id, "--rubric", rubric.id]
        if template != "judge":
            argv += ["--template", template]
        return quoted_command(self.root, *argv)

    # -- suites -----------------------------------------------------------------------------

    def case_ids(self, path: str) -> tuple[str, ...]:
        """The suite's case ids, validated against its rubric (at collection)."""
        suite, _ = load_checked(self.workspace(), Path(path), None)
        return tuple(c.id for c in suite.cases)

    @contextlib.contextmanager
    def _locked(self, name: str) -> Iterator[None]:
        self.shared.mkdir(parents=True, exist_ok=True)
        with (self.shared / f"{name}.lock").open("a") as handle:
            if fcntl is not None:
                fcntl.flock(handle, fcntl.LOCK_EX)
            try:
                yield
            finally:
                if fcntl is not None:
                    fcntl.flock(handle, fcntl.LOCK_UN)

    def suite(self, path: str) -> SuiteOutcome:
        """The suite's run in this session: judged and stored by the first asker only."""
        if path in self._suites:
            return self._suites[path]
        ws = self.workspace()
        name = hashlib.sha256(str(ws.path(path).resolve()).encode()).hexdigest()[:16]
        record = self.shared / f"{name}.json"
        with self._locked(name):
            if record.is_file():
                data = json.loads(record.read_text(encoding="utf-8"))
                run_id = str(data["run"])
                verdict = (GateVerdict.model_validate(data["verdict"])
                           if data["verdict"] is not None else None)
            else:
                report = run_suite(ws, RunRequest(suite=Path(path)))
                run_id, verdict = report.run.id, report.verdict
                self.stats.add_run(report.run.totals, self._run_line(path, report))
                write_atomic(record, canonical_json({
                    "run": run_id,
                    "verdict": verdict.model_dump(mode="json") if verdict else None,
                }))
        with ws.open_store() as store:
            run = store.get_run(run_id)
            results = {r.id: r for r in headline_results(store, run)}
        _, rubric = load_checked(ws, Path(path), None)
        outcome = SuiteOutcome(path=path, suite_id=run.suite, run_id=run_id, results=results,
                               verdict=verdict, rubric=rubric)
        self._suites[path] = outcome
        return outcome

    @staticmethod
    def _run_line(path: str, report: RunReport) -> str:
        v = report.verdict
        if v is None:
            gate = "not compared"
        elif v.comparison is None:
            gate = v.headline()
        else:
            c = v.comparison
            word = "REGRESSION" if v.has_regression else "no regression"
            gate = f"{word}: mean {c.previous_score} → {c.current_score} ({c.score_delta:+})"
        return (f"suite {path}: run {report.run.id} stored ({report.summary.passed}/"
                f"{report.summary.cases} passed) · {gate}")
