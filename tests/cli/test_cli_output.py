"""Output a CI log can read: whole ids, one line per case, no colour codes, on any width.

The run is an offline replay of the shipped local cache (no model, no network), in
process; one subprocess checks the closed pipe (``judge run … | head``) and one a real
terminal.
"""

from __future__ import annotations

import io
import os
import pty
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from conftest import EXAMPLE_SUITE, ROOT, judge_env, run_judge

from judge.cli import PIPE_CLOSED, main, output
from judge.core.outcomes.usage import cost_text

SHIPPED_CACHE = ROOT / "examples" / "task-evaluation" / "local-smollm2.cache.jsonl"
CASE_IDS = [c["id"] for c in yaml.safe_load(EXAMPLE_SUITE.read_text())["cases"]]
CATEGORIES = ["agentPerformance", "taskOutcomeQuality", "processCompliance"]


@pytest.fixture(scope="module")
def replayed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A workspace holding the shipped cache, one offline run and its baseline."""
    ws = tmp_path_factory.mktemp("output")
    assert run_judge(["cache", "import", str(SHIPPED_CACHE)], ws).returncode == 0
    first = run_judge(["run", str(EXAMPLE_SUITE), "--offline"], ws)
    assert first.returncode == 0, first.stderr
    return ws


def _assert_readable(text: str, *, width: int | None = None) -> None:
    assert "\x1b" not in text
    assert "…" not in text
    lines = text.splitlines()
    for case_id in CASE_IDS:
        # Whole, and first on its own line (inside the table's border): a grep finds it.
        assert any(line.strip("│ ").split()[:1] == [case_id] for line in lines), case_id
    if width is not None:  # a table fits the terminal; a longer text line is the terminal's
        assert all(len(line) <= width for line in lines if "│" in line)


def test_run_prints_its_verdict_first_and_a_screen_by_default(replayed: Path) -> None:
    run_judge(["check"], replayed)  # an offline replay records no baseline: this does
    done = run_judge(["run", str(EXAMPLE_SUITE), "--offline"], replayed)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    # The gate's verdict, then the scores; the run's table of every case: --detail.
    assert lines[0].startswith("✓ no regression  run ")
    assert lines[1].startswith("16 cases: scored 16") and "pass rate" in lines[1]
    assert len(lines) <= 30 and "--detail" in lines[-1]
    assert "70/59→67" not in done.stdout and "no paid calls" in done.stdout
    assert "calls = " not in done.stdout  # each judge's ledger: --detail
    bare = run_judge(["run", str(EXAMPLE_SUITE), "--offline", "--no-check"], replayed)
    assert bare.stdout.splitlines()[0].startswith("16 cases: scored 16")


def test_run_piped_prints_one_whole_line_per_case(replayed: Path) -> None:
    done = run_judge(["run", str(EXAMPLE_SUITE), "--offline", "--detail"], replayed)
    assert done.returncode == 0, done.stderr
    _assert_readable(done.stdout)
    lines = done.stdout.splitlines()
    header = next(n for n, line in enumerate(lines) if line.startswith("run "))
    assert "suite task-evaluation-example" in lines[header]
    assert "rubric task-evaluation" in lines[header] and "seed 42" in lines[header]
    columns = next(line for line in lines if line.startswith("case "))
    assert all(cat in columns for cat in CATEGORIES)  # the column names, whole
    case_lines = [line for line in lines if line.split()[:1] and line.split()[0] in CASE_IDS]
    assert len(case_lines) == len(CASE_IDS)
    # add-csv-export's agentPerformance, from the shipped cache: deterministic 70, AI 59.
    assert any("70/59→67" in line and "acceptable" in line for line in case_lines)
    assert "16 cases: scored 16" in done.stdout
    assert "no paid calls" in done.stdout
    assert "judge local/smollm2: 0 calls = 0 requests; cache hits 14 of 14 judgments" in \
        done.stdout


def test_check_piped_reads_top_to_bottom(replayed: Path) -> None:
    # The offline replay recorded no baseline: the first check records one.
    run_judge(["check"], replayed)
    done = run_judge(["check"], replayed)
    assert done.returncode == 0, done.stderr
    assert "\x1b" not in done.stdout
    assert done.stdout.splitlines()[0].startswith("✓ no regression  run ")
    assert "over 16 cases scored in both" in done.stdout


@pytest.mark.parametrize("width", [60, 200])
def test_a_terminal_of_any_width_loses_nothing(replayed: Path, width: int,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(output, "_stdout_is_terminal", lambda: True)
    env = judge_env(COLUMNS=str(width), NO_COLOR="1")
    done = run_judge(["run", str(EXAMPLE_SUITE), "--offline", "--detail"], replayed, env=env)
    assert done.returncode == 0, done.stderr
    tabled = "┃" in done.stdout
    # A table too wide for the terminal is printed as plain lines, never cut.
    assert tabled is (width == 200)
    _assert_readable(done.stdout, width=width if tabled else None)
    assert all(cat in done.stdout for cat in CATEGORIES)
    checked = run_judge(["check"], replayed, env=env)
    assert checked.returncode == 0 and "over 16 cases scored in both" in checked.stdout
    plain = run_judge(["--plain", "rubric", "show", "task-evaluation"], replayed, env=env)
    assert "┃" not in plain.stdout and "taskOutcomeQuality" in plain.stdout


def test_plain_lines_align_and_keep_text_that_looks_like_markup() -> None:
    buffer = io.StringIO()
    saved = sys.stdout
    sys.stdout = buffer
    try:
        output.table(["id", output.Column("n", "right")],
                     [["[bold]x[/]", "1"], ["a-very-long-case-id-" * 5, "100"]])
    finally:
        sys.stdout = saved
    lines = buffer.getvalue().splitlines()
    assert lines[1].startswith("[bold]x[/]  ")
    assert lines[2] == "a-very-long-case-id-" * 5 + "  100"
    assert len(lines[1]) == len(lines[2]) and lines[0].endswith("  n")


def test_cost_wording() -> None:
    """Zero or unknown in words, never a ``$0.0000`` that reads as a price."""
    assert cost_text(None, 0) == "no paid calls"
    assert cost_text(0.0, 0) == "no paid calls"
    assert cost_text(None, 3) == "cost unknown"
    assert cost_text(0.0, 3) == "no paid calls"
    assert cost_text(0.00004, 3) == "under $0.0001"
    assert cost_text(0.00005, 3) == "$0.0001" and cost_text(0.0018, 14) == "$0.0018"
    assert output.plural(1, "case") == "1 case" and output.plural(2, "case") == "2 cases"


def test_a_closed_pipe_ends_with_141_and_no_traceback(replayed: Path) -> None:
    process = subprocess.Popen(
        [sys.executable, "-m", "judge", "run", str(EXAMPLE_SUITE), "--offline", "--no-check",
         "--detail"], cwd=replayed, env=judge_env(), stdout=subprocess.PIPE,
        stderr=subprocess.PIPE)
    assert process.stdout is not None and process.stderr is not None
    first = process.stdout.readline()
    process.stdout.close()  # `| head -1`
    err = process.stderr.read().decode()
    process.stderr.close()
    assert process.wait(timeout=60) == PIPE_CLOSED
    assert first.startswith(b"16 cases: scored 16")
    assert "Traceback" not in err and "Exception ignored" not in err


def test_a_closed_pipe_in_process_closes_what_it_opens(replayed: Path) -> None:
    read_end, write_end = os.pipe()
    os.close(read_end)
    stream = io.TextIOWrapper(os.fdopen(write_end, "wb"), encoding="utf-8")
    saved, saved_cwd = sys.stdout, os.getcwd()
    before = len(os.listdir("/proc/self/fd"))
    sys.stdout = stream
    os.chdir(replayed)
    try:
        with pytest.raises(SystemExit) as exit_info:
            main(["rubric", "show", "task-evaluation"])
    finally:
        sys.stdout = saved
        os.chdir(saved_cwd)
    assert exit_info.value.code == PIPE_CLOSED
    assert len(os.listdir("/proc/self/fd")) == before  # /dev/null was closed after dup2
    stream.close()


def test_a_real_terminal_gets_the_table(replayed: Path) -> None:
    leader, follower = pty.openpty()
    env = judge_env(COLUMNS="200")
    process = subprocess.Popen([sys.executable, "-m", "judge", "rubric", "show",
                                "task-evaluation"], cwd=replayed, env=env, stdout=follower,
                               stderr=subprocess.DEVNULL)
    os.close(follower)
    chunks = []
    while True:
        try:
            chunk = os.read(leader, 65536)
        except OSError:  # the terminal's other end closed: the command is done
            break
        if not chunk:
            break
        chunks.append(chunk)
    os.close(leader)
    assert process.wait(timeout=60) == 0
    shown = b"".join(chunks).decode()
    assert "┃" in shown and "taskOutcomeQuality" in shown
