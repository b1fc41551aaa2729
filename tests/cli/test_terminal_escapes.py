"""Untrusted text on the terminal: `judge suite validate` and the pytest plugin's failure text.

A terminal colour code, a screen clear or a right-to-left override in a suite or in evidence
is shown as a visible escape (``\\u001b``), never sent raw to the terminal.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from judge.cli import main
from judge.core.formats.models import CaseResult
from judge.pytest_plugin.report import describe

HOSTILE = "\x1b[31mred\x1b[0m\x1b[2J\u202eevil\u200b\x07"


def test_suite_validate_shows_escapes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                      capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "s.yaml").write_text(
        'id: s\ncases:\n  - id: c1\n    input: "hi"\n    output: "x"\n'
        '    tags: ["\\e[31mred\\e[0m", "a\\u202eb"]\n  - id: c2\n    input: "hi"\n')
    with pytest.raises(SystemExit) as done:
        main(["suite", "validate", "s.yaml"])
    assert done.value.code in (0, None)
    out = capsys.readouterr()
    shown = out.out + out.err
    assert "\x1b" not in shown and "\u202e" not in shown
    assert "\\u001b[31mred\\u001b[0m" in shown and "a\\u202eb" in shown


def test_plugin_failure_text_shows_escapes() -> None:
    result = CaseResult.model_validate({
        "id": "c1", "status": "unscored", "reason": f"judge said {HOSTILE}",
        "evidence": [{"id": "commits:abc", "group": "commits", "title": HOSTILE,
                      "excerpt": HOSTILE}]})
    text = describe(result, "did not pass")
    for char in "\x1b\u202e\u200b\x07":
        assert char not in text
    assert text.count("\\u001b[31mred") == 3 and "\\u202eevil" in text
