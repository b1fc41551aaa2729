"""The README's three jobs, run as written, in a fresh folder, against the loopback fake judge.

The README starts the fake judge with one line and points the judges at it with another
(``export JUDGE_API_BASE=…``); this test runs that same server line on a free port and
sets the same variable. It then runs each command line of the three job blocks (the
``bash`` block after each ``<!-- README job: NAME -->`` marker), one ``bash -c`` a line, in
order, in one folder that holds what a clone holds (the examples, the shipped rubrics and
templates), and checks each line's exit status: 0 unless the line's comment says ``exit N``.
The replay block runs with the fake judge stopped. What each job claims in words is
checked on the output of its lines.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
from pathlib import Path

from conftest import ROOT, free_port, judge_env

README = ROOT / "README.md"
_MARK = re.compile(r"<!-- README job: (\w+) -->\n```bash\n(.*?)```", re.S)
_EXIT = re.compile(r"#.*?\bexit (\d+)\b")


def job_blocks() -> dict[str, list[str]]:
    """Each job's command lines (continuations joined), by the marker's name."""
    text = README.read_text(encoding="utf-8")
    blocks = {name: _lines(body) for name, body in _MARK.findall(text)}
    assert list(blocks) == ["swap", "tune", "replay"], list(blocks)
    return blocks


def _lines(body: str) -> list[str]:
    joined = body.replace("\\\n", " ")
    return [line for line in joined.splitlines() if line.strip() and not line.startswith("#")]


def setup_lines() -> tuple[str, str]:
    """The README's two set-up lines: the fake judge's start and the ``export``."""
    text = README.read_text(encoding="utf-8")
    section = text.split("\n## The three jobs\n", 1)[1]
    found = re.search(r"```bash\n(.*?)```", section, re.S)
    assert found, "the three jobs' section has no set-up block"
    lines = [line for line in found.group(1).splitlines() if line.strip()]
    assert len(lines) == 2, lines
    return lines[0], lines[1]


def expected_exit(line: str) -> int:
    """0, or the N of an ``exit N`` the line's comment states."""
    found = _EXIT.search(line)
    return int(found.group(1)) if found else 0


class Folder:
    """A clone-like folder, the environment the README's shell would have, and a runner."""

    def __init__(self, root: Path, api_base: str) -> None:
        self.root = root
        for part in ("examples", "rubrics", "prompts"):
            shutil.copytree(ROOT / part, root / part)
        bin_dir = str(Path(sys.executable).parent)
        self.env = judge_env(PATH=bin_dir + os.pathsep + os.environ["PATH"],
                             JUDGE_API_BASE=api_base)
        self.env.pop("CI", None)

    def run_block(self, lines: list[str]) -> list[tuple[str, subprocess.CompletedProcess[str]]]:
        done = []
        for line in lines:
            proc = subprocess.run(["bash", "-c", line], cwd=self.root, env=self.env, text=True,
                                  capture_output=True, timeout=180, check=False)
            want = expected_exit(line)
            assert proc.returncode == want, (
                f"README line exited {proc.returncode}, its comment says {want}: {line}\n"
                f"{proc.stdout}\n{proc.stderr}")
            done.append((line, proc))
        return done


def _start_server(line: str, port: int) -> subprocess.Popen[str]:
    command = line.split("&", 1)[0].split("#", 1)[0]
    argv = shlex.split(command.replace("8931", str(port)))
    assert argv[:2] == ["python", "tests/fakes/fake_server.py"], argv
    proc = subprocess.Popen([sys.executable, str(ROOT / argv[1]), *argv[2:]], text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                            start_new_session=True)
    assert proc.stdout is not None
    ready = proc.stdout.readline()
    assert ready.startswith("READY http://127.0.0.1:"), ready
    return proc


def test_the_readme_jobs_run_as_written(tmp_path: Path) -> None:
    server_line, export_line = setup_lines()
    assert export_line.split("#", 1)[0].strip() == \
        "export JUDGE_API_BASE=http://127.0.0.1:8931/v1"
    blocks = job_blocks()
    port = free_port()
    server = _start_server(server_line, port)
    try:
        folder = Folder(tmp_path / "clone", f"http://127.0.0.1:{port}/v1")
        swap = folder.run_block(blocks["swap"])
        tune = folder.run_block(blocks["tune"])
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        server.wait(timeout=30)
        if server.stdout is not None:
            server.stdout.close()
    replay = folder.run_block(blocks["replay"])
    _check_swap(swap)
    _check_tune(tune)
    _check_replay(replay)


Ran = list[tuple[str, subprocess.CompletedProcess[str]]]


def _out(ran: Ran, command: str, nth: int = 0) -> str:
    """The stdout of the ``nth`` line of a block that starts with ``command``."""
    found = [proc.stdout for line, proc in ran if line.startswith(command)]
    assert len(found) > nth, (command, [line for line, _ in ran])
    return found[nth]


def _check_swap(ran: Ran) -> None:
    run = "judge run examples/task-evaluation/suite.yaml"
    assert "first baseline recorded" in _out(ran, run, 0)
    assert "not compared" in _out(ran, run, 1).splitlines()[0]
    compared = _out(ran, "judge compare last~1 last").splitlines()
    assert len(compared) <= 25, compared
    assert "agree" in compared[0] and "fake-judge+25" in compared[0], compared[:3]
    assert any("people" in line for line in compared), compared


def _check_tune(ran: Ran) -> None:
    run = "judge run examples/task-evaluation/suite.yaml"
    assert "cache: 14 of 14 judgments reused" in _out(ran, run, 0)
    edited = re.search(r"cache: (\d+) of 14 judgments reused .*?, (\d+) judged anew",
                       _out(ran, run, 1))
    assert edited, _out(ran, run, 1)
    reused, anew = int(edited.group(1)), int(edited.group(2))
    assert reused > 0 and anew > 0 and reused + anew == 14  # only the prompts it reached
    assert re.match(r"\d+ of 16 cases changed", _out(ran, "judge diff last~1 last"))
    rescored = _out(ran, "judge rescore last")
    assert "0 model calls" in rescored.splitlines()[0]
    assert "True" not in rescored and "False" not in rescored  # pass and fail, as diff says
    assert "recorded baselines/task-evaluation-example.json" in _out(ran, "judge baseline record")


def _check_replay(ran: Ran) -> None:
    assert "rejected 0" in _out(ran, "judge cache import")
    replayed = _out(ran, "judge run examples/task-evaluation/suite.yaml")
    assert replayed.startswith("✓ no regression"), replayed
    assert "model calls 0" in replayed
    assert _out(ran, "judge diff last~1 last").startswith("0 of 16 cases changed")


def test_the_commands_table_names_every_command_and_no_other() -> None:
    """A row per top-level command of ``judge --help``, each naming all its subcommands."""
    from judge.cli.app import walk

    section = README.read_text(encoding="utf-8").split("\n## Commands\n", 1)[1]
    rows = {}
    for line in section.split("\n## ", 1)[0].splitlines():
        cell = re.split(r"(?<!\\)\|", line)[1] if line.startswith("| `judge ") else ""
        if cell:
            words = re.findall(r"[a-z][a-z-]*", cell.replace("\\|", " "))
            rows.setdefault(words[1], set()).update(words[2:])
    names = [name for name, command in walk() if not getattr(command, "hidden", False)]
    top = [name for name in names if " " not in name]
    assert sorted(rows) == sorted(top)
    for name in names:
        first, *rest = name.split()
        assert set(rest) <= rows[first], f"the README's row of `judge {first}` lacks {name}"
