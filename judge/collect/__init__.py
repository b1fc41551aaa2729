"""Source adapters of ``judge suite collect``: each reads one kind of artefact into a Collected.

git (the repository, through ``git``), junit (JUnit XML, through junitparser), gh (the JSON
of ``gh pr view`` / ``gh run view``), agent_log (JSONL transcripts), task (a task file) and
documents (files named on the command line). The case is assembled, scrubbed, bounded and
signalled by :func:`judge.collect.case.build_case`, the same for every source.

Layer: adapter. May import: ``judge.core``, ``judge.system``.
"""

from __future__ import annotations

__all__: list[str] = []
