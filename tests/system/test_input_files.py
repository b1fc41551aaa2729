"""The one reader of handed-in files: special files refused by type, sizes bounded, UTF-8 placed."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest

from judge.core.text.errors import SuiteError
from judge.system.input_files import input_lines, read_input


@pytest.mark.parametrize("target", ["/dev/zero", "/dev/urandom", "/dev/null"])
def test_a_device_behind_a_link_is_refused_by_type(tmp_path: Path, target: str) -> None:
    link = tmp_path / "suite.yaml"
    link.symlink_to(target)
    with pytest.raises(SuiteError, match="a character device, not a regular file") as info:
        read_input(link, SuiteError, 1 << 20)
    assert info.value.file == str(link)


def test_a_fifo_is_refused_without_waiting_for_a_writer(tmp_path: Path) -> None:
    fifo = tmp_path / "suite.jsonl"
    os.mkfifo(fifo)
    done: list[BaseException] = []

    def read() -> None:
        try:
            list(input_lines(fifo, SuiteError, 1 << 20, 1 << 10))
        except SuiteError as exc:
            done.append(exc)

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    reader.join(10)
    assert not reader.is_alive(), "the read blocked on the FIFO"
    assert done and "a FIFO" in str(done[0])


def test_a_folder_and_a_missing_file_name_the_path(tmp_path: Path) -> None:
    with pytest.raises(SuiteError, match="it is a folder"):
        read_input(tmp_path, SuiteError, 10)
    with pytest.raises(SuiteError, match="No such file"):
        read_input(tmp_path / "nope.yaml", SuiteError, 10)


def test_sizes_are_bounded_before_and_while_reading(tmp_path: Path) -> None:
    big = tmp_path / "big.jsonl"
    big.write_bytes(b"x" * 11)
    with pytest.raises(SuiteError, match="file too large: 11 bytes"):
        read_input(big, SuiteError, 10)
    assert read_input(big, SuiteError, 11) == "x" * 11
    lines = tmp_path / "lines.jsonl"
    lines.write_bytes(b"ab\n" * 4 + b"c" * 20 + b"\n")
    with pytest.raises(SuiteError, match="line longer than 8 bytes") as info:
        list(input_lines(lines, SuiteError, 1000, 8))
    assert info.value.where == "line 5"
    with pytest.raises(SuiteError, match="file too large"):
        list(input_lines(lines, SuiteError, 7, 100))


def test_a_byte_that_is_not_utf8_is_placed(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_bytes(b"id: a\ncases: [\xff]\n")
    with pytest.raises(SuiteError, match="byte 0xff") as info:
        read_input(bad, SuiteError, 100)
    assert info.value.where == "line 2, column 9"
    with pytest.raises(SuiteError) as info:
        list(input_lines(bad, SuiteError, 100, 100))
    assert info.value.where == "line 2, column 9"
