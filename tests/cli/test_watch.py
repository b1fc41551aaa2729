"""``judge run --watch``: a template edit re-judges exactly the cases whose
prompt it touched and the diff reports those; a malformed rubric saved mid-edit prints the
usual error, writes nothing and the watch goes on; a burst of saves is one rerun; Ctrl-C
while waiting ends it with exit 0. The watcher's debounce and bounds are tested on files with
a scripted clock.
"""

from __future__ import annotations

import os
import re
import signal
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml
from conftest import judge_env, run_judge
from forked import spawn_judge
from test_tuning import _copy_templates

from judge.app.runs.watching import BURST_LIMIT_S, Watcher, watched_files
from judge.app.workspace.fixtures import generate_cases, suite_to_yaml
from judge.app.workspace.workspace import Workspace
from judge.system.resources import load_rubric

MODEL = "hosted_vllm/fake-judge"
COUNT = 8
NO_TASK = {1, 4, 6}
"""The cases written without a task: the only ones whose prompt says "(none given)"."""
WAIT_S = 120


def _suite(workspace: Path) -> list[str]:
    """A suite of COUNT LLM cases, NO_TASK of them without a task; the touched ids."""
    suite = generate_cases("watch-loop", COUNT, rubric=load_rubric("task-evaluation"))
    data = yaml.safe_load(suite_to_yaml(suite))
    for n in NO_TASK:
        data["cases"][n].pop("input", None)
    (workspace / "suite.yaml").write_text(yaml.safe_dump(data, sort_keys=False),
                                          encoding="utf-8")
    return sorted(data["cases"][n]["id"] for n in NO_TASK)


class _Lines:
    """A pipe read line by line in a thread, so the test can wait for a line (bounded)."""

    def __init__(self, pipe: Any) -> None:
        self.lines: list[str] = []
        self.thread = threading.Thread(target=self._read, args=(pipe,), daemon=True)
        self.thread.start()

    def _read(self, pipe: Any) -> None:
        for line in pipe:
            self.lines.append(line)

    def wait(self, predicate: Callable[[list[str]], bool], seconds: float = WAIT_S) -> None:
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            if predicate(self.lines):
                return
            time.sleep(0.05)
        raise AssertionError("timed out; so far:\n" + "".join(self.lines))

    def count(self, text: str) -> int:
        return sum(text in line for line in self.lines)


def _runs(workspace: Path) -> int:
    with Workspace.open(workspace, env={}).open_store() as store:
        return len(store.list_runs(limit=None))


def test_a_template_edit_rejudges_exactly_the_touched_cases(fake_server: Any,
                                                            workspace: Path) -> None:
    touched = _suite(workspace)
    template = _copy_templates(workspace)
    assert template.read_text(encoding="utf-8").count("(none given)") == 1
    # A process of its own (forked: ``forked``), so Ctrl-C is a real SIGINT to the watch.
    proc = spawn_judge(
        ["--plain", "run", "suite.yaml", "--model", MODEL, "--api-base",
         f"{fake_server.base_url}/v1", "--no-check", "--watch", "--watch-runs", "5",
         "--detail"],
        workspace, judge_env(), pipes=True)
    assert proc.stdout is not None and proc.stderr is not None
    out, err = _Lines(proc.stdout), _Lines(proc.stderr)
    try:
        err.wait(lambda _: err.count("watching ") == 1)
        assert fake_server.stats()["requests"] == COUNT
        assert _runs(workspace) == 1

        # A malformed rubric saved mid-edit: the usual error, nothing written, still watching.
        rubrics = workspace / "rubrics"
        rubrics.mkdir()
        (rubrics / "task-evaluation.yaml").write_text("id: task-evaluation\ncategories: [\n")
        err.wait(lambda _: err.count("watching ") == 2)
        assert any("error:" in line and "task-evaluation.yaml" in line for line in err.lines)
        assert fake_server.stats()["requests"] == COUNT
        assert _runs(workspace) == 1

        # One burst: the bad rubric goes, the template changes twice (a save, then another).
        (rubrics / "task-evaluation.yaml").unlink()
        text = template.read_text(encoding="utf-8")
        template.write_text(text.replace("(none given)", "(no task)"), encoding="utf-8")
        time.sleep(0.1)
        template.write_text(text.replace("(none given)", "(no task was given)"),
                            encoding="utf-8")
        err.wait(lambda _: err.count("watching ") == 3)
        assert err.count("re-running") == 2  # the burst was one rerun
        assert fake_server.stats()["requests"] == COUNT + len(touched)
        assert _runs(workspace) == 2

        proc.send_signal(signal.SIGINT)  # Ctrl-C while waiting ends the watch: exit 0
        assert proc.wait(timeout=WAIT_S) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=30)
        out.thread.join(timeout=30)
        err.thread.join(timeout=30)
        proc.stdout.close()
        proc.stderr.close()
    stdout = "".join(out.lines)
    assert stdout.count("what moved since run") == 1  # no diff after the failed rerun
    diff = stdout.split("what moved since run", 1)[1]
    assert f"cache: {COUNT - len(touched)} of {COUNT} judgments reused" in stdout
    assert f"{len(touched)} judged anew" in stdout
    listed = re.search(r"changed rationale: (.*)", diff)
    assert listed is not None, diff
    assert sorted(re.findall(r"([\w.:/-]+) \(", listed.group(1))) == touched
    compared = re.search(r"(\d+) of (\d+) cases changed", diff)
    assert compared is not None and int(compared.group(2)) == COUNT
    assert int(compared.group(1)) <= len(touched)


def test_watch_refuses_json_and_stops_at_its_bound(fake_server: Any, workspace: Path) -> None:
    _suite(workspace)
    refused = run_judge(["run", "suite.yaml", "--watch", "--json"], workspace)
    assert refused.returncode == 2 and "--watch" in refused.stderr
    assert not (workspace / ".judge").exists()  # nothing written
    once = run_judge(["run", "suite.yaml", "--model", MODEL, "--api-base",
                      f"{fake_server.base_url}/v1", "--no-check", "--watch", "--watch-runs",
                      "0"], workspace)
    assert once.returncode == 0, once.stderr
    assert "save one to re-run" not in once.stderr and _runs(workspace) == 1


class _Script:
    """A clock that moves only when the watcher sleeps, and edits due at given times."""

    def __init__(self, edits: list[tuple[float, Callable[[], None]]]) -> None:
        self.now, self.edits, self.sleeps = 0.0, sorted(edits, key=lambda e: e[0]), 0

    def clock(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.sleeps += 1
        assert self.sleeps < 100_000  # a bound of its own
        self.now += seconds
        while self.edits and self.edits[0][0] <= self.now:
            self.edits.pop(0)[1]()


def _touch(path: Path, text: str) -> Callable[[], None]:
    def write() -> None:
        path.write_text(text)
        # The scripted clock outruns the file system's: give each save its own mtime.
        ns = int(1e9 * (1_000_000 + len(text)))
        os.utime(path, ns=(ns, ns))
    return write


def test_a_burst_of_saves_is_one_wakeup_after_the_quiet(tmp_path: Path) -> None:
    suite, template = tmp_path / "suite.yaml", tmp_path / "prompts" / "judge.md.j2"
    template.parent.mkdir()
    suite.write_text("a")
    template.write_text("t")
    script = _Script([(1.0, _touch(template, "tt")), (1.2, _touch(template, "ttt")),
                      (1.3, _touch(suite, "aa"))])
    watcher = Watcher(files=lambda: watched_files(tmp_path, suite, [None]),
                      clock=script.clock, sleep=script.sleep)
    watcher.mark()
    assert watcher.wait() == sorted([suite, template])
    assert 1.3 + watcher.debounce_s <= script.now < 1.3 + watcher.debounce_s + 2 * watcher.poll_s
    assert watcher.changed() == []  # the state after the burst is the new mark


def test_a_new_template_counts_and_a_quiet_workspace_ends_the_wait(tmp_path: Path) -> None:
    suite = tmp_path / "suite.yaml"
    suite.write_text("a")
    (tmp_path / "prompts").mkdir()
    added = tmp_path / "prompts" / "new.md.j2"
    script = _Script([(5.0, _touch(added, "x"))])
    watcher = Watcher(files=lambda: watched_files(tmp_path, suite, ["my/rubric.yaml"]),
                      clock=script.clock, sleep=script.sleep)
    assert tmp_path / "my" / "rubric.yaml" in watcher.files()  # a rubric by path is watched
    watcher.mark()
    assert watcher.wait() == [added]
    assert watcher.wait(max_wait_s=3.0) == []  # no save: bounded
    assert 3.0 <= script.now - 5.0 - watcher.debounce_s < 3.0 + 2 * watcher.poll_s


def test_an_endless_burst_reruns_after_the_burst_limit(tmp_path: Path) -> None:
    suite = tmp_path / "suite.yaml"
    suite.write_text("a")
    saves = [(0.1 * k, _touch(suite, "a" * (k + 2))) for k in range(1, 400)]
    script = _Script(saves)
    watcher = Watcher(files=lambda: watched_files(tmp_path, suite, []), clock=script.clock,
                      sleep=script.sleep)
    watcher.mark()
    assert watcher.wait() == [suite]
    assert BURST_LIMIT_S <= script.now < BURST_LIMIT_S + 1.0
