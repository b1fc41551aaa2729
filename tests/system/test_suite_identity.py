"""A suite's id is computed in one place, the same whichever way its file is named."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from judge.system.resources import load_suite, open_suite, suite_file_id

ROOT = Path(__file__).resolve().parents[2]
HOME = ROOT / "judge" / "system" / "resources.py"
LINE = '{"id": "c1", "input": "q", "output": "a"}\n'

# The rule itself (a stem, or the folder for suite.* / cases.*): what a second computation
# of a suite's id would have to write again.
SECOND_RULE = re.compile(r'"suite",\s*"cases"|\.parent\.name\b')


def test_suite_jsonl_is_its_folders_suite_however_it_is_named(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = tmp_path / "checkout-agent"
    folder.mkdir()
    (folder / "suite.jsonl").write_text(LINE, encoding="utf-8")
    (folder / "suite.yaml").write_text("cases:\n  - id: c1\n", encoding="utf-8")
    monkeypatch.chdir(folder)
    for name in ("suite.jsonl", "suite.yaml"):
        assert suite_file_id(Path(name)) == "checkout-agent"
        assert open_suite(Path(name)).id == "checkout-agent"
        assert open_suite(folder / name).id == "checkout-agent"
        assert load_suite(Path(name)).id == "checkout-agent"
    monkeypatch.chdir(tmp_path)
    assert open_suite(Path("checkout-agent/suite.jsonl")).id == "checkout-agent"


def test_no_second_computation_of_a_suite_id() -> None:
    """Only :func:`suite_file_id` turns a file's name into a suite id."""
    found = []
    for path in sorted((ROOT / "judge").rglob("*.py")):
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if SECOND_RULE.search(line) and not (path == HOME and "def suite_file_id" not in
                                                 line and _inside_home(number)):
                found.append(f"{path.relative_to(ROOT)}:{number}: {line.strip()}")
    assert found == [], "a suite id is computed outside suite_file_id:\n" + "\n".join(found)


def _inside_home(number: int) -> bool:
    """Whether line ``number`` of resources.py is in the body of :func:`suite_file_id`."""
    lines = HOME.read_text(encoding="utf-8").splitlines()
    start = next(i for i, line in enumerate(lines, 1) if line.startswith("def suite_file_id"))
    end = next((i for i, line in enumerate(lines, 1) if i > start and line.startswith("def ")),
               len(lines))
    return start < number < end
