"""What the files and values are: suites, rubrics, cases, evidence, results, labels, limits.

Layer: core (``judge.core``'s rules). Modules: ``suite``, ``rubric``, ``scorefile``,
``labels``, ``label_examples``, ``output_schema``, ``conversation``, ``evidence``, ``models``,
``limits``, ``shards``, ``recorded`` (judgments recorded elsewhere), ``turns`` (a judge's cached
turns, a typed view). Imports nothing: import from the module.
"""

__all__: list[str] = []
