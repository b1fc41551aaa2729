"""Bad input is refused before anything is opened: every row of
tests/bad_inputs.py exits 2 naming the file or flag, the place and a fix, never 70, and leaves
the workspace byte-identical (a snapshot before and after)."""

from __future__ import annotations

from pathlib import Path

import pytest
from bad_inputs import ROWS, BadInput, snapshot, write_workspace
from conftest import run_judge


@pytest.mark.parametrize("row", ROWS, ids=[r.name for r in ROWS])
def test_bad_input_exits_2_and_writes_nothing(tmp_path: Path, row: BadInput) -> None:
    write_workspace(tmp_path, row)
    before = snapshot(tmp_path)
    proc = run_judge(list(row.args), tmp_path)
    assert proc.returncode == 2, (proc.returncode, proc.stdout[-300:], proc.stderr[-2000:])
    assert "internal error" not in proc.stderr
    assert "fix:" in proc.stderr, proc.stderr[-2000:]
    for word in row.words:
        assert word in proc.stderr, (word, proc.stderr[-2000:])
    assert len(proc.stderr) < 20_000  # long values are cut, never echoed whole
    assert snapshot(tmp_path) == before
