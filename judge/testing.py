"""Judged assertions for any test runner: ``from judge.testing import assert_passes``.

The same helpers as :mod:`judge.pytest_plugin`; their failure text names the scores, the
band, the judge's rationale and cited evidence, and the command that re-renders the prompt.
"""

from __future__ import annotations

from .pytest_plugin.report import (
    JudgeAssertionError,
    assert_band,
    assert_passes,
    assert_score,
    describe,
)

__all__ = ["JudgeAssertionError", "assert_band", "assert_passes", "assert_score", "describe"]
