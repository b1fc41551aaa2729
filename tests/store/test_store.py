"""The run store against a real SQLite file, and the commands that read it."""

from __future__ import annotations

import csv
import io
import json
import random
import sqlite3
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import judge_env, run_judge

from judge.app.runs.exporting import ExportFormat
from judge.app.runs.stored import export_run, is_failure, run_history, show_run
from judge.app.workspace.workspace import Workspace
from judge.core.formats.models import (
    CaseResult,
    CategoryScore,
    CheckResult,
    CitedEvidence,
    JudgeMeta,
    RunInfo,
    RunTotals,
)
from judge.core.text.canonical import canonical_json
from judge.core.text.errors import StoreError, UsageError
from judge.store.runs import DEFAULT_STORE_URL, RunStore

CATEGORIES = (("agentPerformance", 0.30), ("taskOutcomeQuality", 0.45),
              ("processCompliance", 0.25))
MODEL = "openai/gpt-4o-mini"
RUBRIC_HASH = "5f1c2e9a0b7d4c3e8a6f1b2d9c0e7a4b3f5d1c8e2a9b6f0d4c7e1a3b5f9d2c6e"
TEMPLATE_HASH = "a3d9e1f07c4b2a6e9d8c1b0f5e3a7d2c4b6e8f0a1c3d5e7f9b2a4c6e8d0f1a3b"


def canonical(value: RunInfo | CaseResult) -> str:
    return canonical_json(value.model_dump(mode="json"))


def band(score: int) -> str:
    for low, name in ((90, "excellent"), (75, "strong"), (60, "acceptable"), (40, "weak")):
        if score >= low:
            return name
    return "failing"


def make_run(run_id: str = "r20250301-7f3a9c2e1b", *, suite: str = "task-eval",
             created: str = "2025-03-01T10:15:00Z",
             models: tuple[str, ...] = (MODEL,)) -> RunInfo:
    return RunInfo(
        id=run_id, suite=suite, suite_path=f"examples/{suite}.yaml", rubric="task-evaluation",
        rubric_hash=RUBRIC_HASH, models=models, seed=42, temperature=0.0, samples=1,
        template_id="task-judge.md.j2", template_hash=TEMPLATE_HASH, created_at=created,
        # "tags" and "perModel": names RunSettings does not declare, kept as they are.
        settings={"cacheMode": "read-write", "concurrency": 8, "tags": ["backend", "ci"],
                  "outputMode": "json_schema",
                  "perModel": {"openai/gpt-4o-mini": {"outputMode": "json_schema"}}},
    )


def make_result(i: int, *, model: str = MODEL, sample: int = 0, status: str = "scored",
                shift: int = 0) -> CaseResult:
    """A realistic case result; ``status="unscored"`` gives one with no category scores."""
    meta = JudgeMeta(
        model=model, output_mode="json_schema", temperature=0.0, seed=42, sample=sample,
        template_id="task-judge.md.j2", template_hash=TEMPLATE_HASH, rubric_hash=RUBRIC_HASH,
        cache_key=f"{i:08x}" * 8, cached=i % 3 == 0, repair_turns=i % 2,
        prompt_tokens=1800 + i, completion_tokens=240 + i % 50, cost_usd=0.000153 * (1 + i % 4),
        latency_ms=1234.5 + i, finish_reason="stop", model_reported="gpt-4o-mini-2024-07-18",
    )
    if status != "scored":
        return CaseResult(
            id=f"case-{i:05d}", status="unscored", judge=meta, tags=("backend",),
            reason="invalid verdict after 1 repair turn: taskOutcomeQuality.score: "
                   "Input should be less than or equal to 100",
        )
    cats = []
    weighted = 0
    for n, (name, weight) in enumerate(CATEGORIES):
        det = (37 + 13 * i + 7 * n + shift) % 101
        ai = (55 + 11 * i + 3 * n) % 101
        final = (det * 7 + ai * 3 + 5) // 10  # half up, exact
        weighted += final * round(weight * 100)
        cats.append(CategoryScore(
            category=name, deterministic_score=det, ai_score=ai, final_score=final,
            weight=weight, band=band(final),
            rationale=f"Шаги выполнены; commit a1b2c3d touched {n + 1} files — ok ✓",
            evidence=(f"commits:{n}", "workflow:build"),
        ))
    overall = (weighted + 50) // 100
    return CaseResult(
        id=f"case-{i:05d}", status="scored", overall_score=overall, band=band(overall),
        passed=overall >= 70, category_scores=tuple(cats), judge=meta,
        checks=(CheckResult(type="contains", value="PASS", category="taskOutcomeQuality",
                            passed=True, detail="found 'PASS' in output"),
                CheckResult(type="min_confidence", value=0.8, category=None, passed=i % 2 == 0,
                            detail="confidence 0.75 < 0.8")),
        evidence=(CitedEvidence(id="commits:0", group="commits", title="fix: retry on 429",
                                excerpt="Honour Retry-After… [truncated]",
                                refs={"sha": "a1b2c3d4e5", "pr": 118, "merged": True}),),
        evidence_dropped={"commits": 12, "agentLogs": 3}, tags=("backend", "retry"),
        complexity="medium",
    )


@pytest.fixture
def url(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path}/j.db"


@pytest.fixture
def store(url: str) -> Iterator[RunStore]:
    with RunStore(url) as st:
        yield st


def test_roundtrip_preserves_every_field(store: RunStore) -> None:
    run = make_run()
    results = [make_result(i) for i in range(6)] + [make_result(6, status="unscored")]
    store.create_run(run)
    store.add_results(run.id, results)
    totals = RunTotals(cases=7, scored=6, unscored=1, cache_hits=3, calls=5, prompt_tokens=12_621,
                       completion_tokens=1_701, cost_usd=0.001377, wall_seconds=12.75)
    finished = store.finish_run(run.id, totals=totals, status="complete")

    assert finished.totals == totals and finished.status == "complete"
    got = store.get_run(run.id)
    assert canonical(got) == canonical(finished)
    assert canonical(got) == canonical(run.model_copy(update={"totals": totals,
                                                              "status": "complete"}))
    assert [canonical(r) for r in store.iter_results(run.id)] == [canonical(r) for r in results]
    assert store.count_results(run.id) == {"scored": 6, "unscored": 1, "cache_miss": 0}


def test_query_columns_mirror_the_json(store: RunStore, tmp_path: Path) -> None:
    run = make_run()
    store.create_run(run)
    store.add_results(run.id, [make_result(1), make_result(2, status="unscored")])
    store.finish_run(run.id, totals=RunTotals(cases=2), status="complete")
    with sqlite3.connect(tmp_path / "j.db") as db:
        row = db.execute("SELECT suite, rubric_hash, models, seed, status, format_version "
                         "FROM runs").fetchone()
        cases = db.execute("SELECT case_id, model, sample, status, overall_score, band, passed "
                           "FROM case_results ORDER BY case_id").fetchall()
        mode = db.execute("PRAGMA journal_mode").fetchone()[0]
    assert row == ("task-eval", RUBRIC_HASH, f'["{MODEL}"]', 42, "complete", 1)
    first = make_result(1)
    assert cases == [("case-00001", MODEL, 0, "scored", first.overall_score, first.band,
                      int(bool(first.passed))),
                     ("case-00002", MODEL, 0, "unscored", None, None, None)]
    assert mode == "wal"


def test_rejudged_case_replaces_its_row(store: RunStore) -> None:
    run = make_run()
    store.create_run(run)
    store.add_results(run.id, [make_result(1), make_result(2)])
    again = make_result(1, shift=40)
    assert again != make_result(1)
    store.add_results(run.id, [again, make_result(1, sample=1)])
    # Within one batch the later result for a key wins.
    store.add_results(run.id, [make_result(2, shift=5), make_result(2, shift=9)])

    got = list(store.iter_results(run.id))
    assert [canonical(r) for r in got] == [
        canonical(again), canonical(make_result(1, sample=1)), canonical(make_result(2, shift=9))]


def test_unknown_run_is_a_store_error(store: RunStore) -> None:
    with pytest.raises(StoreError, match=r"no run 'nope'.*judge runs list"):
        store.get_run("nope")
    for call in (lambda: store.iter_results("nope"), lambda: store.count_results("nope"),
                 lambda: store.add_results("nope", [make_result(1)]),
                 lambda: store.finish_run("nope", totals=RunTotals(), status="complete"),
                 lambda: store.delete_run("nope")):
        with pytest.raises(StoreError, match="no run 'nope'"):
            call()


def test_duplicate_run_id_is_refused(store: RunStore) -> None:
    store.create_run(make_run("r1"))
    with pytest.raises(StoreError, match="already exists"):
        store.create_run(make_run("r1", suite="other"))
    assert store.get_run("r1").suite == "task-eval"


def test_prefix_lookup(store: RunStore) -> None:
    for run_id in ("r20250301-aa11", "r20250301-aa22", "r20250302-bb33", "r2025"):
        store.create_run(make_run(run_id))
    assert store.get_run("r20250302").id == "r20250302-bb33"
    assert store.get_run("r20250301-aa2").id == "r20250301-aa22"
    assert store.get_run("r2025").id == "r2025"  # an exact id wins over being a prefix
    with pytest.raises(StoreError, match=r"ambiguous.*r20250301-aa11, r20250301-aa22"):
        store.get_run("r20250301-aa")
    with pytest.raises(StoreError, match="no run"):
        store.get_run("r2025%")  # LIKE wildcards are escaped
    with pytest.raises(StoreError, match="no run"):
        store.get_run("")


def test_last_and_last_tilde_n_name_the_newest_runs(store: RunStore) -> None:
    """``last`` is the newest stored run of any suite, ``last~N`` N runs before it."""
    specs = [("r1", "s1", "2025-03-01T10:00:00Z"), ("r3", "s2", "2025-03-03T09:00:00Z"),
             ("r2", "s1", "2025-03-02T08:00:00Z")]
    for run_id, suite, created in specs:
        store.create_run(make_run(run_id, suite=suite, created=created))
    assert [store.get_run(ref).id for ref in ("last", "last~0", "last~1", "last~2")] == [
        "r3", "r3", "r2", "r1"]
    with pytest.raises(StoreError, match=r"no run 'last~3'.*holds 3 run"):
        store.get_run("last~3")
    for bad in ("last~", "last~-1", "lastx", "last~1~1"):
        with pytest.raises(StoreError, match="no run"):
            store.get_run(bad)


def test_list_runs_newest_first_and_by_suite(store: RunStore) -> None:
    specs = [("a", "s1", "2025-03-01T10:00:00Z"), ("b", "s2", "2025-03-03T09:00:00Z"),
             ("c", "s1", "2025-03-02T08:00:00Z"), ("d", "s1", "2025-03-02T08:00:00Z")]
    for run_id, suite, created in specs:
        store.create_run(make_run(run_id, suite=suite, created=created))
    store.finish_run("a", totals=RunTotals(), status="complete")
    store.finish_run("c", totals=RunTotals(), status="interrupted")

    assert [r.id for r in store.list_runs()] == ["b", "d", "c", "a"]
    assert [r.id for r in store.list_runs("s1")] == ["d", "c", "a"]
    assert [r.id for r in store.list_runs(limit=2)] == ["b", "d"]
    assert store.list_runs("missing") == []
    latest = store.latest_run("s1")
    assert latest is not None and latest.id == "a"
    any_status = store.latest_run("s1", status=None)
    assert any_status is not None and any_status.id == "d"
    assert store.latest_run("s2") is None


def test_delete_run_removes_its_results(store: RunStore) -> None:
    store.create_run(make_run("keep"))
    store.create_run(make_run("drop"))
    store.add_results("keep", [make_result(1)])
    store.add_results("drop", [make_result(1), make_result(2)])
    store.delete_run("drop")
    assert [r.id for r in store.list_runs()] == ["keep"]
    assert len(list(store.iter_results("keep"))) == 1
    with pytest.raises(StoreError):
        store.get_run("drop")


def test_iter_results_streams_in_order(store: RunStore) -> None:
    run = make_run(models=(MODEL, "anthropic/claude-3-5-haiku"))
    store.create_run(run)
    results = [make_result(i, model=m, status="unscored" if i % 17 == 0 else "scored")
               for i in range(600) for m in run.models]
    random.Random(7).shuffle(results)
    store.add_results(run.id, results)

    stream = store.iter_results(run.id, batch=400)  # three batches, shuffled in
    first = next(stream)
    assert first.id == "case-00000" and first.judge is not None
    assert first.judge.model == "anthropic/claude-3-5-haiku"
    rest = list(stream)
    keys = [(r.id, r.judge.model if r.judge else "", r.judge.sample if r.judge else 0)
            for r in [first, *rest]]
    assert len(keys) == 1_200
    assert keys == sorted(keys)
    counts = store.count_results(run.id)
    assert counts == {"scored": 1_128, "unscored": 72, "cache_miss": 0}


def test_relative_url_resolves_against_workspace(tmp_path: Path) -> None:
    with RunStore(workspace=tmp_path) as st:
        st.create_run(make_run())
        assert st.url == f"sqlite:///{tmp_path}/.judge/judge.db"
    assert DEFAULT_STORE_URL == "sqlite:///.judge/judge.db"
    assert (tmp_path / ".judge" / "judge.db").is_file()
    with RunStore(workspace=tmp_path) as again:
        assert again.get_run(make_run().id) == make_run()


# -- concurrency ---------------------------------------------------------------------------

WRITER = textwrap.dedent("""
    import sys, time
    from pathlib import Path
    from judge.core.formats.models import CaseResult, RunInfo, RunTotals
    from judge.store.runs import RunStore

    url, folder, name, other = sys.argv[1:5]
    folder = Path(folder)
    run = RunInfo.model_validate_json((folder / f"{name}.run.json").read_text())
    lines = (folder / f"{name}.jsonl").read_text(encoding="utf-8").splitlines()
    with RunStore(url) as st:
        st.create_run(run)
        (folder / f"{name}.ready").touch()
        deadline = time.monotonic() + 10
        while not (folder / f"{other}.ready").exists():
            if time.monotonic() > deadline:
                sys.exit("the other writer never started")
            time.sleep(0.005)
        for i in range(0, len(lines), 8):
            st.add_results(run.id, [CaseResult.model_validate_json(x) for x in lines[i:i + 8]])
        st.finish_run(run.id, totals=RunTotals(cases=len(lines)), status="complete")
""")


def test_two_processes_write_one_file(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path}/shared.db"  # created by the writers themselves
    expected: dict[str, list[str]] = {}
    for shift, name in enumerate(("w1", "w2")):
        run = make_run(f"run-{name}", suite=name)
        results = [make_result(i, shift=shift) for i in range(400)]
        (tmp_path / f"{name}.run.json").write_text(canonical(run))
        (tmp_path / f"{name}.jsonl").write_text(
            "".join(canonical(r) + "\n" for r in results), encoding="utf-8")
        expected[run.id] = [canonical(r) for r in results]
    procs = [subprocess.Popen([sys.executable, "-c", WRITER, url, str(tmp_path), a, b],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for a, b in (("w1", "w2"), ("w2", "w1"))]
    for proc in procs:
        _, err = proc.communicate(timeout=60)
        assert proc.returncode == 0, err

    with RunStore(url) as st:
        for run_id, lines in expected.items():
            assert st.get_run(run_id).status == "complete"
            assert [canonical(r) for r in st.iter_results(run_id)] == lines


# -- operations and commands ----------------------------------------------------------------


def judge(*args: str, env: dict[str, str] | None = None,
          cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    """``judge ARGS`` in this process (the door is the same code as in a subprocess)."""
    return run_judge(list(args), cwd or Path.cwd(), env=judge_env(**(env or {})))


@pytest.fixture
def stored(url: str) -> tuple[RunInfo, list[CaseResult]]:
    """A finished run whose first case (in id order) is unscored and one that fails."""
    run = make_run()
    results = [make_result(0, status="unscored"), *(make_result(i) for i in range(1, 6))]
    totals = RunTotals(cases=6, scored=5, unscored=1, calls=6, cost_usd=None, wall_seconds=3.5)
    with RunStore(url) as st:
        st.create_run(run)
        st.add_results(run.id, results)
        finished = st.finish_run(run.id, totals=totals, status="complete")
    assert any(r.passed is False for r in results)
    return finished, results


@pytest.fixture
def ws(url: str, tmp_path: Path) -> Workspace:
    return Workspace.open(tmp_path, {"store_url": url}, env={})


def test_export_jsonl(ws: Workspace, url: str, stored: tuple[RunInfo, list[CaseResult]]) -> None:
    run, results = stored
    sink = io.StringIO()
    done = export_run(ws, run.id[:8], ExportFormat.jsonl, sink)
    assert (done.run, done.count, done.path) == (run, len(results), None)
    assert sink.getvalue() == "".join(canonical(r) + "\n" for r in results)
    proc = judge("runs", "export", run.id[:8], "--store", url)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == sink.getvalue()


def test_export_csv(ws: Workspace, url: str, stored: tuple[RunInfo, list[CaseResult]],
                    tmp_path: Path) -> None:
    run, results = stored
    out = tmp_path / "cases.csv"
    done = export_run(ws, run.id, ExportFormat.csv, out)
    assert (done.count, done.path) == (len(results), out)
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []
    rows = list(csv.DictReader(io.StringIO(out.read_text(encoding="utf-8"))))
    header = list(rows[0])
    assert header[:9] == ["run_id", "case_id", "model", "sample", "status", "overallScore",
                          "band", "passed", "reason"]
    assert header[9:13] == ["agentPerformance.deterministic", "agentPerformance.ai",
                            "agentPerformance.final", "agentPerformance.band"]
    assert len(header) == 9 + 4 * len(CATEGORIES)
    assert [r["case_id"] for r in rows] == [r.id for r in results]
    unscored, scored = rows[0], rows[1]
    assert unscored["status"] == "unscored" and unscored["overallScore"] == ""
    assert unscored["reason"].startswith("invalid verdict")
    assert unscored["taskOutcomeQuality.final"] == ""
    want = results[1]
    cat = want.category_scores[1]
    assert (scored["run_id"], scored["model"], scored["sample"]) == (run.id, MODEL, "0")
    assert scored["overallScore"] == str(want.overall_score)
    assert scored["passed"] == ("true" if want.passed else "false")
    assert scored["taskOutcomeQuality.deterministic"] == str(cat.deterministic_score)
    assert scored["taskOutcomeQuality.ai"] == str(cat.ai_score)
    assert scored["taskOutcomeQuality.final"] == str(cat.final_score)
    assert scored["taskOutcomeQuality.band"] == cat.band
    # The door writes the same file, and prints nothing.
    again = tmp_path / "again.csv"
    proc = judge("runs", "export", run.id, "--format", "csv", "--output", str(again), "--store",
                 url)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "" and again.read_text() == out.read_text()


def test_export_leaves_no_file_for_an_unknown_run_or_a_missing_folder(
        ws: Workspace, stored: tuple[RunInfo, list[CaseResult]], tmp_path: Path) -> None:
    run, _ = stored
    out = tmp_path / "x.jsonl"
    with pytest.raises(StoreError):
        export_run(ws, "nope", ExportFormat.jsonl, out)
    assert not out.exists()
    with pytest.raises(UsageError) as info:
        export_run(ws, run.id, ExportFormat.jsonl, tmp_path / "no-such" / "x.jsonl")
    assert "no-such" in str(info.value)


def test_history_and_show(ws: Workspace, url: str,
                          stored: tuple[RunInfo, list[CaseResult]]) -> None:
    run, results = stored
    history = run_history(ws)
    assert history.runs == (run,) and history.store_url == url
    assert run_history(ws, "another-suite").runs == ()
    view = show_run(ws, run.id[:10])
    assert view.run == run and list(view.cases) == results
    failing = show_run(ws, run.id, failures_only=True)
    assert [c.id for c in failing.cases] == [
        r.id for r in results if r.status != "scored" or r.passed is False]
    assert all(is_failure(c) for c in failing.cases)


def test_history_and_show_json(url: str, stored: tuple[RunInfo, list[CaseResult]]) -> None:
    run, results = stored
    history = judge("runs", "list", "--json", env={"JUDGE_STORE_URL": url})  # the setting's env
    assert history.returncode == 0, history.stderr
    assert [RunInfo.model_validate(r) for r in json.loads(history.stdout)] == [run]

    show = judge("runs", "show", run.id, "--json", "--failures", "--store", url)
    assert show.returncode == 0, show.stderr
    body = json.loads(show.stdout)
    assert RunInfo.model_validate(body["run"]) == run
    assert [CaseResult.model_validate(c) for c in body["cases"]] == [
        r for r in results if r.status != "scored" or r.passed is False]


def test_history_and_show_for_people(url: str,
                                     stored: tuple[RunInfo, list[CaseResult]]) -> None:
    run, _ = stored
    history = judge("runs", "list", "--store", url, env={"COLUMNS": "200"})
    assert history.returncode == 0, history.stderr
    assert run.id[:12] in history.stdout and "unknown" in history.stdout
    show = judge("runs", "show", run.id[:10], "--store", url, env={"COLUMNS": "250"})
    assert show.returncode == 0, show.stderr
    assert run.id in show.stdout and RUBRIC_HASH[:12] in show.stdout
    assert "case-00000" in show.stdout and "taskOutcomeQuality" in show.stdout
    empty = judge("runs", "list", "another-suite", "--store", url)
    assert empty.returncode == 0 and "no runs of suite 'another-suite'" in empty.stdout


def test_store_url_from_workspace_settings(url: str, stored: tuple[RunInfo, list[CaseResult]],
                                           tmp_path: Path) -> None:
    run, _ = stored
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "judge.toml").write_text(f'store_url = "{url}"\n', encoding="utf-8")
    proc = judge("runs", "list", "--json", cwd=workspace)
    assert proc.returncode == 0, proc.stderr
    assert [r["id"] for r in json.loads(proc.stdout)] == [run.id]


def test_unknown_run_exits_2(url: str, stored: tuple[RunInfo, list[CaseResult]]) -> None:
    proc = judge("runs", "show", "nope", "--json", "--store", url)
    assert proc.returncode == 2
    assert proc.stdout == ""
    assert "judge runs list" in proc.stderr


def test_help_does_not_import_sqlalchemy() -> None:
    code = ("import sys\nfrom judge.cli import main\ntry:\n    main(['--help'])\n"
            "except SystemExit:\n    pass\nprint('sqlalchemy' in sys.modules)")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip().endswith("False")


def test_alembic_runs_the_stores_env_and_importing_it_does_nothing() -> None:
    # judge.store.migrations upgrades through Alembic's public commands (upgrade, stamp),
    # which run the script directory's env.py on the connection put in the config.
    import importlib

    from alembic.config import Config
    from alembic.script import ScriptDirectory

    import judge.store.migrations as migrations

    env = importlib.import_module("judge.store.migrations.env")  # no Alembic context: no run
    config = Config()
    config.set_main_option("script_location", str(Path(migrations.__file__).parent))
    script = ScriptDirectory.from_config(config)
    assert Path(script.env_py_location) == Path(str(env.__file__))
    assert script.get_current_head() == migrations.HEAD
