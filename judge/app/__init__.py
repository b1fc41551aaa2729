"""The application layer: one workspace and the operations every door calls.

Layers, each importing only from the ones below it (``tests/test_layering.py`` enforces it)::

    doors        judge/cli/*, judge/api.py, judge serve, the pytest plugin, bench/
      │            translate flags / requests into typed inputs, render typed results
    application  judge/app/*, judge/runner.py, judge/judging.py
      │            a Workspace (typed settings with their sources, factories for judges,
      │            cache, store, baselines) and operations: typed inputs → typed results;
      │            they print nothing and never exit the process
    adapters     prompts (Jinja), client (LiteLLM), cache (diskcache), store (SQLAlchemy),
      │            local judge (llama.cpp), resources (files), replay index
    core         models, rubric, evidence, scoring, parsing, schema, summary, baseline,
                 agreement, ... — pure: no clock, environment, disk or network

A feature is written once, here; a door that needs it calls the operation.
"""

from __future__ import annotations

__all__: list[str] = []
