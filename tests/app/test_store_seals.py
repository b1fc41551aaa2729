"""The sealed run store: an aimed change to a stored result, a run's totals
or a baseline's threshold is reported as damage by `show`, `export`, `check` and
`judge runs verify` (exit 2, naming the run and the case), never shown as a score."""

from __future__ import annotations

import json
import shutil
import sqlite3
from collections.abc import Iterator
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest
from conftest import EXAMPLE_SUITE, judge_env, load_fake_server, run_judge

MODEL = "hosted_vllm/fake-judge"


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A workspace after one run against the fake judge, with its baseline recorded."""
    server = load_fake_server().start_in_thread(latency_ms=0, seed=7)
    ws = tmp_path_factory.mktemp("sealed")
    shutil.copy(EXAMPLE_SUITE, ws / "suite.yaml")
    try:
        proc = run_judge(["run", "suite.yaml", "--model", MODEL, "--api-base",
                          f"{server.base_url}/v1", "--json"], ws)
        assert proc.returncode == 0, proc.stderr
        proc = run_judge(["baseline", "record", "suite.yaml"], ws)
        assert proc.returncode == 0, proc.stderr
        yield ws
    finally:
        server.stop()


def copy_of(recorded: Path, tmp_path: Path) -> Path:
    target = tmp_path / "ws"
    shutil.copytree(recorded, target)
    return target


def keyed_copy(recorded: Path, tmp_path: Path) -> tuple[Path, dict[str, str]]:
    """A copy whose store was written with JUDGE_CACHE_SECRET, and the environment with it."""
    ws = copy_of(recorded, tmp_path)
    (ws / ".judge" / "judge.db").unlink()
    env = {**judge_env(), "JUDGE_CACHE_SECRET": "team-secret"}
    # The baseline was recorded without the secret: sealed with it on purpose first.
    (baseline,) = (ws / "baselines").glob("*.json")
    assert run_judge(["baseline", "seal", baseline.stem], ws, env=env).returncode == 0
    proc = run_judge(["run", "suite.yaml", "--model", MODEL, "--offline"], ws, env=env)
    assert proc.returncode == 0, proc.stderr
    return ws, env


def db(ws: Path) -> sqlite3.Connection:
    return sqlite3.connect(ws / ".judge" / "judge.db", isolation_level=None)


def first_scored(ws: Path) -> tuple[str, str, str]:
    with closing(db(ws)) as conn:
        run_id, case_id, text = conn.execute(
            "SELECT run_id, case_id, result_json FROM case_results WHERE status = 'scored' "
            "ORDER BY case_id LIMIT 1").fetchone()
    return str(run_id), str(case_id), str(text)


def one_digit_down(text: str, field: str) -> str:
    """``"field":63`` → ``"field":62``: the aimed flip of one character of a score."""
    key = f'"{field}":'
    at = text.index(key) + len(key)
    digit = text[at]
    assert digit.isdigit()
    return text[:at] + str((int(digit) + 9) % 10) + text[at + 1:]


def flip_result_json(ws: Path, field: str) -> tuple[str, str]:
    run_id, case_id, text = first_scored(ws)
    with closing(db(ws)) as conn:
        conn.execute("UPDATE case_results SET result_json = ? WHERE run_id = ? AND case_id = ?",
                     (one_digit_down(text, field), run_id, case_id))
    return run_id, case_id


def flip_column(ws: Path, sql: str) -> tuple[str, str]:
    run_id, case_id, _ = first_scored(ws)
    with closing(db(ws)) as conn:
        conn.execute(sql, (run_id, case_id))
    return run_id, case_id


def flip_totals(ws: Path) -> tuple[str, None]:
    with closing(db(ws)) as conn:
        run_id, info = conn.execute("SELECT id, info_json FROM runs").fetchone()
        value = json.loads(info)
        value["totals"]["scored"] = int(value["totals"]["scored"]) - 1
        conn.execute("UPDATE runs SET info_json = ? WHERE id = ?",
                     (json.dumps(value, sort_keys=True, separators=(",", ":")), run_id))
    return str(run_id), None


FLIPS: dict[str, Any] = {
    "overallScore in the stored value": lambda ws: flip_result_json(ws, "overallScore"),
    "a category's finalScore": lambda ws: flip_result_json(ws, "finalScore"),
    "a category's aiScore": lambda ws: flip_result_json(ws, "aiScore"),
    "the overall_score column": lambda ws: flip_column(
        ws, "UPDATE case_results SET overall_score = overall_score - 1 "
            "WHERE run_id = ? AND case_id = ?"),
    "the passed column": lambda ws: flip_column(
        ws, "UPDATE case_results SET passed = 1 - passed WHERE run_id = ? AND case_id = ?"),
    "a result moved to another case id": lambda ws: flip_column(
        ws, "UPDATE case_results SET case_id = case_id || 'x' WHERE run_id = ? AND case_id = ?"),
    "the run's totals": flip_totals,
}


def assert_damage(proc: Any, run_id: str, case_id: str | None) -> None:
    assert proc.returncode == 2, (proc.returncode, proc.stdout[-500:], proc.stderr)
    assert "internal error" not in proc.stderr
    assert run_id in proc.stderr and "fix:" in proc.stderr, proc.stderr
    if case_id is not None:
        assert case_id in proc.stderr, proc.stderr


@pytest.mark.parametrize("flip", sorted(FLIPS))
def test_an_aimed_flip_is_reported_by_every_door_never_shown(
        recorded: Path, tmp_path: Path, flip: str) -> None:
    ws = copy_of(recorded, tmp_path)
    run_id, case_id = FLIPS[flip](ws)
    shown = case_id + "x" if flip.startswith("a result moved") and case_id else case_id
    for args in (["runs", "show", run_id, "--json"], ["runs", "export", run_id], ["check", run_id]):
        assert_damage(run_judge(args, ws), run_id, shown)
    verify = run_judge(["runs", "verify", "--json"], ws)
    assert verify.returncode == 2, verify.stderr
    report = json.loads(verify.stdout)
    assert [(d["run"], d["case"]) for d in report["damaged"]] == [(run_id, shown)]


def test_a_value_that_no_longer_parses_is_exit_2_not_70(recorded: Path, tmp_path: Path) -> None:
    ws = copy_of(recorded, tmp_path)
    run_id, case_id, text = first_scored(ws)
    with closing(db(ws)) as conn:
        conn.execute("UPDATE case_results SET result_json = ? WHERE case_id = ?",
                     (text.replace("{", "[", 1), case_id))
    for args in (["runs", "show", run_id, "--json"], ["runs", "export", run_id], ["check", run_id]):
        assert_damage(run_judge(args, ws), run_id, case_id)


def test_an_intact_store_verifies(recorded: Path, tmp_path: Path) -> None:
    ws = copy_of(recorded, tmp_path)
    proc = run_judge(["runs", "verify", "--json"], ws)
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    assert report["damaged"] == [] and report["unsealed"] == 0 and report["checked"] > 1
    assert run_judge(["check"], ws).returncode == 0


def test_seals_keyed_with_the_secret_refuse_a_recomputed_plain_digest(
        recorded: Path, tmp_path: Path) -> None:
    """With JUDGE_CACHE_SECRET, an edit whose plain sha256 was recomputed does not verify."""
    ws, env = keyed_copy(recorded, tmp_path)
    assert run_judge(["runs", "verify"], ws, env=env).returncode == 0
    # Read without the secret: reported, not trusted.
    plain = run_judge(["runs", "verify", "--json"], ws)
    assert plain.returncode == 2 and "JUDGE_CACHE_SECRET" in plain.stdout


def test_a_hand_edited_baseline_says_so_and_can_be_resealed(
        recorded: Path, tmp_path: Path) -> None:
    ws = copy_of(recorded, tmp_path)
    path = ws / "baselines" / "example-tasks.json"
    if not path.exists():
        (path,) = (ws / "baselines").glob("*.json")
    data = json.loads(path.read_text(encoding="utf-8"))
    assert data["digest"].startswith("sha256:")
    path.write_text(path.read_text(encoding="utf-8").replace(
        f'"threshold": {data["threshold"]}', '"threshold": 0.5'), encoding="utf-8")
    proc = run_judge(["check"], ws)
    assert proc.returncode == 2, proc.stderr
    assert "edited by hand" in proc.stderr and "judge baseline seal" in proc.stderr
    sealed = run_judge(["baseline", "seal", path.stem], ws)
    assert sealed.returncode == 0, sealed.stderr
    assert json.loads(path.read_text(encoding="utf-8"))["threshold"] == 0.5
    assert run_judge(["check"], ws).returncode == 0


def test_a_deleted_row_is_refused_by_the_gate_and_verify(recorded: Path, tmp_path: Path) -> None:
    """It was exit 0 from `judge check`, the case merely noted missing."""
    ws = copy_of(recorded, tmp_path)
    run_id, case_id, _ = first_scored(ws)
    with closing(db(ws)) as conn:
        conn.execute("DELETE FROM case_results WHERE run_id = ? AND case_id = ?",
                     (run_id, case_id))
    check = run_judge(["check", run_id, "--json"], ws)
    assert_damage(check, run_id, None)
    assert "missing from the store" in check.stderr and "deleted" in check.stderr
    verify = run_judge(["runs", "verify", "--json"], ws)
    assert verify.returncode == 2, verify.stderr
    (damage,) = json.loads(verify.stdout)["damaged"]
    assert damage["run"] == run_id and "missing" in damage["reason"]


def test_a_store_sealed_with_the_secret_takes_no_unsealed_row(
        recorded: Path, tmp_path: Path) -> None:
    """A row edited and its seal set to NULL was shown, exported and gated; verify said 0."""
    ws, env = keyed_copy(recorded, tmp_path)
    run_id, case_id, text = first_scored(ws)
    edited = one_digit_down(text, "overallScore")  # and its query copy: only the seal tells
    with closing(db(ws)) as conn:
        conn.execute("UPDATE case_results SET result_json = ?, overall_score = ?, seal = NULL "
                     "WHERE run_id = ? AND case_id = ?",
                     (edited, json.loads(edited)["overallScore"], run_id, case_id))
    for args in (["runs", "show", run_id, "--json"], ["runs", "export", run_id], ["check", run_id]):
        proc = run_judge(args, ws, env=env)
        assert_damage(proc, run_id, case_id)
        assert "carries no seal" in proc.stderr
    verify = run_judge(["runs", "verify", "--json"], ws, env=env)
    assert verify.returncode == 2, verify.stderr
    report = json.loads(verify.stdout)
    assert report["unsealed"] == 1 and [d["case"] for d in report["damaged"]] == [case_id]
