"""The pure core: what a judgment *is* and how the final scores are computed.

Every input is an argument: no clock, environment, disk or network, so every function here
is a unit test away.

Layer: core. May import: nothing outside ``judge.core``; no litellm, diskcache, jinja2, SQL,
clock, environment or disk (it may parse dates and numbers).

Packages, one concept each: ``formats`` (what a suite, a rubric, a case, a result and the
judge's output schema are), ``scoring`` (from a judge's reply and the signals to the final
scores: exact arithmetic, blends, bands, panels, calibration), ``stats`` (a judge measured:
agreement, correlations at three levels, intervals, noise, the gate's test, drift),
``outcomes`` (what a run adds up to: summaries, baselines, the call ledger, usage, the
monitor), ``text`` (text and safety: canonical JSON, safe YAML, strict JSON, secrets, seals,
the error tree). This ``__init__`` and each package's import nothing: import from the module.
"""

__all__: list[str] = []
