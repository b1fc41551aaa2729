"""The pure core: what a judgment *is* and how the final scores are computed.

Models and rubrics, suites, evidence bundles, the output schema, reading replies, exact
scoring and bands, deterministic signals, summaries, baseline comparison, agreement
statistics, the secret table, usage values. Every input is an argument: no clock,
environment, disk or network, so every function here is a unit test away.

Layer: core. May import: nothing outside ``judge.core``; no litellm, diskcache, jinja2, SQL,
clock, environment or disk (it may parse dates and numbers).

Modules: ``agreement``, ``baseline``, ``canonical``, ``check_signals``, ``drift``, ``errors``,
``evidence``, ``exact``, ``frozen``, ``generate``, ``ledger``, ``limits``, ``models``,
``monitor``, ``output_schema``, ``pairwise``, ``panel``, ``replies``, ``rescore``,
``result_changes``, ``rubric``, ``safeyaml``, ``scorefile``, ``scoring``, ``secrets``,
``shards``, ``signal_rules``, ``suite``, ``summary``, ``terminal_text``, ``validation_text``.
This ``__init__`` imports nothing: import from the module.
"""

__all__: list[str] = []
