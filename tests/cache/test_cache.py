"""The judgment cache: stable keys, modes, refusals, corruption, export/import, processes, CLI."""

from __future__ import annotations

import asyncio
import hashlib
import io
import json
import os
import pathlib
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import diskcache
import pytest
from conftest import judge_env, run_judge

from judge.app.admin.cache_ops import (
    ExportReport,
    PruneRequest,
    cache_stats,
    export_cache,
    export_cache_file,
    import_cache,
    import_cache_file,
    prune_cache,
    verify_cache,
)
from judge.app.workspace.workspace import Workspace
from judge.cache.disk import JudgmentCache
from judge.cache.entry import (
    CACHE_FORMAT,
    CacheEntry,
    build_entry,
    cache_key,
    digest_ok,
    entry_digest,
    entry_problems,
    is_iso_time,
)
from judge.cache.interchange import CacheInterchange, ImportReport
from judge.cache.maintenance import CacheMaintenance, VerifyReport
from judge.cache.replay_store import ReplayStore
from judge.core.formats.output_schema import output_schema_json
from judge.core.formats.rubric import Rubric
from judge.core.formats.turns import CachedTurn
from judge.core.text.canonical import canonical_json
from judge.core.text.errors import UsageError
from judge.system.resources import load_rubric

ROOT = Path(__file__).resolve().parents[2]
CREATED = "2025-03-01T12:00:00Z"


def _request(**over: Any) -> dict[str, Any]:
    req: dict[str, Any] = {
        "model": "openai/gpt-4o-mini",
        "messages": [{"role": "system", "content": "You are a judge."},
                     {"role": "user", "content": "## Evidence\nÉvidence ✓ case 1"}],
        "temperature": 0.0,
        "seed": 7,
        "responseFormat": {"type": "json_schema", "json_schema": {"name": "v", "schema": {}}},
        "outputMode": "json_schema",
        "params": {"max_tokens": 800},
    }
    req.update(over)
    return req


def _entry(n: int = 1, *, model: str = "openai/gpt-4o-mini", created: str = CREATED,
           text: str | None = None) -> dict[str, Any]:
    req = _request(model=model, messages=[{"role": "user", "content": f"case {n}"}])
    turn = {"text": text if text is not None else f'{{"score": {n}}}', "finishReason": "stop",
            "modelReported": model, "promptTokens": 10, "completionTokens": 5,
            "costUsd": 0.0001, "latencyMs": 12.5, "outputMode": "json_schema"}
    meta = {"templateId": "default", "templateHash": "t" * 8, "rubricId": "task-evaluation",
            "rubricHash": "r" * 8, "createdAt": created, "judgeflow": "0.1.0"}
    return build_entry(req, [CachedTurn(turn)], meta).data


def _built(request: dict[str, Any], turns: list[dict[str, Any]],
           meta: dict[str, Any]) -> dict[str, Any]:
    """:func:`build_entry`'s entry as its JSON object (what these tests tamper with)."""
    return build_entry(request, [CachedTurn(t) for t in turns], meta).data


# --- keys -------------------------------------------------------------------------------


def test_key_is_sha256_of_canonical_request_with_format() -> None:
    req = _request(temperature=0.3)
    expected = hashlib.sha256(canonical_json({"format": CACHE_FORMAT, "request": req})
                              .encode("utf-8")).hexdigest()
    assert cache_key(req) == expected
    assert cache_key(_request(temperature=0.3)) == expected
    # Integral floats are hashed as integers: 0.0 is written 0.
    assert cache_key(_request(temperature=0.0)) == hashlib.sha256(canonical_json(
        {"format": CACHE_FORMAT, "request": _request(temperature=0)}).encode()).hexdigest()


def test_key_ignores_dict_order_and_float_spelling() -> None:
    req = _request()
    shuffled = {k: req[k] for k in reversed(list(req))}
    shuffled["messages"] = [{"content": m["content"], "role": m["role"]}
                            for m in req["messages"]]
    assert cache_key(shuffled) == cache_key(req)
    assert cache_key(_request(temperature=0)) == cache_key(_request(temperature=0.0))


CHANGES: dict[str, dict[str, Any]] = {
    "model": {"model": "openai/gpt-4o"},
    "message byte": {"messages": [{"role": "system", "content": "You are a judge."},
                                  {"role": "user", "content": "## Evidence\nÉvidence ✓ case 2"}]},
    "message role": {"messages": [{"role": "user", "content": "You are a judge."},
                                  {"role": "user", "content": "## Evidence\nÉvidence ✓ case 1"}]},
    "temperature": {"temperature": 0.2},
    "seed": {"seed": 8},
    "seed none": {"seed": None},
    "responseFormat": {"responseFormat": {"type": "json_object"}},
    "responseFormat none": {"responseFormat": None},
    "outputMode": {"outputMode": "prompt"},
    "params value": {"params": {"max_tokens": 801}},
    "params added": {"params": {"max_tokens": 800, "top_p": 0.9}},
}


def test_every_output_relevant_change_gives_a_new_key() -> None:
    keys = {name: cache_key(_request(**change)) for name, change in CHANGES.items()}
    keys["base"] = cache_key(_request())
    assert len(set(keys.values())) == len(keys), keys


# --- storage ----------------------------------------------------------------------------


def test_put_get_roundtrip_and_counters(tmp_path: Path) -> None:
    entry = _entry()
    with JudgmentCache(tmp_path / "c") as cache:
        assert cache.get(entry["key"]) is None
        assert cache.put(CacheEntry(entry)) is True
        assert entry["key"] in cache and len(cache) == 1
        assert cache.get(entry["key"]) == CacheEntry(entry)
        assert cache.counters() == {"hits": 1, "misses": 1, "writes": 1, "corrupt": 0}
    with JudgmentCache(tmp_path / "c", "read-only") as again:
        assert again.get(entry["key"]) == CacheEntry(entry)


def test_put_soon_is_committed_when_it_returns_and_keeps_order(tmp_path: Path) -> None:
    """The run's write: checked in the caller, committed in the writer thread, in order."""
    entries = [_entry(n) for n in range(1, 6)]
    newer = {**_entry(1), "meta": {**_entry(1)["meta"], "createdAt": "2025-03-02T12:00:00Z"}}
    newer = {**newer, "digest": entry_digest(newer)}

    async def go(cache: JudgmentCache, seen: JudgmentCache) -> None:
        for entry in entries:
            assert await cache.put_soon(CacheEntry(entry), data=canonical_json(entry).encode())
            # Another connection sees it committed.
            assert seen.get(entry["key"]) == CacheEntry(entry)
        leaky = _built(_request(params={"extra": {"api_key": "sk-x"}}), [{"text": "{}"}],
                       {"createdAt": CREATED})
        with pytest.raises(ValueError, match="api_key"):
            await cache.put_soon(CacheEntry(leaky), data=canonical_json(leaky).encode())
        assert leaky["key"] not in seen
        # Two writes of one key started together: the one started last is what stays.
        await asyncio.gather(*(cache.put_soon(CacheEntry(e), data=canonical_json(e).encode())
                               for e in (entries[0], newer)))
        assert seen.get(newer["key"]) == CacheEntry(newer)

    with JudgmentCache(tmp_path / "c") as cache, JudgmentCache(tmp_path / "c") as seen:
        asyncio.run(go(cache, seen))
        assert cache.counters()["writes"] == len(entries) + 2
    assert not [t for t in threading.enumerate() if t.name.startswith("judge-cache-writer")]
    with JudgmentCache(tmp_path / "c", "read-only") as cache:
        assert asyncio.run(cache.put_soon(CacheEntry(entries[0]), data=b"{}")) is False


def test_large_entry_lives_in_a_file_and_prune_removes_it(tmp_path: Path) -> None:
    entry = _entry(text="x" * 100_000)  # beyond diskcache's 32 kB in-database limit
    with JudgmentCache(tmp_path) as cache:
        cache.put(CacheEntry(entry))
        assert list(tmp_path.rglob("*.val"))
        assert cache.get(entry["key"]) == CacheEntry(entry)
        assert CacheMaintenance(cache).verify().ok == 1
        assert CacheMaintenance(cache).prune(all_entries=True) == 1
        assert not list(tmp_path.rglob("*.val"))


MODES = {  # mode: (reads, writes)
    "read-write": (True, True),
    "read-only": (True, False),
    "offline": (True, False),
    "refresh": (False, True),
    "off": (False, False),
}


@pytest.mark.parametrize("mode", sorted(MODES))
def test_modes_read_and_write_as_named(tmp_path: Path, mode: Any) -> None:
    old, new = _entry(1), _entry(2)
    with JudgmentCache(tmp_path) as seed:
        seed.put(CacheEntry(old))
    reads, writes = MODES[mode]
    with JudgmentCache(tmp_path, mode) as cache:
        assert (cache.readable, cache.writable) == (reads, writes)
        assert (cache.get(old["key"]) == CacheEntry(old)) is reads
        assert cache.put(CacheEntry(new)) is writes
        assert (cache.get(new["key"]) is not None) is (reads and writes)
    with JudgmentCache(tmp_path, "read-only") as check:
        assert (new["key"] in check) is writes


@pytest.mark.parametrize("mode", ["read-only", "offline", "off"])
def test_non_writing_modes_never_create_the_directory(tmp_path: Path, mode: Any) -> None:
    where = tmp_path / "absent"
    with JudgmentCache(where, mode) as cache:
        assert cache.get(_entry()["key"]) is None and len(cache) == 0
        assert CacheMaintenance(cache).stats().entries == 0
    assert not where.exists()


def test_unknown_mode_is_a_usage_error(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="unknown cache mode"):
        JudgmentCache(tmp_path, "sometimes")  # type: ignore[arg-type]


def test_refresh_replaces_an_entry(tmp_path: Path) -> None:
    first, second = _entry(text="first"), _entry(text="second")
    assert first["key"] == second["key"]
    with JudgmentCache(tmp_path) as cache:
        cache.put(CacheEntry(first))
    with JudgmentCache(tmp_path, "refresh") as cache:
        assert cache.get(first["key"]) is None
        cache.put(CacheEntry(second))
    with JudgmentCache(tmp_path, "read-only") as cache:
        assert cache.get(first["key"]) == CacheEntry(second)


# --- refusals ---------------------------------------------------------------------------


def test_put_rejects_a_key_that_does_not_match_the_request(tmp_path: Path) -> None:
    entry = _entry()
    entry["request"]["temperature"] = 0.5
    with JudgmentCache(tmp_path) as cache:
        with pytest.raises(ValueError, match="does not match"):
            cache.put(CacheEntry(entry))
        assert len(cache) == 0


@pytest.mark.parametrize("turns", [[], None, [{"finishReason": "stop"}]])
def test_put_rejects_entries_without_turns(tmp_path: Path, turns: Any) -> None:
    entry = _entry()
    if turns is None:
        del entry["turns"]
    else:
        entry["turns"] = turns
    with JudgmentCache(tmp_path) as cache, pytest.raises(ValueError, match="turns"):
        cache.put(CacheEntry(entry))


def _with_secret(where: str) -> dict[str, Any]:
    entry = _entry()
    if where == "request":  # part of the key material: rekey so only the secret is wrong
        req = {**entry["request"], "params": {"extra_headers": {"Authorization": "Bearer x"}}}
        return _built(req, entry["turns"], entry["meta"])
    if where == "turn":
        entry["turns"][0]["raw"] = {"choices": [{"apiKey": "sk-x"}]}
    elif where == "meta":
        entry["meta"]["api_base"] = "http://10.0.0.1:8000"
    else:
        entry["API-KEY"] = "sk-x"
    return entry


@pytest.mark.parametrize("where", ["request", "turn", "meta", "top"])
def test_put_refuses_credentials_at_any_depth(tmp_path: Path, where: str) -> None:
    with JudgmentCache(tmp_path) as cache:
        with pytest.raises(ValueError, match="credential-like"):
            cache.put(CacheEntry(_with_secret(where)))
        assert len(cache) == 0


def test_a_vouched_schema_is_not_rescanned_and_nothing_else_is_skipped() -> None:
    """Entries judging writes skip the scan of the output schema only: its template was
    scanned once per rubric, and a rubric whose category is named like a credential gets
    no template text, so each of its entries is scanned in full as before."""
    secret_schema = {"type": "json_schema", "json_schema": {"schema": {"password": {}}}}
    entry = _built(_request(responseFormat=secret_schema), [{"text": "{}"}],
                   {"createdAt": CREATED})
    assert entry_problems(entry, built=True, vouched=("responseFormat",)) == []
    assert "request.responseFormat.json_schema.schema.password" in "".join(
        entry_problems(entry, built=True))
    leaky = _built(_request(params={"api_key": "sk-x"}), [{"text": "{}"}],
                   {"createdAt": CREATED})
    assert entry_problems(leaky, built=True, vouched=("responseFormat",)) == [
        "credential-like field 'request.params.api_key' must never be cached"]

    rubric = load_rubric("task-evaluation")
    assert output_schema_json(rubric, ("commits:abc",)) is not None
    data = rubric.model_dump(mode="json")
    data["categories"][0]["id"] = "password"
    odd = Rubric.model_validate(data)
    assert output_schema_json(odd, ("commits:abc",)) is None


def test_credential_words_inside_text_are_fine() -> None:
    req = _request(messages=[{"role": "user", "content": 'the diff adds "api_key": "sk-…"'}])
    entry = _built(req, [{"text": "authorization: leaked api_key"}], {"createdAt": CREATED})
    assert entry_problems(entry) == []


# --- corruption -------------------------------------------------------------------------


class _Planted:
    """A pickle that creates a file when loaded: what a hostile shared cache could hold."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self) -> Any:
        return (pathlib.Path.touch, (self.marker,))


def test_corrupt_and_planted_values_are_never_loaded(tmp_path: Path) -> None:
    good, bad_json, swapped, planted = _entry(1), _entry(2), _entry(3), _entry(4)
    marker = tmp_path / "pwned"
    store = tmp_path / "c"
    with JudgmentCache(store) as cache:
        cache.put(CacheEntry(good))
    with diskcache.Cache(str(store)) as raw:
        raw.set(bad_json["key"], b'{"format": 1, "key": tru')
        raw.set(swapped["key"], canonical_json(good).encode())  # a sound entry, wrong key
        raw.set(planted["key"], _Planted(marker))
    with JudgmentCache(store) as cache:
        for entry in (bad_json, swapped, planted):
            assert cache.get(entry["key"]) is None
        assert not marker.exists()
        assert cache.counters()["corrupt"] == 3
        assert cache.get(good["key"]) == CacheEntry(good)

        report = CacheMaintenance(cache).verify()
        assert report.checked == 4 and report.ok == 1
        assert sorted(report.corrupt) == sorted(e["key"] for e in (bad_json, swapped, planted))
        assert "not JSON" in report.reasons[bad_json["key"]]
        assert "stored under" in report.reasons[swapped["key"]]
        assert "pickled" in report.reasons[planted["key"]]
        assert CacheMaintenance(cache).stats().corrupt == 3

        assert CacheMaintenance(cache).prune(corrupt=True, dry_run=True) == 3 and len(cache) == 4
        assert CacheMaintenance(cache).prune(corrupt=True) == 3
        assert CacheMaintenance(cache).verify() == VerifyReport(checked=1, ok=1, corrupt=(),
                                                                reasons={})
    assert not marker.exists()


def test_entries_never_expire(tmp_path: Path) -> None:
    entry = _entry()
    with JudgmentCache(tmp_path) as cache:
        cache.put(CacheEntry(entry))
    with diskcache.Cache(str(tmp_path)) as raw:
        assert raw.eviction_policy == "none"
        _, expire_time = raw.get(entry["key"], expire_time=True)
        assert expire_time is None
        assert raw.expire(now=time.time() + 100 * 365 * 86400) == 0
        assert raw.cull() == 0
    with JudgmentCache(tmp_path, "read-only") as cache:
        assert cache.get(entry["key"]) == CacheEntry(entry)


# --- export, import, stats, prune -------------------------------------------------------


def _filled(path: Path, n: int = 5) -> list[dict[str, Any]]:
    entries = [_entry(i, model="m-a" if i % 2 else "m-b", created=f"2025-01-{10 + i}T00:00:00Z")
               for i in range(n)]
    with JudgmentCache(path) as cache:
        for entry in entries:
            cache.put(CacheEntry(entry))
    return entries


def test_export_import_reproduces_identical_bytes(tmp_path: Path) -> None:
    entries = _filled(tmp_path / "a")
    first, second = io.StringIO(), io.StringIO()
    with JudgmentCache(tmp_path / "a", "read-only") as cache:
        assert CacheInterchange(cache).export_jsonl(first) == len(entries)
    lines = first.getvalue().splitlines()
    assert [json.loads(line)["key"] for line in lines] == sorted(e["key"] for e in entries)
    with JudgmentCache(tmp_path / "b") as fresh:
        report = CacheInterchange(fresh).import_jsonl(io.StringIO(first.getvalue()))
        assert report == ImportReport(added=len(entries), skipped=0, rejected=0, errors=())
        CacheInterchange(fresh).export_jsonl(second)
        again = CacheInterchange(fresh).import_jsonl(io.StringIO(first.getvalue()))
        assert again.added == 0 and again.skipped == len(entries)
    assert second.getvalue() == first.getvalue()


def test_import_rejects_tampered_lines_by_number(tmp_path: Path) -> None:
    _filled(tmp_path / "a", 3)
    out = io.StringIO()
    with JudgmentCache(tmp_path / "a", "read-only") as cache:
        CacheInterchange(cache).export_jsonl(out)
    lines = out.getvalue().splitlines()
    tampered = json.loads(lines[1])
    tampered["request"]["model"] = "evil/model"  # same key, different request
    lines[1] = canonical_json(tampered)
    lines.insert(3, "{not json")
    with JudgmentCache(tmp_path / "b") as fresh:
        report = CacheInterchange(fresh).import_jsonl(io.StringIO("\n".join(lines) + "\n"))
        assert report.added == 2 and report.rejected == 2
        first, second = report.errors
        assert first.startswith("line 2: ") and "does not match" in first
        assert second.startswith("line 4: ") and "not JSON" not in first
        assert tampered["key"] not in fresh


def test_import_needs_a_writable_cache(tmp_path: Path) -> None:
    with JudgmentCache(tmp_path, "read-only") as cache, pytest.raises(UsageError):
        CacheInterchange(cache).import_jsonl(io.StringIO(""))


def test_stats_counts_models_and_ages(tmp_path: Path) -> None:
    _filled(tmp_path)
    with JudgmentCache(tmp_path, "read-only") as cache:
        stats = CacheMaintenance(cache).stats()
    assert stats.entries == 5 and stats.corrupt == 0
    assert stats.models == {"m-a": 2, "m-b": 3}
    assert (stats.oldest, stats.newest) == ("2025-01-10T00:00:00Z", "2025-01-14T00:00:00Z")
    assert stats.bytes > 0 and stats.mode == "read-only"


def test_prune_by_model_and_date(tmp_path: Path) -> None:
    entries = _filled(tmp_path)
    with JudgmentCache(tmp_path) as cache:
        with pytest.raises(ValueError, match="filter"):
            CacheMaintenance(cache).prune()
        assert CacheMaintenance(cache).prune(model="m-a", before="2025-01-12", dry_run=True) == 1
        assert CacheMaintenance(cache).prune(before="2025-01-12") == 2  # naive dates are UTC
        assert CacheMaintenance(cache).prune(model="m-a") == 1
        assert [e.key for e in cache.iter_entries()] == sorted(
            e["key"] for e in entries[2:] if e["request"]["model"] == "m-b")


# --- several processes, one directory ---------------------------------------------------

WRITER = r"""
import sys, time
from pathlib import Path
from judge.cache.disk import JudgmentCache
from judge.cache.entry import CacheEntry, build_entry
from judge.core.formats.turns import CachedTurn
directory, start, stop, go = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), Path(sys.argv[4])
while not go.exists():
    time.sleep(0.002)
with JudgmentCache(directory) as cache:
    for i in range(start, stop):
        req = {"model": "m", "messages": [{"role": "user", "content": f"case {i}"}],
               "temperature": 0.0, "seed": 1, "responseFormat": None, "outputMode": "prompt",
               "params": {}}
        entry = build_entry(req, [CachedTurn({"text": f"verdict {i}"})],
                            {"createdAt": "2025-01-01"})
        cache.put(entry)
        assert cache.get(entry.key) == entry
print("done")
"""


def test_two_processes_share_one_directory(tmp_path: Path) -> None:
    store, go = tmp_path / "shared", tmp_path / "go"
    procs = [subprocess.Popen([sys.executable, "-c", WRITER, str(store), str(a), str(b), str(go)],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for a, b in ((0, 200), (100, 300))]
    go.touch()  # both start together, opening the fresh directory at once
    for proc in procs:
        out, err = proc.communicate(timeout=60)
        assert proc.returncode == 0 and out.strip() == "done", err
    with JudgmentCache(store, "read-only") as cache:
        report = CacheMaintenance(cache).verify()
        assert len(cache) == 300
        texts = sorted(int(e.turns[0].text.split()[1]) for e in cache.iter_entries())
    assert report.corrupt == () and report.ok == 300
    assert texts == list(range(300))


# --- the operations behind `judge cache`, and the CLI door --------------------------------


def _ws(root: Path, cache_dir: str | None = None, env: dict[str, str] | None = None) -> Workspace:
    return Workspace.open(root, {"cache_dir": cache_dir}, env=env or {})


def test_stats_reads_the_workspace_setting_and_creates_nothing(tmp_path: Path) -> None:
    _filled(tmp_path / "store")
    stats = cache_stats(_ws(tmp_path, env={"JUDGE_CACHE_DIR": "store"}))
    assert stats.entries == 5 and stats.models == {"m-a": 2, "m-b": 3} and stats.exists
    default = cache_stats(_ws(tmp_path))  # ./cache: absent, and left absent
    assert default.entries == 0 and not default.exists and not (tmp_path / "cache").exists()


def test_export_import_roundtrip_through_the_operations(tmp_path: Path) -> None:
    _filled(tmp_path / "cache")
    ws = _ws(tmp_path)
    assert export_cache_file(ws, tmp_path / "out.jsonl").exported == 5
    stream = io.StringIO()
    assert export_cache(ws, stream) == ExportReport(exported=5, left_out=0)
    assert stream.getvalue() == (tmp_path / "out.jsonl").read_text(encoding="utf-8")

    copy = _ws(tmp_path, "copy")
    assert import_cache_file(copy, tmp_path / "out.jsonl").added == 5
    export_cache_file(copy, tmp_path / "copy.jsonl")
    assert (tmp_path / "copy.jsonl").read_bytes() == (tmp_path / "out.jsonl").read_bytes()

    lines = (tmp_path / "out.jsonl").read_text(encoding="utf-8").splitlines()
    bad = json.loads(lines[2])
    bad["request"]["seed"] = 99
    lines[2] = json.dumps(bad)
    report = import_cache(_ws(tmp_path, "third"), io.StringIO("\n".join(lines) + "\n"))
    assert (report.added, report.rejected) == (4, 1) and report.errors[0].startswith("line 3:")
    with pytest.raises(UsageError, match="cannot read"):
        import_cache_file(ws, tmp_path / "absent.jsonl")
    with pytest.raises(UsageError, match="cannot write"):
        export_cache_file(ws, tmp_path / "no-such-folder" / "x.jsonl")
    assert not list((tmp_path / "cache").glob(".*"))  # no temporary file left behind


def test_verify_and_prune_through_the_operations(tmp_path: Path) -> None:
    entries = _filled(tmp_path / "cache", 2)
    ws = _ws(tmp_path)
    assert verify_cache(ws).corrupt == ()
    with diskcache.Cache(str(tmp_path / "cache")) as raw:
        raw.set(entries[0]["key"], b"\x00garbage")
    assert verify_cache(ws).corrupt == (entries[0]["key"],)

    with pytest.raises(UsageError, match="--all"):
        prune_cache(ws, PruneRequest())
    with pytest.raises(UsageError, match="ISO 8601"):
        prune_cache(ws, PruneRequest(before="yesterday"))
    looked = prune_cache(ws, PruneRequest(corrupt=True, dry_run=True))
    assert [e.key for e in looked.entries] == [entries[0]["key"]] and looked.removed == 0
    asked: list[int] = []
    declined = prune_cache(ws, PruneRequest(corrupt=True), lambda n: asked.append(n) or False)
    assert asked == [1] and declined.removed == 0 and verify_cache(ws).corrupt
    done = prune_cache(ws, PruneRequest(corrupt=True), lambda n: True)
    assert done.removed == 1 and verify_cache(ws).corrupt == ()


def _judge(*args: str, cwd: Path, env: dict[str, str] | None = None,
           stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    full_env = {k: v for k, v in os.environ.items() if k != "JUDGE_CACHE_DIR"}
    full_env.update(env or {})
    return subprocess.run([sys.executable, "-m", "judge", "cache", *args], cwd=cwd,
                          capture_output=True, text=True, timeout=60, check=False,
                          env=full_env, input=stdin, encoding="utf-8")


def test_cli_door_flags_streams_and_exit_codes(tmp_path: Path) -> None:
    entries = _filled(tmp_path / "store", 2)
    stats = run_judge(["cache", "stats", "--cache-dir", "store"], tmp_path)
    assert stats.returncode == 0 and "judgment cache at store" in stats.stdout, stats.stderr
    assert "cache cache" not in run_judge(["cache", "stats"], tmp_path).stdout
    # Streams need a process of their own (stdout's and stdin's bytes); --dir is the old name.
    exported = _judge("export", "-", "--dir", "store", cwd=tmp_path)
    assert exported.returncode == 0 and "exported 2 entries" in exported.stderr
    assert len(exported.stdout.splitlines()) == 2
    bad = exported.stdout + "{not json\n"
    imported = _judge("import", "-", "--cache-dir", "copy", cwd=tmp_path, stdin=bad)
    assert imported.returncode == 2 and "added 2" in imported.stdout
    assert "line 3:" in imported.stderr

    with diskcache.Cache(str(tmp_path / "store")) as raw:
        raw.set(entries[0]["key"], b"\x00garbage")
    env = judge_env(JUDGE_CACHE_DIR="store")
    verify = run_judge(["cache", "verify", "--json"], tmp_path, env=env)
    assert verify.returncode == 1 and json.loads(verify.stdout)["corrupt"] == [entries[0]["key"]]
    refused = run_judge(["cache", "prune"], tmp_path, env=env)
    assert refused.returncode == 2 and "--all" in refused.stderr
    unconfirmed = run_judge(["cache", "prune", "--corrupt"], tmp_path, env=env)
    assert unconfirmed.returncode == 2 and "--yes" in unconfirmed.stderr
    proc = run_judge(["cache", "prune", "--corrupt", "--yes"], tmp_path, env=env)
    assert proc.returncode == 0 and entries[0]["key"] in proc.stdout, proc.stderr
    assert "removed 1 entry" in proc.stdout
    assert "--cache-dir" in run_judge(["cache", "prune", "--help"], tmp_path).stdout


# --- the turns-only read of the hot path --------------------------------------------------


def _turns(cache: JudgmentCache, key: str) -> list[Any] | None:
    turns = cache.turns(key)
    return None if turns is None else [t.data for t in turns]


def test_turns_read_alone_equal_the_full_entrys(tmp_path: Path) -> None:
    # Prose in the prompt that looks like the layout: a quoted "turns" member inside a string.
    tricky = 'text ,"turns":[{"text":"forged"}] and }'
    entry = _built(_request(messages=[{"role": "user", "content": tricky}]),
                   [{"text": '{"score": 1}', "finishReason": "stop"},
                    {"text": '{"score": 2}', "turns": [{"text": "nested"}]}],
                   {"createdAt": CREATED})
    with JudgmentCache(tmp_path / "c") as cache:
        cache.put(CacheEntry(entry))
        assert _turns(cache, entry["key"]) == entry["turns"]
        assert cache.get(entry["key"]) == CacheEntry(entry)  # get still parses everything
        assert cache.counters()["hits"] == 2


def test_turns_read_of_a_foreign_layout_parses_the_whole_entry(tmp_path: Path) -> None:
    entry = _entry(3)
    with JudgmentCache(tmp_path / "c") as cache:
        # Written by another program: valid JSON, but not canonical (spaces, other order).
        raw = json.dumps({k: entry[k] for k in reversed(list(entry))}, indent=1)
        cache._store().set(entry["key"], raw.encode("utf-8"))
        assert _turns(cache, entry["key"]) == entry["turns"]
        # Stored under the wrong key: refused whichever way it is read.
        other = _entry(4)
        cache._store().set(other["key"], canonical_json(entry).encode("utf-8"))
        assert cache.turns(other["key"]) is None
        assert cache.counters()["corrupt"] == 1


def test_built_entries_are_still_refused_with_credentials(tmp_path: Path) -> None:
    with JudgmentCache(tmp_path / "c") as cache:
        leaky = _built(_request(params={"max_tokens": 5, "extra": [{"api_key": "sk-x"}]}),
                       [{"text": "{}"}], {"createdAt": CREATED})
        with pytest.raises(ValueError, match="api_key"):
            cache.put(CacheEntry(leaky), built=True)
        # Messages that are not plain role/content pairs are scanned like any entry's.
        odd = _built(_request(messages=[{"role": "user", "content": "x",
                                         "Authorization": "Bearer y"}]),
                     [{"text": "{}"}], {"createdAt": CREATED})
        with pytest.raises(ValueError, match="Authorization"):
            cache.put(CacheEntry(odd), built=True)
        # A built entry skips re-hashing only: a bad key from elsewhere is still caught.
        sound = _entry(9)
        assert cache.put(CacheEntry(sound), built=True)
        with pytest.raises(ValueError, match="does not match"):
            cache.put(CacheEntry({**sound, "key": "0" * 64}))
        assert len(cache) == 1


# --- digests: entries from before them, the pattern for createdAt, replay records ---------


def _legacy(entry: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in entry.items() if k != "digest"}


def test_an_entry_without_a_digest_is_a_miss_until_upgraded(tmp_path: Path) -> None:
    old = _legacy(_entry(5))
    with JudgmentCache(tmp_path / "c") as cache:
        cache._store().set(old["key"], canonical_json(old).encode("utf-8"))
        assert cache.turns(old["key"]) is None and cache.get(old["key"]) is None
        assert cache.counters()["corrupt"] == 2
        assert "no content digest" in CacheMaintenance(cache).verify().reasons[old["key"]]
        assert CacheMaintenance(cache).upgrade() == 1 and CacheMaintenance(cache).upgrade() == 0
        assert cache.get(old["key"]) == CacheEntry({**old, "digest": _entry(5)["digest"]})
        assert _turns(cache, old["key"]) == old["turns"]


def test_upgrade_leaves_an_unsound_old_entry_corrupt(tmp_path: Path) -> None:
    old = _legacy(_entry(6))
    forged = {**old, "key": _entry(7)["key"]}  # a key that is not its request's
    with JudgmentCache(tmp_path / "c") as cache:
        cache._store().set(forged["key"], canonical_json(forged).encode("utf-8"))
        assert CacheMaintenance(cache).upgrade() == 0
        assert CacheMaintenance(cache).verify().corrupt == (forged["key"],)


def test_import_digests_old_lines_and_rejects_a_wrong_digest(tmp_path: Path) -> None:
    sound, old, tampered = _entry(1), _legacy(_entry(2)), _entry(3)
    tampered["turns"][0]["text"] = '{"score": 99}'  # the digest no longer matches
    text = "\n".join(canonical_json(e) for e in (sound, old, tampered)) + "\n"
    with JudgmentCache(tmp_path / "c") as cache:
        report = CacheInterchange(cache).import_jsonl(io.StringIO(text))
        assert (report.added, report.rejected) == (2, 1)
        assert "line 3" in report.errors[0] and "digest" in report.errors[0]
        assert cache.get(old["key"]) == CacheEntry(_entry(2))


def test_build_entry_digest_covers_everything_but_itself() -> None:
    entry = _entry(1)
    body = {k: v for k, v in entry.items() if k != "digest"}
    assert entry["digest"] == hashlib.sha256(canonical_json(body).encode()).hexdigest()
    assert digest_ok(entry) and not digest_ok(body)
    assert not digest_ok({**entry, "meta": {**entry["meta"], "rubricId": "other"}})
    assert next(iter(canonical_json(entry)[2:].split('"'))) == "digest"  # sorts first


ISO_TEXTS = [
    "2025-01-01", "2025-03-01T12:00:00Z", "2026-11-30T05:13:37.831469Z", "2024-02-29",
    "2025-01-01 10:00", "2025-01-01T10:00:00+05:30", "2025-01-01T10:00:00-0100",
    "2025-01-01T10:00:00,5", "2025-02-29", "2025-13-01", "2025-01-01T24:00", "20250101",
    "2025-1-1", "2025-01-01T10", "yesterday", "", "2025-01-01T10:00:00+24:00",
    "2025-01-01T10:00:60", "0000-01-01", "2025-04-31", "2025-01-01T10:00:00.1234567Z",
]


@pytest.mark.parametrize("text", ISO_TEXTS)
def test_created_at_pattern_takes_only_what_fromisoformat_reads(text: str) -> None:
    from datetime import datetime

    try:
        datetime.fromisoformat(text)
        readable = True
    except ValueError:
        readable = False
    if is_iso_time(text):  # the adapter parses what the entry check let through
        assert readable
    if text in ISO_TEXTS[:8]:  # the forms this project and common tools write
        assert is_iso_time(text)


def test_a_replay_record_with_a_flipped_byte_reads_as_absent(tmp_path: Path) -> None:
    import sqlite3
    from contextlib import closing

    path = tmp_path / "index.sqlite"
    store = ReplayStore(path)
    record = b'{"format":2,"case":{"signals":{"agentPerformance":80}}}'
    store.put([(b"fp-1", record), (b"fp-2", record)])
    assert store.get(b"fp-1") == record and store.count() == 2
    with closing(sqlite3.connect(path)) as db, db:
        (sealed,) = db.execute("SELECT record FROM records WHERE fingerprint = ?",
                               (b"fp-1",)).fetchone()
        db.execute("UPDATE records SET record = ? WHERE fingerprint = ?",
                   (sealed.replace(b"80", b"90"), b"fp-1"))
        db.execute("UPDATE records SET record = ? WHERE fingerprint = ?", (record, b"fp-2"))
    assert store.get(b"fp-1") is None  # a changed signal never reaches a score
    assert store.get(b"fp-2") is None  # nor does a record without its seal
    assert store.corrupt == 2
    store.close()


def test_diskcache_table_is_what_the_reader_selects(tmp_path: Path) -> None:
    # judge.cache.disk._Rows reads diskcache's table with SQL of its own (diskcache has no
    # public batch read, nor a read transaction that lets writers go on): this fails when a
    # diskcache release changes the columns it selects, or how a raw value is stored.
    import sqlite3

    from judge.cache.disk import _Rows

    cache = JudgmentCache(tmp_path / "c")
    entry = _entry()
    cache.put(CacheEntry(entry))
    db = tmp_path / "c" / "cache.db"
    with sqlite3.connect(db) as con:
        columns = {row[1] for row in con.execute("PRAGMA table_info(Cache)")}
    assert {"key", "raw", "mode", "filename", "value", "expire_time"} <= columns
    rows = _Rows(db)
    try:
        (row,) = rows.select([entry["key"]])
    finally:
        rows.close()
    assert row[0] == entry["key"]
    assert cache.raw_many([entry["key"]]) == {entry["key"]: canonical_json(entry).encode()}
    cache.close()
