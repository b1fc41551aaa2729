"""A judge measured: agreement, correlations, intervals, noise, the gate's test, drift.

Layer: core (numpy and scipy imported inside the functions). Modules: ``agreement``,
``correlation`` (one kernel per statistic), ``levels`` (item, group, system), ``raters``
(people beside the judge), ``intervals``, ``seeded`` (the one seeded random source),
``noise``, ``significance``, ``drift``, ``judge_health``, ``judge_quality``, ``pairwise``.
Imports nothing: import from the module.
"""

__all__: list[str] = []
