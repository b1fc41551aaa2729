"""`read_labels`, the one reader of a labels file for review import, calibrate, compare and
the agreement history: its labels as `parse_labels` reads them, or a UsageError that names
the file and carries the caller's fix."""

from __future__ import annotations

from pathlib import Path

import pytest

from judge.app.judges.reviewing import read_labels
from judge.core.formats.labels import Label, LabelsError, dump_labels, parse_labels
from judge.core.text.errors import UsageError
from judge.core.text.seals import NO_SECRET


def _label(case: str) -> Label:
    return Label.model_validate({"suite": "s", "case": case, "category": "agentPerformance",
                                 "reviewer": "ana", "at": "2026-12-02T06:00:00Z", "score": 40})


def test_reads_the_labels_of_the_file(tmp_path: Path) -> None:
    path = tmp_path / "s.labels.jsonl"
    text = dump_labels([_label("b"), _label("a")])
    path.write_text(text, encoding="utf-8")
    assert read_labels(path, "unused", NO_SECRET) == parse_labels(text, str(path))
    assert [lb.case for lb in read_labels(path, "unused", NO_SECRET)] == ["a", "b"]


@pytest.mark.parametrize("content", [None, b"\xff\xfe not utf-8\n"])
def test_an_unreadable_file_is_a_usage_error_with_the_callers_fix(
        tmp_path: Path, content: bytes | None) -> None:
    path = tmp_path / "s.labels.jsonl"
    if content is not None:
        path.write_bytes(content)
    with pytest.raises(UsageError) as err:
        read_labels(path, "check the path", NO_SECRET)
    assert str(err.value).startswith(f"cannot read labels file {path}: ")
    assert err.value.fix == "check the path"


def test_a_bad_line_names_the_file(tmp_path: Path) -> None:
    path = tmp_path / "s.labels.jsonl"
    path.write_text('{"case": 1}\n', encoding="utf-8")
    with pytest.raises(LabelsError) as err:
        read_labels(path, "unused", NO_SECRET)
    assert err.value.file == str(path)
