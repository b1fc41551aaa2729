"""The production monitor: deterministic sampling and exact pass-rate thresholds."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import ValidationError

from judge.app.judges.monitor_file import monitor_file
from judge.app.workspace.workspace import Workspace
from judge.core.outcomes.monitor import MonitorConfig, evaluate, is_sampled, outcome, sample
from judge.core.text.errors import ConfigError


def records(n: int, *, failing: int = 0, start: int = 0) -> list[dict[str, Any]]:
    """``n`` records with ids; the first ``failing`` of them failed."""
    return [{"id": f"req-{start + i:05d}", "passed": i >= failing} for i in range(n)]


def everything(**kw: Any) -> MonitorConfig:
    return MonitorConfig(sample_rate=1.0, **kw)


def test_sampling_is_deterministic_and_order_independent() -> None:
    data = records(2000)
    config = MonitorConfig(sample_rate=0.1, seed=7)
    first = [r["id"] for r in sample(data, config)]
    assert first == [r["id"] for r in sample(data, config)]
    shuffled = data[:]
    random.Random(3).shuffle(shuffled)
    assert sorted(r["id"] for r in sample(shuffled, config)) == sorted(first)
    # a record's fate does not depend on its neighbours either
    assert [r["id"] for r in data if is_sampled(r, config)] == first
    assert 150 < len(first) < 250  # about 10 %
    other = [r["id"] for r in sample(data, MonitorConfig(sample_rate=0.1, seed=8))]
    assert other != first


def test_sampling_without_id_uses_the_record() -> None:
    config = MonitorConfig(sample_rate=0.5, seed=1)
    data = [{"overallScore": s, "input": f"q{s}"} for s in range(200)]
    picked = [r for r in data if is_sampled(r, config)]
    assert picked == [r for r in data if is_sampled(dict(reversed(list(r.items()))), config)]
    assert 60 < len(picked) < 140


@pytest.mark.parametrize(("rate", "expected"), [(0.0, 0), (1.0, 500)])
def test_rate_edges(rate: float, expected: int) -> None:
    assert len(list(sample(records(500), MonitorConfig(sample_rate=rate)))) == expected


@given(ids=st.lists(st.text(min_size=1, max_size=12), unique=True, max_size=50),
       seed=st.integers(-5, 5), low=st.sampled_from([0.1, 0.3, 0.5]))
def test_a_higher_rate_keeps_every_record_a_lower_one_did(ids: list[str], seed: int,
                                                          low: float) -> None:
    data = [{"id": i} for i in ids]
    small = {r["id"] for r in sample(data, MonitorConfig(sample_rate=low, seed=seed))}
    large = {r["id"] for r in sample(data, MonitorConfig(sample_rate=low + 0.3, seed=seed))}
    assert small <= large


@pytest.mark.parametrize(("failing", "status"), [
    (15, "healthy"),    # 85/100 = 0.85 exactly: not below the warning line
    (16, "warning"),    # 0.84
    (30, "warning"),    # 0.70 exactly: not below the critical line
    (31, "critical"),   # 0.69
    (0, "healthy"),
    (100, "critical"),
])
def test_status_at_exact_thresholds(failing: int, status: str) -> None:
    result = evaluate(records(100, failing=failing), everything())
    assert result.status == status
    assert result.pass_rate == (100 - failing) / 100
    assert result.seen == result.sampled == 100


def test_thresholds_are_exact_decimals() -> None:
    # 17/20 == 0.85 exactly; no binary-float drift makes it a warning
    result = evaluate(records(20, failing=3), everything())
    assert result.status == "healthy" and result.pass_rate == 0.85
    result = evaluate(records(60, failing=9), everything(warning_below=0.85))
    assert result.status == "healthy"


def test_insufficient_below_min_samples() -> None:
    result = evaluate(records(19, failing=19), everything())
    assert result.status == "insufficient" and result.pass_rate == 0.0
    assert evaluate(records(20, failing=20), everything()).status == "critical"
    empty = evaluate([], everything())
    assert empty.status == "insufficient" and empty.pass_rate is None and empty.seen == 0
    # unscored samples do not count towards the minimum
    data = records(10) + [{"id": f"u{i}", "status": "unscored"} for i in range(30)]
    result = evaluate(data, everything())
    assert result.status == "insufficient" and result.unscored == 30 and result.passed == 10


def test_outcome_rules() -> None:
    assert outcome({"passed": True, "overallScore": 10}, 60) == "passed"  # explicit wins
    assert outcome({"passed": False, "overallScore": 90}, 60) == "failed"
    assert outcome({"passed": None, "overallScore": 60}, 60) == "passed"
    assert outcome({"overallScore": 59}, 60) == "failed"
    assert outcome({"overallScore": 59.5}, 60) == "failed"
    assert outcome({"overallScore": 80}, None) == "unscored"
    assert outcome({"status": "unscored", "reason": "timeout"}, 60) == "unscored"
    with pytest.raises(ValueError, match="passed"):
        outcome({"passed": "yes"}, 60)
    with pytest.raises(ValueError, match="overallScore"):
        outcome({"overallScore": "80"}, 60)
    with pytest.raises(ValueError, match="overallScore"):
        outcome({"overallScore": True}, 60)


def test_evaluate_counts_the_sample_only() -> None:
    data = [{"id": f"r{i}", "overallScore": 30 + i % 70} for i in range(1000)]
    config = MonitorConfig(sample_rate=0.25, seed=4, pass_score=60, min_samples=5)
    result = evaluate(data, config)
    kept = list(sample(data, config))
    assert result.seen == 1000 and result.sampled == len(kept)
    assert result.passed == sum(1 for r in kept if r["overallScore"] >= 60)
    assert result.passed + result.failed == result.sampled
    assert result.sample_rate == 0.25 and result.seed == 4 and result.pass_score == 60


def test_config_validates() -> None:
    with pytest.raises(ValidationError, match="critical_below"):
        MonitorConfig(warning_below=0.6, critical_below=0.7)
    with pytest.raises(ValidationError):
        MonitorConfig(sample_rate=1.5)
    with pytest.raises(ValidationError):
        MonitorConfig(colour="red")  # type: ignore[call-arg]


# --- reading a file of records (judge judges monitor's operation) ---------------------------

@pytest.mark.parametrize(("line", "message"), [
    ("{not json", "invalid JSON"),
    ("[1, 2]", "a record is a JSON object"),
    ('{"passed": "yes"}', "'passed' must be true"),
    ('{"overallScore": NaN}', "invalid JSON: NaN"),
])
def test_monitor_file_names_the_file_and_line_of_a_bad_record(tmp_path: Path, line: str,
                                                              message: str) -> None:
    (tmp_path / "live.jsonl").write_text('{"id": 1, "passed": true}\n\n' + line + "\n",
                                         encoding="utf-8")
    ws = Workspace.open(tmp_path, env={})
    with pytest.raises(ConfigError) as caught:
        monitor_file(ws, Path("live.jsonl"), MonitorConfig(sample_rate=1.0))
    err = caught.value
    assert message in err.message and err.file == "live.jsonl" and err.where == "line 3"


def test_monitor_file_reads_relative_to_the_workspace_and_judges(tmp_path: Path) -> None:
    lines = [json.dumps({"id": f"q{i}", "overallScore": 40 if i < 20 else 80}) for i in range(100)]
    (tmp_path / "live.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    status = monitor_file(Workspace.open(tmp_path, env={}), Path("live.jsonl"),
                          MonitorConfig(sample_rate=1.0))
    assert (status.status, status.seen, status.passed, status.failed) == ("warning", 100, 80, 20)
    with pytest.raises(ConfigError, match="cannot read"):
        monitor_file(Workspace.open(tmp_path, env={}), Path("absent.jsonl"), MonitorConfig())
