"""The HTML report: what it shows, its charts, and the self-contained page.

Assets (CSS, script, the vendored Plotly) are in ``assets/`` and inlined.

Layer: adapter. May import: ``judge.core``, ``judge.system``.

Modules: ``charts``, ``data``, ``html``, ``review_page``, ``samples``, ``transcripts``.
This ``__init__`` imports nothing: import from the module.
"""

__all__: list[str] = []
