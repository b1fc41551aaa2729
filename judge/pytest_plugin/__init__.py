"""judgeflow's pytest plugin: judged assertions that record locally and replay offline in CI.

Loaded by the ``pytest11`` entry point ``judge.pytest_plugin`` (so ``-p judge.pytest_plugin``
names the same plugin, never loading it twice). The door translates pytest's world (options,
items, reports, xdist workers) into the application's operations and renders their results;
it judges nothing itself::

    def test_answer(judge_eval):
        assert_passes(judge_eval({"id": "refund", "input": "...", "output": "..."}))

    test_agent = judge_suite("suites/agent.yaml")   # one item per case, plus [@baseline]

Layer: door. May import: the application and everything below it.
"""

from __future__ import annotations

from .plugin import GATE_ID, MODES, JudgeEval, SuiteCase, judge_suite, resolve_mode
from .plugin import judge_case as judge_case
from .plugin import judge_eval as judge_eval
from .plugin import pytest_addoption as pytest_addoption
from .plugin import pytest_configure as pytest_configure
from .plugin import pytest_configure_node as pytest_configure_node
from .plugin import pytest_generate_tests as pytest_generate_tests
from .plugin import pytest_report_header as pytest_report_header
from .plugin import pytest_sessionfinish as pytest_sessionfinish
from .plugin import pytest_sessionstart as pytest_sessionstart
from .plugin import pytest_terminal_summary as pytest_terminal_summary
from .plugin import pytest_testnodedown as pytest_testnodedown
from .report import JudgeAssertionError, assert_band, assert_passes, assert_score, describe

__all__ = [
    "GATE_ID",
    "MODES",
    "JudgeAssertionError",
    "JudgeEval",
    "SuiteCase",
    "assert_band",
    "assert_passes",
    "assert_score",
    "describe",
    "judge_suite",
    "resolve_mode",
]
