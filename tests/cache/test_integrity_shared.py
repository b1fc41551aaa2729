"""Shared caches you can trust: exports are checked and signed (JUDGE_CACHE_SECRET), imports
refuse what is unsigned or tampered, naming each entry; an export next to a running writer is
a consistent snapshot that reports only entries that really fail their check."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import judge_env, run_judge

from judge.app.admin.cache_ops import export_cache, export_cache_file, import_cache
from judge.app.workspace.workspace import Workspace
from judge.cache.disk import JudgmentCache
from judge.cache.entry import CacheEntry, build_entry, entry_problems, with_digest
from judge.core.formats.turns import CachedTurn
from judge.core.text.errors import UsageError

SECRET = "team-secret-3b9f0c2d7e61a485"
ROOT = Path(__file__).resolve().parents[2]


def _entry(n: int, *, pad: int = 0) -> CacheEntry:
    request = {"model": "openai/gpt-4o-mini", "messages": [
        {"role": "user", "content": f"case {n} " + "x" * pad}], "temperature": 0, "seed": 7,
        "responseFormat": None, "outputMode": "json_schema", "params": {"max_tokens": 64}}
    turn = {"text": json.dumps({"score": n % 5}), "finishReason": "stop",
            "modelReported": "gpt-4o-mini-2024-07-18", "promptTokens": 10,
            "completionTokens": 5, "costUsd": None, "latencyMs": 1.0,
            "outputMode": "json_schema", "systemFingerprint": "fp_abc"}
    meta = {"templateId": "default", "templateHash": "t", "rubricId": "r", "rubricHash": "h",
            "createdAt": "2025-03-01T12:00:00Z", "judgeflow": "0.1.0"}
    return build_entry(request, [CachedTurn(turn)], meta)


def _workspace(root: Path, **env: str) -> Workspace:
    return Workspace.open(root, env=judge_env(**env))


def _filled(root: Path, count: int = 6) -> list[CacheEntry]:
    entries = [_entry(n) for n in range(count)]
    with JudgmentCache(root / "cache") as cache:
        for entry in entries:
            cache.put(entry)
    return entries


def test_signed_export_imports_with_require_signed(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    entries = _filled(tmp_path / "a")
    out = io.StringIO()
    report = export_cache(_workspace(tmp_path / "a", JUDGE_CACHE_SECRET=SECRET), out)
    assert report.signed and report.exported == len(entries) and report.left_out == 0
    lines = [json.loads(line) for line in out.getvalue().splitlines()]
    assert all(line["sig"].startswith("hmac-sha256:") for line in lines)
    assert SECRET not in out.getvalue()
    added = import_cache(_workspace(tmp_path / "b", JUDGE_CACHE_SECRET=SECRET),
                         io.StringIO(out.getvalue()), require_signed=True)
    assert (added.added, added.rejected, added.signatures_checked) == (len(entries), 0, True)
    with JudgmentCache(tmp_path / "b" / "cache", "read-only") as cache:
        assert [e.key for e in cache.iter_entries()] == sorted(e.key for e in entries)
        assert all(SECRET not in json.dumps(e.data) for e in cache.iter_entries())


def _tampered(text: str) -> tuple[str, str, str]:
    """The export with line 1's score edited (digest recomputed: only the HMAC can tell) and
    line 2's signature removed; returns it and the two keys."""
    lines = [json.loads(line) for line in text.splitlines()]
    edited = lines[0]
    sig = edited.pop("sig")
    edited["turns"][0]["text"] = json.dumps({"score": 99})
    lines[0] = {**with_digest(edited).data, "sig": sig}
    del lines[1]["sig"]
    return ("\n".join(json.dumps(line) for line in lines) + "\n", lines[0]["key"],
            lines[1]["key"])


def test_import_refuses_tampered_and_unsigned_lines_naming_them(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    entries = _filled(tmp_path / "a")
    out = io.StringIO()
    export_cache(_workspace(tmp_path / "a", JUDGE_CACHE_SECRET=SECRET), out)
    text, edited, unsigned = _tampered(out.getvalue())
    (tmp_path / "shared.jsonl").write_text(text)
    env = judge_env(JUDGE_CACHE_SECRET=SECRET)
    proc = run_judge(["cache", "import", str(tmp_path / "shared.jsonl"), "--require-signed",
                      "--json"], tmp_path / "b", env=env)
    assert proc.returncode == 2
    report = json.loads(proc.stdout)
    assert (report["added"], report["rejected"]) == (len(entries) - 2, 2)
    assert f"key {edited[:16]}" in proc.stderr and "signature does not match" in proc.stderr
    assert f"key {unsigned[:16]}" in proc.stderr and "not signed" in proc.stderr
    assert SECRET not in proc.stdout + proc.stderr
    # With the secret set, a bad signature and a missing one are refused even without
    # --require-signed (a stripped signature used to import as "added").
    (tmp_path / "c").mkdir()
    loose = import_cache(_workspace(tmp_path / "c", JUDGE_CACHE_SECRET=SECRET),
                         io.StringIO(text))
    assert loose.rejected == 2 and "signature does not match" in loose.errors[0]
    assert "not signed" in loose.errors[1] and "--allow-unsigned" in loose.errors[1]
    # Another team's secret: every line is refused.
    (tmp_path / "d").mkdir()
    other = import_cache(_workspace(tmp_path / "d", JUDGE_CACHE_SECRET="another-secret-x"),
                         io.StringIO(out.getvalue()), require_signed=True)
    assert (other.added, other.rejected) == (0, len(entries))


def _downgraded(text: str) -> tuple[str, str]:
    """Line 1 edited (score 99), its ``sig`` stripped and its digest recomputed."""
    lines = [json.loads(line) for line in text.splitlines()]
    edited = lines[0]
    del edited["sig"]
    edited["turns"][0]["text"] = json.dumps({"score": 99})
    lines[0] = with_digest(edited).data
    return "\n".join(json.dumps(line) for line in lines) + "\n", lines[0]["key"]


def test_a_stripped_signature_is_never_added_with_the_secret_set(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    entries = _filled(tmp_path / "a")
    out = io.StringIO()
    export_cache(_workspace(tmp_path / "a", JUDGE_CACHE_SECRET=SECRET), out)
    text, forged = _downgraded(out.getvalue())
    (tmp_path / "b").mkdir()
    (tmp_path / "forged.jsonl").write_text(text)
    env = judge_env(JUDGE_CACHE_SECRET=SECRET)
    proc = run_judge(["cache", "import", str(tmp_path / "forged.jsonl"), "--json"],
                     tmp_path / "b", env=env)
    assert proc.returncode == 2, proc.stderr
    report = json.loads(proc.stdout)
    assert (report["added"], report["rejected"], report["unsigned"]) == (len(entries) - 1, 1, 0)
    assert f"key {forged[:16]}" in proc.stderr and "not signed" in proc.stderr
    assert "fix:" in proc.stderr
    with JudgmentCache(tmp_path / "b" / "cache", "read-only") as cache:
        assert forged not in {e.key for e in cache.iter_entries()}
    # Taken only on purpose, and the summary says so.
    (tmp_path / "c").mkdir()
    proc = run_judge(["cache", "import", str(tmp_path / "forged.jsonl"), "--allow-unsigned"],
                     tmp_path / "c", env=env)
    assert proc.returncode == 0, proc.stderr
    assert f"added {len(entries)}, 1 of them unsigned (--allow-unsigned)" in proc.stdout
    both = run_judge(["cache", "import", str(tmp_path / "forged.jsonl"), "--allow-unsigned",
                      "--require-signed"], tmp_path / "c", env=env)
    assert both.returncode == 2 and "contradict" in both.stderr


def test_a_fully_rejected_import_creates_no_cache(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    _filled(tmp_path / "a", 2)
    out = io.StringIO()
    export_cache(_workspace(tmp_path / "a"), out)  # unsigned
    (tmp_path / "b").mkdir()
    (tmp_path / "b" / "x.jsonl").write_text(out.getvalue())
    proc = run_judge(["cache", "import", "x.jsonl"], tmp_path / "b",
                     env=judge_env(JUDGE_CACHE_SECRET=SECRET))
    assert proc.returncode == 2 and proc.stderr.count("not signed") == 2, proc.stderr
    assert sorted(p.name for p in (tmp_path / "b").iterdir()) == ["x.jsonl"]
    (tmp_path / "b" / "x.jsonl").write_text("not json\n[1]\n")
    proc = run_judge(["cache", "import", "x.jsonl"], tmp_path / "b")
    assert proc.returncode == 2 and "line 1" in proc.stderr and "line 2" in proc.stderr
    assert sorted(p.name for p in (tmp_path / "b").iterdir()) == ["x.jsonl"]


def test_edited_entry_without_secret_is_still_rejected_by_its_digest(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    _filled(tmp_path / "a", 3)
    out = io.StringIO()
    export_cache(_workspace(tmp_path / "a"), out)
    lines = out.getvalue().splitlines()
    edited = json.loads(lines[2])
    edited["turns"][0]["text"] = json.dumps({"score": 99})  # the digest left as it was
    lines[2] = json.dumps(edited)
    (tmp_path / "b").mkdir()
    report = import_cache(_workspace(tmp_path / "b"), io.StringIO("\n".join(lines)))
    assert (report.added, report.rejected) == (2, 1)
    assert report.errors[0].startswith("line 3: key ") and "digest" in report.errors[0]


def test_require_signed_without_the_secret_is_exit_2_and_creates_nothing(
        tmp_path: Path) -> None:
    (tmp_path / "x.jsonl").write_text(json.dumps(_entry(1).data) + "\n")
    with pytest.raises(UsageError, match="JUDGE_CACHE_SECRET"):
        import_cache(_workspace(tmp_path), io.StringIO("{}"), require_signed=True)
    proc = run_judge(["cache", "import", "x.jsonl", "--require-signed"], tmp_path)
    assert proc.returncode == 2 and "JUDGE_CACHE_SECRET" in proc.stderr
    assert not (tmp_path / "cache").exists()


_WRITER = """
import sys, time
from pathlib import Path
sys.path[:0] = [sys.argv[3], sys.argv[3] + "/cache", sys.argv[4]]
from test_integrity_shared import _entry
from judge.cache.disk import JudgmentCache
stop = Path(sys.argv[2])
with JudgmentCache(sys.argv[1]) as cache:
    for n in range(100, 100 + 20000):  # bounded
        if stop.exists():
            break
        cache.put(_entry(n % 400, pad=n % 97 * 40))  # new keys, then replacements
"""


def test_export_next_to_a_running_writer_is_a_clean_snapshot(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    _filled(ws, 50)
    stop = tmp_path / "stop"
    writer = subprocess.Popen([sys.executable, "-c", _WRITER, str(ws / "cache"), str(stop),
                               str(ROOT / "tests"), str(ROOT)], env=judge_env())
    workspace = _workspace(ws)
    try:
        deadline = time.monotonic() + 60
        with JudgmentCache(ws / "cache", "read-only") as cache:
            while len(cache) < 120 and time.monotonic() < deadline and writer.poll() is None:
                time.sleep(0.05)
        exports = []
        for round_ in range(4):
            target = tmp_path / f"export-{round_}.jsonl"
            report = export_cache_file(workspace, target)
            assert report.left_out == 0 and report.corrupt == {}, report
            lines = target.read_text().splitlines()
            assert len(lines) == report.exported
            assert all(entry_problems(json.loads(line)) == [] for line in lines)
            keys = [json.loads(line)["key"] for line in lines]
            assert keys == sorted(set(keys))
            exports.append(report.exported)
        assert writer.poll() is None, "the writer ended before the exports did"
    finally:
        stop.touch()
        writer.wait(60)
    assert writer.returncode == 0
    assert exports[0] >= 50 and exports == sorted(exports)
    proc = run_judge(["cache", "export", str(tmp_path / "final.jsonl")], ws)
    assert proc.returncode == 0 and "warning" not in proc.stderr, proc.stderr
    assert os.path.getsize(tmp_path / "final.jsonl") > 0
