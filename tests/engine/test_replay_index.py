"""The replay index: the same results as the plain path, and never an answer it cannot vouch for.

Runs go through the CLI against the loopback fake judge: two judges x two samples, so the
index also feeds per-judge sample aggregates and the panel.
"""

from __future__ import annotations

import json
import shutil
import sqlite3
from collections.abc import Iterator
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest
import yaml
from conftest import EXAMPLE_SUITE, load_fake_server, run_judge

MODELS = ("hosted_vllm/fake-judge", "hosted_vllm/fake-judge+3")


def _run(workspace: Path, *extra: str, base_url: str | None = None,
         suite: str = "suite.yaml") -> tuple[int, dict[str, Any]]:
    args = ["run", suite, "--json", "--no-check", "--samples", "2", "--seed", "42"]
    for model in MODELS:
        args += ["--model", model]
    args += ["--api-base", f"{base_url}/v1"] if base_url else ["--offline"]
    proc = run_judge([*args, *extra], workspace)
    assert proc.returncode in (0, 3), proc.stderr
    return proc.returncode, json.loads(proc.stdout)


def _comparable(payload: dict[str, Any]) -> str:
    """Everything a replay prints, less what differs between any two runs (id, time)."""
    return json.dumps({"cases": payload["cases"], "summary": payload["summary"],
                       "summaries": payload["summaries"]}, sort_keys=True)


def _index(workspace: Path) -> Path:
    return workspace / "cache" / "replay-index.sqlite"


def _records(workspace: Path) -> dict[bytes, bytes]:
    with closing(sqlite3.connect(_index(workspace))) as db:
        return dict(db.execute("SELECT fingerprint, record FROM records"))


@pytest.fixture(scope="module", name="recorded")
def recorded_workspace(
        tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, dict[str, Any]]]:
    """A workspace after one cold run against the fake judge, and that run's output.

    Judged once for the module (56 calls); each test replays in a copy of it.
    """
    server = load_fake_server().start_in_thread(latency_ms=0, seed=7)
    ws = tmp_path_factory.mktemp("recorded") / "ws"
    ws.mkdir()
    shutil.copy(EXAMPLE_SUITE, ws / "suite.yaml")
    try:
        code, cold = _run(ws, base_url=server.base_url)
        assert code == 0
    finally:
        server.stop()
    yield ws, cold


def _cold(workspace: Path, recorded: tuple[Path, dict[str, Any]]) -> dict[str, Any]:
    """The recorded workspace copied into ``workspace``; the cold run's output."""
    shutil.copytree(recorded[0], workspace, dirs_exist_ok=True)
    return recorded[1]


def test_index_replay_equals_the_plain_replay(recorded: tuple[Path, dict[str, Any]],
                                              workspace: Path) -> None:
    cold = _cold(workspace, recorded)
    judgments = cold["run"]["totals"]["judgments"]
    assert judgments == 4 * sum(c["judgedBy"] == "llm" and c["judge"]["sample"] == 0
                                and c["judge"]["model"] == MODELS[0] for c in cold["cases"])
    assert len(_records(workspace)) == judgments  # every cached verdict recorded when cached

    code, indexed = _run(workspace)
    assert code == 0
    assert indexed["run"]["totals"]["indexHits"] == judgments
    assert indexed["run"]["totals"]["cacheHits"] == judgments

    _index(workspace).unlink()
    code, plain = _run(workspace)
    assert code == 0
    assert plain["run"]["totals"]["indexHits"] == 0  # rendered every prompt, and re-indexed
    assert plain["run"]["totals"]["cacheHits"] == judgments
    assert _comparable(indexed) == _comparable(plain)

    code, again = _run(workspace)
    assert again["run"]["totals"]["indexHits"] == judgments
    assert _comparable(again) == _comparable(plain)


def test_broken_records_fall_back_to_the_plain_path(recorded: tuple[Path, dict[str, Any]],
                                                    workspace: Path) -> None:
    _cold(workspace, recorded)
    code, before = _run(workspace)
    keys = list(_records(workspace))
    broken = [b"not json", b'{"format": 2, "key": 1}', b'{"format":2,"key":"0","ids":[],'
              b'"dropped":{},"cited":{},"case":{}}', "text, not bytes"]
    with closing(sqlite3.connect(_index(workspace))) as db, db:
        db.executemany("UPDATE records SET record = ? WHERE fingerprint = ?",
                       [(broken[n % len(broken)], key) for n, key in enumerate(keys)])
    code, after = _run(workspace)
    assert code == 0
    assert after["run"]["totals"]["indexHits"] == 0
    assert _comparable(after) == _comparable(before)
    code, healed = _run(workspace)  # the plain path wrote sound records again
    assert healed["run"]["totals"]["indexHits"] == len(keys)


def test_index_never_answers_for_a_pruned_entry(recorded: tuple[Path, dict[str, Any]],
                                                workspace: Path) -> None:
    _cold(workspace, recorded)
    proc = run_judge(["cache", "prune", "--model", MODELS[1], "--yes"], workspace)
    assert proc.returncode == 0, proc.stderr
    assert _records(workspace) == {}  # pruning lets every record go; later runs record again
    code, replay = _run(workspace)
    assert code == 3  # offline misses: the judgments of the pruned judge are gone
    single = [c for c in replay["cases"] if c["judge"] and c["judge"]["aggregate"] is None]
    assert {c["judge"]["model"] for c in single if c["status"] == "cache_miss"} == {MODELS[1]}
    assert all(c["status"] == "scored" for c in single if c["judge"]["model"] == MODELS[0])
    assert replay["run"]["totals"]["indexHits"] == 0
    code, again = _run(workspace)
    assert again["run"]["totals"]["indexHits"] == again["run"]["totals"]["judgments"] // 2
    stats = json.loads(run_judge(["cache", "stats", "--json"], workspace).stdout)
    assert stats["indexRecords"] == again["run"]["totals"]["judgments"] // 2


def test_changed_template_is_never_replayed_from_the_index(
        recorded: tuple[Path, dict[str, Any]], workspace: Path) -> None:
    _cold(workspace, recorded)
    prompts = workspace / "prompts"
    prompts.mkdir()
    shipped = Path(__file__).resolve().parents[2] / "prompts"
    for path in shipped.glob("*.j2"):
        shutil.copy(path, prompts / path.name)
    judge = prompts / "judge.md.j2"
    text = judge.read_text(encoding="utf-8")
    # A template edit that leaves every prompt the same: a new fingerprint, the same keys.
    judge.write_text(text + "{# a comment #}\n", encoding="utf-8")
    code, same = _run(workspace)
    assert code == 0
    assert same["run"]["totals"]["indexHits"] == 0
    assert same["run"]["totals"]["cacheHits"] == same["run"]["totals"]["judgments"]
    # An edit that changes the prompt: a new request, so nothing of it is cached.
    assert "Return the JSON verdict now" in text
    judge.write_text(text.replace("Return the JSON verdict now", "Return the verdict now"),
                     encoding="utf-8")
    code, replay = _run(workspace)
    assert code == 3
    assert replay["run"]["totals"]["indexHits"] == 0
    assert all(c["status"] == "cache_miss" for c in replay["cases"] if c["judgedBy"] == "llm")


def test_jsonl_lines_replay_unparsed_and_the_same(fake_server: Any, workspace: Path) -> None:
    # A JSONL suite replays from its lines: the index answers before a line is parsed.
    doc = yaml.safe_load(EXAMPLE_SUITE.read_text(encoding="utf-8"))
    lines = [json.dumps(case, default=str) for case in doc["cases"]]
    lines.insert(3, "")  # a blank line holds no case, in either pass
    (workspace / "suite.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    code, cold = _run(workspace, base_url=fake_server.base_url, suite="suite.jsonl")
    assert code == 0
    judgments = cold["run"]["totals"]["judgments"]
    code, indexed = _run(workspace, suite="suite.jsonl")
    assert code == 0 and indexed["run"]["totals"]["indexHits"] == judgments
    _index(workspace).unlink()
    code, plain = _run(workspace, suite="suite.jsonl")
    assert code == 0 and plain["run"]["totals"]["indexHits"] == 0
    assert _comparable(indexed) == _comparable(plain)
    # Filters pick the same cases whether the index answers or not.
    tag = next(t for c in doc["cases"] for t in c.get("tags", []))
    code, some = _run(workspace, "--tag", tag, suite="suite.jsonl")
    assert code == 0 and 0 < some["summary"]["cases"] < plain["summary"]["cases"]
    assert some["run"]["totals"]["indexHits"] == some["run"]["totals"]["judgments"]
    picked = {c["id"] for c in some["cases"]}
    assert [c for c in plain["cases"] if c["id"] in picked] == some["cases"]


def test_fingerprints_cover_the_code_and_what_renders(monkeypatch: Any) -> None:
    # An upgrade of the package, of Jinja or of pydantic may change a request's bytes: a
    # record made before it must not be found after it.
    import pydantic

    from judge.engine import replay
    from judge.render import prompts

    digest = replay.code_digest.__wrapped__
    base = digest()
    assert base is not None and base == replay.code_digest()
    monkeypatch.setattr(pydantic, "VERSION", "0.0.0")
    assert digest() != base
    monkeypatch.undo()
    monkeypatch.setattr(prompts, "RENDERER_VERSION", "jinja2 0.0")
    assert digest() != base
