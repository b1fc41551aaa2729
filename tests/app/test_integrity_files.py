"""Damaged files: a garbled cache.db, replay index or run store is a clear error (exit 2) naming
the file and the fix, never an internal error; `judge cache verify` names every bad entry and
index record, and `--repair` removes them."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
from collections.abc import Iterator
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest
from conftest import EXAMPLE_SUITE, load_fake_server, run_judge

MODEL = "hosted_vllm/fake-judge"


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, str]]:
    """A workspace after one run against the fake judge (copy it before changing it)."""
    server = load_fake_server().start_in_thread(latency_ms=0, seed=7)
    ws = tmp_path_factory.mktemp("recorded")
    shutil.copy(EXAMPLE_SUITE, ws / "suite.yaml")
    try:
        proc = run_judge(["run", "suite.yaml", "--model", MODEL, "--api-base",
                          f"{server.base_url}/v1", "--json"], ws)
        assert proc.returncode == 0, proc.stderr
        yield ws, server.base_url
    finally:
        server.stop()


def copy_of(recorded: tuple[Path, str], tmp_path: Path) -> Path:
    """A private copy of the recorded workspace."""
    target = tmp_path / "ws"
    shutil.copytree(recorded[0], target)
    return target


def garble(path: Path) -> int:
    """Overwrite the header of every page after the first: SQLite must call it malformed."""
    size = path.stat().st_size
    with path.open("r+b") as f:
        for offset in range(4096, size, 4096):
            f.seek(offset)
            f.write(b"\xff" * 16)
    return size // 4096 - 1


def offline(ws: Path, *extra: str) -> Any:
    return run_judge(["run", "suite.yaml", "--model", MODEL, "--offline", "--json", *extra], ws)


def _assert_names_file(proc: Any, name: str) -> None:
    assert proc.returncode == 2, (proc.returncode, proc.stderr)
    assert "internal error" not in proc.stderr
    assert name in proc.stderr and "damaged" in proc.stderr and "fix:" in proc.stderr, \
        proc.stderr


def test_garbled_cache_db_is_exit_2_from_verify_stats_export_and_run(
        recorded: tuple[Path, str], tmp_path: Path) -> None:
    ws = copy_of(recorded, tmp_path)
    assert garble(ws / "cache" / "cache.db") > 0
    for args in (["cache", "verify"], ["cache", "stats"], ["cache", "export", "out.jsonl"],
                 ["cache", "verify", "--repair"]):
        _assert_names_file(run_judge(args, ws), "cache.db")
    assert not (ws / "out.jsonl").exists() and not list(ws.glob(".out.jsonl.*"))
    _assert_names_file(offline(ws), "cache.db")
    online = run_judge(["run", "suite.yaml", "--model", MODEL, "--api-base",
                        f"{recorded[1]}/v1"], ws)
    _assert_names_file(online, "cache.db")
    # Found as the cache opens, before any run row: nothing is left "running".
    history = run_judge(["runs", "list", "--json"], ws)
    assert history.returncode == 0, history.stderr
    assert [r["status"] for r in json.loads(history.stdout)] == ["complete"]


def test_garbled_replay_index_is_named_and_repaired_and_never_stops_a_run(
        recorded: tuple[Path, str], tmp_path: Path) -> None:
    ws = copy_of(recorded, tmp_path)
    before = offline(ws)
    assert before.returncode == 0, before.stderr
    index = ws / "cache" / "replay-index.sqlite"
    assert garble(index) > 0
    for args in (["cache", "verify"], ["cache", "stats"]):
        _assert_names_file(run_judge(args, ws), "replay-index.sqlite")
    after = offline(ws)  # derived data: the run goes without it, at plain-path speed
    assert after.returncode == 0, after.stderr
    assert json.loads(after.stdout)["cases"] == json.loads(before.stdout)["cases"]
    repaired = run_judge(["cache", "verify", "--repair", "--json"], ws)
    assert repaired.returncode == 0, repaired.stderr
    assert json.loads(repaired.stdout)["index_damaged"]
    assert not index.exists()
    assert run_judge(["cache", "verify"], ws).returncode == 0


def test_garbled_run_store_is_exit_2_naming_it(recorded: tuple[Path, str],
                                               tmp_path: Path) -> None:
    ws = copy_of(recorded, tmp_path)
    assert garble(ws / ".judge" / "judge.db") > 0
    _assert_names_file(run_judge(["runs", "list"], ws), "judge.db")
    _assert_names_file(offline(ws), "judge.db")


def _records(index: Path) -> list[tuple[bytes, bytes]]:
    with closing(sqlite3.connect(index)) as db:
        return list(db.execute("SELECT fingerprint, record FROM records ORDER BY fingerprint"))


def test_verify_names_bad_entries_and_records_and_repair_removes_them(
        recorded: tuple[Path, str], tmp_path: Path) -> None:
    ws = copy_of(recorded, tmp_path)
    index = ws / "cache" / "replay-index.sqlite"
    records = _records(index)
    fingerprint, record = records[0]
    flipped = bytearray(record)
    flipped[40] ^= 0x04
    with closing(sqlite3.connect(index)) as db:
        db.execute("UPDATE records SET record = ? WHERE fingerprint = ?",
                   (bytes(flipped), fingerprint))
        db.commit()
    # One entry with a bit flipped in its stored value.
    with closing(sqlite3.connect(ws / "cache" / "cache.db")) as db:
        key, value = db.execute("SELECT key, value FROM Cache ORDER BY key LIMIT 1").fetchone()
        value = bytearray(value)
        value[len(value) // 2] ^= 0x01
        db.execute("UPDATE Cache SET value = ? WHERE key = ?", (bytes(value), key))
        db.commit()
    found = run_judge(["cache", "verify", "--json"], ws)
    assert found.returncode == 1
    report = json.loads(found.stdout)
    assert report["corrupt"] == [key] and report["reasons"][key]
    assert report["index_bad"] == [fingerprint.hex()]
    assert "sha256" in report["index_reasons"][fingerprint.hex()]
    text = run_judge(["cache", "verify"], ws)
    assert f"entry {key}" in text.stderr and f"index record {fingerprint.hex()}" in text.stderr
    repaired = run_judge(["cache", "verify", "--repair"], ws)
    assert repaired.returncode == 0, repaired.stderr
    assert "removed 1 corrupt entries and" in repaired.stdout
    clean = run_judge(["cache", "verify", "--json"], ws)
    assert clean.returncode == 0 and json.loads(clean.stdout)["corrupt"] == []
    assert os.path.exists(ws / "cache" / "cache.db")


# --- bit flips anywhere: never a changed final score without a word -----------------------

def _finals(proc: Any) -> tuple[str, dict[str, Any] | None]:
    """How one replay ended: ``same``-comparable finals, or how the damage was reported."""
    if proc.returncode == 2 and "damaged" in proc.stderr:
        return "error naming the file", None
    payload = json.loads(proc.stdout)
    cases = {c["id"]: (c["status"], c["overallScore"], c["band"],
                       [(s["category"], s["finalScore"]) for s in c["categoryScores"]])
             for c in payload["cases"] if c["judge"] is None or c["judge"]["sample"] == 0}
    if proc.returncode == 3 or any(c[0] != "scored" for c in cases.values()):
        return "miss or corrupt reported", cases
    return "replayed", cases


def _flip(path: Path, offset: int, bit: int) -> None:
    with path.open("r+b") as f:
        f.seek(offset)
        byte = f.read(1)[0]
        f.seek(offset)
        f.write(bytes([byte ^ (1 << bit)]))


def _offsets(data: bytes, marker: bytes, count: int, rng: Any) -> list[int]:
    """``count`` offsets: half just after ``marker`` (where verdicts and signals live), half
    anywhere in the file."""
    hits = [i for i in range(len(data)) if data.startswith(marker, i)]
    near = [rng.choice(hits) + rng.randrange(len(marker), len(marker) + 120)
            for _ in range(count // 2)] if hits else []
    return near + [rng.randrange(len(data)) for _ in range(count - len(near))]


FLIPS = {"cache.db": 14, "replay-index.sqlite": 10, "export": 8, "suites": 6}
MARKERS = {"replay-index.sqlite": b'"signals"', "suites": b'"deterministic"'}


def _target(cache: Path, target: str) -> Path:
    """The file a flip goes to; ``suites``: the compiled form the replays read.

    The newest: its name covers the default suite id (the folder's name), so the first
    replay in the copy (folder ``ws``, as every flip's) compiled its own.
    """
    if target == "suites":
        return max((cache / "suites").glob("*.jsonl"), key=lambda p: p.stat().st_mtime_ns)
    return cache / target


def test_flipped_bits_never_change_a_final_score_silently(recorded: tuple[Path, str],
                                                           tmp_path: Path) -> None:
    import random

    rng = random.Random(12)
    base = copy_of(recorded, tmp_path / "base")
    outcome, expected = _finals(offline(base, "--no-check"))
    assert outcome == "replayed" and expected
    export = tmp_path / "clean.jsonl"
    assert run_judge(["cache", "export", str(export)], base).returncode == 0
    tally: dict[str, dict[str, int]] = {}
    for target, count in FLIPS.items():
        source = export if target == "export" else _target(base / "cache", target)
        marker = MARKERS.get(target, b'"text"')
        for n, offset in enumerate(_offsets(source.read_bytes(), marker, count, rng)):
            ws = tmp_path / f"{target}-{n}" / "ws"  # the same folder name: the same suite id
            shutil.copytree(base, ws)
            if target == "export":
                shutil.rmtree(ws / "cache")
                flipped = ws / "shared.jsonl"
                shutil.copy(export, flipped)
                _flip(flipped, min(offset, flipped.stat().st_size - 1), rng.randrange(8))
                imported = run_judge(["cache", "import", str(flipped)], ws)
                assert imported.returncode in (0, 2) and "internal error" not in imported.stderr
            else:
                path = _target(ws / "cache", target)
                _flip(path, min(offset, path.stat().st_size - 1), rng.randrange(8))
            proc = offline(ws, "--no-check")
            assert proc.returncode in (0, 2, 3) and "internal error" not in proc.stderr, \
                (target, offset, proc.stderr)
            how, finals = _finals(proc)
            if how == "replayed" and finals != expected:
                how = "silently wrong"
            elif how == "miss or corrupt reported" and finals is not None:
                # Every case that did replay as scored replays exactly.
                assert all(finals[i] == expected[i] for i in finals if finals[i][0] == "scored")
            tally.setdefault(target, {}).setdefault(how, 0)
            tally[target][how] += 1
    print("bit flips:", json.dumps(tally, sort_keys=True))
    assert all("silently wrong" not in t for t in tally.values()), tally
    assert sum(sum(t.values()) for t in tally.values()) == sum(FLIPS.values())


def test_entries_record_their_provenance(recorded: tuple[Path, str]) -> None:
    from judge.cache.disk import JudgmentCache

    with JudgmentCache(recorded[0] / "cache", "read-only") as cache:
        metas = [e.meta for e in cache.iter_entries()]
    assert metas and all(m["judgeflow"] and m["createdAt"] for m in metas)
    assert all(str(m["systemFingerprint"]).startswith("fp_") for m in metas)
    assert all(m["modelReported"] for m in metas)
