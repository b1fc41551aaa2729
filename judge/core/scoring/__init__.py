"""From a judge's reply and the deterministic signals to the final, authoritative scores.

Layer: core. Modules: ``replies`` (reading a reply), ``expected`` (probability-weighted
scores), ``signal_rules`` and ``check_signals`` (deterministic signals), ``scoring`` (blends,
weights, bands), ``exact`` (half-up rounding in integers), ``panel`` (samples and panels),
``calibration``, ``rescore``, ``result_changes``. Imports nothing: import from the module.
"""

__all__: list[str] = []
