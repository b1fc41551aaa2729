"""The pytest plugin, run as users run it: inner pytest sessions (``pytester``) of a project.

Each project has a ``judge.toml`` naming the loopback fake judge, a suite and test modules;
the inner sessions load the plugin with ``-p judge.pytest_plugin`` (the name of its
``pytest11`` entry point, so an installed entry point and the flag are one plugin).
"""

from __future__ import annotations

import re
import shutil
import socket
import tomllib
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from judge.app.runs.rendering import RenderRequest, render_case
from judge.app.workspace.workspace import Workspace
from judge.pytest_plugin import resolve_mode

ROOT = Path(__file__).resolve().parents[2]
PLUGIN = ("-p", "judge.pytest_plugin")
FULL = {"agentPerformance": 100, "taskOutcomeQuality": 100, "processCompliance": 100}
NONE = {"agentPerformance": 0, "taskOutcomeQuality": 0, "processCompliance": 0}


def _case(case_id: str, signals: dict[str, int]) -> dict[str, Any]:
    return {"id": case_id, "input": f"Fix the bug behind {case_id}.",
            "output": f"Fixed {case_id}; tests added and CI green.",
            "deterministic": signals,
            "evidence": {"commits": [{"sha": "64803fb9ec6bc338d02b962dcbdf8d3e88aea9e0",
                                      "subject": f"fix: {case_id}"}],
                         "agentLogs": [{"step": "verify", "text": "all tests pass"}]}}


JUDGED = '''
from judge.pytest_plugin import assert_band, assert_passes, assert_score, judge_suite

GOOD = {good!r}
BAD = {bad!r}

def test_good(judge_eval):
    result = judge_eval(GOOD, rubric="task-evaluation")
    assert_passes(result)
    assert_score(result, at_least=70)
    assert_band(result, at_least="acceptable")

def test_bad(judge_eval):
    assert_passes(judge_eval(BAD, rubric="task-evaluation"))
'''
SUITE_TEST = ('from judge.pytest_plugin import judge_suite\n\n'
              'test_agent = judge_suite("suites/agent.yaml")\n')


@pytest.fixture(scope="module", autouse=True)
def _litellm_outside() -> None:
    # In-process inner sessions drop the modules they imported and restore sys.meta_path
    # afterwards; litellm pulls in the importlib_metadata backport, which removes the stdlib
    # finder's find_distributions when imported, so imported inside a session it would leave
    # no distribution finder at all; and judge.cache.disk keeps a class derived from diskcache's,
    # which a re-imported diskcache would not recognise. Imported once out here, they stay
    # (and are not paid for again by every inner session).
    import diskcache  # noqa: F401
    import jinja2  # noqa: F401
    import sqlalchemy  # noqa: F401

    from judge.llm.client import load_litellm

    load_litellm()


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("CI", "JUDGE_CACHE_MODE", "JUDGE_MODEL", "JUDGE_API_BASE", "JUDGE_CACHE_DIR",
                 "JUDGE_STORE_URL", "PYTEST_ADDOPTS", "OPENAI_API_KEY"):
        monkeypatch.delenv(name, raising=False)


def _project(pytester: pytest.Pytester, api_base: str, suite: list[dict[str, Any]],
             tests: dict[str, str]) -> Path:
    root = pytester.path
    pytester.makeini("[pytest]\nasyncio_default_fixture_loop_scope = function\n")
    (root / "judge.toml").write_text(f'model = "hosted_vllm/fake-judge"\n'
                                     f'api_base = "{api_base}"\n', encoding="utf-8")
    (root / "suites").mkdir(exist_ok=True)
    (root / "suites" / "agent.yaml").write_text(yaml.safe_dump(
        {"id": "agent", "rubric": "task-evaluation", "cases": suite}), encoding="utf-8")
    for name, body in tests.items():
        (root / name).write_text(body, encoding="utf-8")
    return root


def _outcomes(xml: Path) -> dict[str, str]:
    """Per test (class.name): passed, failed or error, from a JUnit XML report."""
    out = {}
    for case in ET.parse(xml).getroot().iter("testcase"):
        kinds = [child.tag for child in case if child.tag in ("failure", "error", "skipped")]
        out[f"{case.get('classname')}.{case.get('name')}"] = kinds[0] if kinds else "passed"
    return out


def _properties(xml: Path, test: str) -> dict[str, str]:
    for case in ET.parse(xml).getroot().iter("testcase"):
        if case.get("name") == test:
            return {p.get("name", ""): p.get("value", "") for p in case.iter("property")}
    raise AssertionError(f"no test {test} in {xml}")


@pytest.fixture
def judged(pytester: pytest.Pytester, fake_server: Any) -> Iterator[Path]:
    yield _project(pytester, fake_server.base_url + "/v1", [],
                   {"test_judged.py": JUDGED.format(good=_case("good-case", FULL),
                                                    bad=_case("bad-case", NONE))})


def test_judged_assertions_record_then_replay_under_ci(
        pytester: pytest.Pytester, fake_server: Any, judged: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    xml = judged / "report.xml"
    run = pytester.runpytest_inprocess(*PLUGIN, f"--junitxml={xml}")
    run.assert_outcomes(passed=1, failed=1)
    text = run.stdout.str()
    assert "judgeflow: mode read-write (default)" in text
    assert fake_server.stats()["requests"] == 2
    # The failure a person reads: what failed, the scores per category, the judge's words,
    # what it cited, and the command that shows the exact prompt.
    failure = text[text.index("bad-case: did not pass"):]
    assert "is below the pass mark 60" in failure
    assert re.search(r"agentPerformance\s+0\s+\d+\s+\d+\s+0\.30\s+failing", failure), failure
    assert "judge's rationale:" in failure and "evidence cited:" in failure
    assert "[commits:" in failure
    assert "judge: hosted_vllm/fake-judge · judged anew" in failure
    render = re.search(r"re-render the prompt: cd \S+ && judge render (\S+) --case bad-case "
                       r"--rubric task-evaluation", failure)
    assert render, failure
    done = render_case(Workspace.open(judged), RenderRequest(suite=Path(render.group(1)),
                                                             case_id="bad-case"))
    assert "bad-case" in done.prompt.messages[-1]["content"]
    summary = text[text.index("= judgeflow ="):]
    assert "judgments 2 · cache hits 0 · cache misses 0 · model calls 2" in summary
    props = _properties(xml, "test_good")
    assert props["judge.good-case.status"] == "scored"
    assert props["judge.good-case.passed"] == "true"
    assert int(props["judge.good-case.overall"]) >= 70
    assert props["judge.good-case.agentPerformance.deterministic"] == "100"
    assert props["judge.good-case.agentPerformance.ai"].isdigit()
    assert len(props["judge.good-case.cacheKey"]) == 64

    # CI=true: offline by default, the same outcomes replayed, no model call.
    monkeypatch.setenv("CI", "true")
    again = pytester.runpytest_inprocess(*PLUGIN)
    again.assert_outcomes(passed=1, failed=1)
    assert "judgeflow: mode offline (env CI is set)" in again.stdout.str()
    assert "judgments 2 · cache hits 2 · cache misses 0 · model calls 0" in again.stdout.str()
    assert "replayed from the cache" in again.stdout.str()
    assert fake_server.stats()["requests"] == 2
    # The flag beats CI.
    flagged = pytester.runpytest_inprocess(*PLUGIN, "--judge-mode", "refresh", "-k", "good")
    flagged.assert_outcomes(passed=1, deselected=1)
    assert fake_server.stats()["requests"] == 3


def test_offline_miss_fails_with_the_key_and_the_record_command(
        pytester: pytest.Pytester, fake_server: Any, judged: Path) -> None:
    (judged / "test_suite.py").write_text(SUITE_TEST, encoding="utf-8")
    (judged / "suites" / "agent.yaml").write_text(yaml.safe_dump(
        {"id": "agent", "cases": [_case("case-a", FULL)]}), encoding="utf-8")
    run = pytester.runpytest_inprocess(*PLUGIN, "--judge-mode", "offline")
    run.assert_outcomes(passed=1, failed=3)  # good, bad, case-a miss; the gate item passes
    text = run.stdout.str()
    assert fake_server.stats()["requests"] == 0
    miss = text[text.index("good-case: no cached judgment (offline mode)"):]
    key = re.search(r"cache key ([0-9a-f]{64})", miss)
    assert key, miss
    assert re.search(r"record it \(calls the judge, writes the cache\): cd \S+ && pytest "
                     r"--judge-mode read-write test_judged\.py::test_good", miss), miss
    assert "case-a: no cached judgment (offline mode)" in text
    assert "pytest --judge-mode read-write 'test_suite.py::test_agent[case-a]'" in text
    # Recording with that command makes the same test pass offline.
    pytester.runpytest_inprocess(*PLUGIN, "--judge-mode", "read-write",
                                 "test_judged.py::test_good").assert_outcomes(passed=1)
    replay = pytester.runpytest_inprocess(*PLUGIN, "--judge-mode", "offline",
                                          "test_judged.py::test_good")
    replay.assert_outcomes(passed=1)
    cache = Workspace.open(judged).open_cache("read-only")
    assert cache is not None
    with cache:
        assert cache.get(key.group(1)) is not None  # the key the miss named was recorded


def test_suite_items_by_case_id_and_a_regression_fails_the_session(
        pytester: pytest.Pytester, fake_server: Any) -> None:
    cases = [_case("case-a", FULL), _case("case-b", FULL), _case("case-c", NONE)]
    root = _project(pytester, fake_server.base_url + "/v1", cases,
                    {"test_suite.py": SUITE_TEST})
    first = pytester.runpytest_inprocess(*PLUGIN, "-v")
    first.assert_outcomes(passed=3, failed=1)
    text = first.stdout.str()
    for line in ("test_suite.py::test_agent[case-a] PASSED",
                 "test_suite.py::test_agent[case-b] PASSED",
                 "test_suite.py::test_agent[case-c] FAILED",
                 "test_suite.py::test_agent[@baseline] PASSED"):
        assert line in text, text
    assert "case-c: did not pass" in text
    assert fake_server.stats()["requests"] == 3  # judged once, not once per item
    assert (root / "baselines" / "agent.json").is_file()
    assert "first baseline recorded, nothing compared" in text
    assert "stored runs are listed by `judge runs list`" in text
    ws = Workspace.open(root)
    with ws.open_store() as store:
        assert [r.suite for r in store.list_runs()] == ["agent"]

    # case-a's signals drop: its item fails, and the gate item fails naming it.
    cases[0] = _case("case-a", NONE)
    (root / "suites" / "agent.yaml").write_text(yaml.safe_dump(
        {"id": "agent", "rubric": "task-evaluation", "cases": cases}), encoding="utf-8")
    second = pytester.runpytest_inprocess(*PLUGIN, "-v")
    second.assert_outcomes(passed=1, failed=3)
    assert second.ret == pytest.ExitCode.TESTS_FAILED
    text = second.stdout.str()
    assert "test_suite.py::test_agent[@baseline] FAILED" in text
    gate = text[text.index("suite agent regressed against"):]
    assert "regressed cases: case-a" in gate
    assert "judge baseline record suites/agent.yaml --from" in gate
    assert "REGRESSION: mean" in text
    with ws.open_store() as store:
        assert len(store.list_runs()) == 2


def test_xdist_gives_the_same_outcomes_and_judges_the_suite_once(
        pytester: pytest.Pytester, fake_server: Any, judged: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("xdist")
    (judged / "test_suite.py").write_text(SUITE_TEST, encoding="utf-8")
    cases = [_case(f"case-{i}", FULL if i % 2 else NONE) for i in range(4)]
    (judged / "suites" / "agent.yaml").write_text(yaml.safe_dump(
        {"id": "agent", "cases": cases}), encoding="utf-8")
    serial = pytester.runpytest_inprocess(*PLUGIN, "-n", "0", "--junitxml=n0.xml")
    # 2 judge_eval cases + 4 suite cases, each judged once.
    assert fake_server.stats()["requests"] == 6
    # Two workers replaying under CI (no litellm import in a worker: offline builds no
    # client): the suite is judged and stored once for the session, by one of them.
    monkeypatch.setenv("CI", "1")
    # Three processes (a controller, two workers): only the plugins this needs, not every
    # installed one (hypothesis, pytest-asyncio, respx, anyio: seconds of imports in all).
    monkeypatch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")
    parallel = pytester.runpytest_subprocess(*PLUGIN, "-p", "xdist", "-n", "2",
                                             "--junitxml=n2.xml", timeout=120)
    out = parallel.stdout.str()
    assert "2 workers" in out, out
    expected = {"test_judged.test_good": "passed", "test_judged.test_bad": "failure",
                "test_suite.test_agent[@baseline]": "passed"}
    expected |= {f"test_suite.test_agent[case-{i}]": "passed" if i % 2 else "failure"
                 for i in range(4)}
    assert _outcomes(judged / "n0.xml") == expected
    assert _outcomes(judged / "n2.xml") == expected
    assert parallel.ret == serial.ret == pytest.ExitCode.TESTS_FAILED
    with Workspace.open(judged).open_store() as store:
        assert len(store.list_runs()) == 2  # one per session, not one per worker
    # The controller's summary adds up both workers' counters.
    summary = out[out.index("= judgeflow ="):]
    assert "judgments 6 · cache hits 6 · cache misses 0 · model calls 0" in summary
    assert "no regression" in summary and summary.count("suite suites/agent.yaml: run") == 1
    assert fake_server.stats()["requests"] == 6
    leftovers = [p for p in (judged / ".judge" / "pytest").iterdir() if p.name != "cases"]
    assert leftovers == []  # the session folder (locks, run ids) is removed at the end


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


def test_shipped_example_passes_with_no_model(pytester: pytest.Pytester,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    # A fresh clone: the example's files only (no .judge folder, no cache).
    shutil.copytree(ROOT / "examples" / "pytest", pytester.path, dirs_exist_ok=True,
                    ignore=shutil.ignore_patterns(".judge", "__pycache__", ".pytest_cache"))
    # Any connection would fail: the judge's address is a closed loopback port.
    monkeypatch.setenv("JUDGE_API_BASE", f"http://127.0.0.1:{_closed_port()}/v1")
    # (pytest-asyncio off: it warns about an ini option the example need not know.)
    fresh = pytester.runpytest_inprocess(*PLUGIN, "-p", "no:asyncio", "-v")
    fresh.assert_outcomes(passed=6)  # 3 cases + [@baseline] + 2 judged assertions
    text = fresh.stdout.str()
    assert "test_agent_suite.py::test_agent[fix-login-redirect] PASSED" in text
    assert "judgeflow: mode offline (ini judge_mode)" in text
    assert "imported judge-cache.jsonl: 4 added, 0 already cached, 0 rejected" in text
    assert "judgments 5 · cache hits 5 · cache misses 0 · model calls 0" in text
    assert "no regression" in text
    # Even read-write makes no call: every judgment is in the shipped export.
    rw = pytester.runpytest_inprocess(*PLUGIN, "-p", "no:asyncio", "--judge-mode",
                                      "read-write")
    rw.assert_outcomes(passed=6)
    assert "cache hits 5 · cache misses 0 · model calls 0" in rw.stdout.str()


@pytest.mark.parametrize(("flag", "ini", "env", "expected"), [
    (None, None, {}, ("read-write", "default")),
    (None, None, {"CI": "true"}, ("offline", "env CI is set")),
    (None, None, {"CI": "false"}, ("read-write", "default")),
    (None, "refresh", {"CI": "1"}, ("refresh", "ini judge_mode")),
    (None, "offline", {"JUDGE_CACHE_MODE": "read-write"},
     ("read-write", "env JUDGE_CACHE_MODE")),
    ("read-write", "offline", {"CI": "1", "JUDGE_CACHE_MODE": "offline"},
     ("read-write", "--judge-mode")),
])
def test_mode_precedence(flag: str | None, ini: str | None, env: dict[str, str],
                         expected: tuple[str, str]) -> None:
    assert resolve_mode(flag, ini, env) == expected


def test_a_mode_the_plugin_does_not_take_is_refused() -> None:
    with pytest.raises(pytest.UsageError, match="JUDGE_CACHE_MODE is 'off'"):
        resolve_mode(None, None, {"JUDGE_CACHE_MODE": "off"})


def test_distribution_declares_the_entry_point() -> None:
    meta = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    assert meta["project"]["entry-points"]["pytest11"] == {
        "judge.pytest_plugin": "judge.pytest_plugin"}
    import judge.pytest_plugin as plugin

    assert callable(plugin.pytest_addoption) and callable(plugin.judge_eval)


LIGHT = """
import sys

def test_nothing_judged_loads_no_application_layer():
    heavy = [m for m in ("judge.app.runs.running", "judge.app.workspace.workspace",
                         "judge.app.runs.gate", "judge.pytest_plugin.session",
                         "judge.store.runs", "sqlalchemy", "litellm", "diskcache")
             if m in sys.modules]
    assert "judge.pytest_plugin" in sys.modules
    assert heavy == []
"""


def test_a_session_that_judges_nothing_loads_no_application_layer(
        pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    # The plugin is in every pytest run of a project with judgeflow installed: a session
    # that judges nothing pays for its hooks, not for the application layer.
    pytester.makepyfile(test_light=LIGHT)
    monkeypatch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")
    result = pytester.runpytest_subprocess(*PLUGIN, "-p", "no:cacheprovider", timeout=120)
    out = result.stdout.str()
    assert result.ret == pytest.ExitCode.OK, out
    assert "judgeflow: mode read-write (default), workspace" in out
    assert "= judgeflow =" not in out  # nothing judged, nothing to sum up
    assert not (pytester.path / ".judge").exists()
