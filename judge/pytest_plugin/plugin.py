"""The pytest hooks and fixtures: pytest's options, items and reports onto the judge's operations.

Mode precedence, highest first: ``--judge-mode`` > env ``JUDGE_CACHE_MODE`` > ini
``judge_mode`` > ``offline`` when env ``CI`` is set (and not ``0``/``false``) >
``read-write``. A ``cache_mode`` in ``judge.toml`` is not consulted: a setting committed for
``judge run`` must not make CI call a model. Every other setting is the workspace's, read
from the pytest root (``judge.toml`` / ``[tool.judge]``, ``JUDGE_*``).
"""

from __future__ import annotations

import json
import os
import shutil
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import pytest

from ..app.workspace.settings import CacheModeName, ci_set
from ..core.formats.models import CaseResult
from ..core.formats.rubric import Rubric
from ..core.formats.suite import Case, as_masked_case
from ..core.outcomes.usage import cost_text
from ..core.text.errors import JudgeError
from .places import quoted_command, session_folder
from .report import (
    JudgeAssertionError,
    JudgedContext,
    describe,
    forget_all,
    junit_properties,
    remember,
)

if TYPE_CHECKING:
    from ..app.runs.gate import GateVerdict
    from .session import JudgeSession, SuiteOutcome

__all__ = [
    "GATE_ID",
    "MODES",
    "JudgeEval",
    "SuiteCase",
    "judge_case",
    "judge_eval",
    "judge_suite",
    "pytest_addoption",
    "pytest_configure",
    "pytest_configure_node",
    "pytest_generate_tests",
    "pytest_report_header",
    "pytest_sessionfinish",
    "pytest_sessionstart",
    "pytest_terminal_summary",
    "pytest_testnodedown",
    "resolve_mode",
]

MODES: tuple[str, ...] = ("offline", "read-write", "refresh")
GATE_ID = "@baseline"
"""The id of a suite's extra item: its run compared with the baseline by the one gate."""
_SESSION = pytest.StashKey["JudgeSession"]()
_MODE = pytest.StashKey[CacheModeName]()
_SOURCE = pytest.StashKey[str]()
_TOKEN = pytest.StashKey[str]()
_TOKEN_KEY = "judgeflow_session"
_STATS_KEY = "judgeflow_stats"


def pytest_addoption(parser: pytest.Parser) -> None:
    """``--judge-mode`` and the ini options ``judge_mode`` and ``judge_cache_import``."""
    group = parser.getgroup("judgeflow", "judged assertions (judgeflow)")
    group.addoption("--judge-mode", choices=MODES, default=None, dest="judge_mode",
                    help="offline: replay only, a miss fails; read-write: judge misses and "
                         "cache them; refresh: judge anew. Default: env JUDGE_CACHE_MODE, "
                         "ini judge_mode, offline when CI is set, else read-write.")
    parser.addini("judge_mode", "judgeflow cache mode (offline, read-write, refresh)",
                  default=None)
    parser.addini("judge_cache_import", "cache exports (`judge cache export` JSONL, relative "
                  "to the pytest root) imported into the cache at session start",
                  type="linelist", default=[])


def resolve_mode(flag: str | None, ini: str | None,
                 env: Mapping[str, str]) -> tuple[CacheModeName, str]:
    """The cache mode and where it came from, by the precedence in the module docstring."""
    raw = env.get("JUDGE_CACHE_MODE") or None
    for value, source in ((flag, "--judge-mode"), (raw, "env JUDGE_CACHE_MODE"),
                          (ini, "ini judge_mode")):
        if value:
            if value not in MODES:
                raise pytest.UsageError(f"judgeflow: {source} is {value!r}; the pytest plugin "
                                        f"takes one of {', '.join(MODES)}")
            return cast(CacheModeName, value), source
    if ci_set(env):
        return "offline", "env CI is set"
    return "read-write", "default"


def pytest_configure(config: pytest.Config) -> None:
    """Register the marker; settle the mode and the session's token (the session opens later)."""
    config.addinivalue_line("markers", "judge_suite(path): one test item per case of the "
                                       "judgeflow suite at path (relative to the pytest root)")
    ini = config.getini("judge_mode")
    mode, source = resolve_mode(config.getoption("judge_mode"), str(ini) if ini else None,
                                os.environ)
    workerinput = getattr(config, "workerinput", None)
    token = (str(workerinput[_TOKEN_KEY]) if workerinput and _TOKEN_KEY in workerinput
             else uuid.uuid4().hex)
    config.stash[_MODE], config.stash[_SOURCE], config.stash[_TOKEN] = mode, source, token


def _session(config: pytest.Config) -> JudgeSession:
    """The judge session of this process, opened when something first judges or reads a suite."""
    session = config.stash.get(_SESSION, None)
    if session is None:
        # Imported here, not at the top: this module loads in every pytest run of a project
        # with judgeflow installed; the application layer loads only in a session that judges.
        from .session import JudgeSession

        session = config.stash[_SESSION] = JudgeSession(config.rootpath, config.stash[_MODE],
                                                        config.stash[_TOKEN])
    return session


def _opened(config: pytest.Config) -> JudgeSession | None:
    """The session if something opened it, else None (and nothing is imported)."""
    return config.stash.get(_SESSION, None)


def _is_worker(config: pytest.Config) -> bool:
    return hasattr(config, "workerinput")


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node: Any) -> None:
    """xdist: hand the session's token to each worker, so they share one session folder."""
    node.workerinput[_TOKEN_KEY] = node.config.stash[_TOKEN]


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node: Any, error: Any) -> None:
    """xdist: add a finished worker's counters to the controller's."""
    del error
    data = getattr(node, "workeroutput", {}).get(_STATS_KEY)
    if data:
        _session(node.config).stats.merge(data)


def pytest_report_header(config: pytest.Config) -> str:
    """One header line: the mode and why, and the workspace."""
    return (f"judgeflow: mode {config.stash[_MODE]} ({config.stash[_SOURCE]}), workspace "
            f"{config.rootpath}")


def pytest_sessionstart(session: pytest.Session) -> None:
    """Import the shipped cache exports once (the controller; before xdist starts workers).

    Not in ``refresh`` mode: everything is judged anew, and the new cache is what a
    re-recorded export should hold.
    """
    config = session.config
    files = [config.rootpath / str(f) for f in config.getini("judge_cache_import")]
    if files and not _is_worker(config) and config.stash[_MODE] != "refresh":
        try:
            _session(config).import_exports(files)
        except JudgeError as exc:
            raise pytest.UsageError(f"judgeflow: judge_cache_import: {exc}") from None


def pytest_sessionfinish(session: pytest.Session) -> None:
    """Workers send their counters to the controller; the controller drops the session folder."""
    config = session.config
    s = _opened(config)
    if _is_worker(config):
        if s is not None:
            cast(Any, config).workeroutput[_STATS_KEY] = s.stats.as_dict()
    else:
        shutil.rmtree(session_folder(config.rootpath, config.stash[_TOKEN]), ignore_errors=True)
        forget_all()


def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    """The ``judgeflow`` section: judgments, cache hits, model calls, tokens, cost, time."""
    s = _opened(config)
    if s is None:
        return
    st = s.stats
    if not (st.judgments or st.runs or s.imported):
        return
    tr = terminalreporter
    tr.section("judgeflow")
    tr.write_line(f"mode {s.mode} ({config.stash[_SOURCE]}) · workspace {s.root}")
    for file, rep in s.imported:
        tr.write_line(f"imported {file.name}: {rep.added} added, {rep.skipped} already "
                      f"cached, {rep.rejected} rejected")
        for err in rep.errors[:5]:
            tr.write_line(f"  {err}")
    spent = st.spent
    cost = cost_text(spent.cost_usd(), st.model_calls)
    tr.write_line(f"judgments {st.judgments} · cache hits {st.cache_hits} · cache misses "
                  f"{st.cache_misses} · model calls {st.model_calls} · tokens "
                  f"{spent.tokens} (prompt {spent.prompt_tokens}, "
                  f"completion {spent.completion_tokens}) · {cost} · time "
                  f"{st.seconds:.2f} s")
    for line in st.runs:
        tr.write_line(line)
    if st.runs:
        tr.write_line("stored runs are listed by `judge runs list`")


def _fail_on_judge_error(call: Callable[[], Any]) -> Any:
    __tracebackhide__ = True
    try:
        return call()
    except JudgeError as exc:
        pytest.fail(f"judgeflow: {exc}", pytrace=False)


def _record_command(session: JudgeSession, nodeid: str) -> str:
    return quoted_command(session.root, "pytest", "--judge-mode", "read-write", nodeid)


# -- single judgments -------------------------------------------------------------------------

@dataclass(frozen=True)
class JudgeEval:
    """The ``judge_eval`` fixture's value: call it with a case to get its :class:`CaseResult`."""

    session: JudgeSession
    node: pytest.Item

    def __call__(self, case: Case | Mapping[str, Any], *, rubric: Rubric | str | None = None,
                 model: str | None = None) -> CaseResult:
        """Judge ``case`` (a Case or a suite-style dict); an offline miss fails the test."""
        __tracebackhide__ = True
        s = self.session
        values = _fail_on_judge_error(lambda: s.workspace().secret_pattern)
        value = as_masked_case(case, values)
        rub = _fail_on_judge_error(lambda: s.rubric(rubric))
        result: CaseResult = _fail_on_judge_error(lambda: s.evaluate(value, rub, model))
        context = JudgedContext(rubric=rub, render=lambda: s.render_command(value, rub),
                                record=_record_command(s, self.node.nodeid), mode=s.mode)
        remember(result, context)
        self.node.user_properties.extend(junit_properties(result))
        if result.status == "cache_miss":
            pytest.fail(describe(result, "no cached judgment (offline mode)", context),
                        pytrace=False)
        return result


@pytest.fixture
def judge_eval(request: pytest.FixtureRequest) -> JudgeEval:
    """Judge one case with the workspace's judge and cache: ``judge_eval(case, rubric=...)``."""
    return JudgeEval(_session(request.config), cast(pytest.Item, request.node))


# -- suites as tests ----------------------------------------------------------------------------

@dataclass(frozen=True)
class SuiteCase:
    """One item of a judged suite: a case's headline result, or the suite's gate verdict."""

    outcome: SuiteOutcome
    case_id: str
    context: JudgedContext

    @property
    def result(self) -> CaseResult | None:
        """The case's result (None for the gate item)."""
        return self.outcome.results.get(self.case_id)

    @property
    def verdict(self) -> GateVerdict | None:
        """The gate's verdict on the suite's run."""
        return self.outcome.verdict

    def check(self) -> None:
        """Fail unless the case passes the pass mark; the gate item fails on a regression."""
        __tracebackhide__ = True
        if self.case_id == GATE_ID:
            message = _regression(self.outcome)
            if message:
                raise JudgeAssertionError(message)
            return
        result = self.result
        if result is None:
            raise JudgeAssertionError(f"{self.case_id}: no result in run "
                                      f"{self.outcome.run_id} (judge runs show "
                                      f"{self.outcome.run_id})")
        if result.status == "cache_miss":
            raise JudgeAssertionError(describe(result, "no cached judgment (offline mode)",
                                               self.context))
        if result.status != "scored":
            raise JudgeAssertionError(describe(result, "could not be scored", self.context))
        if not result.passed:
            raise JudgeAssertionError(describe(
                result, f"did not pass: overall {result.overall_score} ({result.band}) is "
                        f"below the pass mark {self.outcome.rubric.pass_score}", self.context))


def _regression(outcome: SuiteOutcome) -> str | None:
    """Why the gate item fails: a regression while blocking, or not compared (never a pass)."""
    v = outcome.verdict
    if v is not None and v.outcome == "not-compared":
        return (f"suite {outcome.suite_id}: {v.skipped}\n  run {v.run} is stored (judge "
                f"show {v.run})")
    if v is None or not v.blocked or v.comparison is None:
        return None
    c = v.comparison
    lines = [f"suite {outcome.suite_id} regressed against {v.baseline_path} "
             f"(baseline {c.baseline_id}, threshold {c.threshold})",
             f"  mean overall {c.previous_score} → {c.current_score} ({c.score_delta:+}) over "
             f"{c.compared_cases} case(s)"]
    if c.regressed_cases:
        lines.append(f"  regressed cases: {', '.join(c.regressed_cases)}")
    if c.newly_unscored:
        lines.append(f"  newly unscored: {', '.join(c.newly_unscored)}")
    lines += [f"  - {reason}" for reason in c.blocked_reasons]
    lines += [f"  note: {note}" for note in v.notices]
    lines.append(f"  run {v.run} is stored (judge runs show {v.run}); if the new scores are "
                 f"right: judge baseline record {outcome.path} --from {v.run}")
    return "\n".join(lines)


def _gate_properties(v: GateVerdict, run_id: str) -> list[tuple[str, object]]:
    """The gate item's JUnit properties: the verdict's own fields, read through the model."""
    c = v.comparison
    test = c.test.model_dump(mode="json") if c is not None and c.test is not None else None
    return [("judge.gate.hasRegression", str(v.has_regression).lower()),
            ("judge.gate.blocked", str(v.blocked).lower()),
            ("judge.gate.outcome", v.outcome),
            ("judge.gate.notCompared", v.not_compared or ""),
            ("judge.gate.comparedCases", v.compared_cases),
            ("judge.gate.baseline", v.against.said() if v.against else v.baseline_path),
            ("judge.gate.scoreDelta", "" if c is None else c.score_delta),
            ("judge.gate.regressedCases", ",".join(c.regressed_cases if c else ())),
            ("judge.gate.test", json.dumps(test, sort_keys=True)),
            ("judge.gate.run", run_id)]


def judge_suite(path: str) -> Callable[[SuiteCase], None]:
    """A test function with one item per case of the suite at ``path`` (from the pytest root).

    A last item, ``[@baseline]``, fails on a regression against the suite's baseline, and
    when the run could not be compared although it was due (another judge's baseline, a
    missing baseline under CI...): not compared is never a pass.
    Assign it in a test module: ``test_agent = judge_suite("suites/agent.yaml")``.
    """
    @pytest.mark.judge_suite(path)
    def test_judged_suite(judge_case: SuiteCase) -> None:
        __tracebackhide__ = True
        judge_case.check()

    return test_judged_suite


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """A function marked ``judge_suite(path)``: one item per case id, and the gate item."""
    marker = metafunc.definition.get_closest_marker("judge_suite")
    if marker is None or "judge_case" not in metafunc.fixturenames:
        return
    if not marker.args or not isinstance(marker.args[0], str | Path):
        raise pytest.UsageError("judge_suite needs the suite's path: "
                                "@pytest.mark.judge_suite('suites/agent.yaml')")
    path = str(marker.args[0])
    try:
        ids = _session(metafunc.config).case_ids(path)
    except JudgeError as exc:
        raise pytest.UsageError(f"judgeflow: {exc}") from None
    if GATE_ID in ids:
        raise pytest.UsageError(f"judgeflow: suite {path} has a case named {GATE_ID!r}, the "
                                f"id of the baseline item: rename the case")
    every = (*ids, GATE_ID)
    metafunc.parametrize("judge_case", [(path, i) for i in every], ids=list(every),
                         indirect=True)


@pytest.fixture
def judge_case(request: pytest.FixtureRequest) -> SuiteCase:
    """The item's case of a ``judge_suite`` function (the suite is judged once a session)."""
    s = _session(request.config)
    param = getattr(request, "param", None)
    if param is None:
        raise pytest.UsageError("judge_case is for functions marked judge_suite(path)")
    path, case_id = param
    outcome: SuiteOutcome = _fail_on_judge_error(lambda: s.suite(path))
    node = request.node
    result = outcome.results.get(case_id)
    render: Callable[[], str] | None = None
    if result is not None:
        node.user_properties.extend(junit_properties(result))
        render = lambda: quoted_command(  # noqa: E731
            s.root, "judge", "render", path, "--case", case_id)
    elif case_id == GATE_ID and outcome.verdict is not None:
        node.user_properties.extend(_gate_properties(outcome.verdict, outcome.run_id))
    context = JudgedContext(rubric=outcome.rubric, render=render,
                            record=_record_command(s, node.nodeid), mode=s.mode)
    if result is not None:
        remember(result, context)
    return SuiteCase(outcome=outcome, case_id=case_id, context=context)
