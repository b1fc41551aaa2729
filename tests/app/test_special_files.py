"""Special files at every door: a device or a FIFO where a file is expected is refused by type.

Each door that reads a file a person hands us (a suite, ``--watch``, a template, the settings,
a pair suite, a score file, monitor records, a trace, a cache export, the server's suite
index) is given ``/dev/zero`` and ``/dev/urandom`` behind a link, and a FIFO: exit 2 (a 4xx
over HTTP) naming the file, never a read that does not end or a wait for a writer, and the
workspace byte-identical. Each call runs in a thread joined with a bound: a door that
blocked on the FIFO is reported, and unblocked, instead of hanging the suite.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import threading
from pathlib import Path

import pytest
from bad_inputs import MODEL, OK_CASE, snapshot
from conftest import EXAMPLE_SUITE, run_judge
from fastapi.testclient import TestClient

from judge.app.workspace.workspace import Workspace
from judge.server.app import create_app

KINDS = ("zero", "urandom", "fifo")
BOUND_S = 30.0
"""How long a door may take to refuse (it takes milliseconds; a blocked one never ends)."""


def _plant(path: Path, kind: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    if kind == "fifo":
        os.mkfifo(path)
    else:
        path.symlink_to(f"/dev/{kind}")


def _unblock(root: Path) -> None:
    """Open every FIFO under ``root`` for writing and close it: a blocked reader sees EOF."""
    for folder, _, files in os.walk(root):
        for name in files:
            path = Path(folder) / name
            if path.is_fifo():
                with contextlib.suppress(OSError):
                    os.close(os.open(path, os.O_WRONLY | os.O_NONBLOCK))


def run_bounded(args: list[str], root: Path) -> subprocess.CompletedProcess[str]:
    """:func:`run_judge` in a thread; fails (after unblocking it) if it does not end in time."""
    done: list[subprocess.CompletedProcess[str]] = []
    worker = threading.Thread(target=lambda: done.append(run_judge(args, root)), daemon=True)
    worker.start()
    worker.join(BOUND_S)
    if worker.is_alive():
        _unblock(root)
        worker.join(BOUND_S)
        pytest.fail(f"judge {' '.join(args)} blocked on a special file")
    return done[0]


PAIRS = "pairs:\n  - id: p1\n    task: t\n    a: one\n    b: two\n"
DOORS: tuple[tuple[str, str, dict[str, str], tuple[str, ...], int], ...] = (
    # (door, the special file, other files, arguments, exit)
    ("run a JSONL suite", "s.jsonl", {}, ("run", "s.jsonl", "--model", MODEL, "--offline"), 2),
    ("run a YAML suite", "s.yaml", {}, ("run", "s.yaml", "--model", MODEL, "--offline"), 2),
    # --watch prints the run's error and ends at its bound (0 reruns): exit 0, not a hang.
    ("run --watch", "s.jsonl", {},
     ("run", "s.jsonl", "--model", MODEL, "--offline", "--watch", "--watch-runs", "0"), 0),
    ("a workspace template", "prompts/judge.md.j2", {"s.jsonl": OK_CASE},
     ("run", "s.jsonl", "--model", MODEL, "--offline"), 2),
    ("an included template", "prompts/evidence.md.j2", {"s.jsonl": OK_CASE},
     ("run", "s.jsonl", "--model", MODEL, "--offline"), 2),
    ("judge.toml", "judge.toml", {"s.jsonl": OK_CASE},
     ("run", "s.jsonl", "--model", MODEL, "--offline"), 2),
    ("pyproject.toml", "pyproject.toml", {"s.jsonl": OK_CASE},
     ("run", "s.jsonl", "--model", MODEL, "--offline"), 2),
    ("a pair suite", "pairs.yaml", {}, ("pairwise", "pairs.yaml", "--model", MODEL,
                                        "--offline"), 2),
    ("a score file", "scores.json", {}, ("score", "scores.json"), 2),
    ("monitor records", "live.jsonl", {}, ("monitor", "live.jsonl"), 2),
    ("an OpenTelemetry trace", "trace.json", {}, ("collect", "otel", "trace.json", "-o",
                                                  "out.yaml"), 2),
    ("a cache export", "x.jsonl", {}, ("cache", "import", "x.jsonl"), 2),
)


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("door", DOORS, ids=[d[0] for d in DOORS])
def test_a_special_file_is_refused_by_type_at_every_door(
        tmp_path: Path, door: tuple[str, str, dict[str, str], tuple[str, ...], int],
        kind: str) -> None:
    _, special, files, args, code = door
    for name, text in files.items():
        (tmp_path / name).write_text(text, encoding="utf-8")
    _plant(tmp_path / special, kind)
    before = snapshot(tmp_path)
    proc = run_bounded(list(args), tmp_path)
    assert proc.returncode == code, (proc.returncode, proc.stderr[-2000:])
    assert "internal error" not in proc.stderr
    # Refused by its type, or (a link out of prompts/) by where it leads: never read.
    said = ("a FIFO" if kind == "fifo" else "a character device", "outside the template folders")
    assert any(words in proc.stderr for words in said), proc.stderr[-2000:]
    assert Path(special).name in proc.stderr and "fix:" in proc.stderr
    assert snapshot(tmp_path) == before


@pytest.mark.parametrize("kind", KINDS)
def test_the_servers_suite_index_lists_a_special_file_with_its_error(tmp_path: Path,
                                                                       kind: str) -> None:
    (tmp_path / "suites").mkdir()
    shutil.copy(EXAMPLE_SUITE, tmp_path / "suites" / "task.yaml")
    (tmp_path / "judge.toml").write_text('cache_mode = "offline"\n', encoding="utf-8")
    _plant(tmp_path / "suites" / "special.jsonl", kind)
    done: list[tuple[dict[str, object], int, str]] = []

    def ask() -> None:
        with TestClient(create_app(Workspace.open(tmp_path, env={})),
                        base_url="http://127.0.0.1") as client:
            listed = {s["id"]: s for s in client.get("/api/suites").json()}
            harness = client.post("/api/suites/special/eval/harness", json={})
            done.append((listed, harness.status_code, harness.text))

    worker = threading.Thread(target=ask, daemon=True)
    worker.start()
    worker.join(BOUND_S)
    if worker.is_alive():
        _unblock(tmp_path)
        pytest.fail("the suite index blocked on a special file")
    listed, status, text = done[0]
    if kind == "fifo":  # inside the workspace: listed, with why it cannot be run
        entry = listed["special"]
        assert entry["cases"] is None and "a FIFO" in str(entry["error"]), entry
        assert status == 422 and "a FIFO" in text, text
    else:  # a link leading out of the workspace is none of its suites
        assert "special" not in listed and status == 404, text
    assert "task-evaluation-example" in listed
