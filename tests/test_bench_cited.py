"""bench/ holds benchmarks someone reruns: each is in docs/benchmarks.md with its command.

A script nobody can find the command of is a one-off probe: its finding belongs in
bench/RESULTS.md (with the commit that holds it) and the script goes. Test doubles live
beside the tests (tests/fakes/), not here.
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BENCH = ROOT / "bench"
DOC = ROOT / "docs" / "benchmarks.md"
# A command as pasted from the repository root: the dev venv's python on the script, a tree
# chosen by PYTHONPATH where the benchmark compares two.
COMMAND = re.compile(r"`(?:PYTHONPATH=\S+ )?\.venv/bin/python bench/(\w+)\.py\b[^`]*`")
# What bench/ holds besides its scripts: their write-up, and what a run leaves (git-ignored).
NOT_SCRIPTS = {"RESULTS.md", "out", "__pycache__"}


def _scripts() -> set[str]:
    return {path.stem for path in BENCH.glob("*.py")}


def _cited(text: str) -> set[str]:
    return set(COMMAND.findall(text))


def test_every_script_in_bench_is_cited_with_its_command() -> None:
    missing = sorted(_scripts() - _cited(DOC.read_text(encoding="utf-8")))
    assert not missing, (
        f"bench/ scripts with no command in docs/benchmarks.md: {missing}; add each a row "
        "to its table 'The benchmarks in bench/', or remove a one-off probe and keep its "
        "finding, its command and its commit in bench/RESULTS.md")


def test_every_command_names_a_script_that_is_there() -> None:
    gone = sorted(_cited(DOC.read_text(encoding="utf-8")) - _scripts())
    assert not gone, f"docs/benchmarks.md gives commands for scripts bench/ lacks: {gone}"


def test_bench_holds_only_its_scripts_and_their_write_up() -> None:
    others = sorted(path.name for path in BENCH.iterdir()
                    if path.suffix != ".py" and path.name not in NOT_SCRIPTS)
    assert not others, f"bench/ holds files that are not benchmarks: {others}"


def test_a_command_is_found_only_as_a_command() -> None:
    # The pattern the checks above rely on: a bare mention is not a command.
    assert _cited("`.venv/bin/python bench/run.py --quick`") == {"run"}
    assert _cited("`PYTHONPATH=$PWD .venv/bin/python bench/noise.py`") == {"noise"}
    assert _cited("`bench/run.py`, bench/noise.py, `python bench/cost.py`") == set()
