"""One JSON grammar for what a person edits or a tool hands over: ``core/text/strict_json.py``.

``json.loads`` keeps the last of two duplicate keys, reads ``NaN`` and crashes on 5,000 digits;
pydantic's JSON parser keeps the last key too. Every call of ``json.load``/``json.loads`` or of
pydantic's ``model_validate_json``/``validate_json`` under ``judge/`` is listed below with why
it may skip the strict reader: each reads something this package wrote itself and checks
(a sealed or digest-checked record, its own protocol) or a judge's reply, never a file of a
person's or another tool's. A new call fails here until it is the strict reader or is listed
with its reason; a listed call that is gone fails too, so the list stays true.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "judge"
READERS = frozenset({"load", "loads"})
PYDANTIC_READERS = frozenset({"model_validate_json", "validate_json"})

_ENTRY = "a cache entry: written by this package and checked by its digest on every read"
_STORED = ("a run store value, parsed once its seal verified (the strict reader is 2x slower "
           "on results: bench/strict_json_cost.py)")
_OWN_TEXT = "text this command has just written itself, printed as JSON"
_WORKER = "a frame of the worker's own protocol between two processes of this package"

ALLOWED: dict[tuple[str, str], tuple[int, str]] = {
    ("app/admin/cache_ops.py", "pull_cache"): (1, "a shared-tier entry, checked in full (digest, "
                                            "key, credentials) before it is stored"),
    ("cache/disk.py", "_parsed"): (1, _ENTRY + " (the strict reader is 2x slower "
                                                    "on entries: bench/strict_json_cost.py)"),
    ("cache/entry_bytes.py", "turns_alone"): (1, "the replay fast path's turns of an entry "
                                                 "whose digest it checked"),
    ("cache/maintenance.py", "CacheMaintenance.upgrade"): (1, _ENTRY),
    ("cache/shared.py", "sealed_digest"): (1, "a shared-tier row, checked against its digest "
                                              "and, with the secret, its signature"),
    ("cache/tiers.py", "TieredCache._from_shared"): (1, _ENTRY),
    ("cli/baseline_cmds.py", "baseline_record"): (1, _OWN_TEXT),
    ("cli/baseline_cmds.py", "baseline_show"): (1, _OWN_TEXT),
    ("cli/judges_calibrate.py", "calibrate_cmd"): (1, _OWN_TEXT),
    ("core/formats/output_schema.py", "output_schema"): (
        1, "the schema this module derived and kept as canonical JSON"),
    ("core/scoring/replies.py", "extract_json"): (
        3, "a judge's reply: data, read leniently (a fence, trailing commas) and validated by "
           "the verdict model; an invalid one gets a repair turn"),
    ("core/text/strict_json.py", "loads_strict"): (1, "the strict reader itself"),
    ("core/text/strict_json.py", "_refused_token"): (1, "one string token of a text the strict "
                                                   "reader has read whole"),
    ("core/text/strict_json.py", "strict_model"): (1, "the canonical JSON of a value the strict "
                                                 "reader has read, typed by the model"),
    ("engine/replay.py", "_record"): (1, "a replay-index record: written here, sealed"),
    ("engine/replay.py", "record_problem"): (1, "a replay-index record: written here, sealed"),
    ("llm/local.py", "server_status"): (1, "the local judge's state file, written by "
                                           "llm/local.py"),
    ("llm/local.py", "stop_server"): (1, "the local judge's state file, written by "
                                         "llm/local.py"),
    ("pytest_plugin/session.py", "JudgeSession.suite"): (1, "the session's record, written by "
                                                            "another worker of the session"),
    ("server/door.py", "_surrogate"): (1, "a request body looked at only to name where a lone "
                                          "surrogate sits (422); the app parses it itself"),
    ("store/batch_jobs.py", "BatchStore.get"): (1, "a batch job document the store wrote"),
    ("store/batch_jobs.py", "BatchStore.list"): (1, "a batch job document the store wrote"),
    ("store/labels.py", "LabelStore._checked"): (1, "a label row's value, once its seal "
                                                    "verified"),
    ("store/runs.py", "_checked_result"): (1, _STORED),
    ("store/runs.py", "_checked_run"): (1, _STORED),
    ("store/seal.py", "check_copies"): (1, _STORED),
    ("store/seal.py", "run_copies_ok"): (1, _STORED),
    ("system/resources.py", "_read_compiled"): (2, "a compiled suite, written by this package "
                                                   "and checked by its digest"),
    ("worker/client.py", "_answer"): (1, _WORKER),
    ("worker/client.py", "run"): (1, _WORKER),
    ("worker/client.py", "status"): (1, _WORKER),
    ("worker/server.py", "parse_head"): (1, _WORKER),
}


def _is_reader(call: ast.Call, from_json: set[str]) -> bool:
    func = call.func
    if isinstance(func, ast.Attribute):
        return func.attr in PYDANTIC_READERS or (
            func.attr in READERS and isinstance(func.value, ast.Name) and func.value.id == "json")
    return isinstance(func, ast.Name) and func.id in from_json


def _calls(node: ast.AST, scope: tuple[str, ...], from_json: set[str],
           found: dict[str, int]) -> None:
    for child in ast.iter_child_nodes(node):
        if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            _calls(child, (*scope, child.name), from_json, found)
            continue
        if isinstance(child, ast.Call) and _is_reader(child, from_json):
            where = ".".join(scope) or "<module>"
            found[where] = found.get(where, 0) + 1
        _calls(child, scope, from_json, found)


def json_reader_calls() -> dict[tuple[str, str], int]:
    """Every call of a JSON reader under judge/, by (module, enclosing function): how many."""
    out: dict[tuple[str, str], int] = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        from_json = {a.asname or a.name for n in ast.walk(tree)
                     if isinstance(n, ast.ImportFrom) and n.module == "json"
                     for a in n.names if a.name in READERS}
        found: dict[str, int] = {}
        _calls(tree, (), from_json, found)
        rel = path.relative_to(PACKAGE).as_posix()
        out.update({(rel, where): n for where, n in found.items()})
    return out


def test_every_json_reader_outside_the_strict_one_is_listed_with_its_reason() -> None:
    found = json_reader_calls()
    unlisted = {site: n for site, n in found.items() if ALLOWED.get(site, (0,))[0] != n}
    assert not unlisted, (
        f"JSON read outside judge/core/text/strict_json.py: {sorted(unlisted.items())}. A file a "
        "person edits or a tool hands over is read with strict_document/loads_strict; a "
        "record this package wrote and checks may be listed in ALLOWED with its reason")
    gone = sorted(set(ALLOWED) - set(found))
    assert not gone, f"listed in ALLOWED but no longer called: {gone}"


def test_the_scan_sees_each_form_of_a_reader(tmp_path: Path) -> None:
    """The walk finds ``json.loads``, a ``from json import loads`` alias and pydantic's."""
    source = ("import json\nfrom json import load as read\n"
              "def a():\n    return json.loads('1')\n"
              "class B:\n    def c(self):\n        return read(x) or M.model_validate_json(y)\n")
    found: dict[str, int] = {}
    _calls(ast.parse(source), (), {"read"}, found)
    assert found == {"a": 1, "B.c": 2}
