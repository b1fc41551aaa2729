"""The exception tree; callers catch by level.

::

    JudgeError
    ├── ConfigError          bad input from a file or flag: never retried, exit code 2
    │   ├── RubricError      a rubric file (YAML, fields, weights, bands)
    │   ├── SuiteError       a suite file (cases, evidence, signals)
    │   ├── TemplateError    a prompt template (syntax, undefined names)
    │   └── UsageError       a flag, a config value, a missing extra
    │       ├── UnknownSuiteError   no suite of the workspace has this id
    │       ├── NoBaselineError     the suite has no baseline file yet
    │       └── NoStoreError        no run store where a command that needs one looks
    ├── ProviderError        the model endpoint failed in transport: retried by the one layer
    │   └── PermanentProviderError   4xx and friends: the same request would fail again
    ├── OutputError          the model answered, but not with a valid verdict: repair, then unscored
    ├── CacheMissError       offline replay met judgments that are not cached
    ├── StoreError           the run store could not find or write what was asked
    │   ├── UnknownRunError  no stored run has this id (or prefix)
    │   └── AmbiguousRunError   several stored runs start with this prefix
    ├── RunActiveError       a run of that suite is already going (``judge workspace serve``)
    └── RegressionBlocked    the regression gate blocked a rollout
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "AmbiguousRunError",
    "CacheMissError",
    "ConfigError",
    "JudgeError",
    "NoBaselineError",
    "NoStoreError",
    "OutputError",
    "PermanentProviderError",
    "ProviderError",
    "RegressionBlocked",
    "RubricError",
    "RunActiveError",
    "StoreError",
    "SuiteError",
    "TemplateError",
    "UnknownRunError",
    "UnknownSuiteError",
    "UsageError",
]


class JudgeError(Exception):
    """Base of every error judgeflow raises on purpose."""


class ConfigError(JudgeError):
    """Bad input: names the file, the place in it and the fix."""

    exit_code = 2

    def __init__(self, message: str, *, file: str | None = None, where: str | None = None,
                 fix: str | None = None) -> None:
        self.file = file
        self.where = where
        self.fix = fix
        self.message = message
        super().__init__(self.render())

    def render(self) -> str:
        """One readable block: file and place, what is wrong, how to fix it.

        A long value echoed back (a 1 MB case id) is cut, with a marker saying how much.
        """
        file, where = _cut(self.file, 500), _cut(self.where, 300)
        head = ""
        if file:
            head = f"{file}"
            if where:
                head += f": {where}"
            head += ": "
        elif where:
            head = f"{where}: "
        text = head + (_cut(self.message, 2000) or "")
        if self.fix:
            text += f"\n  fix: {self.fix}"
        return text


def _cut(text: str | None, limit: int) -> str | None:
    """``text`` at most ``limit`` characters, then ``… [N more characters]``."""
    if text is None or len(text) <= limit:
        return text
    return f"{text[:limit]}… [{len(text) - limit:,} more characters]"


class RubricError(ConfigError):
    """A rubric file is malformed or inconsistent."""


class SuiteError(ConfigError):
    """A suite file is malformed or inconsistent."""


class TemplateError(ConfigError):
    """A prompt template cannot be loaded or rendered."""


class UsageError(ConfigError):
    """A flag, configuration value or installation problem."""


class UnknownSuiteError(UsageError):
    """No suite of the workspace has this id."""


class NoBaselineError(UsageError):
    """The suite has no baseline file yet."""


class NoStoreError(UsageError):
    """No run store at ``path`` (a local SQLite file) and the command makes none: it only reads.

    Said so that a user in the wrong folder notices: where it looked, and how to the runs.
    """

    def __init__(self, path: str) -> None:
        self.path = path
        super().__init__(f"no run store at {path}: nothing judged in this folder yet",
                         fix="judge a suite here first (`judge run SUITE`), run from the "
                             "folder that holds the runs, or name their store with --store URL")


class ProviderError(JudgeError):
    """A transport fault talking to the model: worth retrying."""

    def __init__(self, message: str, *, status: int | None = None,
                 retry_after: float | None = None, configuration: bool = False) -> None:
        self.status = status
        self.retry_after = retry_after
        self.configuration = configuration
        """The judge cannot work as configured (unknown model or provider, refused key,
        unreachable host): the same failure for every case, so a run stops early on it."""
        super().__init__(message)


class PermanentProviderError(ProviderError):
    """The provider refused the request itself (4xx): retrying would not help."""


class OutputError(JudgeError):
    """The model's reply is not a valid verdict; ``errors`` lists why, for a repair turn."""

    def __init__(self, message: str, *, errors: list[str] | None = None) -> None:
        self.errors = list(errors or [message])
        super().__init__(message)


class CacheMissError(JudgeError):
    """Offline mode needed a judgment that is not in the cache."""

    def __init__(self, message: str, *, missing: list[str] | None = None) -> None:
        self.missing = list(missing or [])
        super().__init__(message)


class StoreError(JudgeError):
    """The run store has no such run, or could not be written."""

    exit_code = 2
    store: str | None = None
    """The store's URL as the message shows it (a door that must not show it replaces it)."""


class UnknownRunError(StoreError):
    """No stored run has this id, nor is it the prefix of exactly one."""


class AmbiguousRunError(StoreError):
    """Several stored runs start with this id prefix: more characters are needed."""


class RunActiveError(JudgeError):
    """A run of this suite is already going; ``run`` names it."""

    def __init__(self, message: str, *, run: str, suite: str) -> None:
        self.run = run
        self.suite = suite
        super().__init__(message)


class RegressionBlocked(JudgeError):
    """The regression gate found a regression while blocking is on."""

    def __init__(self, message: str, *, comparison: Any = None) -> None:
        self.comparison = comparison
        super().__init__(message)
